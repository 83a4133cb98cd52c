"""``prefixscan check``: a self-test of every feature on this machine.

Each feature runs the public API on fresh random data on the chosen device
(NumPy arrays on ``cpu``; torch CUDA tensors on ``cuda``, where ``backend=None``
picks the GPU backend) and compares the result with the plain-loop reference of
:mod:`prefixscan._reference`.  One line per feature, PASS or FAIL; the exit
status is non-zero when any feature fails.

Python API: :func:`run_checks` returns the list of results; :func:`main`
prints them and returns the exit status.
"""

from __future__ import annotations

import linecache
import os
import sys
import time
import traceback
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from . import _reference as ref

__all__ = ["CheckFailure", "CheckResult", "FEATURES", "run_checks", "main"]


class CheckFailure(AssertionError):
    """A result differs from the reference."""


@dataclass
class CheckResult:
    name: str
    status: str  # "PASS", "FAIL" or "SKIP"
    seconds: float
    cases: int
    message: str = ""


# ---------------------------------------------------------------------------
# Devices: put NumPy data where the scan runs, and bring results back.

class _Device:
    def __init__(self, name: str):
        self.name = name
        if name == "cuda":
            import torch

            if not torch.cuda.is_available():
                raise RuntimeError("--device cuda: torch sees no CUDA device "
                                   "(pip install prefixscan[gpu] on a machine with an NVIDIA GPU)")
            self.torch = torch
        elif name != "cpu":
            raise ValueError(f"device must be 'cpu' or 'cuda', got {name!r}")

    def put(self, a: Any) -> Any:
        if isinstance(a, tuple):
            return tuple(self.put(v) for v in a)
        a = np.ascontiguousarray(a)
        if self.name == "cpu":
            return a.copy()
        return self.torch.from_numpy(a.copy()).to("cuda")

    def get(self, y: Any) -> Any:
        if isinstance(y, tuple):
            return tuple(self.get(v) for v in y)
        if self.name == "cuda":
            if not (type(y).__module__.startswith("torch") and getattr(y, "is_cuda", False)):
                raise CheckFailure(f"expected a torch CUDA tensor back, got {type(y).__module__}."
                                   f"{type(y).__name__}")
            return y.detach().cpu().numpy()
        if not isinstance(y, np.ndarray):
            raise CheckFailure(f"expected a numpy.ndarray back, got {type(y).__name__}")
        return y


# ---------------------------------------------------------------------------
# Comparison.

_RTOL = {"float16": 4e-3, "float32": 3e-5, "float64": 1e-11}


def _expected_array(expected: Any, dtype: np.dtype) -> np.ndarray:
    target = dtype if dtype.kind in "biu" else np.dtype(np.float64)
    if isinstance(expected, np.ndarray):
        return expected.astype(target)
    lst = list(expected)
    if dtype.kind in "biu":
        return np.array(lst, dtype=dtype)
    return np.array(lst, dtype=np.float64)


def compare(got: np.ndarray, expected: Any, dtype: Any, *, label: str = "", rtol_scale: float = 1.0,
            shape: tuple | None = None) -> None:
    """Raise CheckFailure unless ``got`` (a NumPy array) matches ``expected``
    (list / object array of Python scalars, or an array) exactly for integers
    and bool, or within a tolerance for floats, and has dtype ``dtype``."""
    dt = np.dtype(dtype)
    where = f"{label}: " if label else ""
    if got.dtype != dt:
        raise CheckFailure(f"{where}result dtype {got.dtype}, expected {dt}")
    exp = _expected_array(expected, dt)
    if shape is not None:
        exp = exp.reshape(shape)
    if got.shape != exp.shape:
        raise CheckFailure(f"{where}result shape {got.shape}, expected {exp.shape}")
    if got.size == 0:
        return
    if dt.kind in "biu":
        bad = got != exp
        if bad.any():
            i = np.unravel_index(int(np.argmax(bad)), got.shape)
            raise CheckFailure(f"{where}{int(bad.sum())} of {got.size} elements differ; first at "
                               f"index {tuple(int(k) for k in i)}: got {got[i]!r}, expected {exp[i]!r}")
        return
    g = got.astype(np.float64)
    same = (g == exp) | (np.isnan(g) & np.isnan(exp))
    rtol = _RTOL.get(dt.name, 1e-6) * rtol_scale
    finite = np.isfinite(exp)
    scale = float(np.max(np.abs(exp[finite]))) if finite.any() else 1.0
    atol = rtol * max(1.0, scale)
    with np.errstate(invalid="ignore"):
        close = np.abs(g - exp) <= atol + rtol * np.abs(exp)
    bad = ~(same | (close & finite))
    if bad.any():
        i = np.unravel_index(int(np.argmax(bad)), got.shape)
        raise CheckFailure(f"{where}{int(bad.sum())} of {got.size} elements off (rtol {rtol:.1e}); first "
                           f"at index {tuple(int(k) for k in i)}: got {g[i]!r}, expected {exp[i]!r}")


