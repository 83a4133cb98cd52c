"""``compact`` and ``partition`` of dask arrays: lazy, chunk by chunk.

A compaction keeps the selected elements in order, so the selected elements of
a chunk are the chunk's own compaction and the chunks follow one another: each
chunk is compacted on its own (by :func:`prefixscan.compact` on the chunk's
backend) and the results, one block per chunk, are a dask array of unknown
chunk sizes (NaN), as dask's own ``x[mask]`` returns.  An N-D ``x`` and its mask
are flattened first (C order, as ``x[mask]``).  Nothing is computed until the
result is.

* ``partition``: each chunk is partitioned once, and its kept and its rejected
  elements become two blocks; the result is every kept block, then every
  rejected block (unknown chunk sizes), and ``count`` the lazy sum of the mask.
* ``compact(size=k)``: a result of known shape ``(k,)``: every chunk's first
  ``k`` selected elements, merged in order by a tree of tasks that keeps the
  first ``k`` (no task holds more than ``FANIN * k`` elements), then padded with
  ``fill_value``; ``count`` is the lazy sum of the mask.
"""

from __future__ import annotations

import math
import operator
from typing import Any, Callable

import dask.array as da
import numpy as np
from dask.array.utils import meta_from_array
from dask.base import tokenize
from dask.highlevelgraph import HighLevelGraph

from ...dask.chunks import check_known_chunks
from .checks import CompactArgs

__all__ = ["compact", "partition"]

#: Blocks merged by one task of the ``size=k`` tree.
FANIN = 8
_OBJECTS = np.empty((0,), dtype=object)


def _same_chunks(a: tuple, b: tuple) -> bool:
    """1-D chunks equal, unknown sizes (NaN) matching unknown sizes."""
    a, b = a[0], b[0]
    return len(a) == len(b) and all(p == q or (math.isnan(p) and math.isnan(q)) for p, q in zip(a, b))


def _flat_blocks(args: CompactArgs) -> list[da.Array]:
    """x's fields and the mask as 1-D dask arrays (C order) of one chunking: arrays
    that are not dask arrays take the chunks of the first one that is."""
    arrays = [f.obj for f in args.fields] + [args.mask.obj]
    lead = next(a for a in arrays if isinstance(a, da.Array))
    if any(not isinstance(a, da.Array) for a in arrays):
        check_known_chunks((lead,), "x" if lead is not args.mask.obj else "mask")
        arrays = [a if isinstance(a, da.Array) else da.from_array(a, chunks=lead.chunks) for a in arrays]
    if arrays[0].ndim != 1:
        check_known_chunks(arrays, "x")  # flattening rechunks
        arrays = [a.ravel() for a in arrays]
    first = arrays[0].chunks
    if not all(_same_chunks(a.chunks, first) for a in arrays[1:]):
        check_known_chunks(arrays, "x")  # aligning rechunks
        arrays = [a if a.chunks == first else a.rechunk(first) for a in arrays]
    return arrays


def _unknown(layer: da.Array, meta: Any) -> da.Array:
    """``layer``'s blocks as an array of unknown chunk sizes, one per block."""
    return da.Array(layer.dask, layer.name, ((math.nan,) * layer.numblocks[0],), meta=meta)


def _call_on_block(*blocks, run: Callable, struct: bool, **kwargs):
    *fields, mask = blocks
    return run(tuple(fields) if struct else fields[0], mask, **kwargs)


def _objects(run: Callable, arrays: list[da.Array], struct: bool, token: str, **kwargs) -> da.Array:
    """One object per block: ``run(fields, mask, **kwargs)`` of the block's pieces."""
    args = [a for arr in arrays for a in (arr, "i")]
    return da.blockwise(_call_on_block, "i", *args, run=run, struct=struct, meta=_OBJECTS, align_arrays=False,
                        token=token, **kwargs)


def _field(layer: da.Array, index: int, meta: Any, token: str) -> da.Array:
    """Field ``index`` of every block's tuple, as an array of unknown chunk sizes."""
    picked = da.blockwise(operator.getitem, "i", layer, "i", index, None, meta=meta, align_arrays=False,
                          token=token)
    return _unknown(picked, meta)


def _metas(args: CompactArgs, arrays: list[da.Array]) -> list:
    return [meta_from_array(a, 1, dtype=np.dtype(f.dtype)) for a, f in zip(arrays, args.fields)]


