"""cumsum / cumprod / cummax / cummin (primitives/cumulative/) against NumPy, on
every backend present (the ``backend`` fixture of tests/conftest.py: NumPy arrays on
the CPU backend, torch tensors on the Triton backend, compiled on a GPU or in
Triton's interpreter), with the same data and the same reference.
"""

from __future__ import annotations

import numpy as np
import pytest

import prefixscan as ps
from prefixscan.testing import ALL_DTYPES, assert_scan_equal, poisoned, random_array

CUM = {
    "cumsum": (np.cumsum, "add"),
    "cumprod": (np.cumprod, "mul"),
    "cummax": (lambda a, axis=None, dtype=None: np.maximum.accumulate(a, axis=axis, dtype=dtype), "max"),
    "cummin": (lambda a, axis=None, dtype=None: np.minimum.accumulate(a, axis=axis, dtype=dtype), "min"),
}


def _identity(fn_name, dtype):
    dt = np.dtype(dtype)
    if fn_name == "cumsum":
        return 0
    if fn_name == "cumprod":
        return 1
    if dt.kind == "b":
        return fn_name == "cummin"
    if dt.kind in "iu":
        info = np.iinfo(dt)
        return info.min if fn_name == "cummax" else info.max
    return -np.inf if fn_name == "cummax" else np.inf


def numpy_expected(fn_name, a, axis=None, dtype=None, exclusive=False, reverse=False):
    """NumPy's result, with exclusive/reverse built from flips and shifts."""
    np_fn = CUM[fn_name][0]
    if axis is None:
        a = a.reshape(-1)
        ax = 0
    else:
        ax = axis % a.ndim
    r = np.flip(a, ax) if reverse else a
    with np.errstate(all="ignore"):
        acc = np_fn(r, axis=ax, dtype=dtype)
    if exclusive:
        first_shape = list(acc.shape)
        first_shape[ax] = 1
        ident = np.full(first_shape, _identity(fn_name, acc.dtype), dtype=acc.dtype)
        acc = np.concatenate([ident, np.take(acc, np.arange(acc.shape[ax] - 1), axis=ax)], axis=ax)
    if reverse:
        acc = np.flip(acc, ax)
    return np.ascontiguousarray(acc)


def _cum_pairs():
    out = []
    for name in CUM:
        for dt in ALL_DTYPES:
            kind = np.dtype(dt).kind
            if name in ("cummax", "cummin") and kind == "c":
                continue
            out.append((name, dt))
    return out


def _interpreted(backend) -> bool:
    """Triton's interpreter takes about 0.1 s a launch: interpreted tests run fewer cases."""
    return backend.name == "triton-interpreter"


def _skip_unsupported(backend, dtype):
    if backend.is_triton and np.dtype(dtype).kind == "c":
        pytest.skip("the Triton backend has no complex scans")


def _cum_compare(got, expected, name, dtype_in, n):
    rtol = None
    if name == "cumprod" and expected.dtype.kind in "fc":
        rtol = {"float16": 1e-2, "float32": 1e-5, "complex64": 1e-5}.get(np.dtype(dtype_in).name, 1e-12)
        if expected.dtype == np.float16:
            rtol = 1e-2
    elif expected.dtype.kind in "fc":
        rtol = 0.0  # integer-valued data: every partial sum is exact; max/min are exact
    assert_scan_equal(got, expected, rtol=rtol, n=n)


@pytest.mark.parametrize("name,dtype", _cum_pairs(), ids=[f"{n}-{d}" for n, d in _cum_pairs()])
def test_cum_vs_numpy(backend, rng, name, dtype):
    _skip_unsupported(backend, dtype)
    if _interpreted(backend) and dtype not in ("bool", "int8", "uint16", "int32", "uint64", "float16", "float64"):
        pytest.skip("interpreted: one dtype of each size and kind")
    op = CUM[name][1]
    if np.dtype(dtype).kind == "b":
        op = "xor"
    x = random_array(rng, dtype, (5, 37), op)
    xb = backend.asarray(x)
    # NumPy multiplies float16 in float16; the spec accumulates in float32 and
    # rounds once, so the float16 products are compared with NumPy's float32 ones.
    f16_prod = dtype == "float16" and name == "cumprod"
    fn = getattr(ps, name)
    axes = [None, 1] if _interpreted(backend) else [None, 0, 1, -1]
    for axis in axes:
        for exclusive in (False, True):
            for reverse in (False, True):
                if _interpreted(backend) and exclusive != reverse:
                    continue
                kw = {}
                if exclusive:
                    kw["exclusive"] = True
                if reverse:
                    kw["reverse"] = True
                got = fn(xb, axis=axis, backend=backend.backend, **kw)
                expected = numpy_expected(name, x, axis=axis, exclusive=exclusive, reverse=reverse)
                if f16_prod:
                    expected = numpy_expected(name, x.astype(np.float32), axis=axis, exclusive=exclusive,
                                              reverse=reverse).astype(np.float16)
                assert type(got) is type(xb)  # the caller's array type
                got_dtype = backend.to_numpy(got).dtype
                assert got_dtype == expected.dtype, (name, dtype, axis, kw, got_dtype, expected.dtype)
                n = x.size if axis is None else x.shape[axis]
                _cum_compare(got, expected, name, dtype, n)
    np.testing.assert_array_equal(backend.to_numpy(xb), x)


