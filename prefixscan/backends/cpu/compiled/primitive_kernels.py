"""Single-pass kernels of the scan primitives (segmented scans, linear recurrences,
delta coding); the drivers are in :mod:`.primitives` (compaction: :mod:`.compaction`).

* Segmented scans restart the carry at each head: by offsets, segment by segment
  (no per-element test); by flags or keys, with a select instead of a branch so
  random heads cost no mispredictions (the operator lifted to (flag, value)
  pairs of Schwartz 1980 / Blelloch 1990, section 1.5, run serially).
* Linear recurrences run the affine monoid in groups of four: the local
  compositions do not wait for the carry, so the loop-carried chain is one
  multiply-add per group (the same re-association as :mod:`.kernels`).  Their
  totals (each lane's map ``h -> A h + B``, the reduce step of a recurrence held
  in pieces) read ``a`` and ``b`` once and write only the lanes' ``A`` and ``B``.
* Delta coding recomputes the q-th difference of each element from the q
  elements before it (a triangle of subtractions in registers), so there is no
  loop-carried state and the loop vectorises; the results are bit-identical to
  q passes of ``d[j] -= d[j - s]``.
"""

from __future__ import annotations

from numba import njit

from .jit_support import combine, difference, load1, store1, to_acc, window_lane, window_rows

__all__ = ["segmented_offsets", "segmented_heads", "recurrence_lanes", "recurrence_rows",
           "recurrence_total_lanes", "recurrence_total_rows", "delta_lanes", "delta_rows"]


def _segmented_offsets(xs, ys, op, fmts, ident, seed, seeded, starts, inclusive, reverse):
    """Segments ``[starts[i], starts[i+1])`` (the last one ends at n), each started
    from ``seed`` (``seeded`` False: the identity, never combined)."""
    fin, facc, fout = fmts[0], fmts[1], fmts[2]
    n = xs[0].shape[0]
    count = starts.shape[0]
    for seg in range(count):
        a = starts[seg]
        b = starts[seg + 1] if seg + 1 < count else n
        state = seed
        for t in range(b - a):
            i = b - 1 - t if reverse else a + t
            v = to_acc(load1(xs, fin, i), ident, facc)
            if t == 0 and inclusive and not seeded:
                nxt = v
            else:
                nxt = to_acc(combine(op, state, v), ident, facc)
            store1(ys, fout, nxt if inclusive else state, i)
            state = nxt


def _segmented_heads(xs, ys, op, fmts, ident, seed, seeded, heads, by_keys, inclusive, reverse):
    """Heads from a bool array (``by_keys`` False) or where a key differs from the one
    before; each segment starts from ``seed`` (``seeded`` False: the identity)."""
    fin, facc, fout = fmts[0], fmts[1], fmts[2]
    n = xs[0].shape[0]
    state = ident
    for t in range(n):
        i = n - 1 - t if reverse else t
        # The element that starts this (possibly reversed) segment.
        j = i + 1 if reverse else i
        if j == 0 or j == n:
            head = True
        elif by_keys:
            head = heads[j] != heads[j - 1]
        else:
            head = heads[j] != 0
        v = to_acc(load1(xs, fin, i), ident, facc)
        merged = to_acc(combine(op, state, v), ident, facc)
        carried = seed if head else state
        if head:
            nxt = to_acc(combine(op, seed, v), ident, facc) if seeded else v
        else:
            nxt = merged
        store1(ys, fout, nxt if inclusive else carried, i)
        state = nxt


def _recurrence_lanes(a, b, h, seeds):
    """``h[l, t] = a[l, t] h[l, t-1] + b[l, t]`` for every lane l (rows flipped for reverse)."""
    lanes, n = b.shape
    for lane in range(lanes):
        state = seeds[lane]
        groups = n // 4
        for g in range(groups):
            p = 4 * g
            a0, a1, a2, a3 = a[lane, p], a[lane, p + 1], a[lane, p + 2], a[lane, p + 3]
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
            state = h.dtype.type(a[lane, p] * state + b[lane, p])
            h[lane, p] = state


def _recurrence_rows(a, b, h, seeds, reverse):
    """The recurrence along the middle axis of ``(outer, rows, width)`` arrays, vectorised across a row."""
    outer, rows, width = b.shape
    for o in range(outer):
        for t in range(rows):
            r = rows - 1 - t if reverse else t
            prev = rows - t if reverse else t - 1
            for c in range(width):
                carry = seeds[o, c] if t == 0 else h[o, prev, c]
                h[o, r, c] = a[o, r, c] * carry + b[o, r, c]


def _recurrence_total_lanes(a, b, product, state):
    """Each lane's map ``h -> product * h + state`` over its whole row (rows flipped
    for reverse): the running product of ``a`` and the recurrence from zero, not stored."""
    lanes, n = b.shape
    for lane in range(lanes):
        p = product.dtype.type(1)
        s = state.dtype.type(0)
        groups = n // 4
        for g in range(groups):
            q = 4 * g
            a0, a1, a2, a3 = a[lane, q], a[lane, q + 1], a[lane, q + 2], a[lane, q + 3]
            A = a3 * a2 * (a1 * a0)
            B = a3 * (a2 * (a1 * b[lane, q] + b[lane, q + 1]) + b[lane, q + 2]) + b[lane, q + 3]
            s = state.dtype.type(A * s + B)
            p = product.dtype.type(p * A)
        for q in range(4 * groups, n):
            s = state.dtype.type(a[lane, q] * s + b[lane, q])
            p = product.dtype.type(p * a[lane, q])
        product[lane] = p
        state[lane] = s


def _recurrence_total_rows(a, b, product, state, reverse):
    """The maps of the recurrence along the middle axis of ``(outer, rows, width)``
    arrays into ``(outer, width)`` arrays, vectorised across a row."""
    outer, rows, width = b.shape
    for o in range(outer):
        for c in range(width):
            product[o, c] = 1
            state[o, c] = 0
        for t in range(rows):
            r = rows - 1 - t if reverse else t
            for c in range(width):
                state[o, c] = a[o, r, c] * state[o, c] + b[o, r, c]
                product[o, c] = product[o, c] * a[o, r, c]


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


segmented_offsets = njit(cache=True, nogil=True, error_model="numpy")(_segmented_offsets)
segmented_heads = njit(cache=True, nogil=True, error_model="numpy")(_segmented_heads)
segmented_offsets_user = njit(nogil=True, error_model="numpy")(_segmented_offsets)
segmented_heads_user = njit(nogil=True, error_model="numpy")(_segmented_heads)
recurrence_lanes = njit(cache=True, nogil=True, error_model="numpy")(_recurrence_lanes)
recurrence_rows = njit(cache=True, nogil=True, error_model="numpy")(_recurrence_rows)
recurrence_total_lanes = njit(cache=True, nogil=True, error_model="numpy")(_recurrence_total_lanes)
recurrence_total_rows = njit(cache=True, nogil=True, error_model="numpy")(_recurrence_total_rows)
delta_lanes = njit(cache=True, nogil=True, error_model="numpy")(_delta_lanes)
delta_rows = njit(cache=True, nogil=True, error_model="numpy")(_delta_rows)
