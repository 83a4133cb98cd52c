"""The features ``prefixscan check`` tests, one function each.

Every ``check_<feature>(c)`` runs the public API on fresh random data on the
context's device and compares each result with the plain-loop reference
(:mod:`prefixscan.testing`, the semantics of docs/semantics.md).  Sizes are
odd so every blocked algorithm sees a ragged tail, and the large sizes make GPU
kernels run many tiles (and look back far).  A feature that does not apply on a
device raises ``NotImplementedError`` from here (reported as SKIP).
"""

from __future__ import annotations

from typing import Callable

import numpy as np

import prefixscan as ps

from ..testing import (
    reference_compact,
    reference_delta_decode,
    reference_delta_encode,
    reference_linear_recurrence,
    reference_scan,
    reference_segmented_scan,
)
from .context import CheckFailure, Context, compare, fit_length

__all__ = ["FEATURES"]

_INT_FLOAT = ("int32", "int64", "uint32", "float32", "float64")


def check_inclusive(c: Context) -> None:
    for dt in _INT_FLOAT:
        for n in c.sizes + c.large_sizes:
            c.scan_case(c.data(dt, n), "add")


def check_exclusive(c: Context) -> None:
    for dt in ("int32", "int64", "float32", "float64"):
        for n in c.sizes:
            c.scan_case(c.data(dt, n), "add", inclusive=False)
    for n in c.large_sizes:
        c.scan_case(c.data("float32", n), "add", inclusive=False, reverse=True, init=1.0)
        c.scan_case(c.data("int32", n), "max", inclusive=False)


def check_reverse(c: Context) -> None:
    for dt in ("int32", "float64"):
        for n in c.sizes:
            for inclusive in (True, False):
                c.scan_case(c.data(dt, n), "add", reverse=True, inclusive=inclusive)


def check_init(c: Context) -> None:
    for dt in ("int32", "float32"):
        for n in c.small_sizes + c.sizes[-1:]:
            for inclusive in (True, False):
                for reverse in (False, True):
                    init = int(c.rng.integers(-50, 50)) if dt.startswith("int") else 2.5
                    c.scan_case(c.data(dt, n), "add", inclusive=inclusive, reverse=reverse, init=init)
    x = c.data("int32", 1000, "small")
    c.scan_case(x, "max", init=7)
    c.scan_case(x, "min", init=-7, inclusive=False, reverse=True)


def check_order(c: Context) -> None:
    for dt in ("int32", "int64", "float64"):
        for n in c.small_sizes + c.sizes[-1:]:
            for q in (2, 3):
                c.scan_case(c.data(dt, n, "add" if dt.startswith("int") else "small"), "add", order=q)
    x = c.data("int32", c.small_sizes[-1])
    c.scan_case(x, "add", order=2, inclusive=False, init=3)
    c.scan_case(x, "xor", order=4, reverse=True)


def check_tuple_size(c: Context) -> None:
    for dt in ("int32", "float32", "int64"):
        for s in (2, 3, 4, 16):
            for n in (c.small_sizes[-1], c.sizes[-1]):
                c.scan_case(c.data(dt, fit_length(n, s)), "add", tuple_size=s)
    for n in c.large_sizes:
        c.scan_case(c.data("int32", fit_length(n, 4)), "add", tuple_size=4, order=2)
    x = c.data("int32", 999)
    c.scan_case(x, "add", tuple_size=3, init=np.array([1, -2, 3], dtype=np.int32))
    c.scan_case(x, "max", tuple_size=9, inclusive=False)


def check_combined(c: Context) -> None:
    for dt in ("int32", "int64", "float64"):
        for n in c.small_sizes:
            for s in (2, 3):
                for q in (2, 3):
                    for inclusive in (True, False):
                        c.scan_case(c.data(dt, fit_length(n, s), "add" if dt.startswith("int") else "small"),
                                    "add", tuple_size=s, order=q, reverse=True, inclusive=inclusive)