# ---------------------------------------------------------------------------
# The context handed to each feature check.

class _Context:
    def __init__(self, ps, device: _Device, quick: bool, seed: int | None):
        self.ps = ps
        self.dev = device
        self.quick = quick
        self.seed = seed if seed is not None else int(np.random.SeedSequence().entropy % (2**32))
        self.rng = np.random.default_rng(self.seed)
        # Sizes: odd ones so every blocked algorithm sees a ragged tail.
        self.sizes = [1, 7, 1000, 4099] if quick else [1, 2, 31, 33, 1000, 4099, 65537, 2**18 + 3]
        self.small_sizes = [1, 5, 300] if quick else [1, 3, 33, 1000, 5003]
        # A few large cases, so GPU kernels run many blocks (and look back far).
        self.large_sizes = [2**17 + 3] if quick else [2**21 + 5]
        self.cases = 0

    # data -------------------------------------------------------------------
    def data(self, dtype: Any, n: Any, kind: str = "add") -> np.ndarray:
        """Fresh random data.  ``kind``: "add" (integers over their full range so
        sums wrap; floats on a dyadic grid so float sums are exact), "small",
        "mul" (floats of magnitude 1/2..2, products stay in range), "normal"."""
        dt = np.dtype(dtype)
        shape = (n,) if np.isscalar(n) else tuple(n)
        rng = self.rng
        if dt.kind == "b":
            return rng.random(shape) < 0.5
        if dt.kind in "iu":
            info = np.iinfo(dt)
            if kind == "small":
                lo, hi = (0, 20) if dt.kind == "u" else (-20, 20)
            else:
                lo, hi = int(info.min), int(info.max)
            return rng.integers(lo, hi, size=shape, dtype=dt, endpoint=True)
        if kind in ("add", "small"):
            return (rng.integers(-64, 65, size=shape) / 8.0).astype(dt)
        if kind == "mul":
            # Powers of two: products are exact.  The exponent walks randomly;
            # keep its spread (about sqrt(2 p size)) well inside float16/32 range.
            size = int(np.prod(shape))
            p = min(0.05, 25.0 / max(size, 1)) if dt.itemsize < 8 else 0.05
            vals = np.array([1.0, -1.0, 2.0, 0.5])
            return rng.choice(vals, size=shape, p=[0.5 - p, 0.5 - p, p, p]).astype(dt)
        return rng.standard_normal(shape).astype(dt)

    # running and comparing -----------------------------------------------------
    def check(self, label: str, call: Callable[[], Any], expected: Any, dtype: Any, **kw) -> Any:
        self.cases += 1
        try:
            y = call()
        except CheckFailure:
            raise
        except NotImplementedError:
            raise
        except Exception as exc:  # noqa: BLE001 - reported as a failure of this case
            raise CheckFailure(f"{label}: raised {_short(exc)}") from exc
        got = self.dev.get(y)
        if isinstance(expected, tuple):
            if not isinstance(got, tuple) or len(got) != len(expected):
                raise CheckFailure(f"{label}: expected a tuple of {len(expected)} arrays")
            dts = dtype if isinstance(dtype, tuple) else (dtype,) * len(expected)
            for k, (g, e, d) in enumerate(zip(got, expected, dts)):
                compare(g, e, d, label=f"{label} field {k}", **kw)
        else:
            compare(got, expected, dtype, label=label, **kw)
        return y

    def scan_case(self, x: np.ndarray, op: str = "add", *, label: str = "", rtol_scale: float = 1.0,
                  **kwargs) -> None:
        """Run ``ps.scan(x, op, **kwargs)`` on the device and compare with the
        reference (built-in operator ``op``)."""
        ref_kwargs = {k: kwargs[k] for k in ("axis", "inclusive", "reverse", "init", "order",
                                            "tuple_size", "dtype") if k in kwargs}
        acc = np.dtype(kwargs["dtype"]) if kwargs.get("dtype") is not None else _acc_dtype(x.dtype)
        ref_kwargs["dtype"] = acc
        expected = ref.scan_lanes(x, op, **ref_kwargs)
        out_dtype = np.dtype(kwargs["dtype"]) if kwargs.get("dtype") is not None else x.dtype
        dev_x = self.dev.put(x)
        dev_kwargs = dict(kwargs)
        if isinstance(dev_kwargs.get("init"), np.ndarray):
            dev_kwargs["init"] = self.dev.put(dev_kwargs["init"])
        desc = label or _describe(x, op, kwargs)
        self.check(desc, lambda: self.ps.scan(dev_x, op, **dev_kwargs), expected, out_dtype,
                   rtol_scale=rtol_scale * kwargs.get("order", 1))


