"""Shared fixtures and helpers for the prefixscan test suite.

Helpers are plain module-level functions so that test modules can import them
(``from conftest import ...``); the tests directory is put on ``sys.path`` here
so that ``import oracle`` works whatever pytest's import mode.
"""

from __future__ import annotations

import os
import sys
import zlib


def _triton_interpreter_without_gpu() -> None:
    """Without a CUDA device, run Triton kernels in the interpreter.  This must
    happen before triton is imported: its own library functions are jitted then."""
    try:
        import torch
    except ImportError:
        return
    if not torch.cuda.is_available():
        os.environ.setdefault("TRITON_INTERPRET", "1")


_triton_interpreter_without_gpu()
# No first-use tuning inside the test suite (a GPU run would stall seconds per new key);
# a cached table is still used.  tests/test_tuner.py turns it on where it tests it.
os.environ.setdefault("PREFIXSCAN_AUTOTUNE", "0")


def _patch_language_once_per_launch() -> None:
    """Speed up the interpreter about 3x (test time only; semantics unchanged).

    Triton 3.6's interpreter re-patches ``triton.language`` (``inspect.getmembers``
    over the module, ~0.3 ms) on *every* call of a jitted device function, and our
    kernels call small device functions (the combine) per element inside
    ``tl.associative_scan``.  The patches are module-wide and are only undone when
    the launch ends, so patching once per launch and per globals dict is equivalent.
    Only applied to the Triton version whose internals this matches.
    """
    if os.environ.get("TRITON_INTERPRET") != "1":
        return
    try:
        import triton
        from triton.runtime import interpreter
    except ImportError:
        return
    if not triton.__version__.startswith("3.6.") or not hasattr(interpreter, "_patch_lang"):
        return
    patched: set[int] = set()  # ids of the globals dicts patched since the launch began
    launch = interpreter.GridExecutor.__call__

    def launch_once(self, *args, **kwargs):
        patched.clear()
        return launch(self, *args, **kwargs)

    def call_device_function(self, *args, **kwargs):
        if id(self.fn.__globals__) not in patched:
            interpreter._patch_lang(self.fn)
            patched.add(id(self.fn.__globals__))
        fn = self.rewrite()
        try:
            return fn(*args, **kwargs)
        except Exception as e:
            raise interpreter.InterpreterError(repr(e)) from e

    interpreter.GridExecutor.__call__ = launch_once
    interpreter.InterpretedFunction.__call__ = call_device_function


_patch_language_once_per_launch()

import numpy as np
import pytest

_HERE = os.path.dirname(os.path.abspath(__file__))
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

import oracle  # noqa: E402

# ---------------------------------------------------------------------------
# dtypes

INT_DTYPES = ["int8", "int16", "int32", "int64"]
UINT_DTYPES = ["uint8", "uint16", "uint32", "uint64"]
INTEGER_DTYPES = INT_DTYPES + UINT_DTYPES
FLOAT_DTYPES = ["float16", "float32", "float64"]
COMPLEX_DTYPES = ["complex64", "complex128"]
ALL_DTYPES = INTEGER_DTYPES + FLOAT_DTYPES + COMPLEX_DTYPES + ["bool"]
OPS = ["add", "mul", "max", "min", "and", "or", "xor", "logaddexp"]

#: Relative tolerances, applied to the magnitude of the cumulative results.
RTOL = {"float16": 1e-2, "float32": 1e-5, "float64": 1e-12, "complex64": 1e-5, "complex128": 1e-12}


def op_applies(op: str, dtype) -> bool:
    return np.dtype(dtype).kind in oracle.OP_KINDS[op]


def valid_op_dtypes():
    return [(op, dt) for op in OPS for dt in ALL_DTYPES if op_applies(op, dt)]


# ---------------------------------------------------------------------------
# Random data

def seed_for(name: str) -> int:
    base = int(os.environ.get("PREFIXSCAN_TEST_SEED", "0"))
    return (zlib.crc32(name.encode()) + base) & 0xFFFFFFFF


@pytest.fixture
def rng(request):
    """A fresh generator per test, seeded from the test id (reproducible;
    set PREFIXSCAN_TEST_SEED to vary all streams)."""
    return np.random.default_rng(seed_for(request.node.nodeid))


def _bits(dtype) -> int:
    return np.dtype(dtype).itemsize * 8


def _uint_of(dtype):
    return np.dtype(f"uint{_bits(dtype)}")


