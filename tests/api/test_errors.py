"""Every error raises ValueError or TypeError naming the offending argument, and
writes nothing to ``out``.  Empty arrays are not errors: they behave as in NumPy."""

from __future__ import annotations

import re

import numpy as np
import pytest

import prefixscan as ps

from prefixscan.testing import affine_data, affine_monoid, poisoned


def assert_names(excinfo, *names):
    """The message names one of ``names`` as a whole word (``op=``, ``'op'``, ``op:`` ...)."""
    msg = str(excinfo.value)
    assert any(re.search(rf"(?<![A-Za-z0-9_]){re.escape(n)}(?![A-Za-z0-9_])", msg) for n in names), (
        f"message {msg!r} names none of {names}"
    )


def raises_naming(names, fn, *args, **kwargs):
    if isinstance(names, str):
        names = (names,)
    with pytest.raises((ValueError, TypeError)) as excinfo:
        fn(*args, **kwargs)
    assert_names(excinfo, *names)
    return excinfo


def _x(dtype="float64", shape=(4, 6)):
    return (np.arange(int(np.prod(shape))).reshape(shape) + 1).astype(dtype)


def _check_poisoned_unchanged(out, sentinel):
    if isinstance(out, tuple):
        for o, s in zip(out, sentinel):
            _check_poisoned_unchanged(o, s)
        return
    np.testing.assert_array_equal(out, sentinel)


# ---------------------------------------------------------------------------
# scan: each case is (names, kwargs for scan, x); each runs without and with a poisoned out.

SCAN_ERRORS = [
    # unknown operator
    ("op", dict(op="sum"), _x()),
    ("op", dict(op="ADD"), _x()),
    # operator not fitting the dtype
    (("op", "dtype"), dict(op="xor"), _x("float64")),
    (("op", "dtype"), dict(op="and"), _x("float32")),
    (("op", "dtype"), dict(op="or"), _x("float16")),
    (("op", "dtype"), dict(op="logaddexp"), _x("int32")),
    (("op", "dtype"), dict(op="max"), _x("complex128")),
    (("op", "dtype"), dict(op="add"), _x("bool")),  # bool add needs an explicit integer dtype
    (("op", "dtype"), dict(op="mul"), _x("bool")),
    (("op", "dtype"), dict(op="xor", dtype=np.float64), _x("int32")),  # op vs the requested dtype
    (("op", "dtype"), dict(op="add", dtype=np.bool_), _x("bool")),  # bool add needs an *integer* dtype
    # axis out of range
    ("axis", dict(axis=2), _x()),
    ("axis", dict(axis=-3), _x()),
    ("axis", dict(axis=5), _x(shape=(10,))),
    ("axis", dict(axis=1.0), _x()),
    # tuple_size
    ("tuple_size", dict(tuple_size=4), _x(shape=(10,))),
    ("tuple_size", dict(tuple_size=4, axis=1), _x(shape=(4, 6))),
    ("tuple_size", dict(tuple_size=0), _x()),
    ("tuple_size", dict(tuple_size=-2), _x()),
    # order
    ("order", dict(order=0), _x()),
    ("order", dict(order=-1), _x()),
    # init of a shape that does not broadcast to the lane shape
    ("init", dict(axis=1, init=np.ones(5)), _x(shape=(4, 6))),
    ("init", dict(axis=None, init=np.ones(3)), _x(shape=(4, 6))),
    ("init", dict(axis=1, tuple_size=2, init=np.ones((4, 3))), _x(shape=(4, 6))),
    # backend / algorithm
    ("backend", dict(backend="gpu2"), _x()),
    ("backend", dict(backend="numpy"), _x()),
    ("algorithm", dict(algorithm="bogus"), _x()),
    ("algorithm", dict(algorithm="KoggeStone"), _x()),
    # strategy: unknown, GPU-only on a host array, not deterministic
    ("strategy", dict(strategy="lookback"), _x()),
    ("strategy", dict(strategy="persistent"), _x()),
    ("strategy", dict(strategy="decoupled_lookback", deterministic=True), _x()),
    # dtype that is not a dtype
    ("dtype", dict(dtype="notadtype"), _x()),
]


