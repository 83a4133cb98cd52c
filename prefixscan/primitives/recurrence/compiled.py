"""The compiled CPU pass of the linear recurrence (Numba): its drivers (host arrays
in, NumPy arrays out, arguments checked by the public API) and kernels.

The recurrence runs the affine monoid in groups of four: the local compositions
do not wait for the carry, so the loop-carried chain is one multiply-add per
group (the same re-association as
:mod:`prefixscan.backends.cpu.compiled.kernels`).  Its totals (each lane's map
``h -> A h + B``, the reduce step of a recurrence held in pieces) read ``a`` and
``b`` once and write only the lanes' ``A`` and ``B``.  Coefficients broadcast
over an axis (a per-channel decay) are read in place, never copied.  With log
decays (the marker :data:`LOG`) each coefficient is taken through ``exp`` where
it is read (no array of decays is made), and a lane's total holds the sum of its
log decays.
"""

from __future__ import annotations

import numpy as np
from numba import njit
from numba.extending import overload

from ...backends.cpu.compiled.jit_support import Tag
from ...backends.cpu.compiled.launch import call
from ...backends.cpu.compiled.views import host_array, lanes_view, try_lanes_view

__all__ = ["linear_recurrence", "linear_recurrence_total"]


#: The form of the decays, a compile-time marker (one machine-code variant each, in
#: Numba's disk cache): ``a`` itself, or log decays taken through ``exp`` where read.
LINEAR = Tag("linear_decays")
LOG = Tag("log_decays")


def _is_log(kind) -> bool:
    return getattr(kind, "tag", None) == "log_decays"


def factor(coef, kind):
    """The decay ``coef`` as the factor it multiplies a state by: itself, or ``exp`` of its log."""
    return np.exp(coef) if kind is LOG else coef


def then(total, coef, kind):
    """A decay ``total`` followed by ``coef``: their product, or the sum of their logs."""
    return total + coef if kind is LOG else total * coef


def unit(kind):
    """The identity decay: 1, or its log 0."""
    return 0 if kind is LOG else 1


@overload(factor)
def _factor(coef, kind):
    if _is_log(kind):
        return lambda coef, kind: np.exp(coef)
    return lambda coef, kind: coef


@overload(then)
def _then(total, coef, kind):
    if _is_log(kind):
        return lambda total, coef, kind: total + coef
    return lambda total, coef, kind: total * coef


@overload(unit)
def _unit(kind):
    if _is_log(kind):
        return lambda kind: 0
    return lambda kind: 1


def _recurrence_lanes(a, b, h, seeds, kind):
    """``h[l, t] = a[l, t] h[l, t-1] + b[l, t]`` for every lane l (rows flipped for reverse);
    with ``kind`` LOG, ``exp(a[l, t])``."""
    lanes, n = b.shape
    for lane in range(lanes):
        state = seeds[lane]
        groups = n // 4
        for g in range(groups):
            p = 4 * g
            a0, a1 = factor(a[lane, p], kind), factor(a[lane, p + 1], kind)
            a2, a3 = factor(a[lane, p + 2], kind), factor(a[lane, p + 3], kind)
            b0, b1, b2, b3 = b[lane, p], b[lane, p + 1], b[lane, p + 2], b[lane, p + 3]
            # Local compositions (A_k, B_k): h_k = A_k * carry + B_k.
            A1 = a1 * a0
            B1 = a1 * b0 + b1
            A2 = a2 * A1
            B2 = a2 * B1 + b2
            A3 = a3 * A2
            B3 = a3 * B2 + b3
            h[lane, p] = a0 * state + b0
            h[lane, p + 1] = A1 * state + B1
            h[lane, p + 2] = A2 * state + B2
            state = h.dtype.type(A3 * state + B3)
            h[lane, p + 3] = state
        for p in range(4 * groups, n):
            state = h.dtype.type(factor(a[lane, p], kind) * state + b[lane, p])
            h[lane, p] = state


def _recurrence_rows(a, b, h, seeds, reverse, kind):
    """The recurrence along the middle axis of ``(outer, rows, width)`` arrays, vectorised across a row."""
    outer, rows, width = b.shape
    for o in range(outer):
        for t in range(rows):
            r = rows - 1 - t if reverse else t
            prev = rows - t if reverse else t - 1
            for c in range(width):
                carry = seeds[o, c] if t == 0 else h[o, prev, c]
                h[o, r, c] = factor(a[o, r, c], kind) * carry + b[o, r, c]


def _recurrence_total_lanes(a, b, product, state, kind):
    """Each lane's map ``h -> product * h + state`` over its whole row (rows flipped
    for reverse): the running product of ``a`` and the recurrence from zero, not stored;
    with ``kind`` LOG, ``product`` is the sum of the log decays (the log of the product)."""
    lanes, n = b.shape
    for lane in range(lanes):
        p = product.dtype.type(unit(kind))
        s = state.dtype.type(0)
        groups = n // 4
        for g in range(groups):
            q = 4 * g
            r0, r1, r2, r3 = a[lane, q], a[lane, q + 1], a[lane, q + 2], a[lane, q + 3]
            D = then(then(r3, r2, kind), then(r1, r0, kind), kind)  # the group's decay
            a1, a2, a3 = factor(r1, kind), factor(r2, kind), factor(r3, kind)
            B = a3 * (a2 * (a1 * b[lane, q] + b[lane, q + 1]) + b[lane, q + 2]) + b[lane, q + 3]
            s = state.dtype.type(factor(D, kind) * s + B)
            p = product.dtype.type(then(p, D, kind))
        for q in range(4 * groups, n):
            s = state.dtype.type(factor(a[lane, q], kind) * s + b[lane, q])
            p = product.dtype.type(then(p, a[lane, q], kind))
        product[lane] = p
        state[lane] = s


