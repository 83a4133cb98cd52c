"""``segmented_scan`` on 1-D dask arrays, its segments given on the host.

A segmented scan is a scan of the operator lifted to (head flag, value) pairs
(Schwartz 1980, "Ultracomputers"; Blelloch 1990, "Prefix sums and their
applications", section 1.5), so it takes the graph of :mod:`prefixscan.dask.graph` with lifted
totals: a chunk's total says whether a segment starts in it and holds the
value of its last partial segment (its first, for a reverse scan), seeded with
``init`` where that segment's own start (end) lies in the chunk.  A chunk's
carry is the value of the segment that runs into it from before (from after);
the chunk is scanned by :func:`prefixscan.segmented_scan` itself (its own
segments, and one starting at its first element), then its leading (trailing)
partial segment is scanned again with the carry as ``init``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import dask.array as da
import numpy as np
from dask.array.utils import meta_from_array
from dask.base import tokenize
from dask.highlevelgraph import HighLevelGraph

from ..._normalize import check_segments
from ..._request import ScanConfig, ScanRequest
from ...dask.chunks import check_known_chunks, combine_fields, host_fields, refuse_lazy, same_chunks
from ...dask.graph import scan_chunks
from ..scan.reduction import reduce as reduce_lanes
from ..scan.runner import run_scan

__all__ = ["segmented_scan", "SegmentedPieces"]


@dataclass(frozen=True)
class SegmentedPieces:
    """A segmented scan over chunks (:class:`prefixscan.dask.graph.Pieces`); its
    totals are ``(a segment starts in the chunk, value)``."""

    config: ScanConfig  # the checked segmented scan: operator, direction, dtype, backend
    accs: tuple  # accumulator dtype names, one per field
    init: tuple | None  # the seed of every segment, one 0-d host array per field
    chunk_scan: Any  # prefixscan.segmented_scan, run on one chunk
    rounds: int = 1

    @property
    def reverse(self) -> bool:
        return self.config.reverse

    def _values(self, values: list, part: slice) -> Any:
        return tuple(v[part] for v in values) if len(values) > 1 else values[0][part]

    def total(self, fields: tuple, offset: int, lower: Sequence) -> tuple:
        *values, heads = fields
        m, starts = values[0].shape[0], len(heads) > 0
        if self.reverse:  # the first partial segment: it ends in this chunk when a head follows it
            part = slice(0, int(heads[0]) if starts else m)
        else:  # the last partial segment: it starts in this chunk when it has a head
            part = slice(int(heads[-1]) if starts else 0, m)
        total = reduce_lanes(self._values(values, part), self.config.monoid, dtype=self.config.dtype)
        total = host_fields(total if len(values) > 1 else (total,), self.accs)
        if starts and self.init is not None:  # the segment's seed sits at its start (its end, in reverse)
            total = self.combine_values(total, self.init) if self.reverse else self.combine_values(self.init, total)
        return (starts, total)

    def combine_values(self, left: tuple, right: tuple) -> tuple:
        return combine_fields(self.config.monoid, self.accs, left, right)

    def combine(self, left, right):
        if left is None or right is None:
            return right if left is None else left
        (starts_a, a), (starts_b, b) = left, right
        if self.reverse:  # a segment head in the left part ends what runs in from the right
            value = a if starts_a else self.combine_values(a, b)
        else:  # a segment head in the right part drops what ran in from the left
            value = b if starts_b else self.combine_values(a, b)
        return (starts_a or starts_b, value)

    def scan(self, fields: tuple, offset: int, carries: Sequence) -> tuple:
        *values, heads = fields
        m = values[0].shape[0]
        config = self.config
        init = None if self.init is None else (self.init if len(values) > 1 else self.init[0])
        # The chunk's own segments, and one at its first element; offsets as a list go to any device.
        local = self.chunk_scan(self._values(values, slice(None)), config.monoid,
                                offsets=np.union1d([0], heads).tolist(), inclusive=config.inclusive,
                                reverse=config.reverse, init=init, dtype=config.dtype, backend=config.backend)
        local = list(local) if len(values) > 1 else [local]
        carry = carries[0]
        if carry is None or not m:
            return tuple(local)
        if self.reverse:  # the segment running in from the right: the chunk's last one
            part = slice(int(heads[-1]) if len(heads) else 0, m)
        else:  # ... from the left: the chunk's first one
            part = slice(0, int(heads[0]) if len(heads) else m)
        value = carry[1]
        again = run_scan(config, self._values(values, part), value if len(values) > 1 else value[0])
        for y, z in zip(local, again if len(values) > 1 else (again,)):
            y[part] = z
        return tuple(local)


def _heads_array(heads: np.ndarray, chunks: tuple) -> da.Array:
    """Each chunk's segment heads, local to the chunk, as a dask array aligned with
    the chunks (its blocks are 1-D index arrays)."""
    bounds = np.cumsum((0,) + chunks[0])
    name = "prefixscan-heads-" + tokenize(heads, chunks)
    dsk = {}
    for k in range(len(chunks[0])):
        lo, hi = np.searchsorted(heads, [bounds[k], bounds[k + 1]])
        dsk[(name, k)] = heads[lo:hi] - bounds[k]
    graph = HighLevelGraph.from_collections(name, dsk, dependencies=[])
    return da.Array(graph, name, chunks, meta=np.empty(0, np.int64))


def _heads(n: int, kind: str, given: np.ndarray) -> np.ndarray:
    """Sorted positions where segments start, from checked flags, offsets or keys."""
    if kind == "flags":
        heads = np.flatnonzero(given)
    elif kind == "offsets":
        heads = np.unique(given[given < n])
    else:
        heads = np.flatnonzero(given[1:] != given[:-1]) + 1 if n else np.zeros(0, np.int64)
    return np.union1d([0], heads).astype(np.int64) if n else heads.astype(np.int64)


def segmented_scan(request: ScanRequest, *, flags=None, offsets=None, keys=None, chunk_scan=None):
    """:func:`prefixscan.segmented_scan` of a 1-D dask array (or tuple of them), its
    arguments checked into ``request``, with host ``flags``, ``offsets`` or ``keys``:
    lazy, x's chunks.  ``chunk_scan`` is ``prefixscan.segmented_scan`` itself."""
    if request.out is not None:
        raise TypeError("out: the scan of a dask array is a new lazy array; leave out=None and store the "
                        "result (dask.array.store, to_zarr)")
    for value, name in ((flags, "flags"), (offsets, "offsets"), (keys, "keys")):
        refuse_lazy(value, name)
    values = [f.obj for f in request.fields]
    check_known_chunks(values, "x")
    n = request.lane_len
    heads = _heads(n, *check_segments(n, flags, offsets, keys))
    values = same_chunks(values)
    init = None if request.init is None else host_fields(request.init, request.acc_dtypes)
    pieces = SegmentedPieces(request.config, request.acc_dtypes, init, chunk_scan)
    # In reverse, the last segment ends at the array's end, where its seed sits.
    seed = (True, init) if request.config.reverse and init is not None else None
    metas = [meta_from_array(v, 1, dtype=np.dtype(d)) for v, d in zip(values, request.out_dtypes)]
    results = scan_chunks(pieces, values + [_heads_array(heads, values[0].chunks)], axis=0, seed=seed,
                          metas=metas)
    return tuple(results) if request.struct else results[0]