def _case_id(c):
    names, kw, x = c
    return "-".join(f"{k}={v if np.ndim(v) == 0 else np.shape(v)}" for k, v in kw.items()) + f"-{x.dtype}{x.shape}"


def _scan_out_shape(x, kw):
    return (x.size,) if kw.get("axis", None) is None else x.shape


def _out_dtype(x, kw):
    d = kw.get("dtype")
    try:
        return np.dtype(d) if d is not None else x.dtype
    except TypeError:
        return x.dtype


@pytest.mark.parametrize("case", SCAN_ERRORS, ids=[_case_id(c) for c in SCAN_ERRORS])
def test_scan_errors(case):
    names, kw, x = case
    kw = dict(kw)
    op = kw.pop("op", "add")
    x0 = x.copy()
    raises_naming(names, ps.scan, x, op, **kw)
    np.testing.assert_array_equal(x, x0)
    # Same with a poisoned out= of the shape the result would have: nothing is written.
    try:
        shape = _scan_out_shape(x, kw)
    except Exception:
        shape = x.shape
    out = poisoned(shape, _out_dtype(x, kw))
    sentinel = out.copy()
    raises_naming(names, ps.scan, x, op, out=out, **kw)
    _check_poisoned_unchanged(out, sentinel)
    # And with out=x: x itself is left alone.
    if shape == x.shape and _out_dtype(x, kw) == x.dtype:
        raises_naming(names, ps.scan, x, op, out=x, **kw)
        np.testing.assert_array_equal(x, x0)


@pytest.mark.parametrize("case", SCAN_ERRORS, ids=[_case_id(c) for c in SCAN_ERRORS])
def test_make_scan_errors(case):
    names, kw, x = case
    kw = dict(kw)
    op = kw.pop("op", "add")
    init = kw.pop("init", None)
    out = poisoned(_scan_out_shape(x, kw), _out_dtype(x, kw))
    sentinel = out.copy()
    with pytest.raises((ValueError, TypeError)) as excinfo:
        s = ps.make_scan(op, **kw)
        s(x, init=init, out=out)
    assert_names(excinfo, *((names,) if isinstance(names, str) else names))
    _check_poisoned_unchanged(out, sentinel)


# ---------------------------------------------------------------------------
# out= itself wrong


OUT_ERRORS = [
    (dict(), _x(shape=(4, 6)), (4, 6), "float64"),  # axis=None gives a 1-D result of 24
    (dict(), _x(shape=(24,)), (23,), "float64"),
    (dict(), _x(shape=(24,)), (25,), "float64"),
    (dict(axis=0), _x(shape=(4, 6)), (6, 4), "float64"),
    (dict(axis=1), _x(shape=(4, 6)), (24,), "float64"),
    # A result casts into out only as NumPy's same_kind rule allows (see test_out_casting.py).
    (dict(axis=1), _x(shape=(4, 6)), (4, 6), "int64"),  # float into int
    (dict(axis=1), _x(shape=(4, 6)), (4, 6), "bool"),
    (dict(axis=1), _x("int32", (4, 6)), (4, 6), "uint32"),  # signed into unsigned
    (dict(axis=1), _x("int32", (4, 6)), (4, 6), "bool"),
    (dict(axis=1), _x("complex64", (4, 6)), (4, 6), "float64"),  # complex into real
    (dict(axis=1, dtype=np.float64), _x("int32", (4, 6)), (4, 6), "int32"),  # dtype= sets the result's dtype
]


@pytest.mark.parametrize("kw,x,shape,dtype", OUT_ERRORS,
                         ids=[f"{k}-{x.dtype}{x.shape}-out{s}{d}" for k, x, s, d in OUT_ERRORS])
def test_out_wrong_shape_or_dtype(kw, x, shape, dtype):
    out = poisoned(shape, dtype)
    sentinel = out.copy()
    raises_naming("out", ps.scan, x, "add", out=out, **kw)
    _check_poisoned_unchanged(out, sentinel)


