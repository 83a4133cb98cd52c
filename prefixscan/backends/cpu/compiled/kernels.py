"""Single-pass scan kernels: one read and one write per element, any monoid.

Every scan is a scan along the middle axis of an ``(outer, rows, width)`` view
(``rows = n / s``, ``width = s * inner``; docs/design/cpu_compiled.md):

* :func:`scan_lanes` (``width == 1``: contiguous lanes).  Order 1 runs the
  chain in groups of four: a local scan of the group (three combines that do
  not wait for the carry) and the carry applied to each element, so the only
  loop-carried dependency is one combine per group instead of one per element
  (the same re-association that the GPU's per-thread serial scan makes before
  its warp scan; Merrill & Garland 2016, section 4).  Order q keeps the q
  running states of one stream in registers (the carry of orders) and passes
  each element through them.
* :func:`scan_rows` (``width > 1``: tuple streams and lanes along a strided
  axis): rows are combined elementwise with the previous row's states, so the
  work is vectorised across the row and memory is read in row order, without a
  transposing copy.  The states of a chunk of columns stay in L1.

Reverse scans walk the rows from the end and combine with the operands
swapped (the caller passes the swapped operator for non-commutative monoids).
``out`` may be ``x`` itself: every element is read before it is written.
"""

from __future__ import annotations

from numba import njit

from .jit_support import (advance, alloc_states, combine, fast_combine, literal_jitable, load2, load3, nan_free,
                          narrow_first, narrow_row, narrow_states, repeat, store2, store3, to_acc)

__all__ = ["scan_lanes", "scan_lanes_orders", "scan_rows", "scan_lanes_user", "scan_lanes_orders_user",
           "scan_rows_user", "scan_narrow", "scan_narrow_user", "COLUMN_CHUNK", "NARROW"]

# Columns whose states stay in cache while the rows of a chunk stream by.
COLUMN_CHUNK = 8192
# Rows of at most this many columns (times the order) keep their states in registers.
NARROW = 16


# Compiled per literal ``inclusive`` (one branch-free loop per flavour).
@literal_jitable
def _lane_order1(xs, ys, op, fmts, ident, seed, seeded, inclusive, lane, n):
    fin, facc, fout = fmts[0], fmts[1], fmts[2]
    state = ident
    t0 = 0
    if seeded:
        state = seed
    elif inclusive and n > 0:
        state = to_acc(load2(xs, fin, lane, 0), ident, facc)
        store2(ys, fout, state, lane, 0)
        t0 = 1
    groups = (n - t0) // 4
    for g in range(groups):
        p = t0 + 4 * g
        v0 = to_acc(load2(xs, fin, lane, p), ident, facc)
        v1 = to_acc(load2(xs, fin, lane, p + 1), ident, facc)
        v2 = to_acc(load2(xs, fin, lane, p + 2), ident, facc)
        v3 = to_acc(load2(xs, fin, lane, p + 3), ident, facc)
        if nan_free(op, v0, v1, v2, v3):  # float max/min: the hardware's select is exact here
            l1 = fast_combine(op, v0, v1)
            l2 = fast_combine(op, l1, v2)
            l3 = fast_combine(op, l2, v3)
            if inclusive:
                store2(ys, fout, fast_combine(op, state, v0), lane, p)
                store2(ys, fout, fast_combine(op, state, l1), lane, p + 1)
                store2(ys, fout, fast_combine(op, state, l2), lane, p + 2)
                state = fast_combine(op, state, l3)
                store2(ys, fout, state, lane, p + 3)
            else:
                store2(ys, fout, state, lane, p)
                store2(ys, fout, fast_combine(op, state, v0), lane, p + 1)
                store2(ys, fout, fast_combine(op, state, l1), lane, p + 2)
                store2(ys, fout, fast_combine(op, state, l2), lane, p + 3)
                state = fast_combine(op, state, l3)
            continue
        l1 = to_acc(combine(op, v0, v1), ident, facc)
        l2 = to_acc(combine(op, l1, v2), ident, facc)
        l3 = to_acc(combine(op, l2, v3), ident, facc)
        if inclusive:
            store2(ys, fout, to_acc(combine(op, state, v0), ident, facc), lane, p)
            store2(ys, fout, to_acc(combine(op, state, l1), ident, facc), lane, p + 1)
            store2(ys, fout, to_acc(combine(op, state, l2), ident, facc), lane, p + 2)
            state = to_acc(combine(op, state, l3), ident, facc)
            store2(ys, fout, state, lane, p + 3)
        else:
            store2(ys, fout, state, lane, p)
            store2(ys, fout, to_acc(combine(op, state, v0), ident, facc), lane, p + 1)
            store2(ys, fout, to_acc(combine(op, state, l1), ident, facc), lane, p + 2)
            store2(ys, fout, to_acc(combine(op, state, l2), ident, facc), lane, p + 3)
            state = to_acc(combine(op, state, l3), ident, facc)
    for p in range(t0 + 4 * groups, n):
        v = to_acc(load2(xs, fin, lane, p), ident, facc)
        nxt = to_acc(combine(op, state, v), ident, facc)
        store2(ys, fout, nxt if inclusive else state, lane, p)
        state = nxt
    return state


@literal_jitable
def _lane_orders(xs, ys, op, fmts, ident, seed, seeded, inclusive, lane, n, order):
    fin, facc, fout = fmts[0], fmts[1], fmts[2]
    states = repeat(ident, order)
    t0 = 0
    if seeded:
        states = repeat(seed, order)
    elif inclusive and n > 0:
        first = to_acc(load2(xs, fin, lane, 0), ident, facc)
        states = repeat(first, order)
        store2(ys, fout, first, lane, 0)
        t0 = 1
    for p in range(t0, n):
        states, v = advance(op, states, to_acc(load2(xs, fin, lane, p), ident, facc), ident, facc, inclusive)
        store2(ys, fout, v, lane, p)


