"""Stream compaction and stable partition on the CPU: one compiled pass (Numba).

Compaction is an exclusive sum scan of the mask fused with the scatter
(Blelloch 1990, "Prefix sums and their applications", section 1.5; the
serial form of the single-pass selection of Merrill & Garland 2016).  Run
serially, the scan is a running slot ``j``, and the scatter needs no branch:
every element is written to ``out[j]`` and ``j`` advances by its mask byte, so a
rejected element is overwritten by the next kept one (or lies past the count,
where the result ends or the fill value goes).  Random masks then cost no branch mispredictions, which is
where ``x[mask]`` (a branch per element after a counting pass) loses.  (Reading
the mask eight bytes at a time, copying a word of eight kept elements as a block
and skipping a word of none, measured slower at every density on the CPU
benchmark machine: 1% kept 8.1 ms against 3.4 ms for 10^7 float32.)

Partition (stable, kept first) writes element i to ``j`` when kept and to
``total + i - j`` (the rejected ones before it, after all kept ones) when not, a
select rather than a branch; ``total`` comes from a count of the mask first.

Drivers take checked host arrays (1-D, one mask for all fields) and return NumPy
arrays; docs/design/compaction.md has the measurements.
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["compact", "partition", "storage_view"]

def _compact_field(x, mask, out, limit):
    """``out[:min(count, limit)] = x[mask][:limit]`` (``out`` of ``limit`` elements;
    rejected elements after the last kept one leave garbage past the count).
    Returns the count of selected elements (all of them, past ``limit`` too)."""
    n = x.shape[0]
    j = 0  # kept so far: j <= i, so below i = limit no write can leave ``out``
    head = min(n, limit)
    for i in range(head):
        out[j] = x[i]
        j += mask[i]
    i = head
    while i < n and j < limit:
        out[j] = x[i]
        j += mask[i]
        i += 1
    count = j
    while i < n:  # past the limit: count only
        count += mask[i]
        i += 1
    return count


def _partition_field(x, mask, out, total):
    """Kept elements of ``x`` to ``out[:total]``, the others after them, each in order."""
    j = 0  # kept elements so far
    for i in range(x.shape[0]):
        m = mask[i]
        out[j if m else total + i - j] = x[i]
        j += m


_FLAGS = dict(cache=True, nogil=True, error_model="numpy", boundscheck=False)
compact_field = njit(**_FLAGS)(_compact_field)
partition_field = njit(**_FLAGS)(_partition_field)


def storage_view(a: np.ndarray) -> np.ndarray:
    """``a`` as a dtype Numba copies bit for bit (bool as uint8, float16 as uint16)."""
    if a.dtype == np.bool_:
        return a.view(np.uint8)
    if a.dtype == np.float16:
        return a.view(np.uint16)
    return a


def _mask_bytes(mask: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(mask.reshape(-1)).view(np.uint8)


def compact(fields, mask, size=None, fills=None):
    """``(values, count)``: per field ``x[mask]`` (``size`` None), else ``size``
    elements, the first selected then ``fills[k]``; ``count`` the selected elements."""
    m = _mask_bytes(mask)
    limit = m.shape[0] if size is None else size
    values = []
    count = 0
    for k, field in enumerate(fields):
        x = np.ascontiguousarray(field.reshape(-1))
        buffer = np.empty(limit, x.dtype)
        count = compact_field(storage_view(x), m, storage_view(buffer), limit)
        kept = min(count, limit)
        # Shrinks in place (realloc): no copy, and the result owns exactly its elements.
        buffer.resize(limit if size is not None else kept, refcheck=False)
        if size is not None:
            buffer[kept:] = fills[k]
        values.append(buffer)
    if not fields:
        count = int(np.count_nonzero(m))
    return tuple(values), np.asarray(count, dtype=np.int64)


def partition(fields, mask):
    """``(values, count)``: per field the selected elements first, then the others."""
    m = _mask_bytes(mask)
    total = int(np.count_nonzero(m))
    values = []
    for field in fields:
        x = np.ascontiguousarray(field.reshape(-1))
        out = np.empty(x.shape[0], x.dtype)
        partition_field(storage_view(x), m, storage_view(out), total)
        values.append(out)
    return tuple(values), np.asarray(total, dtype=np.int64)
