"""NumPy arrays of non-native byte order on the CPU backend.

Every public function that takes host arrays gives, for an input (or ``init``,
``keys``, coefficient) stored big-endian, bit for bit the result of the same
values in native byte order, in native byte order, on the NumPy path (below
8192 elements) and on the compiled path (from 8192; 2^17 for the integer sums
NumPy runs as one accumulate).  An ``out`` of non-native byte order is written
with the same values.  The compiled kernels read memory as native numbers: a
swapped array reaching one is an internal error, never a silent wrong answer.
"""

from __future__ import annotations

import numpy as np
import pytest

import prefixscan as ps

# Below, at and above the compiled path's threshold, and past the integer sums' own.
SIZES = [97, 8191, 8192, 20011]
INTEGER_SUM_SIZE = (1 << 17) + 3
DTYPES = ["float16", "float32", "float64", "int32", "int64", "uint16", "complex128"]


def swapped(a: np.ndarray) -> np.ndarray:
    """The values of ``a`` stored in the other byte order."""
    return a.astype(a.dtype.newbyteorder("S"))


def data(rng, dtype: str, n: int) -> np.ndarray:
    kind = np.dtype(dtype).kind
    if kind == "c":
        return (rng.standard_normal(n) + 1j * rng.standard_normal(n)).astype(dtype)
    if kind == "f":
        return (rng.standard_normal(n) * 3).astype(dtype)
    return rng.integers(0, 100, n).astype(dtype)


def assert_same_bits(got, expected, what: str) -> None:
    got, expected = np.asarray(got), np.asarray(expected)
    assert got.dtype.isnative, f"{what}: result in byte order {got.dtype.str}"
    assert got.dtype == expected.dtype and got.shape == expected.shape, what
    assert got.tobytes() == expected.tobytes(), f"{what}: values differ from native byte order"


