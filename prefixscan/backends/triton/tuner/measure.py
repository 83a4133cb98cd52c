"""The device side of tuning: time and verify real scans of one key.

Each candidate runs through the Triton backend's scan path
(:func:`..scan.route.run_scan`) on a request built by :mod:`prefixscan._normalize`,
its strategy named and its tile forced (:func:`..planning.planner.override`), on fresh
random non-zero data.  Its output, poisoned first, is compared with the
decoupled look-back default's (bitwise for integers), and the default's own
result is first checked against ``torch.cumsum`` for sums.  A candidate is timed
the way a repeated prefixscan call runs: the first call plans, the following
ones replay the plan when the scan has one (a single launch).

torch is imported when a tuning runs, and the scan path (which loads triton)
with it, so the tuner's other layers stay importable without either.
"""

from __future__ import annotations

import contextlib
import os
import statistics
import threading
import time
from dataclasses import dataclass
from typing import Callable

from ...._normalize import build_request, make_config
from ....timing import time_cuda_events
from ..planning import planner
from ..planning.registry import STRATEGY_NAMES
from ..planning.tiles import default_config
from .candidates import available_strategies, candidate_grid
from ..planning.keys import Candidate
from .search import DUEL_MAX_ROUNDS, ROUNDS, SearchResult, TuningError, refine_occupancy, search

__all__ = ["tune_workload", "workload", "Workload", "cuda_event_timer", "repeated_scan", "scan_request",
           "random_field", "poison", "same_result", "TuningGuard", "in_tuning"]


def random_field(torch, dtype, shape, opname: str, gen, device):
    """Fresh random non-zero data for one field."""
    def sign():
        return torch.randint(0, 2, shape, generator=gen, device=device) * 2 - 1

    if dtype.is_floating_point:
        u = torch.rand(shape, generator=gen, device=device, dtype=torch.float64)
        if opname == "mul":
            x = 0.9 + 0.2 * u
        elif opname == "logaddexp":
            x = torch.randn(shape, generator=gen, device=device, dtype=torch.float64) * 3
        elif opname == "user":
            x = (0.5 + 0.5 * u) * sign()  # |x| in [0.5, 1): products and affine maps stay bounded
        else:
            x = (u + 1e-3) * sign()
        return x.to(dtype)
    x = torch.randint(1, 64, shape, generator=gen, device=device, dtype=torch.int64)
    if opname == "mul":
        x = x * 2 + 1  # odd: products wrap but never reach 0
    if dtype.is_signed:
        x = x * sign()
    return x.to(dtype)


def poison(torch, t):
    """Fill ``t`` with a value no correct scan leaves behind (NaN, or 0xA5 bytes)."""
    if t.dtype.is_floating_point:
        t.fill_(float("nan"))
    else:
        t.view(torch.uint8).fill_(0xA5)


def same_result(torch, a, ref) -> bool:
    """Bitwise for integers; floats: NaN and infinities in the same places, the
    rest within 1e-3 (4-byte) or 1e-9 (8-byte) of the largest |ref|."""
    if not ref.dtype.is_floating_point:
        return bool(torch.equal(a.reshape(-1).view(torch.uint8), ref.reshape(-1).view(torch.uint8)))
    a64, r64 = a.double(), ref.double()
    if not torch.equal(torch.isnan(a64), torch.isnan(r64)):
        return False
    inf = torch.isinf(r64)
    if not torch.equal(a64[inf], r64[inf]):
        return False
    fin = torch.isfinite(r64)
    if not bool(fin.any()):
        return True
    diff = (a64[fin] - r64[fin]).abs().max()
    scale = r64[fin].abs().max().clamp(min=1.0)
    rtol = 1e-3 if ref.element_size() <= 4 else 1e-9
    return bool(torch.isfinite(diff)) and bool(diff <= rtol * scale)


_tuning = threading.local()


class TuningGuard:
    """Marks this thread as tuning: first-use tuning asked for meanwhile waits."""

    def __enter__(self):
        self.previous = getattr(_tuning, "active", False)
        _tuning.active = True

    def __exit__(self, *exc):
        _tuning.active = self.previous


