"""``out=`` as NumPy has it, on every backend present: a result cast into an
``out`` of another dtype (``same_kind``), an ``out`` that overlaps ``x``, and the
``out`` arrays refused before any work (internal overlap, read-only, requires grad).

The reference is NumPy itself (``numpy.cumsum(x, out=...)`` computes the result
in its own dtype and casts it into ``out``) or the plain-loop reference of
prefixscan.testing; outputs are poisoned first, so elements left unwritten show.
"""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

import prefixscan as ps
from prefixscan.testing import assert_scan_equal, poisoned, random_array, reference_scan, tolerance_for

HAS_TORCH = importlib.util.find_spec("torch") is not None

#: Lengths per backend: NumPy's path and the compiled kernels (from 8192) on the
#: CPU, several 32-element tiles in the interpreter, thousands on a GPU.
SIZES = {"cpu": [1, 31, 8191, 8192, 20011], "triton-interpreter": [1, 31, 97],
         "cuda": [1, 1031, 8193, 1_000_003]}


def sizes(backend) -> list[int]:
    return SIZES.get(backend.name, SIZES["cpu"])


def numpy_accumulate(name: str, x: np.ndarray, out: np.ndarray) -> np.ndarray:
    """NumPy's own function of ``name`` (flattened, as prefixscan's axis=None) into ``out``."""
    fn = {"cumsum": np.cumsum, "cumprod": np.cumprod,
          "cummax": lambda a, out: np.maximum.accumulate(a.reshape(-1), out=out),
          "cummin": lambda a, out: np.minimum.accumulate(a.reshape(-1), out=out)}[name]
    return fn(x, out=out)


# ---------------------------------------------------------------------------
# A result cast into an out of another dtype.

CASTS = [
    ("cumsum", "int32", "int32"),  # NumPy sums int32 data into an int32 out in int32 (wraps as int64 cast)
    ("cumsum", "int32", "float64"),
    ("cumsum", "int16", "float32"),  # summed in float32: int16 casts to it safely, NumPy's loop is out's
    ("cumsum", "uint8", "int16"),
    ("cumsum", "int32", "complex128"),
    ("cumsum", "int8", "bool"),  # refused: a number into bool
    ("cumprod", "int16", "int8"),
    ("cummax", "int64", "int16"),  # the maximum of int64 values, then truncated: not a max in int16
    ("cummax", "int16", "int64"),
    ("cummin", "int32", "float32"),
]


@pytest.mark.parametrize("name,dtype,out_dtype", CASTS, ids=[f"{n}-{d}-into-{o}" for n, d, o in CASTS])
def test_drop_ins_cast_into_out_as_numpy(backend, rng, name, dtype, out_dtype):
    op = {"cumsum": "add", "cumprod": "mul", "cummax": "max", "cummin": "min"}[name]
    if out_dtype == "bool":
        x = backend.asarray(random_array(rng, dtype, 40, op))
        out = backend.asarray(poisoned(40, out_dtype))
        with pytest.raises(TypeError, match="out"):
            getattr(ps, name)(x, out=out, backend=backend.backend)
        assert backend.to_numpy(out).all()
        return
    for n in sizes(backend):
        x = random_array(rng, dtype, n, op)
        expected = numpy_accumulate(name, x, poisoned(n, out_dtype))
        for _ in range(2):  # the second call takes the planned path
            out = backend.asarray(poisoned(n, out_dtype))
            got = getattr(ps, name)(backend.asarray(x), out=out, backend=backend.backend)
            assert got is out
            # integers exactly; float sums within the rule's bound for an accumulation in
            # out's dtype (from the running sum of |x|: NumPy's own loop rounds once the sum
            # passes 2^24 in float32, so |expected| alone is no bound where it comes back near 0)
            assert_scan_equal(out, expected, **tolerance_for(x, op, dtype=out_dtype), err_msg=f"n={n}")


@pytest.mark.parametrize("dtype,out_dtype", [("float64", "float32"), ("float32", "float64"),
                                             ("float16", "float32")])
def test_cast_out_accumulates_as_numpy(backend, dtype, out_dtype):
    """NumPy accumulates in the wider of the two float types: float64 data into a
    float32 out is summed in float64 and each prefix rounded once (summing in float32
    would stall at 1.0); float32 or float16 data into a wider out is summed in it."""
    x = np.full(3001, 1e-3 if dtype == "float16" else 1e-8, dtype=dtype)
    x[0] = 1.0
    out = backend.asarray(poisoned(x.size, out_dtype))
    ps.cumsum(backend.asarray(x), out=out, backend=backend.backend)
    expected = np.cumsum(x, out=np.empty(x.size, out_dtype))
    assert expected[-1] > 1.00002
    np.testing.assert_allclose(backend.to_numpy(out), expected, rtol=1e-6)