def check_arithmetic_operators(c: Context) -> None:
    for dt in ("int32", "int64", "uint8", "float32", "float64"):
        for n in c.small_sizes + c.sizes[-1:]:
            c.scan_case(c.data(dt, n, "mul"), "mul")
            c.scan_case(c.data(dt, n, "normal"), "max")
            c.scan_case(c.data(dt, n, "normal"), "min", inclusive=False)
    c.scan_case(c.data("bool", 777), "max")
    c.scan_case(c.data("bool", 777), "min", reverse=True)


def check_bitwise_operators(c: Context) -> None:
    for dt in ("int32", "uint16", "int64", "bool"):
        for n in c.small_sizes + c.sizes[-1:]:
            for op in ("and", "or", "xor"):
                x = c.data(dt, n)
                if op == "and" and dt != "bool":
                    # Mostly-set bits, so the running AND does not die at once.
                    x = x | c.data(dt, n)
                c.scan_case(x, op)
                c.scan_case(x, op, inclusive=False, reverse=True)


def check_logaddexp(c: Context) -> None:
    for dt in ("float32", "float64"):
        for n in c.small_sizes + c.sizes[-1:]:
            c.scan_case(c.data(dt, n, "normal"), "logaddexp", rtol_scale=10)
            c.scan_case(c.data(dt, n, "normal"), "logaddexp", inclusive=False, reverse=True,
                        rtol_scale=10)


def check_axis(c: Context) -> None:
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


def check_dtype(c: Context) -> None:
    n = c.sizes[-1]
    c.scan_case(c.data("int8", n), "add", dtype="int32")
    c.scan_case(c.data("uint8", n), "add")  # wraps in uint8: no widening
    c.scan_case(c.data("int16", n), "add", dtype="int64", inclusive=False)
    c.scan_case(c.data("bool", n), "add", dtype="int32")
    c.scan_case(c.data("int32", n, "small"), "add", dtype="float64")
    # float16 accumulates in float32 and rounds once on output.
    x = c.data("float16", n, "small")
    expected16 = reference_scan(x, "add")
    dx = c.dev.put(x)
    c.check(f"add float16 n={n}", lambda: ps.scan(dx, "add"), expected16, "float16")
    # bool + add without dtype= is an error.
    c.cases += 1
    try:
        ps.scan(c.dev.put(c.data("bool", 10)), "add")
    except (TypeError, ValueError):
        pass
    else:
        raise CheckFailure("add on bool without dtype= should raise TypeError")


def check_out(c: Context) -> None:
    for dt in ("int32", "float64"):
        n = c.sizes[-1]
        x = c.data(dt, n)
        expected = reference_scan(x, "add", dtype=dt)
        dx = c.dev.put(x)
        out = c.dev.put(np.zeros(n, dtype=dt))
        y = c.check(f"add {dt} out=", lambda: ps.scan(dx, "add", out=out), expected, dt)
        compare(c.dev.get(out), expected, dt, label=f"add {dt}: out= array contents")
        if y is not out:
            raise CheckFailure("scan(..., out=o) should return o")
        # In place: out=x.
        dx2 = c.dev.put(x)
        c.check(f"add {dt} out=x", lambda: ps.scan(dx2, "add", out=dx2, inclusive=False),
                reference_scan(x, "add", dtype=dt, inclusive=False), dt)
        compare(c.dev.get(dx2), reference_scan(x, "add", dtype=dt, inclusive=False), dt,
                label=f"add {dt}: in-place contents")
    # 2-D out with an axis.
    x = c.data("int64", (6, 50))
    out = c.dev.put(np.zeros((6, 50), dtype=np.int64))
    dx = c.dev.put(x)
    c.check("add int64 axis=0 out=", lambda: ps.scan(dx, "add", axis=0, out=out),
            reference_scan(x, "add", axis=0, dtype="int64"), "int64")


# User operators: plain functions, so the GPU backend can compile them.

def _last_nonzero(a, b):
    return ps.where(b != 0, b, a)


def _affine(p, q):
    # x -> a1*x + b1, then x -> a2*x + b2: composed is (a1*a2, b1*a2 + b2).
    a1, b1 = p
    a2, b2 = q
    return (a1 * a2, b1 * a2 + b2)


