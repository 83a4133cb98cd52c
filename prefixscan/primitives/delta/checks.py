"""The arguments of ``delta_encode`` and ``delta_decode``, checked before any work
(the shared checks are :mod:`prefixscan._normalize`'s)."""

from __future__ import annotations

from typing import Any

from ..._arrays import ArrayRef, inspect_array
from ..._normalize import check_axis, check_order, check_tuple_size
from ..._request import np_dtype

__all__ = ["check_delta_args"]


def check_delta_args(x: Any, axis: int, order: Any, tuple_size: Any) -> tuple[ArrayRef, int, int, int]:
    """Delta coding's arguments: ``(x_ref, axis, order, tuple_size)`` with the axis
    made non-negative; ``tuple_size`` must divide the coded axis' length."""
    ref = inspect_array(x, "x")
    axis = check_axis(ref, axis)
    order = check_order(order)
    tuple_size = check_tuple_size(tuple_size)
    n = ref.shape[axis]
    if n % tuple_size:
        raise ValueError(f"tuple_size={tuple_size} does not divide the lane length {n}")
    if ref.dtype == "bool" or np_dtype(ref.dtype).kind not in "iufc":
        raise TypeError(f"x: delta coding needs a numeric dtype, got {ref.dtype}")
    return ref, axis, order, tuple_size
