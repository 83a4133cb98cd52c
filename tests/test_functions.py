"""cumsum/cumprod/cummax/cummin against NumPy; linear_recurrence, delta coding,
segmented_scan and compact against the plain-loop reference (prefixscan.testing).

The cumulative functions and delta coding take ``backend=``: their tests run on
every backend present (the ``backend`` fixture of conftest.py: NumPy arrays on
the CPU backend, torch tensors on the Triton backend, compiled on a GPU or in
Triton's interpreter), with the same data and the same reference.
"""

from __future__ import annotations

import numpy as np
import pytest

import prefixscan as ps

from prefixscan.testing import (
    ALL_DTYPES,
    INTEGER_DTYPES,
    affine_data,
    affine_monoid,
    assert_scan_equal,
    poisoned,
    random_array,
    reference_compact,
    reference_delta_decode,
    reference_delta_encode,
    reference_linear_recurrence,
    reference_segmented_scan,
)

# ---------------------------------------------------------------------------
# cumsum / cumprod / cummax / cummin vs NumPy

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


# ---------------------------------------------------------------------------
# linear_recurrence


def _lr_data(rng, shape, dtype="float64"):
    a = rng.uniform(-0.95, 0.95, size=shape).astype(dtype)
    b = rng.normal(size=shape).astype(dtype)
    return a, b


def _lr_check(got, expected, dtype):
    rtol = 1e-5 if np.dtype(dtype) == np.float32 else 1e-12
    mag = float(np.max(np.abs(expected))) if expected.size else 1.0
    assert_scan_equal(got, expected, mag=mag, rtol=rtol)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("reverse", [False, True], ids=["fwd", "rev"])
@pytest.mark.parametrize("n", [0, 1, 2, 7, 100, 1025])
def test_linear_recurrence_1d(rng, n, reverse, dtype):
    a, b = _lr_data(rng, n, dtype)
    a0, b0 = a.copy(), b.copy()
    got = ps.linear_recurrence(a, b, reverse=reverse)
    assert got.dtype == np.dtype(dtype)
    _lr_check(got, reference_linear_recurrence(a, b, reverse=reverse), dtype)
    init = np.array(rng.normal(), dtype=dtype)[()]
    got = ps.linear_recurrence(a, b, reverse=reverse, init=init)
    _lr_check(got, reference_linear_recurrence(a, b, reverse=reverse, init=init), dtype)
    np.testing.assert_array_equal(a, a0)
    np.testing.assert_array_equal(b, b0)


@pytest.mark.parametrize("reverse", [False, True], ids=["fwd", "rev"])
@pytest.mark.parametrize("axis", [-1, 0, 1, 2, -2])
def test_linear_recurrence_axis_init(rng, axis, reverse):
    shape = (3, 40, 5)
    a, b = _lr_data(rng, shape)
    lane = tuple(d for i, d in enumerate(shape) if i != axis % 3)
    for init in [None, 1.5, rng.normal(size=lane), rng.normal(size=(1,) + lane[1:])]:
        got = ps.linear_recurrence(a, b, init=init, axis=axis, reverse=reverse)
        _lr_check(got, reference_linear_recurrence(a, b, init=init, axis=axis, reverse=reverse), "float64")


def test_linear_recurrence_special_cases(rng):
    b = rng.integers(-9, 10, 50).astype(np.float64)
    np.testing.assert_array_equal(ps.linear_recurrence(np.ones(50), b), np.cumsum(b))
    np.testing.assert_array_equal(ps.linear_recurrence(np.zeros(50), b, init=7.0), b)
    h = ps.linear_recurrence(np.full(4, 2.0), np.zeros(4), init=1.0)
    np.testing.assert_array_equal(h, [2.0, 4.0, 8.0, 16.0])
    h = ps.linear_recurrence(np.array([2.0, 3.0, 4.0]), np.array([1.0, 1.0, 1.0]), init=1.0, reverse=True)
    # h[2] = 4*1 + 1 = 5; h[1] = 3*5 + 1 = 16; h[0] = 2*16 + 1 = 33
    np.testing.assert_array_equal(h, [33.0, 16.0, 5.0])


# ---------------------------------------------------------------------------
# delta_encode / delta_decode

