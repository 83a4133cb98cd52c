"""The arguments of ``compact`` and ``partition``, checked before any work (the
shared checks are :mod:`prefixscan._normalize`'s): :func:`check_compact_args`
returns them as :class:`CompactArgs`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..._arrays import ArrayRef, inspect_array
from ..._normalize import _as_int, check_init_value
from ..._request import np_dtype

__all__ = ["CompactArgs", "check_compact_args"]


@dataclass(frozen=True)
class CompactArgs:
    """Checked arguments of ``compact`` / ``partition``: the fields (ArrayRefs),
    whether x was a tuple, the mask, the size (None or >= 0) and, with a size, one
    fill value per field (a NumPy 0-d array of its dtype)."""

    fields: tuple
    struct: bool
    mask: ArrayRef
    size: int | None
    fills: tuple


def _same_shape(a: tuple, b: tuple) -> bool:
    """Equal shapes, an unknown length (NaN: a dask array's after boolean indexing)
    matching any: the dask path compares the chunks instead."""
    return len(a) == len(b) and all(p == q or p != p or q != q for p, q in zip(a, b))


def check_compact_args(x: Any, mask: Any, size: Any = None, fill_value: Any = None) -> CompactArgs:
    """``compact``'s and ``partition``'s arguments: ``x`` an array or a non-empty
    tuple of arrays of one shape, a bool ``mask`` of that shape on their device,
    ``size`` None or a non-negative integer, and (with a size) a scalar
    ``fill_value`` every field's dtype holds (scan's rule for ``init``); None: each
    field's zero (False for bool)."""
    struct = isinstance(x, tuple)
    if struct and not x:
        raise ValueError("x: an empty tuple; give one array or a tuple of arrays")
    names = [f"x[{i}]" for i in range(len(x))] if struct else ["x"]
    refs = tuple(inspect_array(f, name) for f, name in zip(x if struct else (x,), names))
    rm = inspect_array(mask, "mask")
    for ref, name in zip(refs, names):
        if not _same_shape(ref.shape, refs[0].shape):
            raise ValueError(f"{name} has shape {ref.shape}; every field must have x[0]'s shape {refs[0].shape}")
        if ref.device != refs[0].device:
            raise ValueError(f"{name} is on {ref.device}; every field must be on x[0]'s device {refs[0].device}")
    if not _same_shape(rm.shape, refs[0].shape):
        raise ValueError(f"mask has shape {rm.shape}; expected x's shape {refs[0].shape}")
    if rm.dtype != "bool":
        raise TypeError(f"mask must be a bool array, got dtype {rm.dtype}")
    if rm.device != refs[0].device:
        raise ValueError("mask must be on the same device as x")
    fills: tuple = ()
    if size is not None:
        size = _as_int(size, "size")
        if size < 0:
            raise ValueError(f"size must be >= 0, got {size}")
        limit = np.iinfo(np.intp).max // max(np_dtype(ref.dtype).itemsize for ref in refs)
        if size > limit:
            raise ValueError(f"size={size} is more elements than an array of x's dtype can have "
                             f"(at most {limit})")
        if fill_value is None:  # each field's zero: 0, 0.0, 0j or False
            fills = tuple(check_init_value(False if ref.dtype == "bool" else 0, ref.dtype, "fill_value")
                          for ref in refs)
        elif np.ndim(fill_value) != 0 or not isinstance(fill_value, (bool, int, float, complex, np.generic)):
            raise TypeError(f"fill_value must be a number, got {type(fill_value).__name__}")
        else:
            fills = tuple(check_init_value(fill_value, ref.dtype, "fill_value") for ref in refs)
    return CompactArgs(refs, struct, rm, size, fills)
