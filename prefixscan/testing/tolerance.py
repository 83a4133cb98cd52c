"""One rule for comparing a scan's result with the reference.

* Integers and bools: bitwise equal (wrap-around included).
* Floats and complex numbers: NaN in the same places, the same infinities, and
  elsewhere ``|actual - expected| <= rtol * max(1, sqrt(n) / 16) * (mag + 1)``
  where ``expected`` is the reference's float64 value rounded once to the output
  dtype, ``n`` the number of combines behind an element (lane length x order),
  ``rtol`` a few units of the output dtype's rounding (:data:`RTOL`) and ``mag``
  the magnitude of the summed terms: for ``add`` the same scan of ``|x|``
  (and ``|init|``), which bounds every partial sum's rounding error in any
  association order (Higham, "Accuracy and Stability of Numerical Algorithms",
  section 4.2); else ``|expected|``.  The ``sqrt(n)`` allows for rounding errors
  that add up as a random walk over long lanes.
* Where the arithmetic is exact the bound is zero: ``max``/``min`` (they only
  select), and sums of integer-valued floats whose partial sums of ``|x|`` stay
  below 2^24 (float32) or 2^53 (float64), in any association order.

:func:`tolerance_for` works out ``mag``, ``n`` and ``rtol`` for one scan's
arguments; :func:`assert_scan_equal` applies the rule;
:func:`assert_scan_matches` runs ``prefixscan.scan`` and does both.
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from ..primitives.scan.api import scan as _library_scan
from ._scalars import BFLOAT16, accumulator_dtype, as_numpy
from .reference import reference_scan

__all__ = ["RTOL", "to_numpy", "tolerance_for", "assert_scan_equal", "assert_scan_matches"]

#: Relative tolerances per output dtype: a few units of its rounding.
RTOL = {"float16": 1e-2, BFLOAT16: 1e-2, "float32": 1e-5, "float64": 1e-12, "complex64": 1e-5,
        "complex128": 1e-12}

# Arguments of prefixscan.scan that the reference takes (the rest choose how, not what).
_SCAN_ARGUMENTS = ("axis", "inclusive", "reverse", "init", "order", "tuple_size", "dtype")


def to_numpy(a: Any) -> np.ndarray:
    """A result (NumPy array, torch tensor on any device, anything with
    ``__array__``) as a NumPy array; bfloat16 tensors come as float32."""
    return as_numpy(a)[0]


def _exact_limit(acc: np.dtype) -> float:
    """Integers up to this magnitude are exact in ``acc``."""
    return 2.0**24 if acc.itemsize <= (8 if acc.kind == "c" else 4) else 2.0**53


def _integral(v: np.ndarray) -> bool:
    if v.dtype.kind == "c":
        return _integral(v.real) and _integral(v.imag)
    if v.dtype.kind != "f":
        return True
    return bool(np.all(np.isfinite(v)) and np.all(v == np.round(v)))


def _absolute(v: np.ndarray) -> np.ndarray:
    return np.abs(v.astype(np.complex128 if v.dtype.kind == "c" else np.float64)).astype(np.float64)


def tolerance_for(x: Any, op: Any = "add", **scan_kwargs: Any) -> dict:
    """The rule's ``mag``, ``n`` and ``rtol`` for ``scan(x, op, **scan_kwargs)``,
    as keyword arguments of :func:`assert_scan_equal`::

        assert_scan_equal(got, reference_scan(x, op, **kw), **tolerance_for(x, op, **kw))
    """
    kw = {k: v for k, v in scan_kwargs.items() if k in _SCAN_ARGUMENTS}
    order = operator.index(kw.get("order", 1))
    if isinstance(x, tuple):  # struct monoids: relative to |expected|
        shape = as_numpy(x[0])[0].shape
        return dict(n=_lane_length(shape, kw.get("axis")) * order)
    values, name = as_numpy(x)
    n = _lane_length(values.shape, kw.get("axis")) * order
    if getattr(op, "builtin", False):  # prefixscan.BUILTIN_OPS[name]
        op = op.name
    out_name = np.dtype(kw["dtype"]).name if kw.get("dtype") is not None else name
    if out_name != BFLOAT16 and np.dtype(out_name).kind not in "fc":
        return dict(n=n)  # integers and bools: exact
    if op in ("max", "min"):
        return dict(n=n, rtol=0.0)
    if op != "add":
        return dict(n=n)
    init = kw.get("init")
    abs_init = None if init is None else _absolute(as_numpy(init)[0])
    mag_kw = {k: v for k, v in kw.items() if k not in ("dtype", "init")}
    mag = reference_scan(_absolute(values), "add", init=abs_init, **mag_kw)
    acc = accumulator_dtype(name, kw.get("dtype"))
    exact = (_integral(values)
             and (init is None or _integral(as_numpy(init)[0]))
             and (mag.size == 0 or float(mag.max()) < _exact_limit(acc))
             and not (out_name in ("float16", BFLOAT16) and order > 1))  # rounded between passes
    return dict(mag=mag, n=n, rtol=0.0 if exact else None)


def _lane_length(shape: tuple, axis: Any) -> int:
    if axis is None:
        return int(np.prod(shape, dtype=np.int64))
    return shape[operator.index(axis)]


def assert_scan_equal(actual: Any, expected: Any, *, mag: Any = None, n: int = 1, rtol: float | None = None,
                      err_msg: str = "") -> None:
    """Assert that ``actual`` matches ``expected`` (the reference's result) by the
    rule of this module.  ``actual`` may be any array type (torch tensors on any
    device included); a tuple of arrays compares field by field.  ``mag``
    defaults to ``|expected|``, ``rtol`` to :data:`RTOL` of the output dtype
    (bfloat16 for bfloat16 tensors); ``rtol=0.0`` asks for exact equality."""
    if isinstance(expected, tuple):
        assert isinstance(actual, tuple) and len(actual) == len(expected), (
            f"expected a tuple of {len(expected)} arrays, got {type(actual).__name__} {err_msg}")
        for k, (a, e) in enumerate(zip(actual, expected)):
            assert_scan_equal(a, e, mag=mag, n=n, rtol=rtol, err_msg=f"{err_msg} field {k}".strip())
        return
    actual_np, actual_name = as_numpy(actual)
    expected = np.asarray(expected)
    assert actual_np.shape == expected.shape, f"shape {actual_np.shape} != {expected.shape} {err_msg}"
    assert actual_np.dtype == expected.dtype, f"dtype {actual_np.dtype} != {expected.dtype} {err_msg}"
    kind = expected.dtype.kind
    if kind in "biu":
        if not np.array_equal(actual_np, expected):
            bad = np.argwhere(actual_np != expected)
            first = tuple(bad[0])
            raise AssertionError(
                f"{len(bad)} of {expected.size} elements differ {err_msg}; first at {first}: "
                f"got {actual_np[first]!r}, expected {expected[first]!r}")
        return
    if rtol is None:
        rtol = RTOL[actual_name if actual_name == BFLOAT16 else expected.dtype.name]
    wide = np.complex128 if kind == "c" else np.float64
    a, e = actual_np.astype(wide), expected.astype(wide)
    nan_a, nan_e = np.isnan(a), np.isnan(e)
    assert np.array_equal(nan_a, nan_e), f"NaNs differ {err_msg}: at {np.argwhere(nan_a != nan_e)[:5].tolist()}"
    inf_e = np.isinf(e)
    assert np.array_equal(a[inf_e], e[inf_e]), f"infinities differ {err_msg}"
    mag = np.abs(e) if mag is None else np.broadcast_to(np.asarray(mag, dtype=np.float64), e.shape)
    scale = max(1.0, np.sqrt(max(n, 1)) / 16.0)
    tol = rtol * scale * (np.where(np.isfinite(mag), mag, 0.0) + 1.0)
    with np.errstate(invalid="ignore"):
        ok = nan_e | inf_e | (np.abs(a - e) <= tol)
    if not ok.all():
        bad = np.argwhere(~ok)
        first = tuple(bad[0])
        raise AssertionError(
            f"{len(bad)} of {e.size} elements differ beyond tolerance {err_msg}; first at {first}: "
            f"got {actual_np[first]!r}, expected {expected[first]!r} (tol {tol[first]:.3g})")


def assert_scan_matches(op: Any, x: Any, *, err_msg: str = "", **scan_kwargs: Any) -> Any:
    """Run ``prefixscan.scan(x, op, **scan_kwargs)`` and assert that it matches
    :func:`~prefixscan.testing.reference_scan` by the rule of this module, and
    that ``x`` was left unchanged (unless ``out`` is ``x``).  Returns the result.

    Test your own monoid this way, on any array type and backend::

        from prefixscan.testing import assert_scan_matches
        assert_scan_matches(my_monoid, (a, b), inclusive=False, reverse=True)
    """
    reference_kwargs = {k: v for k, v in scan_kwargs.items() if k in _SCAN_ARGUMENTS}
    expected = reference_scan(x, op, **reference_kwargs)
    tolerance = tolerance_for(x, op, **reference_kwargs)
    fields = x if isinstance(x, tuple) else (x,)
    before = [to_numpy(f).copy() for f in fields]
    actual = _library_scan(x, op, **scan_kwargs)
    if scan_kwargs.get("out") is None:
        for f, b in zip(fields, before):
            np.testing.assert_array_equal(to_numpy(f), b, err_msg=f"scan modified its input {err_msg}")
    label = err_msg or f"op={getattr(op, 'name', op)!r} {_describe(reference_kwargs)}"
    assert_scan_equal(actual, expected, err_msg=label, **tolerance)
    return actual


def _describe(kwargs: dict) -> str:
    return " ".join(f"{k}={v!r}" if np.ndim(v) == 0 else f"{k}=array{np.shape(v)}" for k, v in kwargs.items())