def _acc_dtype(dtype: np.dtype) -> np.dtype:
    return np.dtype("float32") if dtype.name == "float16" else np.dtype(dtype)


def _describe(x, op, kwargs) -> str:
    parts = [f"{op} {x.dtype} shape={x.shape}"]
    parts += [f"{k}={v!r}" if not isinstance(v, np.ndarray) else f"{k}=array{v.shape}"
              for k, v in kwargs.items()]
    return " ".join(parts)


def _fit(n: int, s: int) -> int:
    return max(s, n - n % s)


# ---------------------------------------------------------------------------
# Features.

_INT_FLOAT = ("int32", "int64", "uint32", "float32", "float64")


def f_inclusive(c: _Context) -> None:
    for dt in _INT_FLOAT:
        for n in c.sizes + c.large_sizes:
            c.scan_case(c.data(dt, n), "add")


def f_exclusive(c: _Context) -> None:
    for dt in ("int32", "int64", "float32", "float64"):
        for n in c.sizes:
            c.scan_case(c.data(dt, n), "add", inclusive=False)
    for n in c.large_sizes:
        c.scan_case(c.data("float32", n), "add", inclusive=False, reverse=True, init=1.0)
        c.scan_case(c.data("int32", n), "max", inclusive=False)


def f_reverse(c: _Context) -> None:
    for dt in ("int32", "float64"):
        for n in c.sizes:
            for inclusive in (True, False):
                c.scan_case(c.data(dt, n), "add", reverse=True, inclusive=inclusive)


def f_init(c: _Context) -> None:
    for dt in ("int32", "float32"):
        for n in c.small_sizes + c.sizes[-1:]:
            for inclusive in (True, False):
                for reverse in (False, True):
                    init = int(c.rng.integers(-50, 50)) if dt.startswith("int") else 2.5
                    c.scan_case(c.data(dt, n), "add", inclusive=inclusive, reverse=reverse, init=init)
    x = c.data("int32", 1000, "small")
    c.scan_case(x, "max", init=7)
    c.scan_case(x, "min", init=-7, inclusive=False, reverse=True)


def f_order(c: _Context) -> None:
    for dt in ("int32", "int64", "float64"):
        for n in c.small_sizes + c.sizes[-1:]:
            for q in (2, 3):
                c.scan_case(c.data(dt, n, "add" if dt.startswith("int") else "small"), "add", order=q)
    x = c.data("int32", c.small_sizes[-1])
    c.scan_case(x, "add", order=2, inclusive=False, init=3)
    c.scan_case(x, "xor", order=4, reverse=True)


def f_tuple(c: _Context) -> None:
    for dt in ("int32", "float32", "int64"):
        for s in (2, 3, 4, 16):
            for n in (c.small_sizes[-1], c.sizes[-1]):
                c.scan_case(c.data(dt, _fit(n, s)), "add", tuple_size=s)
    for n in c.large_sizes:
        c.scan_case(c.data("int32", _fit(n, 4)), "add", tuple_size=4, order=2)
    x = c.data("int32", 999)
    c.scan_case(x, "add", tuple_size=3, init=np.array([1, -2, 3], dtype=np.int32))
    c.scan_case(x, "max", tuple_size=9, inclusive=False)


def f_combined(c: _Context) -> None:
    for dt in ("int32", "int64", "float64"):
        for n in c.small_sizes:
            for s in (2, 3):
                for q in (2, 3):
                    for inclusive in (True, False):
                        c.scan_case(c.data(dt, _fit(n, s), "add" if dt.startswith("int") else "small"),
                                    "add", tuple_size=s, order=q, reverse=True, inclusive=inclusive)


def f_ops_arith(c: _Context) -> None:
    for dt in ("int32", "int64", "uint8", "float32", "float64"):
        for n in c.small_sizes + c.sizes[-1:]:
            c.scan_case(c.data(dt, n, "mul"), "mul")
            c.scan_case(c.data(dt, n, "normal"), "max")
            c.scan_case(c.data(dt, n, "normal"), "min", inclusive=False)
    c.scan_case(c.data("bool", 777), "max")
    c.scan_case(c.data("bool", 777), "min", reverse=True)


def f_ops_bits(c: _Context) -> None:
    for dt in ("int32", "uint16", "int64", "bool"):
        for n in c.small_sizes + c.sizes[-1:]:
            for op in ("and", "or", "xor"):
                x = c.data(dt, n)
                if op == "and" and dt != "bool":
                    # Mostly-set bits, so the running AND does not die at once.
                    x = x | c.data(dt, n)
                c.scan_case(x, op)
                c.scan_case(x, op, inclusive=False, reverse=True)