def _recurrence_total_rows(a, b, product, state, reverse, kind):
    """The maps of the recurrence along the middle axis of ``(outer, rows, width)``
    arrays into ``(outer, width)`` arrays, vectorised across a row."""
    outer, rows, width = b.shape
    for o in range(outer):
        for c in range(width):
            product[o, c] = unit(kind)
            state[o, c] = 0
        for t in range(rows):
            r = rows - 1 - t if reverse else t
            for c in range(width):
                state[o, c] = factor(a[o, r, c], kind) * state[o, c] + b[o, r, c]
                product[o, c] = then(product[o, c], a[o, r, c], kind)


recurrence_lanes = njit(cache=True, nogil=True, error_model="numpy")(_recurrence_lanes)
recurrence_rows = njit(cache=True, nogil=True, error_model="numpy")(_recurrence_rows)
recurrence_total_lanes = njit(cache=True, nogil=True, error_model="numpy")(_recurrence_total_lanes)
recurrence_total_rows = njit(cache=True, nogil=True, error_model="numpy")(_recurrence_total_rows)


def _recurrence_operands(a, b, axis):
    """``a`` and ``b`` broadcast to one shape in the recurrence's working dtype (float16
    in float32), the time axis made non-negative, and the result dtype."""
    a, b = host_array(a), host_array(b)
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


def linear_recurrence(a, b, *, init=None, axis=-1, reverse=False, log_space=False):
    """``h[t] = a[t] h[t-1] + b[t]`` along ``axis`` (``exp(a[t])`` for ``a[t]`` with
    ``log_space``), ``h[-1] = init``, as a new array of the result dtype."""
    a, b, ax, dtype = _recurrence_operands(a, b, axis)
    lane_shape = a.shape[:ax] + a.shape[ax + 1:]
    h = np.empty(a.shape, a.dtype)
    seeds = (np.zeros(lane_shape, a.dtype) if init is None
             else np.broadcast_to(host_array(init).astype(a.dtype), lane_shape))
    seeds = np.ascontiguousarray(seeds)
    if h.size:
        _over_lanes(a, b, (h, seeds), ax, (reverse, LOG if log_space else LINEAR), _recurrence_views)
    return h.astype(np.float16) if dtype == np.float16 else h


def linear_recurrence_total(a, b, *, axis=-1, reverse=False, log_space=False):
    """Each lane's map ``h_in -> A h_in + B`` of the recurrence over the whole axis:
    ``(A, B)``, arrays of the lane shape in the working dtype (float16 in float32), from
    one read of ``a`` and ``b``: the product of ``a`` (with ``log_space``, the sum of the
    log decays: ``A`` is a log too), the last step from a zero start."""
    a, b, ax, _ = _recurrence_operands(a, b, axis)
    lane_shape = a.shape[:ax] + a.shape[ax + 1:]
    product = np.zeros(lane_shape, a.dtype) if log_space else np.ones(lane_shape, a.dtype)
    state = np.zeros(lane_shape, a.dtype)
    if a.size:
        _over_lanes(a, b, (product, state), ax, (reverse, LOG if log_space else LINEAR), _total_views)
    return product, state


def _over_lanes(a, b, outputs, axis, flags, run):
    """``run(av, bv, outputs, axis, flags)`` (``flags``: ``(reverse, kind)``) on
    ``(outer, n, inner)`` views of ``a`` and ``b`` (``outputs``: arrays of a's shape or
    of the lane shape, reshaped by ``run``);
    coefficients broadcast over dims that no such view covers (a per-channel decay
    against a batch) are read in place, one call per index of the leading axis, never
    copied."""
    av, bv = try_lanes_view(a, axis), try_lanes_view(b, axis)
    if (av is None or bv is None) and axis > 0:
        for i in range(a.shape[0]):
            _over_lanes(a[i], b[i], tuple(o[i] for o in outputs), axis - 1, flags, run)
        return
    av = av if av is not None else lanes_view(a, axis)
    bv = bv if bv is not None else lanes_view(b, axis)
    run(av, bv, outputs, axis, flags)


def _recurrence_views(av, bv, outputs, axis, flags):
    reverse, kind = flags
    h, seeds = outputs
    hv = lanes_view(h, axis)
    outer, _, inner = hv.shape
    seeds = seeds.reshape(outer, inner)
    if inner == 1:
        step = -1 if reverse else 1
        call(recurrence_lanes, av[:, ::step, 0], bv[:, ::step, 0], hv[:, ::step, 0], seeds[:, 0], kind)
    else:
        call(recurrence_rows, av, bv, hv, seeds, reverse, kind)


def _total_views(av, bv, outputs, axis, flags):
    reverse, kind = flags
    outer, _, inner = av.shape
    product, state = (o.view() for o in outputs)
    product.shape = state.shape = (outer, inner)  # views (the lane arrays are contiguous): written in place
    if inner == 1:
        step = -1 if reverse else 1
        call(recurrence_total_lanes, av[:, ::step, 0], bv[:, ::step, 0], product[:, 0], state[:, 0], kind)
    else:
        call(recurrence_total_rows, av, bv, product, state, reverse, kind)
