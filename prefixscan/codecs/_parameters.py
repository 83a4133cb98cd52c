"""Argument checks shared by the numcodecs and the Zarr format 3 delta codecs."""

from __future__ import annotations

import numpy as np

from .._normalize import MAX_ORDER, MAX_TUPLE_SIZE

__all__ = ["check_order_and_tuple_size", "check_dtype", "check_length"]


def check_order_and_tuple_size(order, tuple_size) -> tuple[int, int]:
    """(order, tuple_size) as ints in delta coding's range (order 1 to ``MAX_ORDER``,
    tuple_size from 1), checked when the codec is made; ValueError naming the bad one."""
    if isinstance(order, bool) or not isinstance(order, (int, np.integer)) or not 1 <= order <= MAX_ORDER:
        raise ValueError(f"order must be an integer from 1 to {MAX_ORDER}, got {order!r}")
    if isinstance(tuple_size, bool) or not isinstance(tuple_size, (int, np.integer)) \
            or not 1 <= tuple_size <= MAX_TUPLE_SIZE:
        raise ValueError(f"tuple_size must be an integer from 1 to {MAX_TUPLE_SIZE}, got {tuple_size!r}")
    return int(order), int(tuple_size)


def check_dtype(dtype) -> np.dtype:
    """The dtype, which must be an integer or float dtype (bools have no differences)."""
    dtype = np.dtype(dtype)
    if dtype.kind not in "iuf":
        raise TypeError(f"dtype must be an integer or float dtype, got {dtype}")
    return dtype


def check_length(n: int, tuple_size: int) -> None:
    """The s interleaved streams of a chunk must have equal lengths."""
    if n % tuple_size:
        raise ValueError(f"tuple_size={tuple_size} does not divide the chunk's {n} elements")