@pytest.mark.parametrize("data", ["int16", "uint16", "int32", "int64", "float64"])
def test_the_accumulator_of_an_out_is_numpys(data):
    """NumPy sums in the promotion of the data's dtype and out's (int16 into float32: in
    float32; int32 into float32: in float64, rounded once), not of cumsum's own result
    dtype (int64 for int16); which one it took is read from NumPy's own result, on odd
    values whose float32 prefixes round."""
    from prefixscan._out import numpy_out_accumulator

    rng = np.random.default_rng(3)
    n, out_dtype = 5001, "float32"
    if data == "float64":
        x = rng.random(n) * 1e4 + 1e4
    else:
        x = rng.integers(20001, 32767 if data.endswith("16") else 10**7, n).astype(data) | 1
    expected = np.cumsum(x, out=np.empty(n, out_dtype))
    in_out = np.cumsum(x.astype(out_dtype), dtype=out_dtype)
    wide = np.cumsum(x, dtype="float64").astype(out_dtype)
    assert not np.array_equal(in_out, wide)  # the data tell the two apart
    numpy_took = out_dtype if np.array_equal(expected, in_out) else "float64"
    assert np.array_equal(expected, in_out if numpy_took == out_dtype else wide)
    assert numpy_took == ("float32" if data.endswith("16") else "float64")
    result = np.cumsum(x[:1]).dtype.name  # cumsum's own result dtype (int64 for small integers)
    assert numpy_out_accumulator(data, result, out_dtype) == numpy_took
    got = ps.cumsum(x, out=np.empty(n, out_dtype), backend="cpu")
    np.testing.assert_array_equal(got, expected)  # the CPU's sequential sums: NumPy's bits


@pytest.mark.parametrize("out_dtype", ["complex64", "complex128"])
def test_real_products_into_a_complex_out_are_numpys_bits(out_dtype):
    """NumPy multiplies real data into a complex out in complex arithmetic: the imaginary
    parts carry signed zeros (3 x -2 x 5 x -7 = 210 - 0j) and an overflow gives NaNs, which
    a product in the real type would not; sums stay in the real type (the same values)."""
    for x in (np.array([3, -2, 5, -7], "int8"), np.array([3, -2, 1e30, 1e30], "float32"),
              np.random.default_rng(0).integers(-5, 5, 60).astype("int16")):
        for name in ("cumprod", "cumsum"):
            with np.errstate(all="ignore"):
                expected = getattr(np, name)(x, out=np.empty(x.size, out_dtype))
                got = getattr(ps, name)(x, out=np.empty(x.size, out_dtype), backend="cpu")
            real = expected.real.dtype
            np.testing.assert_array_equal(got.view(real), expected.view(real), err_msg=f"{name} {x.dtype}")


