"""The arguments of ``linear_recurrence``, checked before any work (the shared
checks are :mod:`prefixscan._normalize`'s; ``offsets`` are checked by
:func:`prefixscan._segments.check_offsets`, the rule ``segmented_scan`` follows)."""

from __future__ import annotations

from typing import Any

from ..._arrays import ArrayRef, inspect_array
from ..._normalize import check_axis, check_init_shape, check_init_value
from ...monoid import accumulator_dtype_name

__all__ = ["check_recurrence_args", "check_log_space_dtype"]

#: The dtypes of log decays: real floats (``exp`` of an integer or a complex log is not one).
LOG_SPACE_DTYPES = ("float16", "bfloat16", "float32", "float64")


def check_log_space_dtype(dtype: str) -> None:
    """Refuse ``log_space=True`` for a dtype (canonical name) that holds no real log
    decays, naming the argument."""
    if dtype not in LOG_SPACE_DTYPES:
        raise TypeError(f"log_space=True takes real floating log decays (float16, bfloat16, float32, float64); "
                        f"a and b have dtype {dtype}")


def check_recurrence_args(a: Any, b: Any, init: Any, axis: int) -> tuple[ArrayRef, ArrayRef, bool]:
    """``linear_recurrence``'s coefficients and seed: ``(a_ref, b_ref, widen)``, where
    ``widen`` says that ``init`` is an array of the lane shape that needs the scanned
    axis put back before it broadcasts against the result."""
    ra, rb = inspect_array(a, "a"), inspect_array(b, "b")
    if ra.shape != rb.shape:
        raise ValueError(f"b has shape {rb.shape} but a has shape {ra.shape}")
    if ra.dtype != rb.dtype:
        raise TypeError(f"b has dtype {rb.dtype} but a has dtype {ra.dtype}")
    axis = check_axis(ra, axis, "a")
    widen = False
    if init is not None:  # checked before any work: init is h[-1], held in a's dtype
        widen = bool(check_init_shape(init, ra.shape[:axis] + ra.shape[axis + 1:]))
        check_init_value(init, accumulator_dtype_name(ra.dtype))
    return ra, rb, widen
