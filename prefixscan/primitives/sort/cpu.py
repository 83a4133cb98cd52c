"""Sorting on the CPU backend: the entry points that
:data:`prefixscan.primitives.sort.IMPLEMENTATIONS` finds.

From ``SMALL_SCAN`` elements in rows longer than :data:`SHORT_ROW` where Numba is
installed, the compiled LSD radix sort (:mod:`.compiled`); else NumPy:
``numpy.sort(kind="stable")`` for an ascending sort of the whole keys, ``numpy.argsort(kind="stable")`` of the mapped keys
(:func:`.keys.ordered_keys`) for the rest.  ``unique`` and ``run_length_encode``
mark where sorted (or given) keys change and take those positions
(``numpy.flatnonzero``), their differences giving the counts.  NumPy results.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from ..._arrays import ArrayRef, as_numpy
from ...backends.cpu import compiled as cpu_compiled
from .checks import SortArgs, UniqueArgs
from .keys import KeyCode, key_code, ordered_keys

__all__ = ["SortResult", "sort", "unique", "run_length_encode", "SHORT_ROW"]

#: Rows of at most this many keys take NumPy's sort on the compiled path too: a
#: radix pass's 256 counters cost more than such a row's sort.
SHORT_ROW = 32


class SortResult(NamedTuple):
    """What a backend's ``sort`` returns: the sorted keys (None when not asked for), the
    permutation (int64, None when not asked for) and the values in that order (a tuple,
    empty without values), each of x's shape (flattened for axis None)."""

    keys: object
    index: object
    values: tuple


def _rows(a: np.ndarray, axis: int | None) -> np.ndarray:
    """``a`` as C-contiguous ``(rows, length)`` with ``axis`` last (None: one row)."""
    if axis is None:
        return np.ascontiguousarray(a.reshape(1, -1))
    rows = math.prod(a.shape[:axis] + a.shape[axis + 1:])
    return np.ascontiguousarray(np.moveaxis(a, axis, -1).reshape(rows, a.shape[axis]))


def _unrows(r: np.ndarray, shape: tuple, axis: int | None) -> np.ndarray:
    """Inverse of :func:`_rows` for a result of x's ``shape``."""
    if axis is None:
        return r.reshape(-1)
    moved = shape[:axis] + shape[axis + 1:] + (shape[axis],)
    return np.ascontiguousarray(np.moveaxis(r.reshape(moved), -1, axis))


def _check_bits(bits: np.ndarray, code: KeyCode) -> None:
    if code.key_bits is not None and code.key_bits < code.width and bits.size:
        if np.any(bits >> code.storage.type(code.key_bits)):
            raise ValueError(f"key_bits={code.key_bits}: x has a key outside [0, 2**{code.key_bits})")


def _numpy_sort(keys: np.ndarray, bits: np.ndarray, code: KeyCode, values: list, want_keys: bool,
                want_index: bool) -> tuple:
    """The NumPy path over ``(rows, length)`` arrays: ``(keys, index, values)``."""
    _check_bits(bits, code)
    if not values and not want_index and not code.descending and code.key_bits is None:
        return np.sort(keys, axis=-1, kind="stable"), None, []
    perm = np.argsort(ordered_keys(bits, code), axis=-1, kind="stable")
    sorted_keys = np.take_along_axis(keys, perm, -1) if want_keys else None
    return sorted_keys, (perm.astype(np.int64, copy=False) if want_index else None), \
        [np.take_along_axis(v, perm, -1) for v in values]


def _compiled_sort(bits: np.ndarray, code: KeyCode, values: list, want_keys: bool, want_index: bool) -> tuple:
    """The compiled radix sort over ``(rows, length)`` arrays: ``(key bits, index, values)``.
    One values array of at most 8 bytes an element moves with the keys; others follow
    the permutation."""
    from .compiled import payload_view, sort_rows  # imports numba: only where it is installed

    if len(values) == 1 and not want_index and values[0].dtype.itemsize <= 8:
        out_bits, moved = sort_rows(bits, code, payload=payload_view(values[0]), write_keys=want_keys)
        return out_bits, None, [moved.view(values[0].dtype)]
    argsort = want_index or bool(values)
    out_bits, perm = sort_rows(bits, code, argsort=argsort, write_keys=want_keys)
    return out_bits, (perm if want_index else None), [np.take_along_axis(v, perm, -1) for v in values]