def _cases(n: int, dtype: str):
    """(name, function of x) for every public function taking one host array."""
    real = np.dtype(dtype).kind != "c"
    cases = [
        ("scan", lambda x: ps.scan(x)),
        ("scan exclusive reverse", lambda x: ps.scan(x, inclusive=False, reverse=True)),
        ("scan order 3", lambda x: ps.scan(x, order=3)),
        ("scan order 10", lambda x: ps.scan(x, order=10)),
        ("scan tuple_size 2", lambda x: ps.scan(x, tuple_size=2 if n % 2 == 0 else 1)),
        ("scan axis 0", lambda x: ps.scan(x[: n - n % 7].reshape(-1, 7), axis=0)),
        ("scan mul", lambda x: ps.scan(x, "mul")),
        ("cumsum", lambda x: ps.cumsum(x)),
        ("cumprod", lambda x: ps.cumprod(x)),
        ("segmented_scan offsets", lambda x: ps.segmented_scan(x, offsets=np.array([0, 10, n // 2]))),
        ("segmented_scan flags", lambda x: ps.segmented_scan(x, flags=np.arange(n) % 7 == 0, inclusive=False)),
        ("compact", lambda x: ps.compact(x, np.arange(n) % 3 == 0)),
        ("partition", lambda x: ps.partition(x, np.arange(n) % 3 == 0)[0]),
        ("delta_decode", lambda x: ps.delta_decode(x, order=2)),
    ]
    if real:
        cases += [("cummax", lambda x: ps.cummax(x)), ("cummin", lambda x: ps.cummin(x, reverse=True)),
                  ("scan max", lambda x: ps.scan(x, "max"))]
    if dtype != "uint16":
        cases.append(("delta_encode", lambda x: ps.delta_encode(x, order=2)))
    return cases


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_swapped_input_gives_the_native_result(rng, dtype, n):
    x = data(rng, dtype, n)
    for name, run in _cases(n, dtype):
        with np.errstate(over="ignore"):
            expected = run(x)
            got = run(swapped(x))
        assert_same_bits(got, expected, f"{name} {dtype} n={n}")


@pytest.mark.parametrize("dtype", ["int32", "int64", "uint16"])
def test_swapped_integer_sums_past_numpys_accumulate(rng, dtype):
    x = data(rng, dtype, INTEGER_SUM_SIZE)
    for run in (ps.scan, ps.cumsum, lambda a: ps.scan(a, "xor")):
        assert_same_bits(run(swapped(x)), run(x), dtype)


@pytest.mark.parametrize("n", [97, 20011])
@pytest.mark.parametrize("dtype", ["float16", "float64", "int32", "complex128"])
def test_swapped_init_keys_and_coefficients(rng, dtype, n):
    x = data(rng, dtype, n)
    init = x[:1].reshape(())
    keys = (np.arange(n) // 13).astype(np.int32)
    assert_same_bits(ps.scan(swapped(x), init=swapped(init)), ps.scan(x, init=init), "scan init")
    lanes = x[: n - n % 7].reshape(7, -1)
    seeds = data(rng, dtype, 7)
    assert_same_bits(ps.scan(swapped(lanes), axis=1, init=swapped(seeds)), ps.scan(lanes, axis=1, init=seeds),
                     "scan of lanes, one seed each")
    assert_same_bits(ps.segmented_scan(swapped(x), keys=swapped(keys), init=swapped(init)),
                     ps.segmented_scan(x, keys=keys, init=init), "segmented_scan keys")
    assert_same_bits(ps.segmented_scan(x, keys=swapped(keys.astype(np.float64))),
                     ps.segmented_scan(x, keys=keys.astype(np.float64)), "segmented_scan float keys")
    if np.dtype(dtype).kind in "fc":
        a = (data(rng, dtype, n) * 0.1).astype(dtype)
        assert_same_bits(ps.linear_recurrence(swapped(a), swapped(x), init=swapped(init)),
                         ps.linear_recurrence(a, x, init=init), "linear_recurrence")
        h, final = ps.linear_recurrence(swapped(a), swapped(x), offsets=[0, n // 3, n], return_final=True)
        h0, final0 = ps.linear_recurrence(a, x, offsets=[0, n // 3, n], return_final=True)
        assert_same_bits(h, h0, "linear_recurrence offsets")
        assert_same_bits(final, final0, "linear_recurrence final")


@pytest.mark.parametrize("n", [97, 20011, INTEGER_SUM_SIZE])
@pytest.mark.parametrize("dtype", ["float16", "float32", "int64", "complex128"])
def test_swapped_out_is_written(rng, dtype, n):
    """An ``out`` of non-native byte order holds the values a native one would,
    whatever the input's byte order, and a swapped ``x`` scans in place."""
    x = data(rng, dtype, n)
    for name, run in [("scan", ps.scan), ("scan order 2", lambda a, **k: ps.scan(a, order=2, **k)),
                      ("scan exclusive", lambda a, **k: ps.scan(a, inclusive=False, **k)),
                      ("cumsum", ps.cumsum),
                      ("segmented_scan", lambda a, **k: ps.segmented_scan(a, offsets=np.array([0, 7]), **k))]:
        expected = run(x)
        for given in (x, swapped(x)):
            out = np.full(expected.shape, 7, swapped(expected).dtype)
            assert run(given, out=out) is out
            assert np.array_equal(out, expected), f"{name} {dtype} n={n} into a swapped out"
            assert out.tobytes() == swapped(expected).tobytes()
        if expected.dtype == x.dtype:
            inplace = swapped(x)
            run(inplace, out=inplace)
            assert inplace.tobytes() == swapped(expected).tobytes(), f"{name} {dtype} n={n} in place"


def test_swapped_struct_scan(rng):
    """Struct monoids: fields of either byte order, and swapped outs."""
    n = 20011
    a, b = (rng.standard_normal(n) * 0.5).astype(np.float64), rng.standard_normal(n)
    expected = ps.scan((a, b), ps.AFFINE)
    got = ps.scan((swapped(a), b), ps.AFFINE)
    for g, e in zip(got, expected):
        assert_same_bits(g, e, "affine with a swapped field")
    outs = (np.zeros(n, ">f8"), np.zeros(n, ">f8"))
    ps.scan((swapped(a), swapped(b)), ps.AFFINE, out=outs)
    for o, e in zip(outs, expected):
        assert np.array_equal(o, e)


def test_kernel_launch_refuses_swapped_arrays():
    """Numba's dispatcher reuses a native signature's machine code for a swapped
    array of the same type; the launcher refuses it instead of reading swapped bytes."""
    pytest.importorskip("numba")
    from prefixscan.primitives.compaction import compiled as compaction
    from prefixscan.backends.cpu.compiled.launch import call

    x = np.arange(10, dtype=np.int64)
    out = np.empty(10, np.int64)
    mask = np.ones(10, np.uint8)
    assert call(compaction.compact_field, x, mask, out, 10) == 10
    with pytest.raises(TypeError, match="byte order"):
        call(compaction.compact_field, swapped(x), mask, out, 10)
