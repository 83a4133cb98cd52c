"""prefixscan.scan against the plain-loop reference (prefixscan.testing), on the
default backend for NumPy arrays.

The cartesian product of every argument is far too large, so the suite is
layered: every (op, dtype) pair at one size, every size for a few pairs, every
axis on 2-D/3-D arrays, order and tuple_size, and a deterministic random sample
of combinations of everything.  Then ``out=``, dtype rules, wrap-around, array
types and ``make_scan``.  What every backend must do alike (init, order x
tuple_size, half precision, empty arrays) is in test_every_backend.py; the CPU
networks are in tests/test_networks.py.
"""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

import prefixscan as ps
from prefixscan.testing import (
    ALL_DTYPES,
    FLOAT_DTYPES,
    INTEGER_DTYPES,
    ArrayLike,
    add_pair,
    affine_data,
    affine_monoid,
    assert_scan_equal,
    assert_scan_matches,
    op_applies,
    poisoned,
    random_array,
    random_init,
    reference_scan,
    tolerance_for,
    valid_op_dtypes,
)

SIZES = [0, 1, 2, 3, 7, 31, 257, 1009, 1023, 1024, 1025, 65535, 65537]
NETWORK_NAMES = ["serial", "kogge_stone", "sklansky", "brent_kung", "reduce_then_scan"]


# ---------------------------------------------------------------------------
# Checking one call


def _lane_len(shape, axis):
    if axis is None:
        return int(np.prod(shape, dtype=np.int64))
    return shape[axis]


def compare_builtin(actual, expected, x, op, kw, err_msg=""):
    """Compare a built-in-op scan result with the reference's by the one tolerance
    rule (exact where the arithmetic is exact, else relative to the summed terms)."""
    assert_scan_equal(actual, expected, err_msg=err_msg, **tolerance_for(x, op, **kw))


def check_scan(x, op="add", **kw):
    """Run prefixscan.scan and the reference on the same arguments and compare;
    also check that x is left unchanged and a NumPy array comes back."""
    actual = assert_scan_matches(op, x, err_msg=f"op={op} kw={_short(kw)}", **kw)
    assert isinstance(actual, np.ndarray), type(actual)
    return actual


def _short(kw):
    return {k: (v if np.ndim(v) == 0 else f"array{np.shape(v)}") for k, v in kw.items()}


def _init_for(rng, kind, dtype, lane_shape, s, op):
    if kind is None:
        return None
    seed_shape = tuple(lane_shape) + ((s,) if s > 1 else ())
    if kind == "scalar":
        return random_init(rng, dtype, (), op)
    if kind == "array":
        return random_init(rng, dtype, seed_shape, op)
    if kind == "broadcast":
        # Ones in place of the lane dimensions: broadcast over lanes.
        shp = tuple(1 for _ in lane_shape) + ((s,) if s > 1 else ())
        return random_init(rng, dtype, shp, op)
    raise ValueError(kind)


# ---------------------------------------------------------------------------
# 1. Every (op, dtype) pair


@pytest.mark.parametrize("reverse", [False, True], ids=["fwd", "rev"])
@pytest.mark.parametrize("inclusive", [True, False], ids=["inc", "exc"])
@pytest.mark.parametrize("op,dtype", valid_op_dtypes(), ids=[f"{o}-{d}" for o, d in valid_op_dtypes()])
def test_op_dtype(rng, op, dtype, inclusive, reverse):
    x = random_array(rng, dtype, 257, op)
    check_scan(x, op, inclusive=inclusive, reverse=reverse)


@pytest.mark.parametrize("op,dtype", valid_op_dtypes(), ids=[f"{o}-{d}" for o, d in valid_op_dtypes()])
def test_op_dtype_init(rng, op, dtype):
    x = random_array(rng, dtype, 31, op)
    init = random_init(rng, dtype, (), op)
    check_scan(x, op, init=init)
    check_scan(x, op, init=init, inclusive=False, reverse=True)


# ---------------------------------------------------------------------------
# 2. Every size


