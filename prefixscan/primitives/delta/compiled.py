"""The compiled CPU pass of delta coding (Numba): its drivers (host arrays in,
NumPy arrays out, arguments checked by the public API) and kernels.

Encoding recomputes the q-th difference of each element from the q elements
before it (a triangle of subtractions in registers), so there is no
loop-carried state and the loop vectorises; the results are bit-identical to q
passes of ``d[j] -= d[j - s]``.  Orders above
:data:`~prefixscan.backends.cpu.compiled.scan.MAX_STATIC_ORDER` run as several
passes (orders compose).  Decoding is the order-q sum scan of
:mod:`prefixscan.backends.cpu.compiled.kernels`.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ...backends.cpu.compiled.jit_support import StaticInt, difference, store1, window_lane, window_rows
from ...backends.cpu.compiled.launch import call
from ...backends.cpu.compiled.scan import MAX_STATIC_ORDER, scan_arrays
from ...backends.cpu.compiled.views import host_array, lanes_view, to_storage

__all__ = ["delta_encode", "delta_decode"]


def _delta_lanes(x, d, fmt, order):
    """q-th order differences of every row of the 2-D ``x`` (rows: lanes)."""
    lanes, n = x.shape
    head = min(n, order)
    for lane in range(lanes):
        for t in range(head):
            store1((d[lane],), (fmt,), (difference(window_lane(x, fmt, lane, t, order, True), fmt),), t)
        for t in range(head, n):
            store1((d[lane],), (fmt,), (difference(window_lane(x, fmt, lane, t, order, False), fmt),), t)


def _delta_rows(x, d, fmt, order):
    """q-th order differences along the middle axis of ``(outer, rows, width)`` arrays."""
    outer, rows, width = x.shape
    head = min(rows, order)
    for o in range(outer):
        for t in range(head):
            for c in range(width):
                w = window_rows(x, fmt, o, t, c, order, True)
                store1((d[o, t],), (fmt,), (difference(w, fmt),), c)
        for t in range(head, rows):
            for c in range(width):
                w = window_rows(x, fmt, o, t, c, order, False)
                store1((d[o, t],), (fmt,), (difference(w, fmt),), c)


delta_lanes = njit(cache=True, nogil=True, error_model="numpy")(_delta_lanes)
delta_rows = njit(cache=True, nogil=True, error_model="numpy")(_delta_rows)


def _delta_views(x: np.ndarray, tuple_size: int, axis: int):
    v = lanes_view(x, axis)
    outer, n, inner = v.shape
    try:
        w = v.view()
        w.shape = (outer, n // tuple_size, tuple_size * inner)
    except AttributeError:
        w = np.ascontiguousarray(v).reshape(outer, n // tuple_size, tuple_size * inner)
    return w


def delta_encode(x, order=1, tuple_size=1, axis=-1):
    x = host_array(x)
    ax = axis % x.ndim
    d = np.empty(x.shape, x.dtype)
    if not d.size:
        return d
    xs, fmt = to_storage(x)
    ds, _ = to_storage(d)
    # Passes of at most MAX_STATIC_ORDER orders (orders compose), each from the last
    # one's output into the other of two buffers, so that the last writes d: a pass
    # reads elements behind the ones it writes, so it cannot run in place.
    passes = -(-order // MAX_STATIC_ORDER)
    targets = [_delta_views(ds, tuple_size, ax)]
    if passes > 1:
        targets.append(_delta_views(to_storage(np.empty_like(d))[0], tuple_size, ax))
    source, remaining = _delta_views(xs, tuple_size, ax), order
    for p in range(passes):
        q = min(remaining, MAX_STATIC_ORDER)
        target = targets[(passes - 1 - p) % 2]  # the last pass writes d
        if source.shape[2] == 1:
            call(delta_lanes, source[:, :, 0], target[:, :, 0], fmt, StaticInt(q))
        else:
            call(delta_rows, source, target, fmt, StaticInt(q))
        source, remaining = target, remaining - q
    return d


def delta_decode(d, order=1, tuple_size=1, axis=-1):
    d = host_array(d)
    return scan_arrays(d, "add", order=order, tuple_size=tuple_size, axis=axis % d.ndim)