def f_logaddexp(c: _Context) -> None:
    for dt in ("float32", "float64"):
        for n in c.small_sizes + c.sizes[-1:]:
            c.scan_case(c.data(dt, n, "normal"), "logaddexp", rtol_scale=10)
            c.scan_case(c.data(dt, n, "normal"), "logaddexp", inclusive=False, reverse=True,
                        rtol_scale=10)


def f_axis(c: _Context) -> None:
    m = 37 if c.quick else 301
    for dt in ("int32", "float64"):
        x = c.data(dt, (3, 5, m))
        for axis in (None, 0, 1, 2, -1, -3):
            c.scan_case(x, "add", axis=axis)
        c.scan_case(x, "add", axis=1, inclusive=False, reverse=True)
        init = c.data(dt, (m,), "small")
        c.scan_case(x, "add", axis=1, init=init)
    x = c.data("int32", (4, 6 * m))
    c.scan_case(x, "add", axis=1, tuple_size=3, order=2, init=c.data("int32", (4, 3), "small"))
    c.scan_case(c.data("int64", (2 * m, 7)), "max", axis=0, tuple_size=2, reverse=True)


def f_dtype(c: _Context) -> None:
    n = c.sizes[-1]
    c.scan_case(c.data("int8", n), "add", dtype="int32")
    c.scan_case(c.data("uint8", n), "add")  # wraps in uint8: no widening
    c.scan_case(c.data("int16", n), "add", dtype="int64", inclusive=False)
    c.scan_case(c.data("bool", n), "add", dtype="int32")
    c.scan_case(c.data("int32", n, "small"), "add", dtype="float64")
    # float16 accumulates in float32 and rounds once on output.
    x = c.data("float16", n, "small")
    expected = ref.scan_lanes(x.astype(np.float32), "add", dtype="float32")
    expected16 = np.array(expected.tolist(), dtype=np.float32).astype(np.float16)
    dx = c.dev.put(x)
    c.check(f"add float16 n={n}", lambda: c.ps.scan(dx, "add"), expected16, "float16")
    # bool + add without dtype= is an error.
    c.cases += 1
    try:
        c.ps.scan(c.dev.put(c.data("bool", 10)), "add")
    except (TypeError, ValueError):
        pass
    else:
        raise CheckFailure("add on bool without dtype= should raise TypeError")


def f_out(c: _Context) -> None:
    for dt in ("int32", "float64"):
        n = c.sizes[-1]
        x = c.data(dt, n)
        expected = ref.scan_lanes(x, "add", dtype=dt)
        dx = c.dev.put(x)
        out = c.dev.put(np.zeros(n, dtype=dt))
        y = c.check(f"add {dt} out=", lambda: c.ps.scan(dx, "add", out=out), expected, dt)
        compare(c.dev.get(out), expected, dt, label=f"add {dt}: out= array contents")
        if y is not out:
            raise CheckFailure("scan(..., out=o) should return o")
        # In place: out=x.
        dx2 = c.dev.put(x)
        c.check(f"add {dt} out=x", lambda: c.ps.scan(dx2, "add", out=dx2, inclusive=False),
                ref.scan_lanes(x, "add", dtype=dt, inclusive=False), dt)
        compare(c.dev.get(dx2), ref.scan_lanes(x, "add", dtype=dt, inclusive=False), dt,
                label=f"add {dt}: in-place contents")
    # 2-D out with an axis.
    x = c.data("int64", (6, 50))
    out = c.dev.put(np.zeros((6, 50), dtype=np.int64))
    dx = c.dev.put(x)
    c.check("add int64 axis=0 out=", lambda: c.ps.scan(dx, "add", axis=0, out=out),
            ref.scan_lanes(x, "add", axis=0, dtype="int64"), "int64")


# User operators: plain functions, so the GPU backend can compile them.

def _last_nonzero(a, b):
    from .monoid import where

    return where(b != 0, b, a)


def _affine(p, q):
    # x -> a1*x + b1, then x -> a2*x + b2: composed is (a1*a2, b1*a2 + b2).
    a1, b1 = p
    a2, b2 = q
    return (a1 * a2, b1 * a2 + b2)


def _affine_ref(wrap):
    def combine(p, q):
        a, b = p[0] * q[0], p[1] * q[0] + q[1]
        return (wrap(a), wrap(b)) if wrap else (a, b)

    return combine


def f_monoid(c: _Context) -> None:
    ps = c.ps
    ffill = ps.Monoid(_last_nonzero, 0, name="last_nonzero")
    for dt in ("int32", "float64"):
        for n in c.small_sizes + c.sizes[-1:]:
            x = c.data(dt, n, "small")
            x[c.rng.random(n) < 0.7] = 0
            for inclusive in (True, False):
                for reverse in (False, True):
                    expected = ref.scan_lanes(x, lambda a, b: b if b != 0 else a, 0,
                                              inclusive=inclusive, reverse=reverse, dtype=dt)
                    dx = c.dev.put(x)
                    c.check(f"Monoid(last_nonzero) {dt} n={n} inclusive={inclusive} reverse={reverse}",
                            lambda: ps.scan(dx, ffill, inclusive=inclusive, reverse=reverse),
                            expected, dt)