def _scan_lanes(xs, ys, op, fmts, ident, seeds, flags, order):
    """Scan every row of the 2-D ``(lanes, n)`` arrays of ``xs`` into ``ys`` (a
    reverse scan arrives as views with the rows flipped)."""
    seeded, inclusive = flags[0], flags[1]
    lanes, n = xs[0].shape
    for lane in range(lanes):
        seed = load2(seeds, fmts[3], lane, 0) if seeded else ident
        if inclusive:
            _lane_order1(xs, ys, op, fmts, ident, seed, seeded, True, lane, n)
        else:
            _lane_order1(xs, ys, op, fmts, ident, seed, seeded, False, lane, n)


def _scan_lanes_orders(xs, ys, op, fmts, ident, seeds, flags, order):
    """:func:`_scan_lanes` for an order above one."""
    seeded, inclusive = flags[0], flags[1]
    lanes, n = xs[0].shape
    for lane in range(lanes):
        seed = load2(seeds, fmts[3], lane, 0) if seeded else ident
        if inclusive:
            _lane_orders(xs, ys, op, fmts, ident, seed, seeded, True, lane, n, order)
        else:
            _lane_orders(xs, ys, op, fmts, ident, seed, seeded, False, lane, n, order)


def _scan_rows(xs, ys, op, fmts, ident, seeds, flags, order):
    """Scan the ``(outer, rows, width)`` arrays of ``xs`` along their middle axis, a
    chunk of columns at a time (the chunk's states stay in L1)."""
    seeded, inclusive, reverse = flags
    fin, facc, fout, fstate = fmts[0], fmts[1], fmts[2], fmts[3]
    outer, rows, width = xs[0].shape
    chunk = min(width, COLUMN_CHUNK // order)
    states = alloc_states(ident, order, chunk)
    for o in range(outer):
        for c0 in range(0, width, chunk):
            cw = min(chunk, width - c0)
            t0 = 0
            if seeded or not inclusive:
                for c in range(cw):
                    v = load2(seeds, fstate, o, c0 + c) if seeded else ident
                    for k in range(order):
                        store2(states, fstate, v, k, c)
            elif rows > 0:
                r = rows - 1 if reverse else 0
                for c in range(cw):
                    v = to_acc(load3(xs, fin, o, r, c0 + c), ident, facc)
                    for k in range(order):
                        store2(states, fstate, v, k, c)
                    store3(ys, fout, v, o, r, c0 + c)
                t0 = 1
            if inclusive:
                for t in range(t0, rows):
                    r = rows - 1 - t if reverse else t
                    for c in range(cw):
                        v = to_acc(load3(xs, fin, o, r, c0 + c), ident, facc)
                        for k in range(order):
                            v = to_acc(combine(op, load2(states, fstate, k, c), v), ident, facc)
                            store2(states, fstate, v, k, c)
                        store3(ys, fout, v, o, r, c0 + c)
            else:
                for t in range(t0, rows):
                    r = rows - 1 - t if reverse else t
                    for c in range(cw):
                        v = to_acc(load3(xs, fin, o, r, c0 + c), ident, facc)
                        for k in range(order):
                            prev = load2(states, fstate, k, c)
                            store2(states, fstate, to_acc(combine(op, prev, v), ident, facc), k, c)
                            v = prev
                        store3(ys, fout, v, o, r, c0 + c)


def _scan_narrow(xs, ys, op, fmts, ident, seeds, flags, order, width):
    """:func:`_scan_rows` for rows of a few columns (``width`` a literal): every
    column's states stay in registers and a row is straight-line code."""
    seeded, inclusive, reverse = flags
    outer, rows = xs[0].shape[0], xs[0].shape[1]
    for o in range(outer):
        states = narrow_states(seeds, fmts, o, ident, width, order, seeded)
        t0 = 0
        if not seeded and inclusive and rows > 0:
            states = narrow_first(xs, ys, fmts, o, rows - 1 if reverse else 0, ident, width, order)
            t0 = 1
        # One loop per direction and flavour, each with literal flags (see _lane_order1).
        if inclusive and not reverse:
            for r in range(t0, rows):
                states = narrow_row(op, xs, ys, fmts, o, r, states, ident, True)
        elif inclusive:
            for t in range(t0, rows):
                states = narrow_row(op, xs, ys, fmts, o, rows - 1 - t, states, ident, True)
        elif not reverse:
            for r in range(t0, rows):
                states = narrow_row(op, xs, ys, fmts, o, r, states, ident, False)
        else:
            for t in range(t0, rows):
                states = narrow_row(op, xs, ys, fmts, o, rows - 1 - t, states, ident, False)


# Built-in operators (op is a Tag): cached on disk.  User monoids (op is a jitted
# function): compiled per process, since a cached kernel would be keyed on the
# function object.
scan_lanes = njit(cache=True, nogil=True, error_model="numpy")(_scan_lanes)
scan_lanes_orders = njit(cache=True, nogil=True, error_model="numpy")(_scan_lanes_orders)
scan_rows = njit(cache=True, nogil=True, error_model="numpy")(_scan_rows)
scan_lanes_user = njit(nogil=True, error_model="numpy")(_scan_lanes)
scan_lanes_orders_user = njit(nogil=True, error_model="numpy")(_scan_lanes_orders)
scan_rows_user = njit(nogil=True, error_model="numpy")(_scan_rows)
scan_narrow = njit(cache=True, nogil=True, error_model="numpy")(_scan_narrow)
scan_narrow_user = njit(nogil=True, error_model="numpy")(_scan_narrow)
