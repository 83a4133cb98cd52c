"""Values of the reference: Python scalars, the built-in operators on them, and
the conversions between them and arrays.

The reference (:mod:`prefixscan.testing.reference`) holds every element as a
Python scalar:

* integers as ``int``, wrapped to the accumulator's bit width after every
  combine (two's complement, as C wraps).  This is exact for any combine built
  from ``+``, ``-``, ``*``, ``&``, ``|``, ``^`` (reduction mod 2^k is a ring
  homomorphism) and for ``max``/``min`` (applied to already-wrapped values);
* bools as ``bool``;
* floats as ``float`` (IEEE double) and complex numbers as ``complex``: the
  reference accumulates more precisely than any backend and rounds once to the
  output dtype, so a backend's float results are judged against a float64
  value (see :mod:`prefixscan.testing.tolerance`).

bfloat16 has no NumPy dtype: a torch bfloat16 tensor is read as float32 values
and tagged ``"bfloat16"``; results are float32 arrays holding values rounded to
the bfloat16 grid.  Nothing here uses prefixscan's own code: the built-in
operators are written again on Python scalars from docs/semantics.md.
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

__all__ = [
    "BUILTIN_COMBINES",
    "OP_KINDS",
    "builtin_identity",
    "accumulator_dtype",
    "scalar_converter",
    "as_numpy",
    "from_scalars",
]

BFLOAT16 = "bfloat16"


# ---------------------------------------------------------------------------
# Built-in operators on Python scalars.

def _add(a, b):
    return a + b


def _mul(a, b):
    return a * b


def _isnan(v) -> bool:
    return isinstance(v, (float, complex)) and v != v


def _max(a, b):
    # NaN propagates, as numpy.maximum; ties keep the earlier operand.
    if _isnan(a):
        return a
    if _isnan(b):
        return b
    return b if b > a else a


def _min(a, b):
    if _isnan(a):
        return a
    if _isnan(b):
        return b
    return b if b < a else a


def _and(a, b):
    return a & b


def _or(a, b):
    return a | b


def _xor(a, b):
    return a ^ b


def _logaddexp(a, b):
    if _isnan(a) or _isnan(b):
        return math.nan
    hi, lo = (a, b) if a >= b else (b, a)
    if lo == -math.inf or hi == math.inf:
        # log(e^hi + 0) = hi, and inf + anything = inf (hi - lo would be inf - inf).
        return hi
    return hi + math.log1p(math.exp(lo - hi))


#: The built-in operators of docs/semantics.md, on Python scalars.
BUILTIN_COMBINES: dict[str, Callable[[Any, Any], Any]] = {
    "add": _add,
    "mul": _mul,
    "max": _max,
    "min": _min,
    "and": _and,
    "or": _or,
    "xor": _xor,
    "logaddexp": _logaddexp,
}

#: The dtype kinds (NumPy kind letters) each built-in operator accepts.
OP_KINDS: dict[str, str] = {
    "add": "iufc",
    "mul": "iufc",
    "max": "biuf",
    "min": "biuf",
    "and": "biu",
    "or": "biu",
    "xor": "biu",
    "logaddexp": "f",
}


def builtin_identity(name: str, dtype: Any) -> Any:
    """The identity of built-in operator ``name`` on values of ``dtype``, as a Python scalar."""
    dt = np.dtype(dtype)
    kind = dt.kind
    if name == "add" and kind in "fc":  # IEEE addition's identity: -0.0 + x is x, -0.0 included
        return scalar_converter(dt)(complex(-0.0, -0.0) if kind == "c" else -0.0)
    if name in ("add", "or", "xor"):
        return scalar_converter(dt)(0)
    if name == "mul":
        return scalar_converter(dt)(1)
    if name == "logaddexp":
        return -math.inf
    if name in ("max", "min", "and"):
        if kind == "b":
            return name != "max"  # max: False; min and and: True
        if kind in "iu":
            info = np.iinfo(dt)
            if name == "max":
                return int(info.min)
            if name == "min":
                return int(info.max)
            return -1 if kind == "i" else int(info.max)  # and: all bits set
        return -math.inf if name == "max" else math.inf
    raise ValueError(f"unknown built-in operator {name!r}; built-ins are {', '.join(BUILTIN_COMBINES)}")


# ---------------------------------------------------------------------------
# Dtypes and scalars.

def accumulator_dtype(input_dtype: Any, requested: Any = None) -> np.dtype:
    """The dtype a scan accumulates in: ``requested`` when given, else the
    input's, with float16 and bfloat16 widened to float32 (docs/semantics.md)."""
    if requested is not None:
        return np.dtype(requested)
    if str(input_dtype) in ("float16", BFLOAT16):
        return np.dtype(np.float32)
    return np.dtype(input_dtype)


