"""The compiled CPU kernels (prefixscan.backends.cpu.compiled, and the primitives' compiled passes) against
the plain-loop reference.

Every Numba specialisation costs a second or two to compile on a cold cache,
so each test reuses few kernel signatures (one operator and dtype, one array
layout) and varies what does not change the signature: sizes, inclusive or
exclusive, seeds, ``out``.  The scans run through ``cpu_compiled.scan.run_scan``
directly: the package entry leaves inputs below ``SMALL_SCAN`` to NumPy.
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("numba")

from prefixscan._normalize import build_request, make_config  # noqa: E402
from prefixscan.backends.cpu import compiled as cpu_compiled  # noqa: E402
from prefixscan.backends.cpu.compiled import scan as compiled_scan  # noqa: E402
from prefixscan.monoid import Monoid  # noqa: E402
from prefixscan.testing import (  # noqa: E402
    affine_data,
    affine_monoid,
    assert_scan_equal,
    matmul2_data,
    matmul2_monoid,
    random_array,
    random_init,
    reference_compact,
    reference_delta_decode,
    reference_delta_encode,
    reference_linear_recurrence,
    reference_scan,
    reference_segmented_scan,
    tolerance_for,
)

SIZES = [0, 1, 2, 3, 5, 31, 127, 255, 256, 257, 1021]


def compiled(x, op="add", *, init=None, out=None, axis=None, inclusive=True, reverse=False, order=1,
             tuple_size=1, dtype=None):
    config = make_config(op, axis=axis, inclusive=inclusive, reverse=reverse, order=order,
                         tuple_size=tuple_size, dtype=dtype, backend="cpu", algorithm=None)
    results = compiled_scan.run_scan(build_request(config, x, init, out))
    assert results is not None, "the compiled kernels declined this scan"
    return tuple(results) if isinstance(x, tuple) else results[0]


def check(x, op="add", **kwargs):
    """Run the compiled scan and compare it with the reference (and x unchanged)."""
    fields = x if isinstance(x, tuple) else (x,)
    before = [f.copy() for f in fields]
    actual = compiled(x, op, **kwargs)
    reference_kwargs = {k: v for k, v in kwargs.items() if k != "out"}
    expected = reference_scan(x, op, **reference_kwargs)
    assert_scan_equal(actual, expected, err_msg=f"op={getattr(op, 'name', op)} {reference_kwargs}",
                      **tolerance_for(x, op, **reference_kwargs))
    if kwargs.get("out") is None:
        for f, b in zip(fields, before):
            np.testing.assert_array_equal(f, b)
    return actual


def test_available():
    assert cpu_compiled.available()
    assert cpu_compiled.unavailable_reason() == ""


def test_small_inputs_go_to_numpy():
    x = np.arange(10, dtype=np.int64)
    config = make_config("add", axis=None, inclusive=True, reverse=False, order=1, tuple_size=1, dtype=None,
                         backend="cpu", algorithm=None)
    assert cpu_compiled.run_scan(build_request(config, x, None, None)) is None
    big = np.arange(cpu_compiled.SMALL_DIRECT_SCAN, dtype=np.int64)
    np.testing.assert_array_equal(cpu_compiled.run_scan(build_request(config, big, None, None))[0],
                                  np.cumsum(big))
    network = make_config("add", axis=None, inclusive=True, reverse=False, order=1, tuple_size=1, dtype=None,
                          backend="cpu", algorithm="kogge_stone")
    assert cpu_compiled.run_scan(build_request(network, big, None, None)) is None


# ---------------------------------------------------------------------------
# Built-in operators and dtypes (1-D lanes, order 1).

@pytest.mark.parametrize("dtype", ["int8", "uint8", "int64", "float16", "float32", "complex128"])
def test_add_dtypes_and_sizes(rng, dtype):
    for n in SIZES:
        x = random_array(rng, dtype, n, "add")
        check(x)
        check(x, inclusive=False, init=random_init(rng, dtype, (), "add"))


def test_reverse(rng):
    # A reverse scan runs on flipped views (another kernel signature): one dtype here.
    for n in SIZES:
        x = random_array(rng, "float32", n, "add")
        check(x, reverse=True)
        check(x, reverse=True, inclusive=False, init=np.float32(1.5))


@pytest.mark.parametrize("op,dtype", [("mul", "uint8"), ("max", "float32"), ("min", "int16"), ("and", "bool"),
                                      ("or", "uint16"), ("xor", "bool"), ("max", "bool"),
                                      ("logaddexp", "float64")])
def test_operators(rng, op, dtype):
    for n in (1, 4, 5, 7, 8, 9, 257, 1000):
        x = random_array(rng, dtype, n, op)
        check(x, op)
        check(x, op, inclusive=False)
        check(x, op, init=random_init(rng, dtype, (), op))


def test_integer_wraparound_and_wider_accumulator(rng):
    x = np.full(1000, 100, np.int8)
    check(x)  # wraps every few elements
    check(x, dtype="int64")  # accumulates in int64
    b = rng.random(1000) < 0.5
    check(b, dtype="int64")


def test_nan_and_inf(rng):
    x = rng.standard_normal(1003).astype(np.float32)
    x[[3, 500]] = np.nan
    x[[10, 700]] = np.inf
    x[[11, 800]] = -np.inf
    for op in ("add", "max", "min"):
        check(x, op)
        check(x, op, inclusive=False, init=np.float32(0.5))
    y = x.copy()
    y[0] = np.nan  # a NaN in the carry from the start
    check(y, "max")
    z = np.full(100, -np.inf)
    z[50:] = rng.standard_normal(50)
    z[60] = np.inf
    check(z, "logaddexp")
    z[70] = np.nan
    check(z, "logaddexp")


@pytest.mark.parametrize("op,dtype", [("add", "float32"), ("add", "int64"), ("xor", "uint8"), ("and", "int32"),
                                      ("or", "int16")])
def test_vector_lanes(rng, op, dtype):
    """The four-lane kernel (simd.py): every length around multiples of four, several
    lanes (a scan along the last axis), seeds, exclusive scans; reverse scans and
    mixed dtypes stay scalar."""
    from prefixscan.backends.cpu.compiled import simd

    x = random_array(rng, dtype, 16, op)
    assert simd.supports(simd.Tag("op_" + op), x.reshape(1, -1), x.reshape(1, -1), (x.dtype.type(0),),
                         ((simd.PLAIN,),) * 4)
    assert not simd.supports(simd.Tag("op_" + op), x[::-1].reshape(1, -1), x.reshape(1, -1),
                             (x.dtype.type(0),), ((simd.PLAIN,),) * 4)
    for n in SIZES + [4, 8, 9, 10, 11, 12]:
        x = random_array(rng, dtype, n, op)
        check(x, op)
        check(x, op, inclusive=False)
        check(x, op, init=random_init(rng, dtype, (), op), inclusive=bool(n % 2))
    lanes = random_array(rng, dtype, (3, 37), op)
    check(lanes, op, axis=1)
    check(lanes, op, axis=1, inclusive=False, init=random_init(rng, dtype, (3,), op))
    check(lanes, op, axis=1, reverse=True)


@pytest.mark.parametrize("dtype,order", [("int32", 8), ("uint32", 4), ("int32", 5)])
def test_chunked_orders(rng, dtype, order):
    """Orders 4-8 of 32-bit integers over chunks in vector lanes (chunked.py): one
    block, a block and a tail, several lanes; full-range values, so sums wrap."""
    from prefixscan.backends.cpu.compiled import chunked

    block = chunked.BLOCK
    x = random_array(rng, dtype, 2 * block + 13, "add")
    assert chunked.supports(chunked.Tag("op_add"), x.reshape(1, -1), x.reshape(1, -1), (x.dtype.type(0),),
                            ((chunked.PLAIN,),) * 4, order, (False, True, False))
    check(x[:block], order=order)
    check(x, order=order)
    check(x.reshape(1, -1)[:, :block + 5].repeat(2, axis=0), order=order, axis=1)
    check(x, order=order, inclusive=False)  # the scalar kernel: the chunked one is inclusive only
    assert not chunked.supports(chunked.Tag("op_add"), x.reshape(1, -1)[:, :block - 1], x.reshape(1, -1),
                                (x.dtype.type(0),), ((chunked.PLAIN,),) * 4, order, (False, True, False))


def test_vector_lanes_signed_zeros():
    """Float sums shift in -0.0: all negative zeros sum to -0.0, as serially."""
    z = -np.zeros(11)
    assert np.signbit(compiled(z)).all()
    assert np.signbit(compiled(z, inclusive=False, init=-0.0)).all()


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_logaddexp_blocks(rng, dtype):
    """The blocked logaddexp kernel (logsumexp.py) on its fast and exact paths: block
    boundaries, a running maximum that jumps beyond SPAN inside a block (float32 at 60,
    float64 at 600), values far below the total, seeds, exclusive scans, infinities and NaN."""
    from prefixscan.backends.cpu.compiled.logsumexp import BLOCK

    for n in (BLOCK - 1, BLOCK, BLOCK + 1, 3 * BLOCK + 5):
        x = (rng.standard_normal(n) * 3).astype(dtype)
        check(x, "logaddexp")
        check(x, "logaddexp", inclusive=False, init=np.asarray(2.5, dtype))
    n = 2 * BLOCK + 7
    ramp = np.linspace(-3000, 3000, n).astype(dtype)  # rises by ~6 per element: the exact path
    ramp[::3] -= 2000  # and values far below the running total
    check(ramp, "logaddexp")
    check(ramp[::-1].copy(), "logaddexp", inclusive=False)
    steps = np.zeros(n, dtype)
    steps[BLOCK // 2::BLOCK // 4] = 70 if dtype == "float32" else 650  # jumps just beyond SPAN
    check(steps, "logaddexp", init=np.asarray(-1e4, dtype))
    special = (rng.standard_normal(n)).astype(dtype)
    special[:BLOCK + 3] = -np.inf  # an all -inf start, then a block beginning mid-way
    check(special, "logaddexp")
    special[BLOCK + 100] = np.inf
    check(special, "logaddexp")
    special[BLOCK + 200] = np.nan
    check(special, "logaddexp", inclusive=False)


# ---------------------------------------------------------------------------
# Orders, tuple sizes, axes, layouts.

@pytest.mark.parametrize("order", range(1, 9))
def test_orders(rng, order):
    x = rng.integers(-(2**62), 2**62, 601)
    check(x, order=order)
    check(x, order=order, inclusive=False, init=np.int64(-7))
    check(x[:1], order=order)


def test_order_above_the_compiled_ones(rng):
    x = rng.integers(-9, 10, 300)
    check(x, order=11, init=np.int64(3))
    check(x, order=11, inclusive=False)


@pytest.mark.parametrize("tuple_size", [2, 3, 5, 7, 8])
def test_tuple_sizes(rng, tuple_size):
    x = rng.integers(-(2**62), 2**62, 8 * 9 * 5 * 7 * 2)
    check(x, tuple_size=tuple_size)
    check(x, tuple_size=tuple_size, inclusive=False, init=rng.integers(-5, 5, tuple_size))
    check(x, tuple_size=tuple_size, reverse=True, init=np.int64(4))
    check(x[:tuple_size], tuple_size=tuple_size)


def test_orders_with_tuple_sizes(rng):
    x = rng.integers(-(2**62), 2**62, 8 * 3 * 7 * 10)
    check(x, tuple_size=7, order=3)  # rows kernel: 21 states per row
    check(x, tuple_size=7, order=3, inclusive=False, init=rng.integers(-5, 5, 7))


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_axes(rng, axis):
    x2 = random_array(rng, "float64", (37, 40), "add")
    x3 = random_array(rng, "float64", (5, 37, 20), "add")
    for x in (x2, x3):
        if axis >= x.ndim:
            continue
        lanes = x.shape[:axis % x.ndim] + x.shape[axis % x.ndim + 1:]
        check(x, axis=axis)
        check(x, axis=axis, inclusive=False, init=random_array(rng, "float64", lanes, "add"))
        check(x, axis=axis, reverse=True, init=np.float64(2))


def test_strided_negative_and_fortran_inputs(rng):
    x = random_array(rng, "float64", (60, 50), "add")
    check(x[:, ::-1], axis=1)
    check(x[::2, ::-3], axis=0)
    check(x[::-1, 3], axis=0)
    f = np.asfortranarray(x)
    check(f, axis=0)
    check(f, axis=1, reverse=True)
    check(f, axis=None)


@pytest.mark.parametrize("threads", [2, 3])
def test_threaded_lane(rng, threads):
    from prefixscan.backends.cpu.compiled.jit_support import PLAIN, builtin_tag
    from prefixscan.backends.cpu.compiled.parallel import scan_lane_threaded

    x = rng.integers(-(2**62), 2**62, (1, 10007))
    fmts = ((PLAIN,), (PLAIN,), (PLAIN,), (PLAIN,))
    zero = (np.int64(0),)
    for inclusive, seed, seeded in ((True, zero, False), (False, zero, False), (True, (np.int64(5),), True)):
        y = np.empty_like(x)
        scan_lane_threaded((x,), (y,), builtin_tag("add"), False, fmts, zero, seed, seeded, inclusive, threads)
        kwargs = dict(inclusive=inclusive, init=seed[0] if seeded else None)
        assert_scan_equal(y[0], reference_scan(x[0], "add", **kwargs))


def test_out_aliasing_x(rng):
    for kwargs in (dict(), dict(reverse=True, inclusive=False), dict(order=3), dict(axis=0),
                   dict(axis=1, tuple_size=5)):
        x = random_array(rng, "int64", (20, 50), "add")
        expected = reference_scan(x, "add", **kwargs)
        target = x if kwargs.get("axis") is not None else x.reshape(-1)
        result = compiled(x if kwargs.get("axis") is not None else x.reshape(-1), out=target, **kwargs)
        assert result is target
        assert_scan_equal(result, expected)
    # out overlapping x without being it: the result goes through a temporary
    x = np.arange(3000, dtype=np.float64)
    compiled(x, out=x[::-1])
    np.testing.assert_array_equal(x[::-1], np.cumsum(np.arange(3000.0)))


def test_out_of_another_dtype_field(rng):
    x = random_array(rng, "float16", 999, "add")
    out = np.empty(999, np.float16)
    result = check(x, out=out)
    assert result is out


# ---------------------------------------------------------------------------
# User monoids (structs of arrays, not commutative).

def test_affine_monoid(rng):
    m = affine_monoid()
    x = affine_data(rng, (6, 211))
    check(x, m, axis=-1)
    check(x, m, axis=-1, reverse=True, inclusive=False)
    check(x, m, axis=0, init=(np.int64(2), np.int64(-1)))


def test_matmul2_monoid(rng):
    m = matmul2_monoid()
    x = matmul2_data(rng, 1001)
    check(x, m)
    check(x, m, reverse=True)
    check(x, m, inclusive=False, init=(np.int64(1), np.int64(1), np.int64(0), np.int64(1)))


def test_helpers_of_prefixscan_monoid_compile(rng):
    from prefixscan.monoid import maximum, minimum, where, exp, log, log1p

    def logaddexp_by_helpers(a, b):  # every helper, in a monoid whose identity -inf is exact
        hi = maximum(a, b)
        lo = minimum(a, b)
        return where(lo == hi, hi + log(2.0), hi + log1p(exp(lo - hi)))

    m = Monoid(logaddexp_by_helpers, -np.inf, name="logaddexp_by_helpers")
    x = rng.uniform(-3, 3, 3000)
    y = compiled(x, m)
    np.testing.assert_allclose(y, np.logaddexp.accumulate(x), rtol=1e-12)


def test_combine_numba_cannot_compile_is_declined():
    def plain_python(v):  # not jitted: Numba cannot call it
        return v

    def uses_python_objects(a, b):
        return plain_python(a) + b

    m = Monoid(uses_python_objects, 0, name="dict_sum")
    config = make_config(m, axis=None, inclusive=True, reverse=False, order=1, tuple_size=1, dtype=None,
                         backend="cpu", algorithm=None)
    x = np.arange(5000.0)
    assert compiled_scan.run_scan(build_request(config, x, None, None)) is None
    assert compiled_scan.run_scan(build_request(config, x, None, None)) is None  # remembered


# ---------------------------------------------------------------------------
# The primitives' compiled passes (the ``compiled`` modules of prefixscan.primitives).

def _compact(x, mask):
    """``x[mask]`` (flattened, in C order) in one compiled pass; ``x`` may be a tuple of arrays."""
    from prefixscan.primitives.compaction import compiled

    struct = isinstance(x, tuple)
    values, _ = compiled.compact([np.asarray(v) for v in (x if struct else (x,))], np.asarray(mask))
    return values if struct else values[0]


def test_segmented_scan(rng):
    from prefixscan.primitives.segmented import compiled


    n = 2000
    x = random_array(rng, "int64", n, "add")
    flags = rng.random(n) < 0.05
    keys = np.sort(rng.integers(0, 50, n))
    offsets = np.array([0, 0, 1, 1, 2, 3, 500, 500, 1999, n])
    for inclusive in (True, False):
        for reverse in (False, True):
            kw = dict(inclusive=inclusive, reverse=reverse)
            assert_scan_equal(compiled.segmented_scan(x, "add", flags=flags, **kw),
                              reference_segmented_scan(x, "add", flags=flags, **kw))
            assert_scan_equal(compiled.segmented_scan(x, "max", offsets=offsets, **kw),
                              reference_segmented_scan(x, "max", offsets=offsets, **kw))
            assert_scan_equal(compiled.segmented_scan(x, "add", keys=keys, **kw),
                              reference_segmented_scan(x, "add", keys=keys, **kw))
    ones = np.ones(n, bool)  # all segments of length 1
    assert_scan_equal(compiled.segmented_scan(x, "add", flags=ones), x)
    assert_scan_equal(compiled.segmented_scan(x, "add", flags=ones, inclusive=False), np.zeros(n, np.int64))
    m = affine_monoid()
    pair = affine_data(rng, n)
    for reverse in (False, True):
        assert_scan_equal(compiled.segmented_scan(pair, m, flags=flags, reverse=reverse),
                          reference_segmented_scan(pair, m, flags=flags, reverse=reverse))
    assert compiled.segmented_scan(x[:0], "add", flags=flags[:0]).shape == (0,)


def test_compact(rng):
    x = random_array(rng, "int32", (40, 51), "add")
    for mask in (rng.random(x.shape) < 0.3, np.ones(x.shape, bool), np.zeros(x.shape, bool)):
        assert_scan_equal(_compact(x, mask), reference_compact(x, mask))
    f = random_array(rng, "float16", x.shape, "add")
    mask = rng.random(x.shape) < 0.5
    got = _compact((x, f), mask)
    assert_scan_equal(got[0], reference_compact(x, mask))
    assert_scan_equal(got[1], reference_compact(f, mask))
    assert _compact(x[:0], mask[:0]).shape == (0,)


def test_linear_recurrence(rng):
    from prefixscan.primitives.recurrence import compiled

    a = rng.uniform(0.5, 1.0, (7, 301))
    b = rng.standard_normal((7, 301))
    for axis in (-1, 0):
        lanes = (7,) if axis == -1 else (301,)
        for reverse in (False, True):
            for init in (None, 1.5, rng.standard_normal(lanes)):
                got = compiled.linear_recurrence(a, b, init=init, axis=axis, reverse=reverse)
                assert_scan_equal(got, reference_linear_recurrence(a, b, init=init, axis=axis, reverse=reverse))
    decay = np.float64(0.9)  # a broadcasts
    assert_scan_equal(compiled.linear_recurrence(decay, b), reference_linear_recurrence(np.full(b.shape, 0.9), b))
    ai, bi = rng.integers(-3, 4, 500), rng.integers(-(2**40), 2**40, 500)
    assert_scan_equal(compiled.linear_recurrence(ai, bi), reference_linear_recurrence(ai, bi))


def test_delta_coding(rng):
    from prefixscan.primitives.delta import compiled

    x = random_array(rng, "int16", (6, 126), "add")  # wraps
    for order, tuple_size, axis in [(1, 1, -1), (3, 1, 0), (3, 3, -1), (1, 2, 0)]:
        d = compiled.delta_encode(x, order, tuple_size, axis)
        assert_scan_equal(d, reference_delta_encode(x, order, tuple_size, axis=axis))
        decoded = compiled.delta_decode(d, order, tuple_size, axis)
        assert_scan_equal(decoded, reference_delta_decode(d, order, tuple_size, axis=axis))
        np.testing.assert_array_equal(decoded, x)
    f = random_array(rng, "float32", 1000, "add")
    assert_scan_equal(compiled.delta_encode(f, 10), reference_delta_encode(f, 10))
