"""Host arrays as the compiled kernels read them: native byte order, float16 as
its bits, and ``(outer, n, inner)`` views around an axis (a copy only where the
strides forbid a view).  Shared by the primitives' compiled passes."""

from __future__ import annotations

import math

import numpy as np

from ...._arrays import native_order
from .jit_support import HALF
from .scan import storage_dtype

__all__ = ["host_array", "to_storage", "lanes_view", "try_lanes_view"]


def host_array(a) -> np.ndarray:
    """A host array in native byte order (the kernels read native numbers)."""
    return native_order(np.asarray(a.detach().cpu().numpy() if hasattr(a, "detach") else a))


def to_storage(a: np.ndarray):
    dtype, fmt = storage_dtype(a.dtype.name)
    return (a.view(np.uint16) if fmt is HALF else a), fmt


def lanes_view(a: np.ndarray, axis: int):
    """``a`` as ``(outer, n, inner)`` around ``axis`` (a copy only where strides forbid a view)."""
    v = try_lanes_view(a, axis)
    if v is None:
        v = np.ascontiguousarray(a).reshape(math.prod(a.shape[:axis]), a.shape[axis], -1)
    return v


def try_lanes_view(a: np.ndarray, axis: int):
    """``a`` as an ``(outer, n, inner)`` view, or None where its strides forbid one."""
    v = a.view()
    try:
        v.shape = (math.prod(a.shape[:axis]), a.shape[axis], math.prod(a.shape[axis + 1:]))
    except AttributeError:
        return None
    return v