def scalar_converter(dtype: Any) -> Callable[[Any], Any]:
    """A function from a number (Python or NumPy, 0-d arrays included) to the
    Python scalar a value of ``dtype`` holds: integers wrap as in C, floats
    become ``float`` (unrounded: the reference keeps double precision)."""
    dt = np.dtype(dtype)
    kind = dt.kind
    if kind in "iu":
        bits = dt.itemsize * 8
        mask = (1 << bits) - 1
        if kind == "u":
            return lambda v: int(v) & mask
        half, full = 1 << (bits - 1), 1 << bits

        def wrap_signed(v):
            v = int(v) & mask
            return v - full if v >= half else v

        return wrap_signed
    if kind == "b":
        return bool
    if kind == "c":
        return complex
    return float


def as_numpy(a: Any) -> tuple[np.ndarray, str]:
    """``a`` (a NumPy array, a torch tensor on any device, a scalar or anything
    with ``__array__``) as a NumPy array and the name of its dtype
    (``"bfloat16"`` for bfloat16 tensors, whose values come as float32)."""
    if type(a).__module__.startswith("torch"):
        import torch

        t = a.detach().cpu()
        if t.dtype == torch.bfloat16:
            return t.float().numpy(), BFLOAT16
        return t.numpy(), str(t.numpy().dtype)
    arr = np.asarray(a)
    return arr, arr.dtype.name


def storage_dtype(name: str) -> np.dtype:
    """The NumPy dtype that holds values of dtype ``name`` (float32 for bfloat16)."""
    return np.dtype(np.float32) if name == BFLOAT16 else np.dtype(name)


def round_to_bfloat16(a: np.ndarray) -> np.ndarray:
    """Values rounded once to the nearest bfloat16 (8 significant bits, ties to
    even), held as float32."""
    with np.errstate(all="ignore"):
        mantissa, exponent = np.frexp(np.asarray(a, dtype=np.float64))
        return np.ldexp(np.rint(mantissa * 256.0), exponent - 8).astype(np.float32)


def from_scalars(values: list, shape: tuple, dtype_name: str) -> np.ndarray:
    """Python scalars -> an array of ``dtype_name`` of ``shape``, floats rounded
    once from double (bfloat16: to the bfloat16 grid, held as float32)."""
    dt = storage_dtype(dtype_name)
    with np.errstate(all="ignore"):
        if not values:
            out = np.empty(0, dtype=dt)
        elif dt.kind in "iu":
            wrap = scalar_converter(dt)
            out = np.array([wrap(v) for v in values], dtype=dt)
        elif dt.kind == "f":
            doubles = np.array(values, dtype=np.float64)
            out = round_to_bfloat16(doubles) if dtype_name == BFLOAT16 else doubles.astype(dt)
        elif dt.kind == "c":
            out = np.array(values, dtype=np.complex128).astype(dt)
        else:
            out = np.array(values, dtype=dt)
    return out.reshape(shape)


def cast(a: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """``a`` converted to ``dtype`` by NumPy's casting rules (wrapping, rounding)."""
    with np.errstate(all="ignore"):
        return np.asarray(a).astype(dtype)