def random_data(rng, dtype, shape, op: str = "add", *, exact: bool = True) -> np.ndarray:
    """Random data for ``op`` on ``dtype``: never all zeros, chosen so that the
    cumulative results keep changing (so that wrong or unwritten elements show).

    * integers, add/xor/max/min: the full range of the dtype (sums wrap);
    * integers, mul: odd values (a group mod 2^k, so products never collapse to 0);
    * and: all ones with one bit cleared here and there; or: one bit set here and there;
    * floats, add: with ``exact`` small integers (every partial sum and every
      association order is exact, so comparisons are exact), else uniform in [-1, 1);
    * floats/complex, mul: exp(N(0, sigma)) with a random sign, sigma keeping the
      products in range;
    * floats, max/min: uniform (-100, 100) with ties; logaddexp: N(0, 3);
    * bool: random, with at least one True and one False.
    """
    dt = np.dtype(dtype)
    shape = tuple(shape) if isinstance(shape, (tuple, list)) else (int(shape),)
    size = int(np.prod(shape, dtype=np.int64))
    n_scan = max(size, 1)
    kind = dt.kind

    if kind == "b":
        if op == "and" or op == "min":
            x = rng.random(size) < 0.97
        elif op in ("or", "max"):
            x = rng.random(size) < 0.03
        else:
            x = rng.random(size) < 0.5
        if size >= 2:
            x[rng.integers(size)] = True
            x[rng.integers(size)] = False
            if x.all():
                x[0] = False
        elif size == 1:
            x[0] = True
        return x.reshape(shape)

    if kind in "iu":
        bits = _bits(dt)
        ut = _uint_of(dt)
        if op == "mul":
            u = rng.integers(0, 2**bits, size=size, dtype=ut, endpoint=False) | ut.type(1)
        elif op == "and":
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
        return u.view(dt).reshape(shape)

    if kind == "f":
        if op == "add":
            if exact:
                # |partial sums| <= 8 n stays well inside the exact-integer range.
                lim = 4 if dt == np.float16 else 8
                x = rng.integers(-lim, lim + 1, size=size).astype(dt)
                x[x == 0] = 1
            else:
                x = rng.uniform(-1.0, 1.0, size=size).astype(dt)
        elif op == "mul":
            sigma = min(0.1, 1.5 / np.sqrt(n_scan))
            x = np.exp(rng.normal(0.0, sigma, size=size)) * rng.choice([-1.0, 1.0], size=size)
            x = x.astype(dt)
        elif op in ("max", "min"):
            x = rng.integers(-100, 101, size=size).astype(dt) + rng.choice([0.0, 0.5], size=size).astype(dt)
        elif op == "logaddexp":
            x = rng.normal(0.0, 3.0, size=size).astype(dt)
        else:
            raise ValueError(f"{op} on floats")
        return x.reshape(shape)

    if kind == "c":
        if op == "add":
            re_ = rng.integers(-8, 9, size=size)
            im_ = rng.integers(-8, 9, size=size)
            re_[(re_ == 0) & (im_ == 0)] = 1
            x = (re_ + 1j * im_).astype(dt)
        elif op == "mul":
            sigma = min(0.1, 1.5 / np.sqrt(n_scan))
            x = np.exp(rng.normal(0.0, sigma, size=size) + 1j * rng.uniform(-np.pi, np.pi, size=size))
            x = x.astype(dt)
        else:
            raise ValueError(f"{op} on complex")
        return x.reshape(shape)
    raise TypeError(dt)


def random_init(rng, dtype, shape, op: str = "add"):
    """A random seed of ``shape`` (``()`` for a scalar seed) for ``op`` on ``dtype``."""
    size = int(np.prod(shape, dtype=np.int64))
    if shape == ():
        return random_data(rng, dtype, 1, op).reshape(())[()]
    return random_data(rng, dtype, size, op).reshape(shape)


def poisoned(shape, dtype):
    """An output array filled with NaN (floats) or a sentinel (integers)."""
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


# ---------------------------------------------------------------------------
# Comparisons

def magnitude(x, op: str, **scan_kw):
    """The magnitude that rounding errors of a scan of ``x`` scale with: the same
    scan of |x| for add (in float64), |expected| otherwise (computed by the caller)."""
    a = np.abs(np.asarray(x).astype(np.complex128 if np.asarray(x).dtype.kind == "c" else np.float64))
    return np.abs(oracle.scan_builtin(a.astype(np.float64), "add", **scan_kw))


