"""Drivers of the scan primitives: host arrays in, NumPy arrays out, one compiled
pass each (:mod:`.primitive_kernels`; delta decoding is the order-q sum scan of
:mod:`.kernels`).  Arguments are assumed checked by the public API; the
semantics are those of docs/semantics.md.
"""

from __future__ import annotations

import math

import numpy as np

from ...._arrays import native_order
from ....monoid import accumulator_dtype_name, resolve_op
from . import monoids
from .jit_support import HALF, PLAIN, StaticInt
from .launch import call
from .scan import MAX_STATIC_ORDER, storage_dtype

__all__ = ["segmented_scan", "linear_recurrence", "linear_recurrence_total", "delta_encode", "delta_decode"]


def _host(a) -> np.ndarray:
    """A host array in native byte order (the kernels read native numbers)."""
    return native_order(np.asarray(a.detach().cpu().numpy() if hasattr(a, "detach") else a))


def _to_storage(a: np.ndarray):
    dtype, fmt = storage_dtype(a.dtype.name)
    return (a.view(np.uint16) if fmt is HALF else a), fmt


# ---------------------------------------------------------------------------
# Segmented scans.

def segmented_scan(x, op="add", *, flags=None, offsets=None, keys=None, inclusive=True, reverse=False, init=None):
    from numba.core.errors import NumbaError

    from . import primitive_kernels as pk

    struct = isinstance(x, tuple)
    arrays = [np.ascontiguousarray(_host(v)) for v in (x if struct else (x,))]
    monoid = resolve_op(op)
    found = monoids.operator_for(monoid, len(arrays), reverse)
    if found is None:
        return None
    op_value, user = found
    n = arrays[0].shape[0]
    accs = [accumulator_dtype_name(a.dtype.name) for a in arrays]
    acc_np = [np.dtype("float32" if name == "float16" else name) for name in accs]
    ident = tuple(dt.type(v) for dt, v in
                  zip(acc_np, monoid.identity_values([np.dtype(name) for name in accs])))
    if any(name == "float16" for name in accs):  # an identity on the float16 grid
        ident = tuple(np.float32(np.float16(v)) if name == "float16" else v for v, name in zip(ident, accs))
    seed = ident if init is None else tuple(dt.type(np.asarray(v).astype(dt)) for dt, v in zip(acc_np, init))
    xs, fin = zip(*(_to_storage(a) for a in arrays))
    outs = [np.empty(n, a.dtype) for a in arrays]
    ys = tuple(_to_storage(y)[0] for y in outs)
    facc = tuple(HALF if name == "float16" else PLAIN for name in accs)
    fmts = (tuple(fin), facc, tuple(fin))
    try:
        if n:
            if offsets is not None:
                starts = np.ascontiguousarray(_host(offsets), dtype=np.int64)
                kernel = pk.segmented_offsets_user if user else pk.segmented_offsets
                call(kernel, tuple(xs), ys, op_value, fmts, ident, seed, init is not None, starts, inclusive, reverse)
            else:
                by_keys = keys is not None
                heads = np.ascontiguousarray(_host(keys if by_keys else flags))
                if heads.dtype == np.float16:
                    heads = heads.astype(np.float32)
                kernel = pk.segmented_heads_user if user else pk.segmented_heads
                call(kernel, tuple(xs), ys, op_value, fmts, ident, seed, init is not None, heads, by_keys, inclusive,
                     reverse)
    except NumbaError:  # a user combine Numba cannot type
        if not user:
            raise
        monoids.mark_failed(monoid, len(arrays), reverse)
        return None
    return tuple(outs) if struct else outs[0]


# ---------------------------------------------------------------------------
# Linear recurrences.

def _lanes_view(a: np.ndarray, axis: int):
    """``a`` as ``(outer, n, inner)`` around ``axis`` (a copy only where strides forbid a view)."""
    v = _try_lanes_view(a, axis)
    if v is None:
        v = np.ascontiguousarray(a).reshape(math.prod(a.shape[:axis]), a.shape[axis], -1)
    return v


def _try_lanes_view(a: np.ndarray, axis: int):
    """``a`` as an ``(outer, n, inner)`` view, or None where its strides forbid one."""
    v = a.view()
    try:
        v.shape = (math.prod(a.shape[:axis]), a.shape[axis], math.prod(a.shape[axis + 1:]))
    except AttributeError:
        return None
    return v


def _recurrence_operands(a, b, axis):
    """``a`` and ``b`` broadcast to one shape in the recurrence's working dtype (float16
    in float32), the time axis made non-negative, and the result dtype."""
    a, b = _host(a), _host(b)
    dtype = np.result_type(a.dtype, b.dtype)
    shape = np.broadcast_shapes(a.shape, b.shape)
    work = np.dtype(np.float32) if dtype == np.float16 else dtype
    a = np.broadcast_to(a, shape)
    b = np.broadcast_to(b, shape)
    if a.dtype != work:
        a = a.astype(work)
    if b.dtype != work:
        b = b.astype(work)
    return a, b, axis % len(shape), dtype


