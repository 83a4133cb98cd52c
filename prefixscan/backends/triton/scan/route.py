"""The Triton backend's scan path: from a checked request to kernel launches.

A scan is a ``(B, M, K)`` row-major view scanned along M: B lanes, M steps, K
interleaved streams (a tuple size, or the extent after the scanned axis).  This
module picks the strategy (:mod:`..planning.planner`) and the kernel family for the
request, prepares outputs, identities and seeds (a :class:`.job.ScanJob`), and
runs one launch per order unless a kernel does every order in one pass (SAM,
Maleki et al. PLDI 2016, section 2.4): the orders kernel of :mod:`.orders` for
integer sums where it measured faster (:mod:`.orders_rules`), else the
strategy's launcher (:data:`LAUNCHERS`): the decoupled look-back and chained
kernels of :mod:`.lookback` (Merrill & Garland 2016), :mod:`.reduce_then_scan`,
:mod:`.scan_then_propagate` (Merrill & Grimshaw 2009) or :mod:`.persistent` (SAM).
"""

from __future__ import annotations

import dataclasses

from ...._arrays import as_torch
from ...._environment import interpreter_mode
from . import persistent, reduce_then_scan, scan_then_propagate
from .orders import launch_blocked
from .orders_rules import blocked_applies
from ..device.combine import combine_functions
from .job import ScanJob, SeedLayout, lane_layout as _layout, torch_dtype
from .lookback import launch_chained, launch_lookback
from ..planning.planner import strategy_for
from ..planning.registry import STRATEGY_NAMES
from ..runtime.replay import FastScan
from ..runtime.launch import current_stream
from ..engine.state import identity_tensor

#: The launcher of each strategy: ``launch(job)`` scans ``job.xs`` into ``job.ys``
#: once (one order).  The look-back launchers also take every order in one pass.
LAUNCHERS = {
    "decoupled_lookback": launch_lookback,
    "chained": launch_chained,
    "reduce_then_scan": reduce_then_scan.launch,
    "scan_then_propagate": scan_then_propagate.launch,
    "persistent": persistent.launch,
}
assert set(LAUNCHERS) == set(STRATEGY_NAMES), "every strategy of the registry needs a launcher"
_LOOKBACK_LAUNCHERS = (launch_lookback, launch_chained)


def run_scan(request, plan: bool = False):
    """Scan ``request`` into its outputs (a list of torch tensors).  With ``plan``,
    return ``(results, fast)`` where ``fast`` is a :class:`FastScan` that replays this
    call on new tensors of the same signature, or None when it cannot."""
    import torch

    config = request.config
    monoid = config.monoid
    xs = [as_torch(f) for f in request.fields]
    accs = [torch_dtype(name) for name in request.acc_dtypes]
    B, M, K = _layout(request)
    device = xs[0].device
    users = [as_torch(o) for o in request.out] if request.out is not None else None
    if users is not None:
        ys = [u if u.is_contiguous() else torch.empty_like(u, memory_format=torch.contiguous_format)
              for u in users]
    else:
        ys = [torch.empty(request.out_shape, dtype=torch_dtype(d), device=device) for d in request.out_dtypes]
    if xs[0].numel() == 0:
        results = users if users is not None else ys
        return (results, None) if plan else results
    xs = [x.contiguous() for x in xs]
    interpreter = interpreter_mode()
    stream = current_stream(device) if device.type == "cuda" else 0
    if interpreter:
        # The interpreter copies every tensor argument to a host buffer and back
        # after the launch, so an input aliased with an output would overwrite it.
        outs = {y.data_ptr() for y in ys}
        xs = [x.clone() if x.data_ptr() in outs else x for x in xs]
    ys_kernel = list(ys)
    for i, acc in enumerate(accs):
        if acc == torch.bool:
            # Bool scans (max/min/and/or/xor) are the same scans on 0/1 bytes.
            xs[i], ys_kernel[i], accs[i] = xs[i].view(torch.uint8), ys[i].view(torch.uint8), torch.uint8
    idents = tuple(identity_tensor(v.item(), acc, device) for v, acc in zip(request.identity, accs))
    inits = seeds = None
    if request.init is not None:
        seeds = [SeedLayout(acc, request.init_shape, B, K, config.tuple_size, device) for acc in accs]
        inits = tuple(layout.columns(value) for layout, value in zip(seeds, request.init))
    swapped = config.reverse and not monoid.commutative
    pair, flat = combine_functions(monoid, len(xs), swapped)
    launch = _launcher(config, device, accs, M, K, interpreter)
    job = ScanJob(tuple(xs), tuple(ys_kernel), idents, inits, pair, flat, monoid.commutative, tuple(accs), B, M, K,
                  config, stream, interpreter)
    order = config.order
    launched = []  # the look-back launches made (a replay needs exactly one)
    if blocked_applies(config, accs, B, K, inits is not None, xs[0].element_size()):
        # Integer sums of order > 1 or tuple sizes > 1: one look-back over the carry
        # vector, thread-contiguous tiles (blocked.orders_kernel).
        launch_blocked(xs[0], ys_kernel[0], accs[0], M * K, config.order, K, stream, interpreter)
        launch, order = launch_blocked, 0
    elif launch in _LOOKBACK_LAUNCHERS and order > 1 and (config.inclusive or inits is None):
        # One pass for every order (SAM).  Exclusive scans without init: E^q = S^q Z^q,
        # the inclusive scan of order q of the input delayed by q elements (the
        # delay Z commutes with the inclusive scan S when no seed is added).
        launched.append(launch(job, order=order, delayed=not config.inclusive, inclusive=True))
        order = 0
    # Other strategies, and exclusive scans with a seed (the seed is added at
    # every order, so the delays do not commute): one launch per order.
    # Intermediate orders stay in the accumulator dtype.
    mids = [y if (order == 1 or y.dtype == acc) else torch.empty(y.shape, dtype=acc, device=device)
            for y, acc in zip(ys_kernel, accs)]
    src = job.xs
    for q in range(order):
        dst = job.ys if q == order - 1 else tuple(mids)
        step = job if order == 1 else dataclasses.replace(job, xs=src, ys=dst)
        launched.append(launch(step))
        src = dst
    results = ys
    if users is not None:
        for u, y in zip(users, ys):
            if u is not y:
                u.copy_(y)
        results = users
    if not plan:
        return results
    fast = None
    record = launched[0] if len(launched) == 1 and launch in _LOOKBACK_LAUNCHERS else None
    if (record is not None and record.compiled is not None and len(xs) == 1
            and ys_kernel[0] is ys[0] and results[0] is ys[0] and xs[0] is as_torch(request.fields[0])
            and device.type == "cuda"):
        fast = FastScan.planned(record, tuple(request.out_shape), ys[0].dtype, device,
                                seed=None if seeds is None else seeds[0])
    return results, fast


def _launcher(config, device, accs, M: int, K: int, interpreter: bool):
    """The launch function of the request's strategy (:data:`LAUNCHERS`; chained also
    when the tuned table picks it for an "auto" scan, whose config does not say so)."""
    return LAUNCHERS[strategy_for(config, device, accs, M, K, interpreter)]
