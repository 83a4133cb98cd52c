"""Test data: random inputs that make wrong results show, poisoned outputs, and
example monoids with their data.

Random inputs are never all zeros and keep the cumulative results changing,
so an unwritten, shifted or mis-combined element shows; integer data span the
whole dtype so that sums wrap.  Outputs are poisoned (NaN, or a sentinel) so
that an element a kernel failed to write shows too.

The example monoids' ``combine`` functions use operators and
:func:`prefixscan.where` only, so one definition runs on Python scalars (the
reference), on NumPy arrays (the CPU backend) and compiles as a Triton
function (the GPU backend).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..monoid import Monoid, where
from ._scalars import OP_KINDS

__all__ = [
    "INT_DTYPES", "UINT_DTYPES", "INTEGER_DTYPES", "FLOAT_DTYPES", "COMPLEX_DTYPES", "ALL_DTYPES",
    "BUILTIN_OP_NAMES", "op_applies", "valid_op_dtypes",
    "random_array", "random_init", "poisoned", "ArrayLike",
    "affine", "AFFINE_IDENTITY", "affine_monoid", "affine_data",
    "matmul2", "MATMUL2_IDENTITY", "matmul2_monoid", "matmul2_data",
    "add_pair", "add_pair_monoid", "first_nonzero", "first_nonzero_monoid", "sparse_array",
]

INT_DTYPES = ["int8", "int16", "int32", "int64"]
UINT_DTYPES = ["uint8", "uint16", "uint32", "uint64"]
INTEGER_DTYPES = INT_DTYPES + UINT_DTYPES
FLOAT_DTYPES = ["float16", "float32", "float64"]
COMPLEX_DTYPES = ["complex64", "complex128"]
ALL_DTYPES = INTEGER_DTYPES + FLOAT_DTYPES + COMPLEX_DTYPES + ["bool"]
BUILTIN_OP_NAMES = list(OP_KINDS)


def op_applies(op: str, dtype: Any) -> bool:
    """Whether built-in operator ``op`` takes inputs of ``dtype``."""
    return np.dtype(dtype).kind in OP_KINDS[op]


def valid_op_dtypes() -> list[tuple[str, str]]:
    """Every (built-in operator, dtype of :data:`ALL_DTYPES`) pair that applies."""
    return [(op, dt) for op in BUILTIN_OP_NAMES for dt in ALL_DTYPES if op_applies(op, dt)]


# ---------------------------------------------------------------------------
# Random inputs and poisoned outputs.

def _shape(shape: Any) -> tuple:
    return tuple(shape) if isinstance(shape, (tuple, list)) else (int(shape),)


def _random_bools(rng, size: int, op: str) -> np.ndarray:
    # and/min die at the first False, or/max saturate at the first True: keep those rare.
    p_true = {"and": 0.97, "min": 0.97, "or": 0.03, "max": 0.03}.get(op, 0.5)
    x = rng.random(size) < p_true
    if size >= 2:
        x[rng.integers(size)] = True
        x[rng.integers(size)] = False
        if x.all():
            x[0] = False
    elif size == 1:
        x[0] = True
    return x


def _random_integers(rng, dt: np.dtype, size: int, op: str) -> np.ndarray:
    bits = dt.itemsize * 8
    ut = np.dtype(f"uint{bits}")
    n_scan = max(size, 1)
    if op == "mul":
        # Odd values: a group mod 2^k, so products never collapse to 0.
        u = rng.integers(0, 2**bits, size=size, dtype=ut, endpoint=False) | ut.type(1)
    elif op == "and":
        # All ones with a bit cleared here and there, about 2 x bits times per scan.
        clear = rng.random(size) < min(1.0, 2.0 * bits / n_scan)
        bit = rng.integers(0, bits, size=size).astype(ut)
        u = np.where(clear, ~(ut.type(1) << bit), ~ut.type(0)).astype(ut)
    elif op == "or":
        setb = rng.random(size) < min(1.0, 2.0 * bits / n_scan)
        bit = rng.integers(0, bits, size=size).astype(ut)
        u = np.where(setb, ut.type(1) << bit, ut.type(0)).astype(ut)
        if size and not u.any():
            u[rng.integers(size)] = 1
    else:
        u = rng.integers(0, 2**bits, size=size, dtype=ut, endpoint=False)
        if size and not u.any():
            u[0] = 1
    return u.view(dt)


def _random_floats(rng, dt: np.dtype, size: int, op: str, exact: bool) -> np.ndarray:
    n_scan = max(size, 1)
    if op == "add":
        if exact:
            # |partial sums| <= 8 n stays well inside the exact-integer range.
            lim = 4 if dt == np.float16 else 8
            x = rng.integers(-lim, lim + 1, size=size).astype(dt)
            x[x == 0] = 1
            return x
        return rng.uniform(-1.0, 1.0, size=size).astype(dt)
    if op == "mul":
        sigma = min(0.1, 1.5 / np.sqrt(n_scan))  # keeps the products in range
        return (np.exp(rng.normal(0.0, sigma, size=size)) * rng.choice([-1.0, 1.0], size=size)).astype(dt)
    if op in ("max", "min"):
        return rng.integers(-100, 101, size=size).astype(dt) + rng.choice([0.0, 0.5], size=size).astype(dt)
    if op == "logaddexp":
        return rng.normal(0.0, 3.0, size=size).astype(dt)
    raise ValueError(f"op={op!r} does not apply to {dt}")


def _random_complex(rng, dt: np.dtype, size: int, op: str) -> np.ndarray:
    if op == "add":
        re_ = rng.integers(-8, 9, size=size)
        im_ = rng.integers(-8, 9, size=size)
        re_[(re_ == 0) & (im_ == 0)] = 1
        return (re_ + 1j * im_).astype(dt)
    if op == "mul":
        sigma = min(0.1, 1.5 / np.sqrt(max(size, 1)))
        return np.exp(rng.normal(0.0, sigma, size=size) + 1j * rng.uniform(-np.pi, np.pi, size=size)).astype(dt)
    raise ValueError(f"op={op!r} does not apply to {dt}")


def random_array(rng: np.random.Generator, dtype: Any, shape: Any, op: str = "add", *,
                 exact: bool = True) -> np.ndarray:
    """Fresh random data for built-in operator ``op`` on ``dtype``: never all
    zeros, chosen so that the cumulative results keep changing.

    * integers, add/xor/max/min: the full range of the dtype (sums wrap);
    * integers, mul: odd values (a group mod 2^k, so products never collapse to 0);
    * and: all ones with one bit cleared here and there; or: one bit set here and there;
    * floats, add: with ``exact`` small non-zero integers (every partial sum in
      every association order is exact, so results compare exactly), else
      uniform in [-1, 1);
    * floats/complex, mul: exp(N(0, sigma)) with a random sign or phase, sigma
      keeping the products in range;
    * floats, max/min: uniform on a half-integer grid in (-100, 100), with ties;
      logaddexp: N(0, 3);
    * bool: random, with at least one True and one False.
    """
    dt = np.dtype(dtype)
    shape = _shape(shape)
    size = int(np.prod(shape, dtype=np.int64))
    if dt.kind == "b":
        x = _random_bools(rng, size, op)
    elif dt.kind in "iu":
        x = _random_integers(rng, dt, size, op)
    elif dt.kind == "f":
        x = _random_floats(rng, dt, size, op, exact)
    elif dt.kind == "c":
        x = _random_complex(rng, dt, size, op)
    else:
        raise TypeError(f"no random data for dtype {dt}")
    return x.reshape(shape)


def random_init(rng: np.random.Generator, dtype: Any, shape: Any, op: str = "add") -> np.ndarray | np.generic:
    """A random seed (``init=``) of ``shape`` for ``op`` on ``dtype``; ``shape=()``
    gives a NumPy scalar."""
    if shape == ():
        return random_array(rng, dtype, 1, op).reshape(())[()]
    return random_array(rng, dtype, shape, op)


def poisoned(shape: Any, dtype: Any) -> np.ndarray:
    """An output array filled with NaN (floats), True (bool) or a sentinel near
    the integer range's end, so that elements a scan fails to write show."""
    dt = np.dtype(dtype)
    out = np.empty(shape, dtype=dt)
    if dt.kind in "fc":
        out.fill(np.nan)
    elif dt.kind == "b":
        out.fill(True)
    elif dt.kind == "u":
        out.fill(np.iinfo(dt).max - 12)
    else:
        out.fill(np.iinfo(dt).min + 12)
    return out