def check_monoid(c: Context) -> None:
    ffill = ps.Monoid(_last_nonzero, 0, name="last_nonzero")
    for dt in ("int32", "float64"):
        for n in c.small_sizes + c.sizes[-1:]:
            x = c.data(dt, n, "small")
            x[c.rng.random(n) < 0.7] = 0
            for inclusive in (True, False):
                for reverse in (False, True):
                    expected = reference_scan(x, lambda a, b: b if b != 0 else a, identity=0,
                                              inclusive=inclusive, reverse=reverse)
                    dx = c.dev.put(x)
                    c.check(f"Monoid(last_nonzero) {dt} n={n} inclusive={inclusive} reverse={reverse}",
                            lambda: ps.scan(dx, ffill, inclusive=inclusive, reverse=reverse),
                            expected, dt)


def check_struct_monoid(c: Context) -> None:
    affine = ps.Monoid(_affine, (1, 0), name="affine")
    for dt in ("int64", "float64"):
        for n in c.small_sizes + c.sizes[-1:]:
            if dt == "int64":
                a, b = c.data(dt, n), c.data(dt, n)
            else:
                a = c.rng.uniform(0.5, 1.0, n) * c.rng.choice([-1.0, 1.0], n)
                b = c.rng.standard_normal(n)
            for inclusive, reverse in ((True, False), (False, False), (True, True)):
                expected = reference_scan((a, b), _affine, identity=(1, 0), inclusive=inclusive,
                                          reverse=reverse)
                da, db = c.dev.put(a), c.dev.put(b)
                c.check(f"Monoid(affine) {dt} n={n} inclusive={inclusive} reverse={reverse}",
                        lambda: ps.scan((da, db), affine, inclusive=inclusive, reverse=reverse),
                        expected, dt, rtol_scale=100)


def check_make_scan(c: Context) -> None:
    kwargs = dict(inclusive=False, reverse=True, order=2, tuple_size=2)
    f = ps.make_scan("add", **kwargs)
    for dt in ("int32", "float64"):
        for n in c.small_sizes + c.sizes[-1:]:
            # The same object, reused on fresh data of several sizes and dtypes.
            x = c.data(dt, fit_length(n, 2), "add" if dt == "int32" else "small")
            dx = c.dev.put(x)
            c.check(f"make_scan {dt} n={x.size} {kwargs}", lambda: f(dx),
                    reference_scan(x, "add", dtype=dt, **kwargs), dt, rtol_scale=2)
            init = np.array([3, -4], dtype=dt)
            dinit = c.dev.put(init)
            c.check(f"make_scan {dt} n={x.size} {kwargs} init=array(2)", lambda: f(dx, init=dinit),
                    reference_scan(x, "add", dtype=dt, init=init, **kwargs), dt, rtol_scale=2)
    g = ps.make_scan("max", axis=0)
    x = c.data("int32", (50, 3))
    dx = c.dev.put(x)
    out = c.dev.put(np.zeros((50, 3), dtype=np.int32))
    c.check("make_scan max axis=0 out=", lambda: g(dx, out=out),
            reference_scan(x, "max", axis=0, dtype="int32"), "int32")


def check_cumulative_functions(c: Context) -> None:
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
                exp2 = reference_scan(x2.astype(acc), op, dtype=acc, inclusive=not exclusive,
                                      reverse=reverse)
                c.check(f"{name} {dt} exclusive={exclusive} reverse={reverse}",
                        lambda: fn(dx2, exclusive=exclusive, reverse=reverse), exp2, acc)
    x = c.data("int32", (4, 50), "small")
    dx = c.dev.put(x)
    c.check("cumsum int32 axis=1 dtype=int32", lambda: ps.cumsum(dx, axis=1, dtype="int32"),
            np.cumsum(x, axis=1, dtype=np.int32), "int32")
    c.check("cummax int32 axis=0", lambda: ps.cummax(dx, axis=0), np.maximum.accumulate(x, axis=0),
            "int32")


def _random_flags(c: Context, n: int) -> np.ndarray:
    flags = c.rng.random(n) < 0.05
    if n:
        flags[c.rng.integers(0, n)] = True
    return flags


