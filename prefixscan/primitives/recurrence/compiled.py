"""The compiled CPU pass of the linear recurrence (Numba): its drivers (host arrays
in, NumPy arrays out, arguments checked by the public API) and kernels.

The recurrence runs the affine monoid in groups of four: the local compositions
do not wait for the carry, so the loop-carried chain is one multiply-add per
group (the same re-association as
:mod:`prefixscan.backends.cpu.compiled.kernels`).  Its totals (each lane's map
``h -> A h + B``, the reduce step of a recurrence held in pieces) read ``a`` and
``b`` once and write only the lanes' ``A`` and ``B``.  Coefficients broadcast
over an axis (a per-channel decay) are read in place, never copied.  With log
decays (``log``) each coefficient is taken through ``exp`` where it is read (no
array of decays is made), and a lane's total holds the sum of its log decays.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ...backends.cpu.compiled.launch import call
from ...backends.cpu.compiled.views import host_array, lanes_view, try_lanes_view

__all__ = ["linear_recurrence", "linear_recurrence_total"]


def _recurrence_lanes(a, b, h, seeds, log):
    """``h[l, t] = a[l, t] h[l, t-1] + b[l, t]`` for every lane l (rows flipped for reverse);
    ``log``: ``a`` holds log decays, each taken through ``exp`` where it is read."""
    lanes, n = b.shape
    for lane in range(lanes):
        state = seeds[lane]
        groups = n // 4
        for g in range(groups):
            p = 4 * g
            a0, a1, a2, a3 = a[lane, p], a[lane, p + 1], a[lane, p + 2], a[lane, p + 3]
            if log:
                a0, a1, a2, a3 = np.exp(a0), np.exp(a1), np.exp(a2), np.exp(a3)
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
            coef = np.exp(a[lane, p]) if log else a[lane, p]
            state = h.dtype.type(coef * state + b[lane, p])
            h[lane, p] = state


def _recurrence_rows(a, b, h, seeds, reverse, log):
    """The recurrence along the middle axis of ``(outer, rows, width)`` arrays, vectorised across a row."""
    outer, rows, width = b.shape
    for o in range(outer):
        for t in range(rows):
            r = rows - 1 - t if reverse else t
            prev = rows - t if reverse else t - 1
            for c in range(width):
                carry = seeds[o, c] if t == 0 else h[o, prev, c]
                coef = np.exp(a[o, r, c]) if log else a[o, r, c]
                h[o, r, c] = coef * carry + b[o, r, c]


def _recurrence_total_lanes(a, b, product, state, log):
    """Each lane's map ``h -> product * h + state`` over its whole row (rows flipped
    for reverse): the running product of ``a`` and the recurrence from zero, not stored.
    ``log``: ``a`` holds log decays, and ``product`` is their sum (the log of the product)."""
    lanes, n = b.shape
    for lane in range(lanes):
        p = product.dtype.type(0 if log else 1)
        s = state.dtype.type(0)
        groups = n // 4
        for g in range(groups):
            q = 4 * g
            a0, a1, a2, a3 = a[lane, q], a[lane, q + 1], a[lane, q + 2], a[lane, q + 3]
            if log:
                L = a3 + a2 + (a1 + a0)
                A = np.exp(L)
                a1, a2, a3 = np.exp(a1), np.exp(a2), np.exp(a3)
            else:
                L = a0  # unused
                A = a3 * a2 * (a1 * a0)
            B = a3 * (a2 * (a1 * b[lane, q] + b[lane, q + 1]) + b[lane, q + 2]) + b[lane, q + 3]
            s = state.dtype.type(A * s + B)
            p = product.dtype.type(p + L) if log else product.dtype.type(p * A)
        for q in range(4 * groups, n):
            coef = np.exp(a[lane, q]) if log else a[lane, q]
            s = state.dtype.type(coef * s + b[lane, q])
            p = product.dtype.type(p + a[lane, q]) if log else product.dtype.type(p * a[lane, q])
        product[lane] = p
        state[lane] = s


def _recurrence_total_rows(a, b, product, state, reverse, log):
    """The maps of the recurrence along the middle axis of ``(outer, rows, width)``
    arrays into ``(outer, width)`` arrays, vectorised across a row (``log``: as in
    :func:`_recurrence_total_lanes`)."""
    outer, rows, width = b.shape
    for o in range(outer):
        for c in range(width):
            product[o, c] = 0 if log else 1
            state[o, c] = 0
        for t in range(rows):
            r = rows - 1 - t if reverse else t
            for c in range(width):
                if log:
                    state[o, c] = np.exp(a[o, r, c]) * state[o, c] + b[o, r, c]
                    product[o, c] = product[o, c] + a[o, r, c]
                else:
                    state[o, c] = a[o, r, c] * state[o, c] + b[o, r, c]
                    product[o, c] = product[o, c] * a[o, r, c]


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
        _over_lanes(a, b, (h, seeds), ax, (reverse, bool(log_space)), _recurrence_views)
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
        _over_lanes(a, b, (product, state), ax, (reverse, bool(log_space)), _total_views)
    return product, state


def _over_lanes(a, b, outputs, axis, flags, run):
    """``run(av, bv, outputs, axis, flags)`` (``flags``: ``(reverse, log)``) on ``(outer, n, inner)`` views of ``a`` and ``b``
    (``outputs``: arrays of a's shape or of the lane shape, reshaped by ``run``);
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
    reverse, log = flags
    h, seeds = outputs
    hv = lanes_view(h, axis)
    outer, _, inner = hv.shape
    seeds = seeds.reshape(outer, inner)
    if inner == 1:
        step = -1 if reverse else 1
        call(recurrence_lanes, av[:, ::step, 0], bv[:, ::step, 0], hv[:, ::step, 0], seeds[:, 0], log)
    else:
        call(recurrence_rows, av, bv, hv, seeds, reverse, log)


def _total_views(av, bv, outputs, axis, flags):
    reverse, log = flags
    outer, _, inner = av.shape
    product, state = (o.view() for o in outputs)
    product.shape = state.shape = (outer, inner)  # views (the lane arrays are contiguous): written in place
    if inner == 1:
        step = -1 if reverse else 1
        call(recurrence_total_lanes, av[:, ::step, 0], bv[:, ::step, 0], product[:, 0], state[:, 0], log)
    else:
        call(recurrence_total_rows, av, bv, product, state, reverse, log)
