"""Every benchmarked result is checked against NumPy before it is timed.

The data are small random integers (-4..4; -1..1 for float16 and bfloat16,
:meth:`.cases.SizeCase.data_bounds`) in the benchmarked dtype, so integers
compare exactly (wrapping as C does) and first-order float sums are exact too
(16-bit floats accumulate in float32 and round once on output, by at most
eps16/2 relative); for higher orders floats may round, by up to eps*sqrt(n) per
pass or 10x the error of NumPy's own scan in that dtype, whichever is larger.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from .cases import SizeCase, eps_of, itemsize_of, kind_of

__all__ = ["VERIFICATION", "Expected", "expected_result", "numpy_reference", "verify_host",
           "verify_device"]

VERIFICATION = ("against NumPy on data in -4..4 (16-bit floats -1..1): integers exact; 16-bit float sums "
                "within eps*|ref| of each element; other floats within "
                "max(eps*(10 + 8*sqrt(lane)*(order-1))*max|ref|, 10x NumPy's own error "
                "in the dtype)")

#: Elements compared at a time, so a 2^30 comparison needs no 2^30 temporaries.
_HOST_CHUNK = 1 << 22
_DEVICE_CHUNK = 1 << 25


@dataclass(frozen=True)
class Expected:
    """The reference answer of one case and how close a result must come."""

    reference: np.ndarray  # integers in the dtype itself, floats in float64
    dtype: str
    tolerance: float  # absolute, for floats (0 for integers: exact)
    relative: float = 0.0  # per element: a float result may also be off by relative * |reference|


def numpy_reference(x_small: np.ndarray, dtype: str, order: int, tuple_size: int,
                    acc: Any = None) -> np.ndarray:
    """NumPy's answer: integers in the dtype itself (wrapping as C does), floats in float64."""
    if acc is None:
        acc = np.dtype(dtype) if kind_of(dtype) in "iu" else np.dtype(np.float64)
    r = x_small.astype(acc)
    v = r.reshape(-1, tuple_size) if tuple_size > 1 else r
    for _ in range(order):
        np.cumsum(v, axis=0, dtype=acc, out=v)
    return r


def _float_tolerance(case: SizeCase, scale: float, serial_error: float) -> float:
    """Absolute tolerance for a float result.  The data are small integers, so
    first-order sums are exact; higher orders round, by about eps*sqrt(n) each
    pass, and a serial scan's rounding can drift further: the tolerance is also
    at least 10x the error of NumPy's own scan in the dtype (``serial_error``)."""
    eps = eps_of(case.dtype)
    lane = max(1, case.n // case.tuple_size)
    rtol = 10 * eps + 8 * eps * math.sqrt(lane) * (case.order - 1)
    return max(rtol * (scale + 1.0), 10.0 * serial_error)


def _serial_error(x_small: np.ndarray, ref: np.ndarray, case: SizeCase) -> float:
    """How far NumPy's scan in the float dtype itself lands from the float64
    reference: the scale of a correct implementation's rounding."""
    if kind_of(case.dtype) != "f" or case.order == 1:
        return 0.0  # small-integer data: first-order float sums are exact
    low = numpy_reference(x_small, case.dtype, case.order, case.tuple_size, acc=_numpy_stand_in(case.dtype))
    err = 0.0
    for i in range(0, ref.size, _HOST_CHUNK):
        d = np.abs(low[i:i + _HOST_CHUNK].astype(np.float64) - ref[i:i + _HOST_CHUNK])
        err = max(err, float(np.max(d[np.isfinite(d)], initial=0.0)))
    return err


def _numpy_stand_in(dtype: str) -> np.dtype:
    """The NumPy dtype a serial scan "in ``dtype``" runs in: the dtype itself, or
    float32 for bfloat16, which NumPy lacks (float32 has bfloat16's exponent
    range, so only its smaller rounding error differs)."""
    return np.dtype(np.float32) if dtype == "bfloat16" else np.dtype(dtype)


def expected_result(x_small: np.ndarray, case: SizeCase) -> Expected:
    """The reference of ``case`` on the int8 data ``x_small``, with its tolerance."""
    ref = numpy_reference(x_small, case.dtype, case.order, case.tuple_size)
    if kind_of(case.dtype) != "f":
        return Expected(ref, case.dtype, 0.0)
    if itemsize_of(case.dtype) == 2 and case.order == 1:
        # The exact integer sums (far inside float32's exact range) rounded once to 16
        # bits: off by at most eps/2 of each element, wherever it lies.  A tolerance
        # scaled by the largest sum would pass an accumulator that drifts in 16 bits.
        return Expected(ref, case.dtype, 0.0, eps_of(case.dtype))
    scale = float(np.max(np.abs(ref))) if ref.size else 0.0
    tolerance = _float_tolerance(case, scale, _serial_error(x_small, ref, case))
    return Expected(ref, case.dtype, tolerance)


def verify_host(result: Any, expected: Expected) -> tuple[bool, str]:
    """(ok, why not) for a host result (anything ``numpy.asarray`` reads)."""
    got = np.asarray(result)
    dtype, ref = expected.dtype, expected.reference
    if got.dtype.name != dtype:
        return False, f"result dtype {got.dtype}, expected {dtype}"
    got = got.reshape(-1)
    if got.shape != ref.shape:
        return False, f"result shape {got.shape}, expected {ref.shape}"
    is_float = kind_of(dtype) == "f"
    for i in range(0, ref.size, _HOST_CHUNK):
        g, r = got[i:i + _HOST_CHUNK], ref[i:i + _HOST_CHUNK]
        if is_float:
            err = np.abs(g.astype(np.float64) - r)
            bad = ~(err <= expected.tolerance + expected.relative * np.abs(r))
        else:
            bad = g != r
        if bad.any():
            j = int(np.argmax(bad))
            return False, (f"{int(bad.sum())}+ wrong elements, first at {i + j}: "
                           f"got {g[j]!r}, expected {r[j]!r}")
    return True, ""


def verify_device(result: Any, reference_on_device, dtype: str, tolerance: float,
                  relative: float = 0.0) -> tuple[bool, str]:
    """(ok, why not) for a CUDA result (a torch tensor or any DLPack array),
    compared on the device with ``reference_on_device`` (``Expected.reference``
    copied there once per case; ``tolerance`` and ``relative`` are ``Expected``'s)."""
    import torch

    if not isinstance(result, torch.Tensor):
        try:
            result = torch.from_dlpack(result)
        except Exception as exc:  # noqa: BLE001
            return False, f"result of type {type(result).__name__} not readable: {exc}"
    ref = reference_on_device
    if str(result.dtype).replace("torch.", "") != dtype:
        return False, f"result dtype {result.dtype}, expected {dtype}"
    got = result.reshape(-1)
    if got.numel() != ref.numel():
        return False, f"result has {got.numel()} elements, expected {ref.numel()}"
    is_float = kind_of(dtype) == "f"
    for i in range(0, ref.numel(), _DEVICE_CHUNK):
        g, r = got[i:i + _DEVICE_CHUNK], ref[i:i + _DEVICE_CHUNK]
        if is_float:
            err = (g.double() - r).abs()
            bad = ~(err <= tolerance + relative * r.abs())
        else:
            bad = g != r
        if bool(bad.any()):
            j = int(torch.argmax(bad.to(torch.uint8)))
            return False, (f"{int(bad.sum())}+ wrong elements, first at {i + j}: "
                           f"got {g[j].item()!r}, expected {r[j].item()!r}")
    return True, ""