def test_out_read_only():
    x = _x(shape=(5,))
    out = poisoned(5, "float64")
    out.flags.writeable = False
    raises_naming("out", ps.scan, x, out=out)
    _check_poisoned_unchanged(out, poisoned(5, "float64"))


def test_out_not_an_array():
    x = _x(shape=(5,))
    raises_naming("out", ps.scan, x, out=[0.0] * 5)
    raises_naming("out", ps.scan, x, out=(np.zeros(5),))


def test_out_struct_errors(rng):
    a, b = affine_data(rng, 20, "int64")
    m = affine_monoid()
    # A single array for a two-field monoid.
    out = poisoned(20, "int64")
    raises_naming("out", ps.scan, (a, b), m, out=out)
    np.testing.assert_array_equal(out, poisoned(20, "int64"))
    # Wrong arity, wrong shape, wrong dtype: no field written.
    for bad in [(poisoned(20, "int64"),),
                (poisoned(20, "int64"), poisoned(20, "int64"), poisoned(20, "int64")),
                (poisoned(20, "int64"), poisoned(19, "int64")),
                (poisoned(20, "int64"), poisoned(20, "uint64"))]:  # int64 casts to it only unsafely
        sentinel = tuple(o.copy() for o in bad)
        raises_naming("out", ps.scan, (a, b), m, out=bad)
        _check_poisoned_unchanged(bad, sentinel)


# ---------------------------------------------------------------------------
# Struct monoids


def test_struct_mismatched_shapes(rng):
    m = affine_monoid()
    a = np.ones(10, np.int64)
    b = np.ones(11, np.int64)
    raises_naming("x", ps.scan, (a, b), m)
    out = (poisoned(10, "int64"), poisoned(11, "int64"))
    sentinel = tuple(o.copy() for o in out)
    raises_naming("x", ps.scan, (a, b), m, out=out)
    _check_poisoned_unchanged(out, sentinel)
    raises_naming("x", ps.scan, (np.ones((2, 5)), np.ones((5, 2))), m, axis=1)


def test_struct_wrong_number_of_fields(rng):
    m = affine_monoid()
    a, b = affine_data(rng, 10, "int64")
    raises_naming(("op", "x"), ps.scan, a, m)  # one array for a two-field monoid
    raises_naming(("op", "x"), ps.scan, (a, b, a), m)
    raises_naming(("op", "x"), ps.scan, (a, b), "add")  # a built-in takes one field


def test_struct_init_errors(rng):
    m = affine_monoid()
    a, b = affine_data(rng, (3, 10), "int64")
    out = (poisoned((3, 10), "int64"), poisoned((3, 10), "int64"))
    sentinel = tuple(o.copy() for o in out)
    raises_naming("init", ps.scan, (a, b), m, axis=1, init=(np.ones(4, np.int64), np.ones(3, np.int64)), out=out)
    _check_poisoned_unchanged(out, sentinel)
    raises_naming("init", ps.scan, (a, b), m, axis=1, init=(1, 2, 3), out=out)
    _check_poisoned_unchanged(out, sentinel)


def exploding_add(a, b):
    """An add that fails once partial results exceed 50 (after some levels ran)."""
    c = a + b
    if (c > 50).any():
        raise ValueError("combine: boom")
    return c


@pytest.mark.parametrize("algorithm", [None, "serial", "kogge_stone", "sklansky", "brent_kung", "reduce_then_scan"])
def test_combine_raising_writes_nothing(algorithm):
    m = ps.Monoid(exploding_add, 0, name="exploding_add")
    x = np.ones(100, dtype=np.int64)
    out = poisoned(100, "int64")
    sentinel = out.copy()
    with pytest.raises(ValueError):
        ps.scan(x, m, out=out, algorithm=algorithm)
    _check_poisoned_unchanged(out, sentinel)
    x0 = x.copy()
    with pytest.raises(ValueError):
        ps.scan(x, m, out=x, algorithm=algorithm)
    np.testing.assert_array_equal(x, x0)


def test_zero_d_axis():
    raises_naming("axis", ps.scan, np.array(3.0), axis=0)


