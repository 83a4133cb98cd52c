"""The arguments of ``sort``, ``argsort``, ``unique`` and ``run_length_encode``, checked
before any work (the shared checks are :mod:`prefixscan._normalize`'s):
:func:`check_sort_args` returns :class:`SortArgs`, :func:`check_unique_args`
:class:`UniqueArgs`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..._arrays import ArrayRef, inspect_array
from ..._axes import normalize_axis
from ..._normalize import _as_int, check_flag
from .keys import SORTABLE_DTYPES, KeyCode, key_code

__all__ = ["SortArgs", "UniqueArgs", "check_sort_args", "check_unique_args", "check_keys_dtype"]


@dataclass(frozen=True)
class SortArgs:
    """Checked arguments of ``sort`` / ``argsort``: the keys (an ArrayRef), the axis
    (non-negative, or None: the flattened array), the key mapping, the values
    (ArrayRefs of x's shape and device; empty for none) and whether they were a tuple."""

    keys: ArrayRef
    axis: int | None
    code: KeyCode
    values: tuple
    struct: bool


@dataclass(frozen=True)
class UniqueArgs:
    """Checked arguments of ``unique`` / ``run_length_encode``: 1-D keys and the flags."""

    keys: ArrayRef
    return_index: bool = False
    return_inverse: bool = False
    return_counts: bool = False


def check_keys_dtype(ref: ArrayRef, argument: str = "x") -> None:
    """Refuse keys without an order: complex numbers (TypeError naming ``argument``)."""
    if ref.dtype not in SORTABLE_DTYPES:
        raise TypeError(f"{argument}: keys of dtype {ref.dtype} have no order here; sort integer, bool or real "
                        "float keys (for complex numbers, sort a real key such as their real part, or "
                        "numpy.lexsort((x.imag, x.real)))")


def _check_key_bits(key_bits: Any, ref: ArrayRef) -> int | None:
    if key_bits is None:
        return None
    key_bits = _as_int(key_bits, "key_bits")
    if ref.dtype.startswith("float") or ref.dtype == "bfloat16":
        raise TypeError(f"key_bits applies to integer and bool keys (known to lie in [0, 2**key_bits)); x has "
                        f"dtype {ref.dtype}")
    top = key_code(ref.dtype).bits
    if not 1 <= key_bits <= top:
        raise ValueError(f"key_bits must be between 1 and {top} (the bits of {ref.dtype} keys), got {key_bits}")
    return key_bits


def _check_values(values: Any, keys: ArrayRef) -> tuple[tuple, bool]:
    if values is None:
        return (), False
    struct = isinstance(values, tuple)
    if struct and not values:
        raise ValueError("values: an empty tuple; give one array or a tuple of arrays (or None)")
    names = [f"values[{i}]" for i in range(len(values))] if struct else ["values"]
    refs = tuple(inspect_array(v, name) for v, name in zip(values if struct else (values,), names))
    for ref, name in zip(refs, names):
        if tuple(ref.shape) != tuple(keys.shape):
            raise ValueError(f"{name} has shape {tuple(ref.shape)}; values must have x's shape {tuple(keys.shape)}")
        if ref.device != keys.device:
            raise ValueError(f"{name} is on {ref.device}; values must be on x's device {keys.device}")
        if (ref.library == "dask") != (keys.library == "dask"):
            raise TypeError(f"{name}: x and values must both be dask arrays or neither")
    return refs, struct


def check_sort_args(x: Any, axis: Any = -1, descending: Any = False, values: Any = None,
                    key_bits: Any = None) -> SortArgs:
    """``sort``'s and ``argsort``'s arguments: ``x`` an array of a sortable dtype,
    ``axis`` an int in range or None, ``descending`` True or False, ``values`` None,
    an array or a non-empty tuple of arrays of x's shape on x's device, ``key_bits``
    None or an integer in [1, the key's bits] for integer and bool keys."""
    ref = inspect_array(x, "x")
    check_keys_dtype(ref)
    if axis is not None:
        axis = normalize_axis(_as_int(axis, "axis"), len(ref.shape))
    descending = check_flag(descending, "descending")
    key_bits = _check_key_bits(key_bits, ref)
    refs, struct = _check_values(values, ref)
    return SortArgs(ref, axis, key_code(ref.dtype, descending, key_bits), refs, struct)


def check_unique_args(x: Any, return_index: Any = False, return_inverse: Any = False,
                      return_counts: Any = False, function: str = "unique") -> UniqueArgs:
    """``unique``'s and ``run_length_encode``'s arguments: a 1-D ``x`` of a sortable
    dtype (not a dask array) and True/False flags."""
    ref = inspect_array(x, "x")
    if ref.library == "dask":
        raise TypeError(f"x: {function} of a dask array is not supported (its length depends on the values); "
                        "call it on the computed array, or on each chunk")
    check_keys_dtype(ref)
    if len(ref.shape) != 1:
        raise ValueError(f"x must be 1-D for {function}, got shape {tuple(ref.shape)}; flatten it first "
                         "(x.reshape(-1))")
    return UniqueArgs(ref, check_flag(return_index, "return_index"), check_flag(return_inverse, "return_inverse"),
                      check_flag(return_counts, "return_counts"))
