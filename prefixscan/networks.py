"""Scan networks (circuits), evaluated level by level on NumPy arrays.

The constructions of Merrill & Grimshaw (2009) and Merrill & Garland (2016),
Fig. 1 ("Commonplace scan constructions"), in the seeds:

* ``serial``: the chained scan; size n-1, depth n-1.
* ``kogge_stone``: recursive doubling (Hillis-Steele); depth ceil(log2 n),
  size n*L - (2^L - 1) with L = ceil(log2 n).
* ``sklansky``: recursive scan-then-fan; depth ceil(log2 n), size (n/2) log2 n
  for n a power of two.
* ``brent_kung``: up-sweep reduction tree then down-sweep fan (Blelloch's
  work-efficient scan in its inclusive form); size 2n - 2 - log2 n and depth
  2 log2 n - 2 for n = 2^L >= 4 (its schedule takes 2 log2 n - 1 rounds, but
  the first down-sweep operator only needs round-1 values); any n, no padding.
* ``reduce_then_scan``: tiles of t elements: serial reductions of every tile,
  a serial scan of the tile totals, then a serial scan of every tile seeded
  with its carry (Fig. 1e: the down-sweep rematerializes instead of storing
  intermediates).

Every executor updates the scanned axis (axis 1 of ``(lanes, n, streams)``
arrays) in place, one level at a time, and each level is one vectorized
``combine`` over all the positions it updates, so a level of k operators costs
one NumPy call, not k.  ``describe`` runs the same executors on arrays of
depths with a counting combine, so the figures it reports are those of the
code that runs.
"""

from __future__ import annotations

import math
from typing import Callable, Sequence

import numpy as np

__all__ = ["NETWORKS", "describe", "run_network", "default_tile"]

Fields = tuple  # a tuple of arrays, one per monoid field
FieldCombine = Callable[[Fields, Fields], Fields]


def _at(fields: Fields, index) -> Fields:
    return tuple(f[:, index] for f in fields)


def _put(fields: Fields, index, values: Fields) -> None:
    for f, v in zip(fields, values):
        f[:, index] = v


def serial(fields: Fields, combine: FieldCombine) -> None:
    n = fields[0].shape[1]
    for i in range(1, n):
        _put(fields, i, combine(_at(fields, i - 1), _at(fields, i)))


def kogge_stone(fields: Fields, combine: FieldCombine) -> None:
    n = fields[0].shape[1]
    d = 1
    while d < n:
        # The right side is evaluated before the assignment: a synchronous level.
        _put(fields, slice(d, None), combine(_at(fields, slice(0, n - d)), _at(fields, slice(d, None))))
        d *= 2


def sklansky(fields: Fields, combine: FieldCombine) -> None:
    n = fields[0].shape[1]
    idx = np.arange(n)
    k = 0
    while (1 << k) < n:
        # Every element in the upper half of a block of 2^(k+1) takes the last
        # element of the lower half (the fan).
        dst = idx[(idx >> k) & 1 == 1]
        src = ((dst >> k) << k) - 1
        _put(fields, dst, combine(_at(fields, src), _at(fields, dst)))
        k += 1


def brent_kung(fields: Fields, combine: FieldCombine) -> None:
    n = fields[0].shape[1]
    stride = 2
    while stride <= n:  # up-sweep: x[i] = x[i - stride/2] + x[i], i = stride-1 (mod stride)
        half = stride // 2
        _put(fields, slice(stride - 1, None, stride),
             combine(_at(fields, slice(half - 1, n - half, stride)),
                     _at(fields, slice(stride - 1, None, stride))))
        stride *= 2
    stride //= 2
    while stride >= 2:  # down-sweep: x[i] = x[i - stride/2] + x[i], i = 3*stride/2 - 1 (mod stride)
        half = stride // 2
        first = stride + half - 1
        if first < n:
            _put(fields, slice(first, None, stride),
                 combine(_at(fields, slice(stride - 1, n - half, stride)),
                         _at(fields, slice(first, None, stride))))
        stride //= 2


def default_tile(n: int) -> int:
    """Tile size for reduce-then-scan: about sqrt(n), which balances the serial
    steps inside tiles against the serial scan across tiles."""
    return max(1, 1 << max(0, math.ceil(math.log2(max(n, 1)) / 2)))


def reduce_then_scan(fields: Fields, combine: FieldCombine, tile: int | None = None) -> None:
    n = fields[0].shape[1]
    if n <= 1:
        return
    t = tile or default_tile(n)
    tiles = -(-n // t)
    if tiles == 1:
        serial(fields, combine)
        return
    full = (tiles - 1) * t  # tiles 0..T-2 are full; their totals feed the carries
    head = tuple(f[:, :full].reshape(f.shape[0], tiles - 1, t, *f.shape[2:]) for f in fields)
    last = tuple(f[:, full:] for f in fields)

    def column(i):  # element i of every full tile: (lanes, T-1, ...)
        return tuple(h[:, :, i] for h in head)

    # 1. Reduce each full tile, serially inside the tile, all tiles at once.
    total = column(0)
    for i in range(1, t):
        total = combine(total, column(i))
    total = tuple(np.array(v) for v in total)
    # 2. Serial scan of the tile totals: carry[j] = total[0] + ... + total[j].
    for j in range(1, tiles - 1):
        _put(total, j, combine(_at(total, j - 1), _at(total, j)))
    # 3. Scan each tile seeded with the carry of the tiles before it.
    for i in range(t):
        if i == 0:
            if tiles > 2:
                seeded = combine(tuple(v[:, :-1] for v in total), tuple(h[:, 1:, 0] for h in head))
                for h, v in zip(head, seeded):
                    h[:, 1:, 0] = v
        else:
            for h, v in zip(head, combine(column(i - 1), column(i))):
                h[:, :, i] = v
        if i < n - full:
            left = _at(total, tiles - 2) if i == 0 else _at(last, i - 1)
            _put(last, i, combine(left, _at(last, i)))


NETWORKS: dict[str, Callable] = {
    "serial": serial,
    "kogge_stone": kogge_stone,
    "sklansky": sklansky,
    "brent_kung": brent_kung,
    "reduce_then_scan": reduce_then_scan,
}


def run_network(name: str, fields: Sequence[np.ndarray], combine: FieldCombine) -> None:
    """Run network ``name`` in place over axis 1 of every field array."""
    NETWORKS[name](tuple(fields), combine)


def describe(name: str, n: int) -> tuple[int, int]:
    """``(size, depth)`` of the inclusive-scan circuit ``name`` for ``n`` inputs:
    size is the number of operators, depth the longest chain of them."""
    if name not in NETWORKS:
        raise ValueError(f"name: unknown network {name!r}; choose from {', '.join(NETWORKS)}")
    if not isinstance(n, (int, np.integer)) or isinstance(n, bool) or n < 0:
        raise ValueError(f"n must be a non-negative integer, got {n!r}")
    n = int(n)
    size = 0

    def counting(a: Fields, b: Fields) -> Fields:
        nonlocal size
        out = np.maximum(a[0], b[0]) + 1
        size += out.size
        return (out,)

    depth = np.zeros((1, n, 1), dtype=np.int64)
    NETWORKS[name]((depth,), counting)
    return size, int(depth.max()) if n else 0