def in_tuning() -> bool:
    """Whether this thread is inside a tuning run."""
    return getattr(_tuning, "active", False)


def cuda_event_timer(repeats: int) -> Callable[[Callable[[], object]], float]:
    """Seconds per call of ``fn``, the mean of what two kinds of caller see: device
    time (median of ``repeats`` CUDA-event pairs queued behind a GPU sleep, see
    :func:`prefixscan.timing.time_cuda_events`; callers that queue work) and the
    larger of that and the wall time per call over back-to-back calls (callers that
    wait, paying the host's work per call).  On the H200, device time alone picked
    the persistent strategy for small scans (7.0 against 7.9 us on the GPU) whose
    host path costs 77 us per call, and wall time alone tied every tile of a
    host-bound size at about 20 us a call (docs/design/tuning-method.md)."""
    import torch

    def timer(fn):
        fn()
        fn()  # warm-up: compile, allocate, plan
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        fn()
        host = time.perf_counter() - t0
        torch.cuda.synchronize()
        device = statistics.median(time_cuda_events([fn], repeats, host))
        calls = max(3, min(50, int(2e-3 / max(device, 1e-6))))  # about 2 ms of calls
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
        waited = max(device, (time.perf_counter() - t0) / calls)
        return (device + waited) / 2

    return timer


def scan_request(x, op, *, axis=None, out=None, strategy: str = "auto"):
    """The checked request of ``scan(x, op, axis=axis, out=out, strategy=strategy,
    backend="triton")``, built without running it."""
    config = make_config(op, axis=axis, inclusive=True, reverse=False, order=1, tuple_size=1, dtype=None,
                         backend="triton", algorithm=None, strategy=strategy)
    return build_request(config, x, None, out)


def repeated_scan(run_scan, request, x, out) -> Callable[[], object]:
    """``fn()`` that scans ``request`` as repeated prefixscan calls on the same
    tensors do (:class:`prefixscan.Scan`): the first call plans, the following
    ones replay the plan (``run_scan(request, plan=True)``'s replay, while not
    expired) or, without one, take the full path.  ``run_scan`` is the scan
    path's entry (:func:`..scan.route.run_scan`)."""
    state = {"planned": False, "fast": None}

    def call():
        fast = state["fast"]
        if fast is not None and fast.expired():  # the tile in force changed: plan again
            state["planned"], state["fast"], fast = False, None, None
        if state["planned"]:
            if fast is not None:
                result = fast(x, out)
                if result is not None:
                    return result
            return run_scan(request)
        state["planned"] = True
        if request.struct:  # several fields: no planned replay (as in Scan.__call__)
            return run_scan(request)
        results, state["fast"] = run_scan(request, plan=True)
        return results

    return call


@dataclass
class Workload:
    """One key's representative scan, ready to time candidates on: the
    ``default`` (the reference every candidate is verified against),
    ``deterministic_default``, the grid ``candidates`` of the strategies
    ``names``, ``measure(c) -> seconds`` and ``verify(c) -> bool``."""
    default: Candidate
    deterministic_default: Candidate | None
    names: list
    nbytes: int
    floating: bool
    n: int
    K: int
    measure: Callable[[Candidate], float]
    verify: Callable[[Candidate], bool]

    def candidates(self, quick: bool = False) -> list:
        return candidate_grid(self.names, self.nbytes, self.floating, self.n, quick=quick, K=self.K)