def compact(args: CompactArgs, *, fill_value: Any, chunk_compact: Callable, backend: Any = None) -> Any:
    """:func:`prefixscan.compact` with dask arrays among its checked arguments
    ``args`` (``fill_value`` the caller's, checked into ``args.fills``;
    ``chunk_compact`` is ``prefixscan.compact`` itself, run on chunks)."""
    arrays = _flat_blocks(args)
    metas = _metas(args, arrays)
    if args.size is not None:
        return _compact_to_size(args, arrays, metas, fill_value, chunk_compact, backend)
    if not args.struct:
        blocks = da.blockwise(chunk_compact, "i", arrays[0], "i", arrays[1], "i", backend=backend, meta=metas[0],
                              align_arrays=False, token="prefixscan-compact")
        return _unknown(blocks, metas[0])
    blocks = _objects(chunk_compact, arrays, True, "prefixscan-compact", backend=backend)
    return tuple(_field(blocks, i, meta, "prefixscan-compact-field") for i, meta in enumerate(metas))


def _count(mask: da.Array) -> da.Array:
    return mask.sum(dtype=np.int64)


def _split_block(fields, mask, *, chunk_partition: Callable, backend: Any) -> tuple:
    """A chunk's kept elements and its rejected ones, per field: ``((kept...), (rejected...))``."""
    values, count = chunk_partition(fields, mask, backend=backend)
    values, k = (values if isinstance(values, tuple) else (values,)), int(count)
    return tuple(v[:k] for v in values), tuple(v[k:] for v in values)


def partition(args: CompactArgs, *, chunk_partition: Callable, backend: Any = None) -> tuple:
    """:func:`prefixscan.partition` with dask arrays among its checked arguments
    ``args``: ``(values, count)``, lazy (``chunk_partition`` is
    ``prefixscan.partition`` itself, run on chunks)."""
    arrays = _flat_blocks(args)
    metas = _metas(args, arrays)
    blocks = _objects(_split_block, arrays, args.struct, "prefixscan-partition", chunk_partition=chunk_partition,
                      backend=backend)
    kept = _field(blocks, 0, _OBJECTS, "prefixscan-kept")
    rejected = _field(blocks, 1, _OBJECTS, "prefixscan-rejected")
    values = tuple(da.concatenate([_field(kept, i, meta, "prefixscan-kept-field"),
                                   _field(rejected, i, meta, "prefixscan-rejected-field")])
                   for i, meta in enumerate(metas))
    return (values if args.struct else values[0]), _count(arrays[-1])


# ---------------------------------------------------------------------------
# compact(size=k)

def _merge(pieces: list, size: int) -> tuple:
    """Pieces (tuples of fields) in order, joined and cut to their first ``size`` elements."""
    return tuple(np.concatenate([p[i] for p in pieces])[:size] for i in range(len(pieces[0])))


def _padded(piece: tuple, index: int, size: int, fill: Any):
    v = piece[index]
    if v.shape[0] == size:
        return v
    return np.concatenate([v, np.full_like(v, fill, shape=(size - v.shape[0],))])


def _compact_to_size(args: CompactArgs, arrays: list[da.Array], metas: list, fill_value: Any,
                     chunk_compact: Callable, backend: Any) -> tuple:
    size, fills = args.size, args.fills
    level = _objects(_selected_of_block, arrays, args.struct, "prefixscan-compact-size", chunk_compact=chunk_compact,
                     size=size, fill_value=fill_value, backend=backend)
    while level.numblocks[0] > 1:  # a tree of merges keeping the first `size` elements
        name = "prefixscan-compact-merge-" + tokenize(level.name, size)
        groups = range(0, level.numblocks[0], FANIN)
        dsk = {(name, g // FANIN): (_merge, [(level.name, j) for j in range(g, min(g + FANIN, level.numblocks[0]))],
                                    size)
               for g in groups}
        graph = HighLevelGraph.from_collections(name, dsk, dependencies=[level])
        level = da.Array(graph, name, ((math.nan,) * len(groups),), meta=_OBJECTS)
    values = []
    for i, (meta, fill) in enumerate(zip(metas, fills)):
        name = f"prefixscan-compact-fill-{i}-" + tokenize(level.name, size, fill)
        dsk = {(name, 0): (_padded, (level.name, 0), i, size, fill)}
        values.append(da.Array(HighLevelGraph.from_collections(name, dsk, dependencies=[level]), name, ((size,),),
                               meta=meta))
    result = tuple(values) if args.struct else values[0]
    return result, _count(arrays[-1])


def _selected_of_block(fields, mask, *, chunk_compact: Callable, size: int, fill_value: Any, backend: Any) -> tuple:
    """A chunk's first ``size`` selected elements, per field (fewer where it has fewer):
    its compaction to ``size``, cut to its count."""
    values, count = chunk_compact(fields, mask, size=size, fill_value=fill_value, backend=backend)
    values = values if isinstance(values, tuple) else (values,)
    kept = min(int(count), size)
    return tuple(v[:kept] for v in values)