ORDERS = list(range(1, 9))
TUPLE_SIZES = [1, 2, 3, 4, 5, 8, 16, 32]


@pytest.mark.parametrize("q", ORDERS, ids=lambda q: f"q{q}")
@pytest.mark.parametrize("dtype", INTEGER_DTYPES)
def test_delta_round_trip(backend, rng, dtype, q):
    if _interpreted(backend) and q not in (1, 3, 8):
        pytest.skip("interpreted: orders 1, 3 and 8")
    on = dict(backend=backend.backend)
    for s in TUPLE_SIZES if not _interpreted(backend) else [1, 3, 8]:
        n = s * int(rng.integers(0, 9)) + s * 3
        x = random_array(rng, dtype, n, "add")
        xb = backend.asarray(x)
        enc = ps.delta_encode(xb, q, s, **on)
        assert backend.to_numpy(enc).dtype == x.dtype and tuple(enc.shape) == x.shape
        assert_scan_equal(enc, reference_delta_encode(x, q, s), err_msg=f"encode s={s}")
        np.testing.assert_array_equal(backend.to_numpy(xb), x)
        dec = ps.delta_decode(enc, q, s, **on)
        assert backend.to_numpy(dec).dtype == x.dtype
        assert_scan_equal(dec, x, err_msg=f"round trip s={s}")
        assert_scan_equal(dec, reference_delta_decode(backend.to_numpy(enc), q, s), err_msg=f"decode s={s}")
        # delta_decode is the order-q add scan with tuple_size s.
        assert_scan_equal(ps.scan(enc, "add", order=q, tuple_size=s, **on), x)
        # Keyword spelling.
        assert_scan_equal(ps.delta_decode(ps.delta_encode(xb, order=q, tuple_size=s, **on), order=q, tuple_size=s,
                                          **on), x)


@pytest.mark.parametrize("axis", [-1, 0, 1])
@pytest.mark.parametrize("dtype", ["int8", "uint16", "int32", "uint64"])
def test_delta_axis(backend, rng, dtype, axis):
    x = random_array(rng, dtype, (12, 24), "add")
    for q, s in [(1, 1), (2, 3), (4, 4), (8, 2)]:
        enc = ps.delta_encode(backend.asarray(x), q, s, axis=axis, backend=backend.backend)
        assert_scan_equal(enc, reference_delta_encode(x, q, s, axis=axis))
        assert_scan_equal(ps.delta_decode(enc, q, s, axis=axis, backend=backend.backend), x)


def test_delta_examples(backend):
    def encode(a, *args):
        return backend.to_numpy(ps.delta_encode(backend.asarray(a), *args, backend=backend.backend))

    def decode(a, *args):
        return backend.to_numpy(ps.delta_decode(backend.asarray(a), *args, backend=backend.backend))

    x = np.array([1, 4, 9, 16, 25], dtype=np.int32)
    np.testing.assert_array_equal(encode(x), [1, 3, 5, 7, 9])
    np.testing.assert_array_equal(encode(x, 2), [1, 2, 2, 2, 2])
    x6 = np.array([1, 4, 9, 16, 25, 36], dtype=np.int32)
    np.testing.assert_array_equal(encode(x6, 1, 2), [1, 4, 8, 12, 16, 20])
    np.testing.assert_array_equal(encode(x6, 2, 2), [1, 4, 7, 8, 8, 8])
    np.testing.assert_array_equal(decode(np.array([1, 2, 2, 2, 2], np.int32), 2), x)
    w = np.array([0, 255, 0, 255], dtype=np.uint8)
    np.testing.assert_array_equal(encode(w), [0, 255, 1, 255])
    np.testing.assert_array_equal(decode(encode(w)), w)
    i8 = np.array([-128, 127, -128], dtype=np.int8)
    np.testing.assert_array_equal(encode(i8), np.array([-128, -1, 1], np.int8))


@pytest.mark.parametrize("n", [0, 1, 2, 3])
def test_delta_short(backend, rng, n):
    on = dict(backend=backend.backend)
    x = random_array(rng, "int16", n, "add")
    xb = backend.asarray(x)
    # Shorter than the tuple: nothing to subtract.
    if n:
        np.testing.assert_array_equal(backend.to_numpy(ps.delta_encode(xb, 3, n, **on)), x)
    np.testing.assert_array_equal(backend.to_numpy(ps.delta_decode(ps.delta_encode(xb, 2, **on), 2, **on)), x)
    assert tuple(ps.delta_encode(xb, **on).shape) == (n,)


