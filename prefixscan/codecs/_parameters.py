"""Argument checks shared by the numcodecs and the Zarr format 3 delta codecs,
and the integer view in which both code floating-point data.

Differences of floats are not exact (``a - b + b`` need not be ``a``), so the
codecs never subtract floats: a float chunk is coded as the signed integers of
the same width that hold its bit patterns (float32 as int32, ...), whose
differences wrap and undo exactly.  The round trip is bit for bit, NaN
payloads, infinities and signed zeros included; smooth data of one sign still
have small differences (the bit patterns of positive floats grow with their
values), which compress as well as integer data do.
"""

from __future__ import annotations

import numpy as np

from .._normalize import MAX_ORDER, MAX_TUPLE_SIZE

__all__ = ["check_order_and_tuple_size", "check_dtype", "check_length", "code_dtype", "bits", "from_bits",
           "in_native_order", "FLOAT_CODINGS", "check_float_coding"]

#: How a codec codes float data: ``"bits"`` (their bit patterns as integers of their
#: width: exact), or ``"differences"``: the float differences that configurations
#: without the key were written with (not exact, so only decoded, never written).
FLOAT_CODINGS = ("bits", "differences")


def check_float_coding(floats) -> str:
    """The ``floats`` configuration entry, checked (ValueError naming it)."""
    if floats not in FLOAT_CODINGS:
        raise ValueError(f"floats must be one of {FLOAT_CODINGS}, got {floats!r}")
    return floats


def refuse_lossy_encode(floats: str, dtype) -> None:
    """Chunks are never written with float differences (their round trip is not exact)."""
    if floats == "differences" and np.dtype(dtype).kind == "f":
        raise ValueError("this Delta codec decodes float chunks written as float differences (a "
                         "configuration without 'floats'); it does not write them: code floats by their "
                         "bits, floats='bits' (the default)")


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
    try:
        dtype = np.dtype(dtype)
    except TypeError:
        raise TypeError(f"dtype must be an integer or float dtype, got {dtype!r}") from None
    if dtype.kind not in "iuf":
        raise TypeError(f"dtype must be an integer or float dtype, got {dtype}")
    return dtype


def check_length(n: int, tuple_size: int) -> None:
    """The s interleaved streams of a chunk must have equal lengths."""
    if n % tuple_size:
        raise ValueError(f"tuple_size={tuple_size} does not divide the chunk's {n} elements")


def code_dtype(dtype: np.dtype) -> np.dtype:
    """The dtype the differences are taken in: ``dtype`` itself for integers, the
    signed integer of the same width and byte order for floats."""
    dtype = np.dtype(dtype)
    if dtype.kind != "f":
        return dtype
    return np.dtype(f"i{dtype.itemsize}").newbyteorder(dtype.byteorder)


def _torch_int(torch, itemsize: int):
    return {1: torch.int8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[itemsize]


def bits(array):
    """A float array's bit patterns as signed integers of the same width (a view:
    NumPy, CuPy or torch); other arrays as they are."""
    if type(array).__module__.startswith("torch"):
        if not array.dtype.is_floating_point:
            return array
        import torch

        return array.view(_torch_int(torch, array.element_size()))
    dtype = np.dtype(array.dtype)
    return array.view(code_dtype(dtype)) if dtype.kind == "f" else array


def from_bits(array, like):
    """The inverse of :func:`bits`: ``array`` viewed as the float dtype of ``like``
    (a dtype, or an array of that dtype) where that is a float dtype."""
    if type(array).__module__.startswith("torch"):
        dtype = like if not hasattr(like, "dtype") else like.dtype
        if isinstance(dtype, np.dtype):
            if dtype.kind != "f":
                return array
            import torch

            dtype = getattr(torch, dtype.name)
        return array.view(dtype) if dtype.is_floating_point else array
    dtype = np.dtype(like.dtype if hasattr(like, "dtype") else like)
    return array.view(dtype) if dtype.kind == "f" else array


def in_native_order(direction, flat, order: int, tuple_size: int):
    """``direction(flat, order, tuple_size)`` (delta_encode or delta_decode)
    computed on the values in the machine's byte order and returned in
    ``flat``'s dtype, byte order included (a ``'>i4'`` codec stores big-endian
    words, whatever the scan returns)."""
    dtype = getattr(flat, "dtype", None)
    if isinstance(dtype, np.dtype) and not dtype.isnative:
        return direction(flat.astype(dtype.newbyteorder("=")), order, tuple_size).astype(dtype)
    return direction(flat, order, tuple_size)