def test_scan_and_segmented_cast_into_out(backend, rng):
    """scan's and segmented_scan's out follow the same rule (the result's dtype is
    the input's here: int64 sums wrap into an int16 out)."""
    for n in sizes(backend):
        x = random_array(rng, "int64", n, "add")
        kw = dict(inclusive=False, reverse=True, init=7)
        out = backend.asarray(poisoned(n, "int16"))
        assert ps.scan(backend.asarray(x), out=out, backend=backend.backend, **kw) is out
        np.testing.assert_array_equal(backend.to_numpy(out), reference_scan(x, "add", **kw).astype(np.int16))
        offsets = np.array([0, n // 3, n // 2])
        out = backend.asarray(poisoned(n, "float64"))
        got = ps.segmented_scan(backend.asarray(x.astype(np.int32)), offsets=offsets, out=out,
                                backend=backend.backend)
        assert got is out
        expected = np.concatenate([np.cumsum(p) for p in np.split(x.astype(np.int32), offsets[1:])])
        np.testing.assert_array_equal(backend.to_numpy(out), expected.astype(np.int32).astype(np.float64))
    # A reusable Scan's planned calls cast too.
    s = ps.make_scan("max", backend=backend.backend)
    x = random_array(rng, "float64", 97, "max")
    for _ in range(3):
        out = backend.asarray(poisoned(97, "float32"))
        assert s(backend.asarray(x), out=out) is out
        np.testing.assert_array_equal(backend.to_numpy(out), np.maximum.accumulate(x).astype(np.float32))


REFUSED_CASTS = [("float64", "int64"), ("float32", "bool"), ("int32", "uint32"), ("int64", "bool"),
                 ("complex128", "float64")]


@pytest.mark.parametrize("dtype,out_dtype", REFUSED_CASTS, ids=[f"{d}-into-{o}" for d, o in REFUSED_CASTS])
def test_cast_that_changes_kind_is_refused(backend, rng, dtype, out_dtype):
    if backend.is_triton and "complex" in dtype:
        pytest.skip("the Triton backend has no complex scans")
    x = backend.asarray(random_array(rng, dtype, 40, "add"))
    for fn in (ps.scan, ps.cumsum, ps.cummax if "complex" not in dtype else ps.cumprod):
        sentinel = poisoned(40, out_dtype)
        out = backend.asarray(sentinel.copy())
        with pytest.raises(TypeError, match="out"):
            fn(x, out=out, backend=backend.backend)
        np.testing.assert_array_equal(backend.to_numpy(out), sentinel)


def test_cast_into_out_writes_nothing_when_the_scan_fails():
    def exploding(a, b):
        if np.any(a + b > 50):
            raise ValueError("exploded")
        return a + b

    m = ps.Monoid(exploding, 0, name="exploding")
    for n in (100, 20000):
        out = poisoned(n, "int16")
        with pytest.raises(ValueError, match="exploded"):
            ps.scan(np.ones(n, np.int64), m, out=out, algorithm="serial")
        np.testing.assert_array_equal(out, poisoned(n, "int16"))


# ---------------------------------------------------------------------------
# An out that overlaps x.

def test_a_cast_that_raises_writes_no_out():
    """The cast into out runs for every field before any is copied: an overflow that the
    caller's errstate makes an error leaves out (every field of a struct out) unwritten."""
    x = np.array([1.0, 1e300, 1e300])
    out = np.full(3, -7, np.float32)
    with np.errstate(over="raise"), pytest.raises(FloatingPointError):
        ps.cumsum(x, out=out)
    assert (out == -7).all()
    a, b = np.full(3, -7, np.float64), np.full(3, -7, np.float32)
    with np.errstate(over="raise"), pytest.raises(FloatingPointError):
        ps.scan((np.ones(3), x), ps.AFFINE, out=(a, b))
    assert (a == -7).all() and (b == -7).all()


def test_out_overlapping_x_is_read_first(backend, rng):
    """Shifted views of one buffer (out ahead of x, and behind it) and a transposed
    view: NumPy's result, as if x had been copied first."""
    for n in sizes(backend):
        base = random_array(rng, "int64", n + 3, "add")
        for x_at, out_at in ((slice(0, n), slice(3, n + 3)), (slice(3, n + 3), slice(0, n))):
            buffer = backend.asarray(base)
            out = buffer[out_at]
            assert ps.scan(buffer[x_at], out=out, backend=backend.backend) is out
            expected = base.copy()
            expected[out_at] = np.cumsum(base[x_at])
            np.testing.assert_array_equal(backend.to_numpy(buffer), expected, err_msg=f"n={n} x={x_at}")
            buffer = backend.asarray(base)  # segmented_scan too
            ps.segmented_scan(buffer[x_at], offsets=[0, n // 2], out=buffer[out_at], backend=backend.backend)
            expected = base.copy()
            expected[out_at] = np.concatenate([np.cumsum(p) for p in np.split(base[x_at], [n // 2])])
            np.testing.assert_array_equal(backend.to_numpy(buffer), expected, err_msg=f"segmented n={n}")
    k = 97 if backend.name != "cuda" else 1031
    square = random_array(rng, "int32", (k, k), "add")
    x = backend.asarray(square)
    assert ps.scan(x, axis=1, out=x.T, backend=backend.backend) is not None
    np.testing.assert_array_equal(backend.to_numpy(x), reference_scan(square, "add", axis=1).T)


def test_planned_calls_with_out_overlapping_x_are_read_first(backend, rng):
    """A plan made on disjoint arrays, then calls of the same signature whose out overlaps
    x (shifted by 16 bytes, so that an aligned replay would take them) or is x: each result
    as if x had been copied first (the replays decline them, the full path copies x)."""
    for n in sizes(backend):
        s = ps.make_scan(backend=backend.backend)
        base = random_array(rng, "int64", n + 2, "add")
        for shift in (0, 2, -2, 0):
            buffer = backend.asarray(base)
            if shift == 0:  # a fresh out: the plan's own case
                x, out = buffer[:n], backend.asarray(poisoned(n, "int64"))
                expected_x = base[:n]
            elif shift > 0:
                x, out = buffer[:n], buffer[shift:n + shift]
                expected_x = base[:n]
            else:
                x, out = buffer[-shift:n - shift], buffer[:n]
                expected_x = base[-shift:n - shift]
            assert s(x, out=out) is out
            np.testing.assert_array_equal(backend.to_numpy(out), np.cumsum(expected_x), err_msg=f"n={n} shift={shift}")
        x = backend.asarray(base[:n])
        for _ in range(3):  # in place, planned
            expected = np.cumsum(backend.to_numpy(x))
            assert s(x, out=x) is x
            np.testing.assert_array_equal(backend.to_numpy(x), expected, err_msg=f"in place n={n}")


def test_out_reversed_view_of_x():
    for n in (100, 20000):
        a = np.random.default_rng(n).integers(-9, 9, n)
        expected = np.cumsum(a[::-1])
        ps.scan(a[::-1], out=a)
        np.testing.assert_array_equal(a, expected)


def test_in_place_still_works(backend, rng):
    for n in sizes(backend):
        x = random_array(rng, "float32", n, "add")
        xb = backend.asarray(x)
        assert ps.scan(xb, out=xb, backend=backend.backend) is xb
        assert_scan_equal(backend.to_numpy(xb), reference_scan(x, "add"))
        x = random_array(rng, "int32", n, "add")  # in place with a cast: int64 sums wrapped into x
        xb = backend.asarray(x)
        assert ps.cumsum(xb, out=xb, backend=backend.backend) is xb
        np.testing.assert_array_equal(backend.to_numpy(xb), np.cumsum(x, out=x.copy()))


def test_struct_out_fields_sharing_memory_refused(rng):
    a, b = rng.integers(-3, 4, 50), rng.integers(-9, 10, 50)
    shared = poisoned(50, "int64")
    with pytest.raises(ValueError, match="out"):
        ps.scan((a, b), ps.AFFINE, out=(shared, shared))
    np.testing.assert_array_equal(shared, poisoned(50, "int64"))
    # An out field that is another field's input: that input is read from a copy.
    a0, b0 = a.copy(), b.copy()
    out_b = np.empty(50, np.int64)
    ps.scan((a, b), ps.AFFINE, out=(b, out_b))
    expected = reference_scan((a0, b0), ps.AFFINE)
    np.testing.assert_array_equal(b, expected[0])
    np.testing.assert_array_equal(out_b, expected[1])


# ---------------------------------------------------------------------------
# Outs refused before any work.

def _stride_zero_numpy(n: int) -> np.ndarray:
    return np.lib.stride_tricks.as_strided(np.zeros(1), shape=(n,), strides=(0,), writeable=True)


def test_numpy_out_with_internal_overlap_refused():
    x = np.arange(10.0)
    for out in (np.broadcast_to(np.zeros(1), (10,)), _stride_zero_numpy(10)):
        for fn in (ps.scan, ps.cumsum, ps.cummax):
            with pytest.raises(ValueError, match="out"):
                fn(x, out=out)
            assert not out.any()
    with pytest.raises(ValueError, match="out"):
        ps.segmented_scan(x, offsets=[0, 4], out=_stride_zero_numpy(10))
    # Rows that overlap: element (i, 1) is element (i + 1, 0).
    memory = np.zeros(12)
    rows = np.lib.stride_tricks.as_strided(memory, shape=(5, 2), strides=(8, 8), writeable=True)
    with pytest.raises(ValueError, match="out"):
        ps.scan(x.reshape(5, 2), axis=1, out=rows)
    assert not memory.any()


@pytest.mark.skipif(not HAS_TORCH, reason="needs torch")
def test_torch_out_with_internal_overlap_refused(backend):
    import torch

    device = backend.device or "cpu"
    x = torch.arange(40, dtype=torch.float32, device=device)
    for fn in (ps.scan, ps.cumsum, ps.cummin):
        good = torch.zeros(40, device=device)
        fn(x, out=good, backend=backend.backend)  # plans this signature first
        base = torch.zeros(1, device=device)
        with pytest.raises(ValueError, match="out") as excinfo:
            fn(x, out=base.expand(40), backend=backend.backend)
        assert "overlap" in str(excinfo.value)
        assert float(base[0]) == 0.0
    needs_grad = torch.zeros(40, device=device, requires_grad=True)
    with pytest.raises(ValueError, match="out"):
        ps.scan(x, out=needs_grad, backend=backend.backend)
    assert not needs_grad.detach().any()


@pytest.mark.skipif(not HAS_TORCH, reason="needs torch")
def test_torch_compile_path_checks_out():
    """The custom-operator path (torch.compile's) keeps the same out rules."""
    import torch

    from prefixscan.primitives.scan import tensors as scans

    x = torch.arange(1, 7, dtype=torch.int32)
    out = torch.zeros(6, dtype=torch.float64)
    assert scans.scan(x, out=out) is out
    np.testing.assert_array_equal(out.numpy(), np.cumsum(np.arange(1, 7)))
    with pytest.raises(TypeError, match="out"):
        scans.scan(x.double(), out=torch.zeros(6, dtype=torch.int64))
    with pytest.raises(ValueError, match="out"):
        scans.scan(x, out=torch.zeros(1, dtype=torch.int32).expand(6))
