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
:mod:`prefixscan.algorithms.pieces`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import dask.array as da
import numpy as np
from dask.array.utils import meta_from_array

from .._arrays import is_dask_collection
from .._normalize import build_request
from .._request import ScanConfig
from ..algorithms.pieces import PiecewiseScan, combine_totals, piece_totals, scan_piece, seed_of
from ..dispatch import check_capabilities, select_backend
from .graph import scan_chunks

__all__ = ["scan", "ScanPieces", "check_known_chunks", "same_chunks", "refuse_lazy"]


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


def check_known_chunks(arrays: Sequence[Any], argument: str) -> None:
    """ValueError naming ``argument`` for dask arrays whose chunk sizes are unknown."""
    for a in arrays:
        if any(np.isnan(c) for sizes in a.chunks for c in sizes):
            raise ValueError(f"{argument}: a dask array of unknown chunk sizes (NaN); a scan needs them: "
                             f"call {argument}.compute_chunk_sizes() first")


# Why each argument must be concrete: what prefixscan does with it before the graph exists.
_CONCRETE = {
    "init": ("a NumPy array or a scalar", "the seeds (one per lane) enter the graph as values"),
    "offsets": ("a NumPy array or a list", "the segment starts are placed into the graph, chunk by chunk"),
    "flags": ("a NumPy array", "the segment starts are found from the flags (one per element of x) and placed "
              "into the graph, chunk by chunk, so they are needed in full before anything is scanned"),
    "keys": ("a NumPy array", "the segment starts are found from the keys (one per element of x) and placed "
             "into the graph, chunk by chunk, so they are needed in full before anything is scanned"),
}


def refuse_lazy(value: Any, argument: str) -> None:
    """TypeError for a dask array where prefixscan takes concrete values to build
    the graph (seeds, segment descriptions): computing it would happen behind the
    caller's back."""
    if value is not None and is_dask_collection(value):
        kind, why = _CONCRETE.get(argument, ("a NumPy array", "it is read while the graph is built"))
        hint = " (or describe the segments by their start offsets, offsets=)" if argument in ("flags", "keys") \
            else ""
        raise TypeError(f"{argument}: pass {kind}, not a dask array: {why}; call {argument}.compute() "
                        f"first{hint}")


def same_chunks(arrays: Sequence[da.Array]) -> list[da.Array]:
    """The fields of a struct on the first field's chunks."""
    first = arrays[0]
    return [first] + [a if a.chunks == first.chunks else a.rechunk(first.chunks) for a in arrays[1:]]


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