def assert_scan_equal(actual, expected, *, mag=None, n=1, rtol=None, err_msg=""):
    """Exact equality for integers/bools; for floats |a - e| <= rtol * mag * k(n)
    (NaN in the same places), where mag defaults to |expected| + 1."""
    actual_np = to_numpy(actual)
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
                f"got {actual_np[first]!r}, expected {expected[first]!r}"
            )
        return
    if rtol is None:
        rtol = RTOL[expected.dtype.name]
    a = actual_np.astype(np.complex128 if kind == "c" else np.float64)
    e = expected.astype(np.complex128 if kind == "c" else np.float64)
    nan_a, nan_e = np.isnan(a), np.isnan(e)
    assert np.array_equal(nan_a, nan_e), f"NaNs differ {err_msg}: got {np.argwhere(nan_a != nan_e)[:5]}"
    inf_e = np.isinf(e)
    assert np.array_equal(a[inf_e], e[inf_e]), f"infinities differ {err_msg}"
    if mag is None:
        mag = np.abs(e)
    mag = np.broadcast_to(np.asarray(mag, dtype=np.float64), e.shape)
    scale = max(1.0, np.sqrt(max(n, 1)) / 16.0)
    tol = rtol * scale * (np.where(np.isfinite(mag), mag, 0.0) + 1.0)
    with np.errstate(invalid="ignore"):
        ok = nan_e | inf_e | (np.abs(a - e) <= tol)
    if not ok.all():
        bad = np.argwhere(~ok)
        first = tuple(bad[0])
        raise AssertionError(
            f"{len(bad)} of {e.size} elements differ beyond tolerance {err_msg}; first at {first}: "
            f"got {actual_np[first]!r}, expected {expected[first]!r} (tol {tol[first]:.3g})"
        )


def to_numpy(a):
    """A result as a NumPy array (torch tensors included)."""
    if isinstance(a, np.ndarray):
        return a
    mod = type(a).__module__
    if mod.startswith("torch"):
        import torch

        if a.dtype == torch.bfloat16:
            return a.float().numpy()
        return a.detach().cpu().numpy()
    return np.asarray(a)


# ---------------------------------------------------------------------------
# Non-commutative monoids.  Combine functions are module-level defs using only
# operators, so that they run on Python scalars (the oracle), on NumPy arrays
# (the CPU backend) and could compile as Triton functions.

def affine(x, y):
    """Composition of affine maps v -> a*v + b: first x, then y."""
    a1, b1 = x
    a2, b2 = y
    return a1 * a2, a2 * b1 + b2


AFFINE_IDENTITY = (1, 0)


def matmul2(x, y):
    """2x2 matrix product x @ y, matrices as (m00, m01, m10, m11)."""
    a, b, c, d = x
    e, f, g, h = y
    return a * e + b * g, a * f + b * h, c * e + d * g, c * f + d * h


MATMUL2_IDENTITY = (1, 0, 0, 1)


def add_pair(x, y):
    """Two independent sums (a commutative struct monoid)."""
    a1, b1 = x
    a2, b2 = y
    return a1 + a2, b1 + b2


def first_nonzero(x, y):
    """Keeps the earliest non-zero value (non-commutative, idempotent)."""
    return x if x != 0 else y


def affine_monoid():
    from prefixscan import Monoid

    return Monoid(affine, AFFINE_IDENTITY, name="affine")


def matmul2_monoid():
    from prefixscan import Monoid

    return Monoid(matmul2, MATMUL2_IDENTITY, name="matmul2")


def affine_data(rng, shape, dtype="int64", *, small=True):
    """(a, b) fields for the affine monoid.  Integers wrap exactly; floats keep |a| ~ 1."""
    dt = np.dtype(dtype)
    if dt.kind in "iu":
        a = rng.integers(-3, 4, size=shape).astype(dt) if small else random_data(rng, dt, shape, "mul")
        a[a == 0] = 1
        b = rng.integers(-5, 6, size=shape).astype(dt) if small else random_data(rng, dt, shape, "add")
        return a, b
    a = rng.uniform(0.9, 1.05, size=shape).astype(dt) * rng.choice([-1, 1], size=shape).astype(dt)
    b = rng.uniform(-1, 1, size=shape).astype(dt)
    return a, b


def matmul2_data(rng, shape, dtype="int64"):
    dt = np.dtype(dtype)
    return tuple(rng.integers(-3, 4, size=shape).astype(dt) for _ in range(4))


# ---------------------------------------------------------------------------
# Objects that only speak __array__.

class ArrayLike:
    """Has ``__array__`` and nothing else of the array protocols."""

    def __init__(self, data):
        self._data = np.asarray(data)

    def __array__(self, dtype=None, copy=None):
        if dtype is not None:
            return self._data.astype(dtype)
        return self._data.copy() if copy else self._data


def ids(prefix, values):
    return [f"{prefix}{v}" for v in values]
