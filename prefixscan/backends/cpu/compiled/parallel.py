"""A multi-threaded order-1 scan of one long lane (scan, then fix up).

The lane is cut into one piece per thread; every thread scans its piece as if
it were the whole lane (the kernels release the GIL), then the end states are
chained in order and every piece but the first is fixed up, ``y = carry (+) y``,
again one slice per thread (the scan-then-propagate scheme of Sengupta et al.
2007 with one block per core).  Memory traffic grows by half a pass for two
threads, so the threaded scan pays only where the single-threaded one is bound
by computation rather than memory; :func:`worth_it` encodes the measurement
(docs/design/cpu_compiled.md): on the 2-core CI machine it did not pay, and
``MIN_SIZE`` is None there.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

from numba import njit

from .jit_support import combine, load2, store2, to_acc
from .kernels import _lane_order1
from .launch import call

__all__ = ["scan_lane_threaded", "worth_it", "MIN_SIZE", "THREADS"]

#: Lanes at least this long run threaded; None: never (the measured choice here).
MIN_SIZE: int | None = None
THREADS = max(1, min(8, os.cpu_count() or 1))

_POOL: ThreadPoolExecutor | None = None


def worth_it(n: int, lanes: int, order: int) -> bool:
    return MIN_SIZE is not None and THREADS > 1 and lanes == 1 and order == 1 and n >= MIN_SIZE


def _piece(xs, ys, op, fmts, ident, seed, seeded, inclusive):
    """Scan the single row of ``xs`` into ``ys``; returns the end state."""
    return _lane_order1(xs, ys, op, fmts, ident, seed, seeded, inclusive, 0, xs[0].shape[1])


def _fix(ys, op, fmts, ident, carry):
    """``y = carry (+) y`` along the single row of ``ys`` (``carry`` on the left)."""
    fout, facc = fmts[2], fmts[1]
    for i in range(ys[0].shape[1]):
        store2(ys, fout, to_acc(combine(op, carry, load2(ys, fout, 0, i)), ident, facc), 0, i)


_piece_cached = njit(cache=True, nogil=True, error_model="numpy")(_piece)
_piece_user = njit(nogil=True, error_model="numpy")(_piece)
_fix_cached = njit(cache=True, nogil=True, error_model="numpy")(_fix)
_fix_user = njit(nogil=True, error_model="numpy")(_fix)


def _join(op, a, b):
    return combine(op, a, b)


_combine_cached = njit(cache=True, error_model="numpy")(_join)
_combine_user = njit(error_model="numpy")(_join)


def scan_lane_threaded(xs, ys, op, user, fmts, ident, seed, seeded, inclusive, threads=None):
    """The scan of the ``(1, n)`` views, ``threads`` pieces at a time."""
    global _POOL
    threads = threads or THREADS
    if _POOL is None:
        _POOL = ThreadPoolExecutor(max_workers=max(1, THREADS - 1), thread_name_prefix="prefixscan")
    piece, fix = (_piece_user, _fix_user) if user else (_piece_cached, _fix_cached)
    n = xs[0].shape[1]
    bounds = [n * t // threads for t in range(threads + 1)]

    def views(arrays, t):
        return tuple(a[:, bounds[t]:bounds[t + 1]] for a in arrays)

    jobs = [_POOL.submit(call, piece, views(xs, t), views(ys, t), op, fmts, ident, ident, False, inclusive)
            for t in range(1, threads)]
    carry = call(piece, views(xs, 0), views(ys, 0), op, fmts, ident, seed, seeded, inclusive)
    ends = [job.result() for job in jobs]
    joins = _combine_user if user else _combine_cached
    carries = []
    for end in ends:
        carries.append(carry)
        carry = call(joins, op, carry, end)
    # Pieces 1.. are fixed up in ``threads`` slices each, the last slice on this thread.
    slices = []
    for t, c in zip(range(1, threads), carries):
        lo, hi = bounds[t], bounds[t + 1]
        for s in range(threads):
            a, b = lo + (hi - lo) * s // threads, lo + (hi - lo) * (s + 1) // threads
            slices.append((tuple(y[:, a:b] for y in ys), c))
    fixes = [_POOL.submit(call, fix, v, op, fmts, ident, c) for v, c in slices[:-1]]
    call(fix, slices[-1][0], op, fmts, ident, slices[-1][1])
    for job in fixes:
        job.result()