class ArrayLike:
    """An array that speaks ``__array__`` and none of the other array protocols."""

    def __init__(self, data: Any) -> None:
        self._data = np.asarray(data)

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        if dtype is not None:
            return self._data.astype(dtype)
        return self._data.copy() if copy else self._data


# ---------------------------------------------------------------------------
# Example monoids.

def affine(x, y):
    """Composition of affine maps v -> a*v + b: first x, then y (not commutative)."""
    a1, b1 = x
    a2, b2 = y
    return a1 * a2, a2 * b1 + b2


AFFINE_IDENTITY = (1, 0)


def affine_monoid() -> Monoid:
    return Monoid(affine, AFFINE_IDENTITY, name="affine")


def affine_data(rng: np.random.Generator, shape: Any, dtype: Any = "int64", *,
                small: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """(a, b) fields for the affine monoid.  Integers: small values (or, with
    ``small=False``, the full range: odd a, products wrap); floats keep |a| near 1
    so that long compositions stay in range."""
    dt = np.dtype(dtype)
    if dt.kind in "iu":
        a = rng.integers(-3, 4, size=shape).astype(dt) if small else random_array(rng, dt, shape, "mul")
        a[a == 0] = 1
        b = rng.integers(-5, 6, size=shape).astype(dt) if small else random_array(rng, dt, shape, "add")
        return a, b
    a = rng.uniform(0.9, 1.05, size=shape).astype(dt) * rng.choice([-1, 1], size=shape).astype(dt)
    b = rng.uniform(-1, 1, size=shape).astype(dt)
    return a, b


def matmul2(x, y):
    """2x2 matrix product x @ y, matrices as row-major fields (m00, m01, m10, m11)."""
    a, b, c, d = x
    e, f, g, h = y
    return a * e + b * g, a * f + b * h, c * e + d * g, c * f + d * h


MATMUL2_IDENTITY = (1, 0, 0, 1)


def matmul2_monoid() -> Monoid:
    return Monoid(matmul2, MATMUL2_IDENTITY, name="matmul2")


def matmul2_data(rng: np.random.Generator, shape: Any, dtype: Any = "int64") -> tuple[np.ndarray, ...]:
    """Four fields of small integers in [-3, 3] (products wrap on long scans)."""
    dt = np.dtype(dtype)
    return tuple(rng.integers(-3, 4, size=shape).astype(dt) for _ in range(4))


def add_pair(x, y):
    """Two independent sums (a commutative struct monoid)."""
    a1, b1 = x
    a2, b2 = y
    return a1 + a2, b1 + b2


def add_pair_monoid() -> Monoid:
    return Monoid(add_pair, (0, 0), name="add_pair", commutative=True)


def first_nonzero(x, y):
    """Keeps the earliest non-zero value (not commutative, idempotent): a wrong
    combination order picks another value."""
    return where(x != 0, x, y)


def first_nonzero_monoid() -> Monoid:
    return Monoid(first_nonzero, 0, name="first_nonzero")


def sparse_array(rng: np.random.Generator, dtype: Any, shape: Any, zeros: float = 0.8) -> np.ndarray:
    """Data for :func:`first_nonzero`: random non-zero values with a fraction
    ``zeros`` of them set to zero."""
    x = random_array(rng, dtype, shape, "add")
    x[rng.random(_shape(shape)) < zeros] = 0
    return x
