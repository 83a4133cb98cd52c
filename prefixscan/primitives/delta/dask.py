"""``delta_encode`` on dask arrays.

It needs no carry: each chunk's differences reach ``order * tuple_size``
elements back, so every chunk is encoded together with that many elements
before it (a halo) and the halo dropped; each chunk runs the backend's encoder
(:data:`prefixscan.primitives.delta.IMPLEMENTATIONS`).
"""

from __future__ import annotations

import dask.array as da
import numpy as np
from dask.array.utils import meta_from_array
from dask.graph_manipulation import clone

from ..._arrays import from_native, inspect_array
from ...dask.chunks import check_known_chunks
from ...dispatch import implementation, select_backend
from . import IMPLEMENTATIONS

__all__ = ["delta_encode"]


def _delta_block(block, halo, *, order: int, tuple_size: int, axis: int, backend: str | None):
    """One chunk's differences, with the ``halo`` of elements before it."""
    m, h = block.shape[axis], halo.shape[axis]
    joined = np.concatenate([halo, block], axis=axis) if h else block
    pad = -joined.shape[axis] % tuple_size
    if pad:  # differences look back only: zeros after the chunk change nothing in it
        shape = list(joined.shape)
        shape[axis] = pad
        joined = np.concatenate([joined, np.zeros_like(joined, shape=tuple(shape))], axis=axis)
    ref = inspect_array(joined)
    chosen = select_backend(backend, ref.device)
    encoded = implementation("delta_encode", IMPLEMENTATIONS, chosen).delta_encode(ref, order, tuple_size, axis)
    d = from_native(encoded, ref, chosen.NATIVE_LIBRARY, ref.dtype)
    return d[(slice(None),) * axis + (slice(h, h + m),)]


def delta_encode(x, order: int, tuple_size: int, *, axis: int, backend=None):
    """:func:`prefixscan.delta_encode` of a dask array (arguments checked): lazy, x's chunks."""
    check_known_chunks((x,), "x")
    reach = order * tuple_size
    sizes = x.chunks[axis]
    starts = np.cumsum((0,) + sizes)[:-1]
    source = clone(x, assume_layers=True)  # the halos' own reads, not held for the chunks' tasks
    halos = []
    for start in starts:
        lo = max(0, int(start) - reach)
        halos.append(source[(slice(None),) * axis + (slice(lo, int(start)),)])
    halo = da.concatenate(halos, axis=axis).rechunk({axis: tuple(h.shape[axis] for h in halos)})
    halo = halo.rechunk({i: c for i, c in enumerate(x.chunks) if i != axis})
    index = tuple(range(x.ndim))
    encoded = da.blockwise(_delta_block, index, x, index, halo, index, order=order, tuple_size=tuple_size,
                           axis=axis, backend=backend, align_arrays=False, meta=meta_from_array(x),
                           token="prefixscan-delta-encode")
    return da.Array(encoded.dask, encoded.name, x.chunks, meta=meta_from_array(x))