@contextlib.contextmanager
def workload(device, accs, monoid=None, K: int = 1, n: int = 1 << 20, *, strategies=None, repeats: int = 15,
             timer: Callable[[Callable[[], object]], float] | None = None):
    """The :class:`Workload` of one key on ``device``: ``accs`` (torch dtypes, one
    per field) under ``monoid`` (None: add), ``n`` elements per field laid out as
    (n,) (K == 1) or (n // K, K) scanned along axis 0, on fresh random data, the
    default's result checked against ``torch.cumsum`` for sums.  Inside the
    ``with`` block this thread counts as tuning (:class:`TuningGuard`).
    ``timer(fn) -> seconds`` defaults to CUDA events (:func:`cuda_event_timer`,
    median of ``repeats``); a CPU device (the interpreter) needs one."""
    import torch

    from ..scan import route as scan  # loads triton: only when a tuning runs

    names = available_strategies(strategies or STRATEGY_NAMES)
    nbytes = sum(a.itemsize for a in accs)
    floating = any(a.is_floating_point for a in accs)
    default = Candidate("decoupled_lookback", default_config(nbytes, floating, K, n))  # the reference, always run
    det_default = Candidate("chained", default.tile) if "chained" in names else None
    op = monoid if monoid is not None else "add"
    builtin = monoid is None or getattr(monoid, "builtin", False)
    opname = getattr(monoid, "name", "add") if builtin else "user"
    shape = (n,) if K == 1 else (max(1, n // K), K)
    axis = None if K == 1 else 0
    device = torch.device(device)
    cuda = device.type == "cuda"
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    if timer is None:
        timer = cuda_event_timer(repeats)

    with TuningGuard(), (torch.cuda.device(device) if cuda else contextlib.nullcontext()):
        gen = torch.Generator(device=device)
        gen.manual_seed(int.from_bytes(os.urandom(8), "little") >> 1)  # fresh data every run
        xs = tuple(random_field(torch, dt, shape, opname, gen, device) for dt in accs)
        outs = tuple(torch.empty(shape, dtype=dt, device=device) for dt in accs)
        x = xs[0] if len(xs) == 1 else xs

        def request(c, dst):
            return scan_request(x, op, axis=axis, out=dst[0] if len(dst) == 1 else dst, strategy=c.strategy)

        def run(c, dst):
            with planner.override(c.tile):
                scan.run_scan(request(c, dst))

        run(default, outs)
        ref = tuple(o.clone() for o in outs)
        if opname == "add" and len(xs) == 1:
            # The reference must itself be right, or every correct candidate would be excluded.
            # (torch.cumsum along axis 0 of a narrow 2-D array takes seconds: scan the transpose.)
            expected = torch.cumsum(xs[0].t().contiguous(), dim=-1, dtype=accs[0]).t()
            if not same_result(torch, ref[0], expected):
                raise TuningError(f"the default {default.label} differs from torch.cumsum on "
                                  f"{tuple(shape)} {accs[0]}")
            del expected
        got = tuple(torch.empty_like(r) for r in ref)

        def verify(c):
            for g in got:
                poison(torch, g)
            run(c, got)
            sync()
            return all(same_result(torch, g, r) for g, r in zip(got, ref))

        def measure(c):
            # The tile is forced around the timer, not inside every call.
            dst = outs[0] if len(outs) == 1 else outs
            with planner.override(c.tile):
                return timer(repeated_scan(scan.run_scan, request(c, outs), x, dst))

        yield Workload(default=default, deterministic_default=det_default, names=names, nbytes=nbytes,
                       floating=floating, n=n, K=K, measure=measure, verify=verify)


def tune_workload(device, accs, monoid=None, K: int = 1, n: int = 1 << 20, *, strategies=None,
                  quick: bool = False, budget: float | None = None, repeats: int = 15,
                  rounds: int = ROUNDS, duel_rounds: int = DUEL_MAX_ROUNDS,
                  timer: Callable[[Callable[[], object]], float] | None = None) -> SearchResult:
    """Tune one key (its :func:`workload`) with the full candidate grid, or the
    quick one (``quick``); the full grid ends with :func:`.search.refine_occupancy`.
    ``duel_rounds``: the most rounds a duel runs (:func:`.search.duel`)."""
    with workload(device, accs, monoid, K, n, strategies=strategies, repeats=repeats, timer=timer) as w:
        result = search(w.candidates(quick), w.measure, w.verify, default=w.default,
                        deterministic_default=w.deterministic_default, budget=budget, rounds=rounds,
                        duel_rounds=duel_rounds)
        if quick:
            return result
        return refine_occupancy(result, w.measure, w.verify, rounds=rounds, duel_rounds=duel_rounds)
