"""Compaction and partition on the CPU backend: the entry points that
:data:`prefixscan.primitives.compaction.IMPLEMENTATIONS` finds.  From
``SMALL_SCAN`` elements one compiled pass (:mod:`.compiled`, Numba), else
NumPy's boolean indexing; NumPy results, ``count`` a 0-d int64 array."""

from __future__ import annotations

import numpy as np

from ..._arrays import ArrayRef, as_numpy
from ...backends.cpu import compiled as cpu_compiled

__all__ = ["compact", "partition"]


def compact(fields: tuple, mask: ArrayRef, size: int | None, fills: tuple) -> tuple:
    """``(values, count)``: one compiled pass (:mod:`.compiled`) from
    ``SMALL_SCAN`` elements where Numba is installed, else NumPy's boolean indexing."""
    xs = [as_numpy(f) for f in fields]
    keep = np.asarray(as_numpy(mask)).reshape(-1)
    if cpu_compiled.available() and keep.size >= cpu_compiled.SMALL_SCAN:
        from ...primitives.compaction.compiled import compact as run

        return run(xs, keep, size, fills)
    selected = [x.reshape(-1)[keep] for x in xs]
    count = np.asarray(int(np.count_nonzero(keep)), dtype=np.int64)
    if size is None:
        return tuple(selected), count
    values = []
    for s, fill in zip(selected, fills):
        v = np.empty(size, s.dtype)
        kept = min(size, s.shape[0])
        v[:kept] = s[:kept]
        v[kept:] = fill
        values.append(v)
    return tuple(values), count


def partition(fields: tuple, mask: ArrayRef) -> tuple:
    """``(values, count)``: one compiled pass from ``SMALL_SCAN`` elements where
    Numba is installed, else ``concatenate((x[mask], x[~mask]))``."""
    xs = [as_numpy(f) for f in fields]
    keep = np.asarray(as_numpy(mask)).reshape(-1)
    if cpu_compiled.available() and keep.size >= cpu_compiled.SMALL_SCAN:
        from ...primitives.compaction.compiled import partition as run

        return run(xs, keep)
    values = tuple(np.concatenate((x.reshape(-1)[keep], x.reshape(-1)[~keep])) for x in xs)
    return values, np.asarray(int(np.count_nonzero(keep)), dtype=np.int64)
