"""``prefixscan.scan`` (and through it ``cumsum`` ... ``cummin``, ``delta_decode``,
``make_scan``) on dask arrays: the lazy, chunk-by-chunk scan.

The arguments are checked on the arrays' metadata (shape, dtype, chunks) by the
same code as for any array (:mod:`prefixscan._normalize`), nothing is computed,
and the result is a dask array of the input's chunks built by
:func:`prefixscan.dask.graph.scan_chunks`: every chunk reduced to its total,
the totals combined into carries, every chunk scanned by
:func:`prefixscan.scan`'s own path (CPU backend for NumPy chunks, GPU backend
for CuPy chunks) with its carry as ``init`` (the reduce-then-scan of Merrill &
Grimshaw 2009, over the chunks).  Orders and tuple sizes follow
:mod:`.pieces`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
from dask.array.utils import meta_from_array

from ..._normalize import build_request
from ..._request import ScanConfig
from ...dask.chunks import check_known_chunks, refuse_lazy, same_chunks
from ...dask.graph import scan_chunks
from ...dispatch import check_capabilities, select_backend
from .pieces import PiecewiseScan, combine_totals, piece_totals, scan_piece, seed_of

__all__ = ["scan", "ScanPieces"]


@dataclass(frozen=True)
class ScanPieces:
    """A scan's totals, carries and chunk scans (:class:`prefixscan.dask.graph.Pieces`)."""

    plan: PiecewiseScan

    @property
    def rounds(self) -> int:
        return self.plan.rounds

    @property
    def reverse(self) -> bool:
        return self.plan.config.reverse

    def total(self, fields: tuple, offset: int, lower: Sequence) -> Any:
        return piece_totals(self.plan, fields, offset=offset, lower=lower)

    def combine(self, left: Any, right: Any) -> Any:
        return combine_totals(self.plan, left, right)

    def scan(self, fields: tuple, offset: int, carries: Sequence) -> tuple:
        return scan_piece(self.plan, fields, offset=offset, carries=carries)


def scan(config: ScanConfig, x: Any, *, init: Any = None, out: Any = None) -> Any:
    """The scan ``config`` describes of the dask array ``x`` (or tuple of them, a
    struct monoid's fields), seeded with ``init``: a lazy dask array (or tuple of
    them) of x's chunks; 1-D for ``axis=None``, as for any array."""
    if out is not None:
        raise TypeError("out: the scan of a dask array is a new lazy array; leave out=None and store the "
                        "result (dask.array.store, to_zarr)")
    refuse_lazy(init, "init")
    check_known_chunks(x if isinstance(x, tuple) else (x,), "x")
    request = build_request(config, x, init, None)  # on the metadata: nothing is computed
    check_capabilities(select_backend(config.backend, request.device), request)  # the chunks' backend, now
    arrays = [f.obj for f in request.fields]
    axis = request.axis
    if axis is None:  # the flattened array, as NumPy's cumsum does (an empty one as one empty chunk)
        arrays, axis = [(a.rechunk(-1) if not a.size else a).reshape(-1) for a in arrays], 0
    arrays = same_chunks(arrays)
    plan = PiecewiseScan.from_request(request, axis)
    seed = seed_of(plan, request.init, request.lanes_shape)
    metas = [meta_from_array(arrays[0], arrays[0].ndim, dtype=np.dtype(d)) for d in request.out_dtypes]
    results = scan_chunks(ScanPieces(plan), arrays, axis=axis, seed=seed, metas=metas)
    return tuple(results) if request.struct else results[0]