def _segmented_cases(c: Context, x, kw_name, kw_value, dtype):
    for op in ("add", "max"):
        for inclusive in (True, False):
            for reverse in (False, True):
                expected = reference_segmented_scan(x, op, inclusive=inclusive, reverse=reverse,
                                                    **{kw_name: kw_value})
                dx, dv = c.dev.put(x), c.dev.put(kw_value)
                c.check(f"segmented_scan {op} {dtype} {kw_name} n={len(x)} inclusive={inclusive} "
                        f"reverse={reverse}",
                        lambda: ps.segmented_scan(dx, op, inclusive=inclusive, reverse=reverse,
                                                  **{kw_name: dv}),
                        expected, dtype)


def check_segmented_flags(c: Context) -> None:
    for dt in ("int32", "float64"):
        for n in c.small_sizes + c.sizes[-1:]:
            x = c.data(dt, n)
            flags = _random_flags(c, n)
            _segmented_cases(c, x, "flags", flags, dt)


def check_segmented_offsets(c: Context) -> None:
    for dt in ("int32", "float32"):
        for n in c.small_sizes + c.sizes[-1:]:
            x = c.data(dt, n)
            k = int(c.rng.integers(0, max(1, n // 20) + 2))
            inner = np.sort(c.rng.integers(0, max(n, 1), size=k))  # duplicates: empty segments
            offsets = np.concatenate([[0], inner, [n]]).astype(np.int64)
            _segmented_cases(c, x, "offsets", offsets, dt)
    # Offsets without the trailing n.
    x = c.data("int64", 100)
    offsets = np.array([0, 10, 10, 57], dtype=np.int64)
    _segmented_cases(c, x, "offsets", offsets, "int64")


def check_segmented_keys(c: Context) -> None:
    for dt in ("int64", "float64"):
        for n in c.small_sizes + c.sizes[-1:]:
            x = c.data(dt, n)
            runs = c.rng.integers(1, 30, size=n)
            keys = np.repeat(c.rng.integers(0, 3, size=n), runs)[:n].astype(np.int32)
            _segmented_cases(c, x, "keys", keys, dt)


def check_compact(c: Context) -> None:
    for dt in ("int32", "float64", "int8"):
        for n in c.sizes:
            x = c.data(dt, n)
            for p in (0.0, 0.3, 1.0):
                mask = c.rng.random(n) < p
                dx, dm = c.dev.put(x), c.dev.put(mask)
                c.check(f"compact {dt} n={n} p={p}", lambda: ps.compact(dx, dm),
                        reference_compact(x, mask), dt)
    x = c.data("int32", (5, 40))
    mask = c.rng.random((5, 40)) < 0.5
    dx, dm = c.dev.put(x), c.dev.put(mask)
    c.check("compact int32 2-D", lambda: ps.compact(dx, dm), reference_compact(x.ravel(), mask.ravel()),
            "int32")


def check_delta(c: Context) -> None:
    for dt in ("int32", "int64", "uint16", "int8"):
        for n in c.small_sizes + c.sizes[-1:]:
            for q, s in ((1, 1), (2, 1), (1, 3), (3, 2)):
                m = fit_length(n, s)
                x = c.data(dt, m)
                dx = c.dev.put(x)
                enc = reference_delta_encode(x, q, s)
                y = c.check(f"delta_encode {dt} n={m} order={q} tuple_size={s}",
                            lambda: ps.delta_encode(dx, order=q, tuple_size=s), enc, dt)
                c.check(f"delta_decode(delta_encode) {dt} n={m} order={q} tuple_size={s}",
                        lambda: ps.delta_decode(y, order=q, tuple_size=s), x, dt)
                d = c.data(dt, m)
                dd = c.dev.put(d)
                c.check(f"delta_decode {dt} n={m} order={q} tuple_size={s}",
                        lambda: ps.delta_decode(dd, order=q, tuple_size=s),
                        reference_delta_decode(d, q, s), dt)
    # 2-D along the last axis, and floats.
    x = c.data("int32", (3, 64))
    dx = c.dev.put(x)
    expected = reference_delta_encode(x, 2, 2)
    c.check("delta_encode int32 (3, 64) axis=-1", lambda: ps.delta_encode(dx, order=2, tuple_size=2),
            expected, "int32")
    xf = c.data("float64", 500, "small")
    dxf = c.dev.put(xf)
    c.check("delta_encode float64", lambda: ps.delta_encode(dxf, order=2),
            reference_delta_encode(xf, 2), "float64")


def check_linear_recurrence(c: Context) -> None:
    for dt in ("float32", "float64"):
        for n in c.small_sizes + c.sizes[-1:]:
            a = (c.rng.uniform(0.5, 1.0, n) * c.rng.choice([-1.0, 1.0], n)).astype(dt)
            b = c.rng.standard_normal(n).astype(dt)
            da, db = c.dev.put(a), c.dev.put(b)
            for reverse in (False, True):
                for init in (None, 1.5):
                    expected = reference_linear_recurrence(a, b, init=init, reverse=reverse)
                    c.check(f"linear_recurrence {dt} n={n} init={init} reverse={reverse}",
                            lambda: ps.linear_recurrence(da, db, init=init, reverse=reverse),
                            expected, dt, rtol_scale=30)
    a = c.rng.uniform(0.5, 1.0, (3, 200))
    b = c.rng.standard_normal((3, 200))
    init = c.rng.standard_normal(3)
    expected = reference_linear_recurrence(a, b, init=init)
    da, db, di = c.dev.put(a), c.dev.put(b), c.dev.put(init)
    c.check("linear_recurrence float64 (3, 200) axis=-1 init=array(3)",
            lambda: ps.linear_recurrence(da, db, init=di), expected, "float64")
    expected0 = reference_linear_recurrence(a, b, axis=0)
    c.check("linear_recurrence float64 (3, 200) axis=0",
            lambda: ps.linear_recurrence(da, db, axis=0), expected0, "float64")


def check_cpu_algorithms(c: Context) -> None:
    if c.dev.name != "cpu":
        raise NotImplementedError("algorithm= selects CPU-backend algorithms")
    for algorithm in ("serial", "kogge_stone", "sklansky", "brent_kung", "reduce_then_scan"):
        for n in c.small_sizes + c.sizes[-1:]:
            c.scan_case(c.data("int32", n), "add", algorithm=algorithm)
            c.scan_case(c.data("float64", n, "normal"), "max", algorithm=algorithm,
                        inclusive=False, reverse=True)
            c.scan_case(c.data("int64", fit_length(n, 3)), "add", algorithm=algorithm, tuple_size=3,
                        order=2, init=5)
        c.scan_case(c.data("int32", (4, 301)), "xor", algorithm=algorithm, axis=0)


def check_edge_cases(c: Context) -> None:
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


FEATURES: list[tuple[str, Callable[[Context], None]]] = [
    ("scan inclusive (add; int32/int64/uint32/float32/float64)", check_inclusive),
    ("scan exclusive", check_exclusive),
    ("scan reverse", check_reverse),
    ("scan init", check_init),
    ("scan order", check_order),
    ("scan tuple_size", check_tuple_size),
    ("scan order x tuple_size x reverse", check_combined),
    ("operators mul/max/min", check_arithmetic_operators),
    ("operators and/or/xor", check_bitwise_operators),
    ("operator logaddexp", check_logaddexp),
    ("axis", check_axis),
    ("dtype= and float16", check_dtype),
    ("out= and in place", check_out),
    ("Monoid (user, non-commutative)", check_monoid),
    ("Monoid (struct of arrays)", check_struct_monoid),
    ("make_scan", check_make_scan),
    ("cumsum/cumprod/cummax/cummin", check_cumulative_functions),
    ("segmented_scan (flags)", check_segmented_flags),
    ("segmented_scan (offsets)", check_segmented_offsets),
    ("segmented_scan (keys)", check_segmented_keys),
    ("compact", check_compact),
    ("delta_encode/delta_decode", check_delta),
    ("linear_recurrence", check_linear_recurrence),
    ("CPU algorithms", check_cpu_algorithms),
    ("edge cases and errors", check_edge_cases),
]