def f_struct(c: _Context) -> None:
    ps = c.ps
    affine = ps.Monoid(_affine, (1, 0), name="affine")
    for dt in ("int64", "float64"):
        wrap = ref.wrapper_for(dt)
        for n in c.small_sizes + c.sizes[-1:]:
            if dt == "int64":
                a, b = c.data(dt, n), c.data(dt, n)
            else:
                a = c.rng.uniform(0.5, 1.0, n) * c.rng.choice([-1.0, 1.0], n)
                b = c.rng.standard_normal(n)
            for inclusive, reverse in ((True, False), (False, False), (True, True)):
                pairs = list(zip(a.tolist(), b.tolist()))
                res = ref.scan_1d(pairs, _affine_ref(wrap), (1, 0) if dt == "int64" else (1.0, 0.0),
                                  inclusive=inclusive, reverse=reverse)
                expected = (np.array([p[0] for p in res] or [], dtype=object),
                            np.array([p[1] for p in res] or [], dtype=object))
                da, db = c.dev.put(a), c.dev.put(b)
                c.check(f"Monoid(affine) {dt} n={n} inclusive={inclusive} reverse={reverse}",
                        lambda: ps.scan((da, db), affine, inclusive=inclusive, reverse=reverse),
                        expected, dt, rtol_scale=100)


def f_make_scan(c: _Context) -> None:
    ps = c.ps
    kwargs = dict(inclusive=False, reverse=True, order=2, tuple_size=2)
    f = ps.make_scan("add", **kwargs)
    for dt in ("int32", "float64"):
        for n in c.small_sizes + c.sizes[-1:]:
            # The same object, reused on fresh data of several sizes and dtypes.
            x = c.data(dt, _fit(n, 2), "add" if dt == "int32" else "small")
            dx = c.dev.put(x)
            c.check(f"make_scan {dt} n={x.size} {kwargs}", lambda: f(dx),
                    ref.scan_lanes(x, "add", dtype=dt, **kwargs), dt, rtol_scale=2)
            init = np.array([3, -4], dtype=dt)
            dinit = c.dev.put(init)
            c.check(f"make_scan {dt} n={x.size} {kwargs} init=array(2)", lambda: f(dx, init=dinit),
                    ref.scan_lanes(x, "add", dtype=dt, init=init, **kwargs), dt, rtol_scale=2)
    g = ps.make_scan("max", axis=0)
    x = c.data("int32", (50, 3))
    dx = c.dev.put(x)
    out = c.dev.put(np.zeros((50, 3), dtype=np.int32))
    c.check("make_scan max axis=0 out=", lambda: g(dx, out=out),
            ref.scan_lanes(x, "max", axis=0, dtype="int32"), "int32")


def f_cumfuncs(c: _Context) -> None:
    ps = c.ps
    n = c.small_sizes[-1]
    for dt in ("int8", "int32", "int64", "float32", "float64", "bool"):
        x = c.data(dt, n, "small")
        dx = c.dev.put(x)
        for name in ("cumsum", "cumprod", "cummax", "cummin"):
            if name == "cumprod":
                x2 = c.data(dt, n, "mul") if dt.startswith("float") else x
                dx2 = c.dev.put(x2)
            else:
                x2, dx2 = x, dx
            fn = getattr(ps, name)
            expected = {"cumsum": np.cumsum, "cumprod": np.cumprod,
                        "cummax": np.maximum.accumulate, "cummin": np.minimum.accumulate}[name](x2)
            c.check(f"{name} {dt}", lambda: fn(dx2), expected, expected.dtype)
            if dt == "bool" and name in ("cummax", "cummin"):
                continue
            if dt == "bool":
                continue
            op = {"cumsum": "add", "cumprod": "mul", "cummax": "max", "cummin": "min"}[name]
            acc = expected.dtype
            for exclusive, reverse in ((True, False), (False, True), (True, True)):
                exp2 = ref.scan_lanes(x2.astype(acc), op, dtype=acc, inclusive=not exclusive,
                                      reverse=reverse)
                c.check(f"{name} {dt} exclusive={exclusive} reverse={reverse}",
                        lambda: fn(dx2, exclusive=exclusive, reverse=reverse), exp2, acc)
    x = c.data("int32", (4, 50), "small")
    dx = c.dev.put(x)
    c.check("cumsum int32 axis=1 dtype=int32", lambda: ps.cumsum(dx, axis=1, dtype="int32"),
            np.cumsum(x, axis=1, dtype=np.int32), "int32")
    c.check("cummax int32 axis=0", lambda: ps.cummax(dx, axis=0), np.maximum.accumulate(x, axis=0),
            "int32")