SIZE_PAIRS = [("add", "int32"), ("add", "float32"), ("mul", "float64"), ("xor", "uint8"), ("max", "float16"),
              ("min", "int64")]


@pytest.mark.parametrize("op,dtype", SIZE_PAIRS, ids=[f"{o}-{d}" for o, d in SIZE_PAIRS])
@pytest.mark.parametrize("n", SIZES, ids=[f"n{n}" for n in SIZES])
def test_sizes(rng, n, op, dtype):
    x = random_array(rng, dtype, n, op)
    inclusive = bool(rng.integers(2))
    reverse = bool(rng.integers(2))
    check_scan(x, op, inclusive=inclusive, reverse=reverse)


@pytest.mark.parametrize("n", [0, 1, 2, 3, 7, 31, 257, 1023, 1024, 1025], ids=lambda n: f"n{n}")
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_sizes_inexact_floats(rng, n, dtype):
    # Non-integer data: rounding errors, compared relative to the sums of |x|.
    x = random_array(rng, dtype, n, "add", exact=False)
    check_scan(x, "add")
    check_scan(x, "add", reverse=True, inclusive=False)


@pytest.mark.parametrize("dtype", ["int32", "float32"])
def test_million(rng, dtype):
    n = 10**6
    x = random_array(rng, dtype, n, "add")
    check_scan(x, "add")


# ---------------------------------------------------------------------------
# 3. Axes


AXIS_CASES = []
for _shape in [(7, 31), (33, 5), (1, 64), (16, 1), (0, 4), (5, 0), (4, 5, 6), (3, 1, 16), (2, 8, 9), (0, 3, 2)]:
    for _axis in [None, 0, 1, -1] + ([2, -2, -3] if len(_shape) == 3 else [-2]):
        AXIS_CASES.append((_shape, _axis))

_AXIS_OPS = [("add", "int16"), ("add", "float64"), ("mul", "int32"), ("max", "float32"), ("min", "uint16"),
             ("xor", "int64"), ("and", "uint32"), ("or", "int8"), ("logaddexp", "float64"), ("add", "complex64")]


@pytest.mark.parametrize(
    "shape,axis", AXIS_CASES, ids=[f"{'x'.join(map(str, s))}-ax{a}" for s, a in AXIS_CASES]
)
def test_axis(rng, shape, axis):
    for k in rng.choice(len(_AXIS_OPS), size=3, replace=False):  # three operators per case
        op, dtype = _AXIS_OPS[k]
        x = random_array(rng, dtype, shape, op)
        check_scan(x, op, axis=axis)
        check_scan(x, op, axis=axis, inclusive=False, reverse=True)
    x = random_array(rng, "int32", shape, "add")
    check_scan(x, "add", axis=axis, reverse=True)


@pytest.mark.parametrize("axis", [None, 0, 1, 2, -1])
@pytest.mark.parametrize("layout", ["transposed", "strided", "fortran"])
def test_non_contiguous_input(rng, layout, axis):
    base = random_array(rng, "int64", (6, 10, 8), "add")
    if layout == "transposed":
        x = base.transpose(2, 0, 1)
    elif layout == "strided":
        x = base[::2, 1::3, ::-1]
    else:
        x = np.asfortranarray(base)
    check_scan(x, "add", axis=axis)
    check_scan(x, "max", axis=axis, inclusive=False)


# ---------------------------------------------------------------------------
# 4. order x tuple_size


def test_tuple_size_streams_are_independent(rng):
    # Element m + j*s belongs to stream m: equal to reshaping to (n/s, s) and scanning axis 0.
    x = random_array(rng, "int64", 60, "add")
    got = ps.scan(x, "add", tuple_size=4)
    expected = reference_scan(x.reshape(15, 4), "add", axis=0).reshape(-1)
    assert_scan_equal(got, expected)


def test_order_is_repeated_scan(rng):
    x = random_array(rng, "int32", 100, "add")
    once = ps.scan(x, "add", inclusive=False, reverse=True)
    twice = ps.scan(once, "add", inclusive=False, reverse=True)
    thrice = ps.scan(twice, "add", inclusive=False, reverse=True)
    assert_scan_equal(ps.scan(x, "add", order=3, inclusive=False, reverse=True), thrice)