# ---------------------------------------------------------------------------
# segmented_scan


def _random_flags(rng, n, p=0.15):
    f = rng.random(n) < p
    return f


def _random_offsets(rng, n, k):
    inner = np.sort(rng.integers(0, n + 1, size=k)) if n else np.zeros(k, dtype=np.int64)
    offs = np.concatenate([[0], inner])
    return offs.astype(np.int64)


def _random_keys(rng, n):
    runs = rng.integers(1, 6, size=n)
    keys = np.repeat(rng.integers(0, 4, size=n), runs)[:n]
    return keys


SEG_OPS = [("add", "int32"), ("add", "float64"), ("max", "float32"), ("mul", "int64"), ("xor", "uint8"),
           ("min", "int16"), ("logaddexp", "float64")]


def _seg_check(got, expected, op):
    rtol = 1e-12 if (op == "logaddexp") else 0.0
    if np.asarray(expected).dtype.kind in "biu":
        rtol = None
    assert_scan_equal(got, expected, rtol=rtol, n=1)


@pytest.mark.parametrize("reverse", [False, True], ids=["fwd", "rev"])
@pytest.mark.parametrize("inclusive", [True, False], ids=["inc", "exc"])
@pytest.mark.parametrize("op,dtype", SEG_OPS, ids=[f"{o}-{d}" for o, d in SEG_OPS])
@pytest.mark.parametrize("how", ["flags", "offsets", "keys"])
def test_segmented(rng, how, op, dtype, inclusive, reverse):
    for n in [1, 2, 17, 300]:
        x = random_array(rng, dtype, n, op)
        if how == "flags":
            flags = _random_flags(rng, n)
            flags[0] = bool(rng.integers(2))  # element 0 starts a segment either way
            kw = dict(flags=flags)
        elif how == "offsets":
            offs = _random_offsets(rng, n, int(rng.integers(0, 8)))
            kw = dict(offsets=offs)
        else:
            keys = _random_keys(rng, n)
            kw = dict(keys=keys)
        expected = reference_segmented_scan(x, op, inclusive=inclusive, reverse=reverse, **kw)
        got = ps.segmented_scan(x, op, inclusive=inclusive, reverse=reverse, **kw)
        assert isinstance(got, np.ndarray)
        _seg_check(got, expected, op)


def test_segmented_offsets_empty_segments_and_trailing_n():
    x = np.arange(1, 11, dtype=np.int64)
    # Segments [0,0) [0,3) [3,3) [3,7) [7,10) [10,10): empty ones included, trailing n.
    offs = np.array([0, 0, 3, 3, 7, 10])
    np.testing.assert_array_equal(ps.segmented_scan(x, offsets=offs), [1, 3, 6, 4, 9, 15, 22, 8, 17, 27])
    np.testing.assert_array_equal(ps.segmented_scan(x, offsets=offs, inclusive=False),
                                  [0, 1, 3, 0, 4, 9, 15, 0, 8, 17])
    np.testing.assert_array_equal(ps.segmented_scan(x, offsets=offs, reverse=True),
                                  [6, 5, 3, 22, 18, 13, 7, 27, 19, 10])
    np.testing.assert_array_equal(ps.segmented_scan(x, offsets=offs, reverse=True, inclusive=False),
                                  [5, 3, 0, 18, 13, 7, 0, 19, 10, 0])
    # Same segmentation as a Python list, as int32, as flags and as keys.
    np.testing.assert_array_equal(ps.segmented_scan(x, offsets=[0, 3, 7]), [1, 3, 6, 4, 9, 15, 22, 8, 17, 27])
    np.testing.assert_array_equal(ps.segmented_scan(x, offsets=np.array([0, 3, 7, 10], np.int32)),
                                  [1, 3, 6, 4, 9, 15, 22, 8, 17, 27])
    flags = np.zeros(10, bool)
    flags[[3, 7]] = True
    np.testing.assert_array_equal(ps.segmented_scan(x, flags=flags), [1, 3, 6, 4, 9, 15, 22, 8, 17, 27])
    keys = np.array([5, 5, 5, 2, 2, 2, 2, 5, 5, 5])
    np.testing.assert_array_equal(ps.segmented_scan(x, keys=keys), [1, 3, 6, 4, 9, 15, 22, 8, 17, 27])