def linear_recurrence(a, b, *, init=None, axis=-1, reverse=False):
    a, b, ax, dtype = _recurrence_operands(a, b, axis)
    lane_shape = a.shape[:ax] + a.shape[ax + 1:]
    h = np.empty(a.shape, a.dtype)
    seeds = np.zeros(lane_shape, a.dtype) if init is None else np.broadcast_to(_host(init).astype(a.dtype), lane_shape)
    seeds = np.ascontiguousarray(seeds)
    if h.size:
        _over_lanes(a, b, (h, seeds), ax, reverse, _recurrence_views)
    return h.astype(np.float16) if dtype == np.float16 else h


def linear_recurrence_total(a, b, *, axis=-1, reverse=False):
    """Each lane's map ``h_in -> A h_in + B`` of the recurrence over the whole axis:
    ``(A, B)``, arrays of the lane shape in the working dtype (float16 in float32), from
    one read of ``a`` and ``b``: the product of ``a``, the last step from a zero start."""
    a, b, ax, _ = _recurrence_operands(a, b, axis)
    lane_shape = a.shape[:ax] + a.shape[ax + 1:]
    product, state = np.ones(lane_shape, a.dtype), np.zeros(lane_shape, a.dtype)
    if a.size:
        _over_lanes(a, b, (product, state), ax, reverse, _total_views)
    return product, state


def _over_lanes(a, b, outputs, axis, reverse, run):
    """``run(av, bv, outputs, reverse)`` on ``(outer, n, inner)`` views of ``a`` and ``b``
    (``outputs``: arrays of a's shape or of the lane shape, reshaped by ``run``);
    coefficients broadcast over dims that no such view covers (a per-channel decay
    against a batch) are read in place, one call per index of the leading axis, never
    copied."""
    av, bv = _try_lanes_view(a, axis), _try_lanes_view(b, axis)
    if (av is None or bv is None) and axis > 0:
        for i in range(a.shape[0]):
            _over_lanes(a[i], b[i], tuple(o[i] for o in outputs), axis - 1, reverse, run)
        return
    av = av if av is not None else _lanes_view(a, axis)
    bv = bv if bv is not None else _lanes_view(b, axis)
    run(av, bv, outputs, axis, reverse)


def _recurrence_views(av, bv, outputs, axis, reverse):
    from . import primitive_kernels as pk

    h, seeds = outputs
    hv = _lanes_view(h, axis)
    outer, _, inner = hv.shape
    seeds = seeds.reshape(outer, inner)
    if inner == 1:
        step = -1 if reverse else 1
        call(pk.recurrence_lanes, av[:, ::step, 0], bv[:, ::step, 0], hv[:, ::step, 0], seeds[:, 0])
    else:
        call(pk.recurrence_rows, av, bv, hv, seeds, reverse)


def _total_views(av, bv, outputs, axis, reverse):
    from . import primitive_kernels as pk

    outer, _, inner = av.shape
    product, state = (o.view() for o in outputs)
    product.shape = state.shape = (outer, inner)  # views (the lane arrays are contiguous): written in place
    if inner == 1:
        step = -1 if reverse else 1
        call(pk.recurrence_total_lanes, av[:, ::step, 0], bv[:, ::step, 0], product[:, 0], state[:, 0])
    else:
        call(pk.recurrence_total_rows, av, bv, product, state, reverse)


# ---------------------------------------------------------------------------
# Delta coding.

def _delta_views(x: np.ndarray, tuple_size: int, axis: int):
    v = _lanes_view(x, axis)
    outer, n, inner = v.shape
    try:
        w = v.view()
        w.shape = (outer, n // tuple_size, tuple_size * inner)
    except AttributeError:
        w = np.ascontiguousarray(v).reshape(outer, n // tuple_size, tuple_size * inner)
    return w


def delta_encode(x, order=1, tuple_size=1, axis=-1):
    from . import primitive_kernels as pk

    x = _host(x)
    ax = axis % x.ndim
    d = np.empty(x.shape, x.dtype)
    if not d.size:
        return d
    xs, fmt = _to_storage(x)
    ds, _ = _to_storage(d)
    xv, dv = _delta_views(xs, tuple_size, ax), _delta_views(ds, tuple_size, ax)
    remaining = order
    while remaining:  # orders compose: at most MAX_STATIC_ORDER per pass
        q = min(remaining, MAX_STATIC_ORDER)
        if xv.shape[2] == 1:
            call(pk.delta_lanes, xv[:, :, 0], dv[:, :, 0], fmt, StaticInt(q))
        else:
            call(pk.delta_rows, xv, dv, fmt, StaticInt(q))
        remaining -= q
        if remaining:
            xv = dv.copy()
    return d


def delta_decode(d, order=1, tuple_size=1, axis=-1):
    from .scan import scan_arrays

    d = _host(d)
    return scan_arrays(d, "add", order=order, tuple_size=tuple_size, axis=axis % d.ndim)