def sort(args: SortArgs, *, want_keys: bool = True, want_index: bool = False) -> SortResult:
    """Sort ``args.keys`` along ``args.axis`` (and the values with them)."""
    x = as_numpy(args.keys)
    code = args.code
    if x.dtype.name != code.dtype:  # bfloat16 tensors come widened to float32: the same order, exactly
        code = key_code(x.dtype.name, code.descending, code.key_bits)
    keys = _rows(x, args.axis)
    values = [_rows(as_numpy(v), args.axis) for v in args.values]
    bits = keys.view(code.storage)
    if cpu_compiled.available() and keys.size >= cpu_compiled.SMALL_SCAN and keys.shape[1] > SHORT_ROW:
        out_bits, index, moved = _compiled_sort(bits, code, values, want_keys, want_index)
        sorted_keys = out_bits.view(keys.dtype) if out_bits is not None else None
    else:
        sorted_keys, index, moved = _numpy_sort(keys, bits, code, values, want_keys, want_index)
    shape = tuple(x.shape)
    return SortResult(_unrows(sorted_keys, shape, args.axis) if sorted_keys is not None else None,
                      _unrows(index, shape, args.axis) if index is not None else None,
                      tuple(_unrows(v, shape, args.axis) for v in moved))


def _changes(a: np.ndarray, equal_nan: bool) -> np.ndarray:
    """Bool heads of the runs of equal consecutive elements of 1-D ``a`` (n > 0)."""
    heads = np.empty(a.shape[0], dtype=bool)
    heads[0] = True
    np.not_equal(a[1:], a[:-1], out=heads[1:])
    if equal_nan and a.dtype.kind == "f":
        heads[1:] &= ~(np.isnan(a[1:]) & np.isnan(a[:-1]))
    return heads


def run_length_encode(ref: ArrayRef) -> tuple:
    """``(values, counts)`` of the runs of equal consecutive elements of 1-D ``ref``
    (NaN never equal, -0.0 equal to 0.0: ``==``); counts int64."""
    x = as_numpy(ref)
    if x.shape[0] == 0:
        return x.copy(), np.zeros(0, np.int64)
    starts = np.flatnonzero(_changes(x, equal_nan=False))
    return x[starts], np.diff(starts, append=x.shape[0]).astype(np.int64, copy=False)


def unique(args: UniqueArgs) -> tuple:
    """``(values, index, inverse, counts)`` as ``numpy.unique`` (NaNs one value),
    None for what was not asked for."""
    x = as_numpy(args.keys)
    n = x.shape[0]
    need_perm = args.return_index or args.return_inverse
    sort_args = SortArgs(ArrayRef(x, "numpy", "cpu", x.shape, x.dtype.name), 0, key_code(x.dtype.name), (), False)
    result = sort(sort_args, want_keys=True, want_index=need_perm)
    s, perm = result.keys, result.index
    if n == 0:
        empty = np.zeros(0, np.int64)
        return s, (empty if args.return_index else None), (empty if args.return_inverse else None), \
            (empty if args.return_counts else None)
    heads = _changes(s, equal_nan=True)
    starts = np.flatnonzero(heads)
    index = perm[starts] if args.return_index else None
    counts = np.diff(starts, append=n).astype(np.int64, copy=False) if args.return_counts else None
    inverse = None
    if args.return_inverse:
        inverse = np.empty(n, np.int64)
        inverse[perm] = np.cumsum(heads, dtype=np.int64) - 1
    return s[starts], index, inverse, counts