@pytest.mark.parametrize("name", list(CUM))
def test_cum_default_axis_is_flat(backend, rng, name):
    x = random_array(rng, "int32", (3, 4, 5), CUM[name][1])
    got = getattr(ps, name)(backend.asarray(x), backend=backend.backend)
    assert got.shape == (60,)
    assert_scan_equal(got, numpy_expected(name, x))


@pytest.mark.parametrize(
    "name,src,dst",
    [("cumsum", "int8", "int16"), ("cumsum", "bool", "int32"), ("cumsum", "int32", "float64"),
     ("cumsum", "uint8", "uint8"), ("cumprod", "int16", "int32"), ("cumprod", "float32", "float64"),
     ("cumsum", "float16", "float32"), ("cummax", "int16", "int64"), ("cummin", "float32", "float64")],
)
def test_cum_dtype(backend, rng, name, src, dst):
    op = CUM[name][1] if src != "bool" else "xor"
    x = random_array(rng, src, 200, op)
    for kw in [dict(), dict(exclusive=True), dict(reverse=True)]:
        got = getattr(ps, name)(backend.asarray(x), dtype=np.dtype(dst), backend=backend.backend, **kw)
        expected = numpy_expected(name, x, dtype=np.dtype(dst), **kw)
        assert backend.to_numpy(got).dtype == np.dtype(dst)
        _cum_compare(got, expected, name, dst, 200)


@pytest.mark.parametrize("name", list(CUM))
@pytest.mark.parametrize("axis", [None, 1])
def test_cum_out(backend, rng, name, axis):
    x = backend.asarray(random_array(rng, "int16", (4, 25), CUM[name][1]))
    expected = numpy_expected(name, backend.to_numpy(x), axis=axis, reverse=True)
    out = backend.asarray(poisoned(expected.shape, expected.dtype))
    r = getattr(ps, name)(x, axis=axis, out=out, reverse=True, backend=backend.backend)
    assert r is out
    assert_scan_equal(out, expected)
    # Positional arguments in NumPy's order: (a, axis, dtype, out).
    out2 = backend.asarray(poisoned(expected.shape, expected.dtype))
    getattr(ps, name)(x, axis, None, out2, reverse=True, backend=backend.backend)
    assert_scan_equal(out2, expected)


@pytest.mark.parametrize("name", list(CUM))
@pytest.mark.parametrize("dtype", [object, "U3"])
def test_cum_out_not_numeric(name, dtype):
    """An ``out`` that is not numeric is refused by name before anything runs."""
    out = np.empty(3, dtype=dtype)
    with pytest.raises(TypeError, match="^out: expected a numeric or bool array"):
        getattr(ps, name)(np.arange(1, 4), out=out)


@pytest.mark.parametrize("name", ["cummax", "cummin"])
def test_cum_nan(backend, rng, name):
    x = random_array(rng, "float64", 40, "max")
    x[[5, 30]] = np.nan
    for reverse in (False, True):
        got = getattr(ps, name)(backend.asarray(x), reverse=reverse, backend=backend.backend)
        expected = numpy_expected(name, x, reverse=reverse)
        assert_scan_equal(got, expected, rtol=0.0)


def test_cum_empty_like_numpy(backend):
    for shape, axis in [((0,), None), ((0, 3), 0), ((3, 0), 1), ((3, 0), None)]:
        for name in CUM:
            x = np.empty(shape, dtype=np.int8)
            got = backend.to_numpy(getattr(ps, name)(backend.asarray(x), axis=axis, backend=backend.backend))
            expected = numpy_expected(name, x, axis=axis)
            assert got.shape == expected.shape and got.dtype == expected.dtype, (name, shape, axis)


def test_cumsum_torch():
    torch = pytest.importorskip("torch")
    t = torch.arange(10, dtype=torch.int32)
    got = ps.cumsum(t)
    assert isinstance(got, torch.Tensor)
    np.testing.assert_array_equal(got.numpy(), np.cumsum(np.arange(10, dtype=np.int32)))


def test_the_four_functions_keep_one_scan_per_argument_set(rng):
    """cumsum & co. run the shared Scan kept per argument set (types included), the one
    prefixscan.scan uses: a second call finds it, a bad argument is refused (naming it)
    and nothing is kept for it, and prefixscan.caches.clear_caches() forgets them."""
    from prefixscan.caches import registered_caches
    from prefixscan.primitives.scan import api

    api._SCANS.clear()
    x = random_array(rng, "int32", (3, 40), "add")
    for name in CUM:
        for axis in (None, 1):
            assert_scan_equal(getattr(ps, name)(x, axis=axis), numpy_expected(name, x, axis=axis))
    kept = dict(api._SCANS)
    assert len(kept) == 2 * len(CUM)
    assert_scan_equal(ps.cumsum(x[:2], axis=1, exclusive=True), numpy_expected("cumsum", x[:2], axis=1,
                                                                               exclusive=True))
    assert all(api._SCANS[k] is s for k, s in kept.items()) and len(api._SCANS) == len(kept) + 1
    with pytest.raises(TypeError, match="axis"):
        ps.cumsum(x, axis=1.0)
    with pytest.raises(ValueError, match="backend"):
        ps.cumsum(x, backend="gpu")
    assert len(api._SCANS) == len(kept) + 1
    assert "prefixscan.primitives.scan.api.one_shot_scans" in registered_caches()
    api._SCANS.clear()  # what prefixscan.caches.clear_caches() calls
