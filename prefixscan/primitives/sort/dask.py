"""``sort`` and ``argsort`` of dask arrays: lazy, block by block.

Rows sorted along an axis are independent, so when the axis is held in one chunk
every block is sorted on its own (by :func:`prefixscan.sort` on the block's
backend) and the result has x's chunks; nothing is computed until the result is.
An axis cut into several chunks (or, for ``axis=None``, an array of several
chunks) would need a merge of sorted runs across blocks, which this path does not
do: it is refused with the rechunk that makes it work.
"""

from __future__ import annotations

import operator
from typing import Any, Callable

import dask.array as da
import numpy as np
from dask.array.utils import meta_from_array

from .checks import SortArgs

__all__ = ["sort", "argsort"]


def _blocks_along(args: SortArgs) -> tuple[da.Array, list, int]:
    """x and the values as dask arrays whose sorted axis is one chunk, and that axis."""
    x = args.keys.obj
    values = [v.obj for v in args.values]
    axis = args.axis
    if axis is None:
        if x.npartitions != 1:
            raise ValueError("axis=None sorts the flattened array, but x has several chunks; give it one "
                             "(x.rechunk(-1)) or sort along an axis held in one chunk")
        x, values, axis = x.ravel(), [v.ravel() for v in values], 0
    elif len(x.chunks[axis]) != 1:
        raise ValueError(f"axis={args.axis}: x has {len(x.chunks[axis])} chunks along the sorted axis; rows are "
                         f"sorted block by block, so the axis must be one chunk (x.rechunk({{{axis}: -1}}))")
    values = [v if v.chunks == x.chunks else v.rechunk(x.chunks) for v in values]
    return x, values, axis


def _sort_block(x, *values, chunk_sort: Callable, struct: bool, **kwargs):
    return chunk_sort(x, values=values if struct else values[0], **kwargs)


def sort(args: SortArgs, *, chunk_sort: Callable, backend: Any = None) -> Any:
    """:func:`prefixscan.sort` of a dask ``x`` (its checked arguments ``args``;
    ``chunk_sort`` is ``prefixscan.sort`` itself, run on blocks)."""
    x, values, axis = _blocks_along(args)
    kwargs = dict(axis=axis, descending=args.code.descending, key_bits=args.code.key_bits, backend=backend)
    if not values:
        return da.map_blocks(chunk_sort, x, dtype=x.dtype, meta=meta_from_array(x), **kwargs)
    index = tuple(range(x.ndim))
    pairs = da.blockwise(_sort_block, index, x, index, *[a for v in values for a in (v, index)],
                         chunk_sort=chunk_sort, struct=args.struct, dtype=object,
                         meta=np.empty((0,) * x.ndim, dtype=object), token="prefixscan-sort", **kwargs)

    def part(source: da.Array, i: int, like: da.Array) -> da.Array:
        return da.blockwise(operator.getitem, index, source, index, i, None, dtype=like.dtype,
                            meta=meta_from_array(like), token="prefixscan-sort-part")

    keys = part(pairs, 0, x)
    if not args.struct:
        return keys, part(pairs, 1, values[0])
    moved = part(pairs, 1, pairs)  # each block's tuple of values
    return keys, tuple(part(moved, i, v) for i, v in enumerate(values))


def argsort(args: SortArgs, *, chunk_argsort: Callable, backend: Any = None) -> da.Array:
    """:func:`prefixscan.argsort` of a dask ``x`` (``chunk_argsort`` is ``prefixscan.argsort``)."""
    x, _, axis = _blocks_along(args)
    return da.map_blocks(chunk_argsort, x, dtype=np.int64, meta=meta_from_array(x, dtype=np.int64), axis=axis,
                         descending=args.code.descending, key_bits=args.code.key_bits, backend=backend)