def test_op_wrong_type():
    raises_naming("op", ps.scan, _x(), 42)
    raises_naming("op", ps.scan, _x(), np.subtract)  # a ufunc that is no built-in operator


# ---------------------------------------------------------------------------
# segmented_scan


def test_segmented_flags_offsets_keys_errors():
    x = np.arange(10, dtype=np.int64)
    out_checks = []
    raises_naming("flags", ps.segmented_scan, x, flags=np.zeros(9, bool))
    raises_naming("flags", ps.segmented_scan, x, flags=np.zeros(11, bool))
    raises_naming("flags", ps.segmented_scan, x, flags=np.zeros((2, 5), bool))
    raises_naming("offsets", ps.segmented_scan, x, offsets=[1, 5])  # must begin at 0
    raises_naming("offsets", ps.segmented_scan, x, offsets=[0, 6, 4])  # decreasing
    raises_naming("offsets", ps.segmented_scan, x, offsets=[0, 11])  # beyond n
    raises_naming("offsets", ps.segmented_scan, x, offsets=[0, -1])
    raises_naming("offsets", ps.segmented_scan, x, offsets=[])
    raises_naming("offsets", ps.segmented_scan, x, offsets=[0.0, 2.5])
    raises_naming("keys", ps.segmented_scan, x, keys=np.zeros(9))
    raises_naming("keys", ps.segmented_scan, x, keys=np.zeros(11))
    del out_checks


def test_segmented_more_than_one_or_none():
    x = np.arange(10, dtype=np.int64)
    f = np.zeros(10, bool)
    k = np.zeros(10)
    raises_naming(("flags", "offsets", "keys"), ps.segmented_scan, x, flags=f, offsets=[0])
    raises_naming(("flags", "offsets", "keys"), ps.segmented_scan, x, flags=f, keys=k)
    raises_naming(("flags", "offsets", "keys"), ps.segmented_scan, x, offsets=[0], keys=k)
    raises_naming(("flags", "offsets", "keys"), ps.segmented_scan, x, flags=f, offsets=[0], keys=k)
    raises_naming(("flags", "offsets", "keys"), ps.segmented_scan, x)


def test_segmented_other_errors():
    x = np.arange(10, dtype=np.float64)
    raises_naming("op", ps.segmented_scan, x, "nope", offsets=[0])
    raises_naming(("op", "dtype"), ps.segmented_scan, x, "xor", offsets=[0])
    raises_naming("x", ps.segmented_scan, np.ones((2, 5)), offsets=[0])


# ---------------------------------------------------------------------------
# Other functions


def test_cum_errors():
    x = _x()
    for fn in (ps.cumsum, ps.cumprod, ps.cummax, ps.cummin):
        raises_naming("axis", fn, x, axis=2)
        raises_naming("axis", fn, x, axis=-3)
        out = poisoned((5,), x.dtype)
        sentinel = out.copy()
        raises_naming("out", fn, x, out=out)
        _check_poisoned_unchanged(out, sentinel)
        out = poisoned(x.shape, "int64")  # float64 into int64: refused (same_kind casting)
        sentinel = out.copy()
        raises_naming("out", fn, x, axis=0, out=out)
        _check_poisoned_unchanged(out, sentinel)
        out = poisoned(x.shape, x.dtype)
        sentinel = out.copy()
        raises_naming("axis", fn, x, axis=7, out=out)
        _check_poisoned_unchanged(out, sentinel)
    raises_naming(("op", "dtype"), ps.cummax, np.ones(3, np.complex128))


def test_delta_errors():
    x = np.arange(12, dtype=np.int32)
    raises_naming("order", ps.delta_encode, x, 0)
    raises_naming("order", ps.delta_decode, x, 0)
    raises_naming("order", ps.delta_encode, x, -2)
    raises_naming("tuple_size", ps.delta_encode, x, 1, 0)
    raises_naming("tuple_size", ps.delta_decode, x, 1, 0)
    raises_naming("tuple_size", ps.delta_decode, x, 1, 5)
    raises_naming("axis", ps.delta_encode, x, axis=1)
    raises_naming("axis", ps.delta_decode, x.reshape(3, 4), axis=2)