def _random_flags(c: _Context, n: int) -> np.ndarray:
    flags = c.rng.random(n) < 0.05
    if n:
        flags[c.rng.integers(0, n)] = True
    return flags


def _seg_cases(c: _Context, x, flags, kw_name, kw_value, dtype):
    ps = c.ps
    for op in ("add", "max"):
        for inclusive in (True, False):
            for reverse in (False, True):
                expected = ref.segmented_scan(x, flags, op, inclusive=inclusive, reverse=reverse,
                                              dtype=dtype)
                dx, dv = c.dev.put(x), c.dev.put(kw_value)
                c.check(f"segmented_scan {op} {dtype} {kw_name} n={len(x)} inclusive={inclusive} "
                        f"reverse={reverse}",
                        lambda: ps.segmented_scan(dx, op, inclusive=inclusive, reverse=reverse,
                                                  **{kw_name: dv}),
                        expected, dtype)


def f_seg_flags(c: _Context) -> None:
    for dt in ("int32", "float64"):
        for n in c.small_sizes + c.sizes[-1:]:
            x = c.data(dt, n)
            flags = _random_flags(c, n)
            _seg_cases(c, x, flags, "flags", flags, dt)


def f_seg_offsets(c: _Context) -> None:
    for dt in ("int32", "float32"):
        for n in c.small_sizes + c.sizes[-1:]:
            x = c.data(dt, n)
            k = int(c.rng.integers(0, max(1, n // 20) + 2))
            inner = np.sort(c.rng.integers(0, max(n, 1), size=k))  # duplicates: empty segments
            offsets = np.concatenate([[0], inner, [n]]).astype(np.int64)
            flags = ref.flags_from_offsets(offsets, n)
            _seg_cases(c, x, flags, "offsets", offsets, dt)
    # Offsets without the trailing n.
    x = c.data("int64", 100)
    offsets = np.array([0, 10, 10, 57], dtype=np.int64)
    _seg_cases(c, x, ref.flags_from_offsets(offsets, 100), "offsets", offsets, "int64")


def f_seg_keys(c: _Context) -> None:
    for dt in ("int64", "float64"):
        for n in c.small_sizes + c.sizes[-1:]:
            x = c.data(dt, n)
            runs = c.rng.integers(1, 30, size=n)
            keys = np.repeat(c.rng.integers(0, 3, size=n), runs)[:n].astype(np.int32)
            _seg_cases(c, x, ref.flags_from_keys(keys), "keys", keys, dt)


def f_compact(c: _Context) -> None:
    ps = c.ps
    for dt in ("int32", "float64", "int8"):
        for n in c.sizes:
            x = c.data(dt, n)
            for p in (0.0, 0.3, 1.0):
                mask = c.rng.random(n) < p
                dx, dm = c.dev.put(x), c.dev.put(mask)
                c.check(f"compact {dt} n={n} p={p}", lambda: ps.compact(dx, dm),
                        ref.compact(x, mask), dt)
    x = c.data("int32", (5, 40))
    mask = c.rng.random((5, 40)) < 0.5
    dx, dm = c.dev.put(x), c.dev.put(mask)
    c.check("compact int32 2-D", lambda: ps.compact(dx, dm), ref.compact(x.ravel(), mask.ravel()),
            "int32")


def f_delta(c: _Context) -> None:
    ps = c.ps
    for dt in ("int32", "int64", "uint16", "int8"):
        for n in c.small_sizes + c.sizes[-1:]:
            for q, s in ((1, 1), (2, 1), (1, 3), (3, 2)):
                m = _fit(n, s)
                x = c.data(dt, m)
                dx = c.dev.put(x)
                enc = ref.delta_encode(x, q, s, dtype=dt)
                y = c.check(f"delta_encode {dt} n={m} order={q} tuple_size={s}",
                            lambda: ps.delta_encode(dx, order=q, tuple_size=s), enc, dt)
                c.check(f"delta_decode(delta_encode) {dt} n={m} order={q} tuple_size={s}",
                        lambda: ps.delta_decode(y, order=q, tuple_size=s), x, dt)
                d = c.data(dt, m)
                dd = c.dev.put(d)
                c.check(f"delta_decode {dt} n={m} order={q} tuple_size={s}",
                        lambda: ps.delta_decode(dd, order=q, tuple_size=s),
                        ref.delta_decode(d, q, s, dtype=dt), dt)
    # 2-D along the last axis, and floats.
    x = c.data("int32", (3, 64))
    dx = c.dev.put(x)
    expected = np.array([ref.delta_encode(row, 2, 2, dtype="int32") for row in x], dtype=np.int32)
    c.check("delta_encode int32 (3, 64) axis=-1", lambda: ps.delta_encode(dx, order=2, tuple_size=2),
            expected, "int32")
    xf = c.data("float64", 500, "small")
    dxf = c.dev.put(xf)
    c.check("delta_encode float64", lambda: ps.delta_encode(dxf, order=2),
            ref.delta_encode(xf, 2), "float64")


def f_linrec(c: _Context) -> None:
    ps = c.ps
    for dt in ("float32", "float64"):
        for n in c.small_sizes + c.sizes[-1:]:
            a = (c.rng.uniform(0.5, 1.0, n) * c.rng.choice([-1.0, 1.0], n)).astype(dt)
            b = c.rng.standard_normal(n).astype(dt)
            da, db = c.dev.put(a), c.dev.put(b)
            for reverse in (False, True):
                for init in (None, 1.5):
                    expected = ref.linear_recurrence(a, b, init, reverse=reverse)
                    c.check(f"linear_recurrence {dt} n={n} init={init} reverse={reverse}",
                            lambda: ps.linear_recurrence(da, db, init=init, reverse=reverse),
                            expected, dt, rtol_scale=30)
    a = c.rng.uniform(0.5, 1.0, (3, 200))
    b = c.rng.standard_normal((3, 200))
    init = c.rng.standard_normal(3)
    expected = np.array([ref.linear_recurrence(a[i], b[i], float(init[i])) for i in range(3)])
    da, db, di = c.dev.put(a), c.dev.put(b), c.dev.put(init)
    c.check("linear_recurrence float64 (3, 200) axis=-1 init=array(3)",
            lambda: ps.linear_recurrence(da, db, init=di), expected, "float64")
    expected0 = np.array([ref.linear_recurrence(a[:, j], b[:, j]) for j in range(200)]).T
    c.check("linear_recurrence float64 (3, 200) axis=0",
            lambda: ps.linear_recurrence(da, db, axis=0), expected0, "float64")


def f_algorithms(c: _Context) -> None:
    if c.dev.name != "cpu":
        raise NotImplementedError("algorithm= selects CPU-backend algorithms")
    for algorithm in ("serial", "kogge_stone", "sklansky", "brent_kung", "reduce_then_scan"):
        for n in c.small_sizes + c.sizes[-1:]:
            c.scan_case(c.data("int32", n), "add", algorithm=algorithm)
            c.scan_case(c.data("float64", n, "normal"), "max", algorithm=algorithm,
                        inclusive=False, reverse=True)
            c.scan_case(c.data("int64", _fit(n, 3)), "add", algorithm=algorithm, tuple_size=3,
                        order=2, init=5)
        c.scan_case(c.data("int32", (4, 301)), "xor", algorithm=algorithm, axis=0)


def f_edges(c: _Context) -> None:
    ps = c.ps
    for dt in ("int32", "float32"):
        for n in (0, 1):
            for inclusive in (True, False):
                c.scan_case(c.data(dt, n), "add", inclusive=inclusive)
                c.scan_case(c.data(dt, n), "add", inclusive=inclusive, reverse=True, init=3)
    c.scan_case(c.data("int32", (0, 5)), "add", axis=0)
    c.scan_case(c.data("int32", (4, 0)), "add", axis=1)
    c.scan_case(c.data("int64", (5, 1)), "max", axis=0)
    if c.dev.name == "cpu":
        c.cases += 1
        y = ps.scan([1, 2, 3])
        compare(np.asarray(y), [1, 3, 6], np.asarray(y).dtype, label="scan of a list")
    # Bad arguments raise before anything is written.
    for kwargs in ({"order": 0}, {"tuple_size": 0}, {"tuple_size": 3}):
        c.cases += 1
        x = c.dev.put(c.data("int32", 10))
        out = c.dev.put(np.full(10, 7, dtype=np.int32))
        try:
            ps.scan(x, "add", out=out, **kwargs)
        except (ValueError, TypeError):
            pass
        else:
            raise CheckFailure(f"scan(x, {kwargs}) with len(x)=10 should raise ValueError")
        compare(c.dev.get(out), np.full(10, 7, dtype=np.int32), "int32",
                label=f"out untouched after error {kwargs}")


FEATURES: list[tuple[str, Callable[[_Context], None]]] = [
    ("scan inclusive (add; int32/int64/uint32/float32/float64)", f_inclusive),
    ("scan exclusive", f_exclusive),
    ("scan reverse", f_reverse),
    ("scan init", f_init),
    ("scan order", f_order),
    ("scan tuple_size", f_tuple),
    ("scan order x tuple_size x reverse", f_combined),
    ("operators mul/max/min", f_ops_arith),
    ("operators and/or/xor", f_ops_bits),
    ("operator logaddexp", f_logaddexp),
    ("axis", f_axis),
    ("dtype= and float16", f_dtype),
    ("out= and in place", f_out),
    ("Monoid (user, non-commutative)", f_monoid),
    ("Monoid (struct of arrays)", f_struct),
    ("make_scan", f_make_scan),
    ("cumsum/cumprod/cummax/cummin", f_cumfuncs),
    ("segmented_scan (flags)", f_seg_flags),
    ("segmented_scan (offsets)", f_seg_offsets),
    ("segmented_scan (keys)", f_seg_keys),
    ("compact", f_compact),
    ("delta_encode/delta_decode", f_delta),
    ("linear_recurrence", f_linrec),
    ("CPU algorithms", f_algorithms),
    ("edge cases and errors", f_edges),
]


def _short(exc: BaseException) -> str:
    """``Type: message`` on one line; a long message keeps its first and last lines
    (Triton's CompilationError puts the cause last)."""
    # Keep lines with words in them (Triton's CompilationError ends with a caret line).
    lines = [ln.strip() for ln in str(exc).splitlines() if any(ch.isalnum() for ch in ln)]
    if not lines:
        return type(exc).__name__
    text = lines[0] if len(lines) == 1 else f"{lines[0]} ... {lines[-1]}"
    return f"{type(exc).__name__}: {text}"[:500]


def _deliberate(exc: BaseException) -> bool:
    """True when a NotImplementedError comes from a ``raise`` in prefixscan's own
    code (a documented limitation: SKIP), not from a library it calls (FAIL)."""
    tb = exc.__traceback__
    last = None
    while tb is not None:
        last, tb = tb, tb.tb_next
    if last is None:
        return False
    filename = os.path.abspath(last.tb_frame.f_code.co_filename)
    if not filename.startswith(os.path.dirname(os.path.abspath(__file__)) + os.sep):
        return False
    return linecache.getline(filename, last.tb_lineno).strip().startswith("raise")


def run_checks(device: str = "cpu", quick: bool = False, seed: int | None = None,
               only: str | None = None, stream=None, verbose: bool = False) -> list[CheckResult]:
    """Run every feature check; print one line per feature to ``stream`` (None: silent)."""
    import prefixscan as ps

    dev = _Device(device)
    ctx = _Context(ps, dev, quick, seed)
    if stream is not None:
        print(f"prefixscan {getattr(ps, '__version__', '?')} self-test on {device} "
              f"({'quick' if quick else 'full'}, seed {ctx.seed})", file=stream, flush=True)
    results = []
    width = max(len(name) for name, _ in FEATURES)
    for name, fn in FEATURES:
        if only and only.lower() not in name.lower():
            continue
        ctx.cases = 0
        t0 = time.perf_counter()
        status, message = "PASS", ""
        try:
            fn(ctx)
        except NotImplementedError as exc:
            if _deliberate(exc):
                status, message = "SKIP", str(exc) or "not implemented"
            else:
                status, message = "FAIL", _short(exc)
                if verbose:
                    message += "\n" + traceback.format_exc()
        except CheckFailure as exc:
            status, message = "FAIL", str(exc)
            if verbose and exc.__cause__ is not None:
                message += "\n" + "".join(traceback.format_exception(exc.__cause__))
        except Exception as exc:  # noqa: BLE001 - any error is a failure of the feature
            status, message = "FAIL", _short(exc)
            if verbose:
                message += "\n" + traceback.format_exc()
        dt = time.perf_counter() - t0
        result = CheckResult(name, status, dt, ctx.cases, message)
        results.append(result)
        if stream is not None:
            line = f"{status}  {name:<{width}}  {ctx.cases:4d} cases  {dt:6.2f} s"
            if message:
                short = message if verbose else message.splitlines()[0][:300]
                line += f"\n      {short}"
            print(line, file=stream, flush=True)
    return results


def main(device: str = "cpu", quick: bool = False, seed: int | None = None, only: str | None = None,
         verbose: bool = False, stream=None) -> int:
    """Print the self-test and return the exit status (0: all passed)."""
    stream = stream if stream is not None else sys.stdout
    t0 = time.perf_counter()
    try:
        results = run_checks(device, quick=quick, seed=seed, only=only, stream=stream, verbose=verbose)
    except RuntimeError as exc:
        print(f"prefixscan check: {exc}", file=sys.stderr)
        return 2
    failed = [r for r in results if r.status == "FAIL"]
    skipped = [r for r in results if r.status == "SKIP"]
    passed = len(results) - len(failed) - len(skipped)
    print(f"{passed} passed, {len(failed)} failed, {len(skipped)} skipped "
          f"in {time.perf_counter() - t0:.1f} s", file=stream)
    return 1 if failed else 0