def test_segmented_single_segment_is_scan(rng):
    x = random_array(rng, "int32", 500, "add")
    for kw in [dict(), dict(inclusive=False), dict(reverse=True), dict(reverse=True, inclusive=False)]:
        expected = ps.scan(x, "add", **kw)
        np.testing.assert_array_equal(ps.segmented_scan(x, "add", offsets=[0], **kw), expected)
        np.testing.assert_array_equal(ps.segmented_scan(x, "add", flags=np.zeros(500, bool), **kw), expected)
        np.testing.assert_array_equal(ps.segmented_scan(x, "add", keys=np.zeros(500, np.int8), **kw), expected)
    # Every element its own segment.
    np.testing.assert_array_equal(ps.segmented_scan(x, "add", flags=np.ones(500, bool)), x)
    np.testing.assert_array_equal(ps.segmented_scan(x, "add", offsets=np.arange(500)), x)
    np.testing.assert_array_equal(ps.segmented_scan(x, "add", keys=np.arange(500)), x)


@pytest.mark.parametrize("reverse", [False, True], ids=["fwd", "rev"])
@pytest.mark.parametrize("inclusive", [True, False], ids=["inc", "exc"])
def test_segmented_affine(rng, inclusive, reverse):
    for n in [1, 5, 64, 257]:
        a, b = affine_data(rng, n, "int64")
        offs = _random_offsets(rng, n, 5)
        expected = reference_segmented_scan((a, b), affine_monoid(), offsets=offs, inclusive=inclusive,
                                            reverse=reverse)
        got = ps.segmented_scan((a, b), affine_monoid(), offsets=offs, inclusive=inclusive, reverse=reverse)
        assert isinstance(got, tuple) and len(got) == 2
        for g, e in zip(got, expected):
            assert_scan_equal(g, e)
        flags = _random_flags(rng, n, 0.2)
        expected = reference_segmented_scan((a, b), affine_monoid(), flags=flags, inclusive=inclusive,
                                            reverse=reverse)
        got = ps.segmented_scan((a, b), affine_monoid(), flags=flags, inclusive=inclusive, reverse=reverse)
        for g, e in zip(got, expected):
            assert_scan_equal(g, e)


def test_segmented_dtype_kept_and_wraps():
    x = np.array([100, 100, 100, 100], dtype=np.int8)
    got = ps.segmented_scan(x, offsets=[0, 2])
    assert got.dtype == np.int8
    np.testing.assert_array_equal(got, np.array([100, -56, 100, -56], np.int8))


def test_segmented_empty():
    x = np.empty(0, dtype=np.float32)
    assert ps.segmented_scan(x, offsets=np.array([0])).shape == (0,)
    assert ps.segmented_scan(x, flags=np.empty(0, bool)).shape == (0,)
    assert ps.segmented_scan(x, keys=np.empty(0, np.int64)).shape == (0,)


# ---------------------------------------------------------------------------
# compact


@pytest.mark.parametrize("dtype", ["int8", "uint64", "float16", "float64", "complex64", "bool"])
@pytest.mark.parametrize("shape", [(0,), (1,), (100,), (7, 9), (3, 4, 5)], ids=lambda s: "x".join(map(str, s)))
def test_compact(rng, dtype, shape):
    op = "add" if np.dtype(dtype).kind != "b" else "xor"
    x = random_array(rng, dtype, shape, op)
    for p in [0.0, 0.3, 1.0]:
        mask = rng.random(shape) < p
        got = ps.compact(x, mask)
        expected = reference_compact(x, mask)
        assert isinstance(got, np.ndarray)
        assert got.dtype == x.dtype and got.shape == expected.shape
        np.testing.assert_array_equal(got, expected)
        np.testing.assert_array_equal(got, x[mask])


def test_compact_preserves_order(rng):
    x = np.arange(1000, dtype=np.int64)
    mask = rng.random(1000) < 0.5
    got = ps.compact(x, mask)
    assert (np.diff(got) > 0).all()
    np.testing.assert_array_equal(got, np.flatnonzero(mask))