def test_linear_recurrence_errors():
    a = np.ones((3, 5))
    raises_naming(("a", "b"), ps.linear_recurrence, a, np.ones((3, 6)))
    raises_naming("axis", ps.linear_recurrence, a, a, axis=2)
    raises_naming("init", ps.linear_recurrence, a, a, init=np.ones(4))
    raises_naming("log_space", ps.linear_recurrence, a, a, log_space="yes")
    raises_naming("log_space", ps.linear_recurrence, a.astype(np.int64), a.astype(np.int64), log_space=True)


def test_compact_errors():
    x = np.arange(10)
    raises_naming("mask", ps.compact, x, np.ones(9, bool))
    raises_naming("mask", ps.compact, x.reshape(2, 5), np.ones((5, 2), bool))


def test_make_scan_bad_arguments_at_call():
    s = ps.make_scan("add", axis=1, tuple_size=4)
    out = poisoned((4, 6), "float64")
    sentinel = out.copy()
    raises_naming("tuple_size", s, _x(shape=(4, 6)), out=out)
    _check_poisoned_unchanged(out, sentinel)
    s = ps.make_scan("xor")
    raises_naming(("op", "dtype"), s, _x("float32"))
    s = ps.make_scan("add", axis=2)
    raises_naming("axis", s, _x(shape=(4, 6)))


# ---------------------------------------------------------------------------
# Empty arrays: not errors; shape-preserving as in NumPy


@pytest.mark.parametrize(
    "shape,axis",
    [((0,), None), ((0,), 0), ((0,), -1), ((0, 4), 0), ((0, 4), 1), ((4, 0), 0), ((4, 0), 1), ((4, 0), None),
     ((2, 0, 3), 1), ((2, 0, 3), 2), ((2, 0, 3), None)],
)
@pytest.mark.parametrize("dtype", ["int8", "float32", "bool"])
def test_empty_arrays(shape, axis, dtype):
    x = np.empty(shape, dtype=dtype)
    op = "xor" if dtype == "bool" else "add"
    expected_shape = np.cumsum(np.empty(shape), axis=axis).shape
    for kw in [dict(), dict(inclusive=False, reverse=True), dict(order=3), dict(init=np.zeros((), dtype))]:
        got = ps.scan(x, op, axis=axis, **kw)
        assert got.shape == expected_shape and got.dtype == x.dtype, (kw, got.shape, got.dtype)
    # tuple_size divides a lane length of 0.
    if axis is not None and shape[axis] == 0:
        assert ps.scan(x, op, axis=axis, tuple_size=3).shape == expected_shape
    out = np.empty(expected_shape, dtype=dtype)
    assert ps.scan(x, op, axis=axis, out=out) is out
    if dtype != "bool":
        for name in ("cumsum", "cumprod", "cummax", "cummin"):
            got = getattr(ps, name)(x, axis=axis)
            np_fn = {"cumsum": np.cumsum, "cumprod": np.cumprod,
                     "cummax": lambda a, axis: np.maximum.accumulate(a.reshape(-1) if axis is None else a,
                                                                     axis=0 if axis is None else axis),
                     "cummin": lambda a, axis: np.minimum.accumulate(a.reshape(-1) if axis is None else a,
                                                                     axis=0 if axis is None else axis)}[name]
            ref = np_fn(x, axis=axis)
            assert got.shape == ref.shape and got.dtype == ref.dtype, name
    if dtype == "int8" and axis is not None:
        assert ps.delta_encode(x, 2, 1, axis=axis).shape == shape
        assert ps.delta_decode(x, 2, 1, axis=axis).shape == shape


def test_empty_other_functions():
    assert ps.compact(np.empty((0, 3)), np.empty((0, 3), bool)).shape == (0,)
    assert ps.compact(np.arange(5), np.zeros(5, bool)).shape == (0,)
    assert ps.linear_recurrence(np.empty((3, 0)), np.empty((3, 0))).shape == (3, 0)
    assert ps.segmented_scan(np.empty(0, np.int32), offsets=[0]).shape == (0,)
