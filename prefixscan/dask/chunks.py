"""What every primitive's dask path shares besides the graph (:mod:`.graph`): the
checks of chunks and of values that must be concrete (seeds, segment
descriptions: they enter the graph as values, so computing them would happen
behind the caller's back), the fields of a struct on one set of chunks, and the
small host arrays (totals, carries) that travel between a graph's layers.
"""

from __future__ import annotations

from typing import Any, Sequence

import dask.array as da
import numpy as np

from .._arrays import is_dask_collection
from .._request import np_dtype
from ..monoid import Monoid
from ..primitives.scan.pieces import to_host

__all__ = ["check_known_chunks", "refuse_lazy", "same_chunks", "host_fields", "combine_fields"]


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


def host_fields(values, dtypes) -> tuple:
    """Small arrays (one per field; NumPy or CuPy) as host NumPy arrays of the given dtypes."""
    return tuple(np.asarray(to_host(v), dtype=np_dtype(d)) for v, d in zip(values, dtypes))


def combine_fields(monoid: Monoid, dtypes: tuple, left, right):
    """``left ⊕ right`` of host field tuples (``left`` the earlier); None is the identity."""
    if left is None or right is None:
        return right if left is None else left
    with np.errstate(**monoid.numpy_errstate):
        merged = monoid.combine(tuple(left), tuple(right)) if len(left) > 1 else (monoid.combine(left[0], right[0]),)
    return host_fields(merged, dtypes)