# ---------------------------------------------------------------------------
# 5. A deterministic random sample of combinations of everything


def _make_cases(count=220, seed=20240607):
    r = random.Random(seed)
    shapes_1d = [(n,) for n in SIZES]
    shapes_nd = [(7, 31), (33, 5), (1, 64), (16, 1), (0, 4), (4, 5, 6), (3, 1, 16), (2, 8, 9), (12, 40), (5, 96)]
    pairs = valid_op_dtypes()
    cases = []
    while len(cases) < count:
        op, dtype = r.choice(pairs)
        shape = r.choice(shapes_1d) if r.random() < 0.5 else r.choice(shapes_nd)
        axis = r.choice([None, 0, -1] + ([1] if len(shape) > 1 else []) + ([2, -2] if len(shape) > 2 else []))
        n = _lane_len(shape, axis)
        size = int(np.prod(shape))
        inclusive = r.random() < 0.5
        reverse = r.random() < 0.5
        init = r.choice([None, None, "scalar", "array", "broadcast"])
        s = r.choice([s for s in [1, 1, 2, 3, 4, 5, 7, 8, 16, 32] if n % s == 0] or [1])
        q = r.choice([1, 1, 1, 2, 3, 4, 5, 6, 7, 8])
        kind = np.dtype(dtype).kind
        if kind in "fc" and op == "mul":
            q = 1  # products of products leave the float range
        if kind in "fc" and op == "add":
            limit = 60000 if dtype == "float16" else (2**24 if dtype in ("float32", "complex64") else 2**53)
            m = max(n // s, 1)
            while q > 1 and 8 * math.comb(m + q - 1, q) * (2 if init else 1) >= limit:
                q -= 1
        if size * q > 70000:
            if size > 70000:
                continue
            q = max(1, 70000 // max(size, 1))
        algorithm = r.choice([None, None, None] + NETWORK_NAMES)
        if algorithm is not None and n // s > 2000:
            algorithm = r.choice(["kogge_stone", "sklansky", "brent_kung"])  # few levels: fast on big lanes
        cases.append((op, dtype, shape, axis, inclusive, reverse, init, q, s, algorithm))
    return cases


CASES = _make_cases()


def _case_id(c):
    op, dtype, shape, axis, inclusive, reverse, init, q, s, algorithm = c
    return (f"{op}-{dtype}-{'x'.join(map(str, shape))}-ax{axis}-{'inc' if inclusive else 'exc'}"
            f"{'-rev' if reverse else ''}{'-init' + init if init else ''}-q{q}-s{s}"
            f"{'-' + algorithm if algorithm else ''}")


@pytest.mark.parametrize("case", CASES, ids=[_case_id(c) for c in CASES])
def test_random_combinations(rng, case):
    op, dtype, shape, axis, inclusive, reverse, init_kind, q, s, algorithm = case
    x = random_array(rng, dtype, shape, op)
    lane_shape = () if axis is None else tuple(d for i, d in enumerate(shape) if i != axis % len(shape))
    init = _init_for(rng, init_kind, dtype, lane_shape, s, op)
    kw = dict(axis=axis, inclusive=inclusive, reverse=reverse, order=q, tuple_size=s)
    if init is not None:
        kw["init"] = init
    if algorithm is None:
        check_scan(x, op, **kw)
    else:
        expected = reference_scan(x, op, **kw)
        got = ps.scan(x, op, backend="cpu", algorithm=algorithm, **kw)
        compare_builtin(got, expected, x, op, kw, err_msg=f"algorithm={algorithm}")


def test_numpy_integer_axis_and_read_only_input(rng):
    x = random_array(rng, "int32", (5, 40), "add")
    x.flags.writeable = False
    expected = reference_scan(x, "add", axis=1, tuple_size=4, order=2)
    assert_scan_equal(ps.scan(x, "add", axis=np.int64(1), tuple_size=4, order=2), expected)
    assert_scan_equal(ps.scan(x, "add", axis=np.int32(-1), tuple_size=np.int64(4), order=np.int8(2)), expected)
    assert_scan_equal(ps.scan(x, "add", axis=1, tuple_size=4, order=2, backend="cpu", algorithm="sklansky"),
                      expected)


# ---------------------------------------------------------------------------
# 6. NaN, infinities


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("op", ["max", "min", "add", "logaddexp"])
def test_nan_propagates(rng, op, dtype):
    x = random_array(rng, dtype, 50, op)
    x[17] = np.nan
    for reverse in (False, True):
        check_scan(x, op, reverse=reverse)
        got = ps.scan(x, op, reverse=reverse)
        nan = np.isnan(got)
        assert nan[17]
        assert nan[18:].all() if not reverse else nan[:18].all()
        assert not nan[:17].any() if not reverse else not nan[18:].any()


def test_logaddexp_infinities():
    x = np.array([-np.inf, -np.inf, 0.0, -np.inf, np.inf, 1.0])
    check_scan(x, "logaddexp")
    np.testing.assert_array_equal(ps.scan(x, "logaddexp")[:2], [-np.inf, -np.inf])
    np.testing.assert_allclose(ps.scan(np.log(np.arange(1.0, 6.0)), "logaddexp"), np.log([1, 3, 6, 10, 15]))


# ---------------------------------------------------------------------------
# 7. out=


@pytest.mark.parametrize("dtype", ["int8", "uint32", "float32", "float64", "complex128"])
@pytest.mark.parametrize("axis", [None, 0, 1])
def test_out(rng, dtype, axis):
    x = random_array(rng, dtype, (9, 17), "add")
    shape = (x.size,) if axis is None else x.shape
    out = poisoned(shape, dtype)
    r = ps.scan(x, "add", axis=axis, out=out, reverse=True, inclusive=False)
    assert r is out
    assert_scan_equal(out, reference_scan(x, "add", axis=axis, reverse=True, inclusive=False))


def test_out_strided_view(rng):
    x = random_array(rng, "int64", (6, 40), "add")
    big = poisoned((6, 80), "int64")
    out = big[:, ::2]
    ps.scan(x, "add", axis=1, out=out, order=2, tuple_size=4)
    assert_scan_equal(out, reference_scan(x, "add", axis=1, order=2, tuple_size=4))
    # The other half of the buffer is untouched.
    assert (big[:, 1::2] == poisoned((6, 40), "int64")).all()


@pytest.mark.parametrize(
    "kw",
    [dict(), dict(reverse=True), dict(inclusive=False), dict(inclusive=False, reverse=True),
     dict(order=3, tuple_size=4), dict(order=2, reverse=True, inclusive=False, tuple_size=2, init=np.int64(7))],
    ids=["inc", "rev", "exc", "exc-rev", "q3-s4", "q2-s2-exc-rev-init"],
)
@pytest.mark.parametrize("algorithm", [None] + NETWORK_NAMES)
def test_out_in_place(rng, kw, algorithm):
    x = random_array(rng, "int64", 96, "add")
    expected = reference_scan(x, "add", **kw)
    r = ps.scan(x, "add", out=x, algorithm=algorithm, **kw)
    assert r is x
    assert_scan_equal(x, expected)


def test_out_in_place_2d_axis0_and_float(rng):
    x = random_array(rng, "float64", (50, 7), "add")
    expected = reference_scan(x, "add", axis=0, reverse=True)
    ps.scan(x, "add", axis=0, reverse=True, out=x)
    assert_scan_equal(x, expected, rtol=0.0)
    x = random_array(rng, "float32", (4, 33), "max")
    expected = reference_scan(x, "max", axis=1, inclusive=False)
    ps.scan(x, "max", axis=1, inclusive=False, out=x)
    assert_scan_equal(x, expected, rtol=0.0)


def test_out_with_dtype(rng):
    x = random_array(rng, "int8", 300, "add")
    out = poisoned(300, "int64")
    ps.scan(x, "add", dtype=np.int64, out=out)
    assert_scan_equal(out, reference_scan(x, "add", dtype=np.int64))


def test_out_struct(rng):
    a, b = affine_data(rng, 100, "int64")
    out = (poisoned(100, "int64"), poisoned(100, "int64"))
    r = ps.scan((a, b), affine_monoid(), out=out, reverse=True)
    expected = reference_scan((a, b), affine_monoid(), reverse=True)
    assert r[0] is out[0] and r[1] is out[1]
    for g, e in zip(out, expected):
        assert_scan_equal(g, e)
    # In place on the struct itself.
    a2, b2 = a.copy(), b.copy()
    ps.scan((a2, b2), affine_monoid(), out=(a2, b2))
    for g, e in zip((a2, b2), reference_scan((a, b), affine_monoid())):
        assert_scan_equal(g, e)


def test_out_empty(rng):
    x = np.empty((0, 5), dtype=np.int32)
    out = np.empty((0, 5), dtype=np.int32)
    assert ps.scan(x, axis=0, out=out) is out


# ---------------------------------------------------------------------------
# 8. Output dtypes


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_dtype_kept(rng, dtype):
    op = "add" if op_applies("add", dtype) else "xor"
    x = random_array(rng, dtype, 20, op)
    r = ps.scan(x, op)
    assert r.dtype == np.dtype(dtype)
    assert ps.scan(x, "max" if op_applies("max", dtype) else op, axis=0).dtype == np.dtype(dtype)


@pytest.mark.parametrize("src,dst", [("int8", "int64"), ("uint8", "uint16"), ("int32", "float64"),
                                     ("float16", "float64"), ("float64", "float32"), ("bool", "int32"),
                                     ("int16", "int8"), ("uint32", "int64")])
def test_dtype_honoured(rng, src, dst):
    x = random_array(rng, src, 200, "add" if src != "bool" else "xor")
    got = check_scan(x, "add", dtype=np.dtype(dst))
    assert got.dtype == np.dtype(dst)
    assert ps.scan(x, "add", dtype=dst).dtype == np.dtype(dst)  # dtype as a string


def test_dtype_widening_avoids_wrap():
    x = np.full(1000, 100, dtype=np.int8)
    np.testing.assert_array_equal(ps.scan(x, dtype=np.int64), 100 * np.arange(1, 1001))
    assert ps.scan(x)[-1] == -96  # 100000 mod 256 = 160 -> -96 in int8


def test_float32_accumulates_in_float64_when_asked():
    x = np.array([1e8, 1, 1, 1, 1], dtype=np.float32)
    got = ps.scan(x, dtype=np.float64)
    assert got.dtype == np.float64
    np.testing.assert_array_equal(got, [1e8, 1e8 + 1, 1e8 + 2, 1e8 + 3, 1e8 + 4])


def test_bool_ops(rng):
    x = random_array(rng, "bool", 100, "xor")
    for op in ["and", "or", "xor", "max", "min"]:
        got = check_scan(x, op)
        assert got.dtype == np.bool_
    got = ps.scan(x, "add", dtype=np.int32)
    np.testing.assert_array_equal(got, reference_scan(x, "add", dtype=np.int32))


# ---------------------------------------------------------------------------
# 9. Integer overflow wraps


def test_overflow_wraps_examples():
    np.testing.assert_array_equal(ps.scan(np.array([127, 1, 1], np.int8)), np.array([127, -128, -127], np.int8))
    np.testing.assert_array_equal(ps.scan(np.array([255, 1, 2], np.uint8)), np.array([255, 0, 2], np.uint8))
    i64 = np.iinfo(np.int64)
    np.testing.assert_array_equal(ps.scan(np.array([i64.max, 1], np.int64)), np.array([i64.max, i64.min]))
    u64 = np.iinfo(np.uint64)
    np.testing.assert_array_equal(ps.scan(np.array([u64.max, 2], np.uint64)), np.array([u64.max, 1], np.uint64))
    np.testing.assert_array_equal(ps.scan(np.array([65536, 65536], np.int32), "mul"), np.array([65536, 0], np.int32))
    np.testing.assert_array_equal(ps.scan(np.array([-128, -1], np.int8), "mul"), np.array([-128, -128], np.int8))
    np.testing.assert_array_equal(
        ps.scan(np.array([100, 100, 100], np.int8), init=np.int8(100)), np.array([-56, 44, -112], np.int8)
    )


@pytest.mark.parametrize("dtype", INTEGER_DTYPES)
@pytest.mark.parametrize("op", ["add", "mul"])
def test_overflow_wraps_random(rng, dtype, op):
    x = random_array(rng, dtype, 1025, op)
    check_scan(x, op)
    check_scan(x, op, order=3, tuple_size=5, reverse=True)


# ---------------------------------------------------------------------------
# 10. Array types


def test_array_like_only_dunder_array(rng):
    data = random_array(rng, "int32", (4, 9), "add")
    got = ps.scan(ArrayLike(data), "add", axis=1)
    assert isinstance(got, np.ndarray)
    assert_scan_equal(got, reference_scan(data, "add", axis=1))


def test_zero_d_input():
    got = ps.scan(np.array(5, dtype=np.int16))
    assert got.shape == (1,) and got.dtype == np.int16 and got[0] == 5


def _torch():
    return pytest.importorskip("torch")


@pytest.mark.parametrize("dtype", ["int8", "int32", "int64", "uint8", "float32", "float64", "float16", "bool"])
def test_torch_in_torch_out(rng, dtype):
    torch = _torch()
    op = "xor" if dtype == "bool" else "add"
    x = random_array(rng, dtype, (5, 33), op)
    t = torch.from_numpy(x.copy())
    for kw in [dict(), dict(axis=1, reverse=True), dict(axis=0, inclusive=False, init=x[0].copy())]:
        if "init" in kw and dtype == "bool":
            continue
        got = ps.scan(t, op, **kw)
        assert isinstance(got, torch.Tensor), type(got)
        assert got.dtype == t.dtype
        assert got.device == t.device
        compare_builtin(got, reference_scan(x, op, **kw), x, op, kw)
    assert torch.equal(t, torch.from_numpy(x))


def test_torch_non_contiguous_and_out(rng):
    torch = _torch()
    x = random_array(rng, "int64", (20, 30), "add")
    t = torch.from_numpy(x.copy()).T  # non-contiguous (30, 20)
    got = ps.scan(t, "add", axis=1)
    assert_scan_equal(got, reference_scan(x.T, "add", axis=1))
    out = torch.full((30, 20), -7, dtype=torch.int64)
    r = ps.scan(t, "add", axis=0, out=out)
    assert r is out
    assert_scan_equal(out, reference_scan(x.T, "add", axis=0))
    t2 = torch.from_numpy(x.copy())
    ps.scan(t2, "add", axis=1, out=t2, reverse=True)
    assert_scan_equal(t2, reference_scan(x, "add", axis=1, reverse=True))


def test_torch_struct(rng):
    torch = _torch()
    a, b = affine_data(rng, 64, "int64")
    got = ps.scan((torch.from_numpy(a), torch.from_numpy(b)), affine_monoid())
    assert all(isinstance(g, torch.Tensor) for g in got)
    for g, e in zip(got, reference_scan((a, b), affine_monoid())):
        assert_scan_equal(g, e)


# ---------------------------------------------------------------------------
# 11. make_scan


def test_make_scan_reuse(rng):
    s = ps.make_scan("add", axis=1, inclusive=False, reverse=True, order=2, tuple_size=3)
    for shape, dtype in [((4, 30), "int32"), ((2, 9), "int32"), ((3, 12, 2), "uint8"), ((1, 0), "int64"),
                         ((4, 30), "int32")]:
        x = random_array(rng, dtype, shape, "add")
        kw = dict(axis=1, inclusive=False, reverse=True, order=2, tuple_size=3)
        expected = reference_scan(x, "add", **kw)
        assert_scan_equal(s(x), expected)
        assert_scan_equal(s(x), expected)  # same object, same answer
        out = poisoned(shape, dtype)
        assert s(x, out=out) is out
        assert_scan_equal(out, expected)
        lane = tuple(d for i, d in enumerate(shape) if i != 1) + (3,)
        init = random_init(rng, dtype, lane, "add")
        assert_scan_equal(s(x, init=init), reference_scan(x, "add", init=init, **kw))


def test_make_scan_dtype_backend_algorithm_monoid(rng):
    s = ps.make_scan("mul", dtype=np.int64, backend="cpu", algorithm="brent_kung")
    for n in [0, 1, 5, 64, 1000]:
        x = random_array(rng, "int16", n, "mul")
        assert_scan_equal(s(x), reference_scan(x, "mul", dtype=np.int64))
    aff = ps.make_scan(affine_monoid(), reverse=True, algorithm="sklansky")
    for n in [1, 7, 100]:
        a, b = affine_data(rng, n, "int64")
        for g, e in zip(aff((a, b)), reference_scan((a, b), affine_monoid(), reverse=True)):
            assert_scan_equal(g, e)
        for g, e in zip(aff((a, b), init=(np.int64(3), np.int64(1))),
                        reference_scan((a, b), affine_monoid(), reverse=True, init=(3, 1))):
            assert_scan_equal(g, e)


def test_make_scan_matches_scan(rng):
    x = random_array(rng, "float64", (5, 64), "max")
    s = ps.make_scan("max", axis=0)
    np.testing.assert_array_equal(s(x), ps.scan(x, "max", axis=0))


# ---------------------------------------------------------------------------
# 12. Struct monoids (the CPU networks on them: tests/test_networks.py)


def test_struct_axis_tuple_size_order(rng):
    a, b = affine_data(rng, (3, 24, 2), "int32")
    m = affine_monoid()
    for kw in [dict(axis=1), dict(axis=1, tuple_size=4, order=2), dict(axis=0, reverse=True, inclusive=False),
               dict(axis=None, tuple_size=6), dict(axis=-1, init=(np.int32(2), np.int32(3)))]:
        expected = reference_scan((a, b), affine_monoid(), **kw)
        got = ps.scan((a, b), m, **kw)
        for g, e in zip(got, expected):
            assert_scan_equal(g, e, err_msg=str(kw))


def test_struct_large_values_wrap(rng):
    a, b = affine_data(rng, 500, "uint32", small=False)
    got = ps.scan((a, b), affine_monoid())
    for g, e in zip(got, reference_scan((a, b), affine_monoid())):
        assert_scan_equal(g, e)


def test_struct_init_arrays(rng):
    a, b = affine_data(rng, (4, 10), "int64")
    init = (rng.integers(-3, 4, 4).astype(np.int64), rng.integers(-3, 4, 4).astype(np.int64))
    expected = reference_scan((a, b), affine_monoid(), axis=1, init=init, inclusive=False)
    got = ps.scan((a, b), affine_monoid(), axis=1, init=init, inclusive=False)
    for g, e in zip(got, expected):
        assert_scan_equal(g, e)


def test_commutative_struct(rng):
    m = ps.Monoid(add_pair, (0, 0), name="add_pair", commutative=True)
    x1 = random_array(rng, "int32", 300, "add")
    x2 = random_array(rng, "float64", 300, "add")
    got = ps.scan((x1, x2), m, reverse=True)
    e = reference_scan((x1, x2), add_pair, identity=(0, 0), reverse=True)
    assert_scan_equal(got[0], e[0])
    assert_scan_equal(got[1], e[1])


def test_callable_identity(rng):
    def lowest(dtype):
        return np.iinfo(dtype).min

    m = ps.Monoid(max_combine, lowest, name="mymax", commutative=True)
    x = random_array(rng, "int16", 100, "max")
    got = ps.scan(x, m, inclusive=False)
    assert_scan_equal(got, reference_scan(x, "max", inclusive=False))


def max_combine(a, b):
    return ps.maximum(a, b)
