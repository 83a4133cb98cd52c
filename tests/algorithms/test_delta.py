"""delta_encode / delta_decode (primitives/delta/) against the plain-loop reference
of prefixscan.testing, on every backend present (the ``backend`` fixture of
tests/conftest.py).
"""

from __future__ import annotations

import numpy as np
import pytest

import prefixscan as ps
from prefixscan.testing import (
    INTEGER_DTYPES,
    assert_scan_equal,
    random_array,
    reference_delta_decode,
    reference_delta_encode,
)

ORDERS = list(range(1, 9))
TUPLE_SIZES = [1, 2, 3, 4, 5, 8, 16, 32]


def _interpreted(backend) -> bool:
    """Triton's interpreter takes about 0.1 s a launch: interpreted tests run fewer cases."""
    return backend.name == "triton-interpreter"


@pytest.mark.parametrize("q", ORDERS, ids=lambda q: f"q{q}")
@pytest.mark.parametrize("dtype", INTEGER_DTYPES)
def test_delta_round_trip(backend, rng, dtype, q):
    if _interpreted(backend) and (q not in (1, 3, 8) or dtype not in ("int8", "uint16", "int32", "uint64")):
        pytest.skip("interpreted: orders 1, 3 and 8 of one dtype of each size")
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
        if s != 1:
            continue
        # Keyword spelling.
        assert_scan_equal(ps.delta_decode(ps.delta_encode(xb, order=q, tuple_size=s, **on), order=q, tuple_size=s,
                                          **on), x)


@pytest.mark.parametrize("axis", [-1, 0, 1])
@pytest.mark.parametrize("dtype", ["int8", "uint16", "int32", "uint32", "uint64"])
def test_delta_axis(backend, rng, dtype, axis):
    """Along every axis, unsigned 16- and 32-bit included (torch has no subtraction for
    them on CUDA: the encoder works on the signed view, which wraps to the same bits).
    Without ``backend=`` the array type picks the backend, with the same results."""
    x = random_array(rng, dtype, (12, 24), "add")
    xb = backend.asarray(x)
    for q, s in [(1, 1), (2, 3), (4, 4), (8, 2)]:
        enc = ps.delta_encode(xb, q, s, axis=axis, backend=backend.backend)
        assert type(enc) is type(xb)
        assert_scan_equal(enc, reference_delta_encode(x, q, s, axis=axis))
        assert_scan_equal(ps.delta_decode(enc, q, s, axis=axis, backend=backend.backend), x)
    enc = ps.delta_encode(xb, 3, 4, axis=axis)
    assert type(enc) is type(xb) and getattr(enc, "device", None) == getattr(xb, "device", None)
    assert_scan_equal(enc, reference_delta_encode(x, 3, 4, axis=axis))
    assert_scan_equal(ps.delta_decode(enc, 3, 4, axis=axis), x)
    np.testing.assert_array_equal(backend.to_numpy(xb), x)


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


DELTA_CASES = [("int32", 1, 1), ("int32", 3, 5), ("int64", 8, 2), ("uint8", 2, 3), ("int16", 5, 32),
               ("float32", 2, 1), ("float64", 4, 7), ("uint32", 8, 1)]


@pytest.mark.parametrize("dtype,order,tuple_size", DELTA_CASES, ids=[f"{d}-q{q}-s{s}" for d, q, s in DELTA_CASES])
def test_delta_several_blocks(backend, rng, dtype, order, tuple_size):
    """Lanes of several kernel blocks (an odd number of tuples).  Integers: encode against
    the plain-loop reference, wrap-around included, and decode back exactly.  Floats:
    the Triton kernel does the passes' own float subtractions, so it is bitwise equal
    to the CPU backend's pass-by-pass differences; those are within the passes'
    rounding of the reference, which rounds once."""
    n = tuple_size * (200_003 if backend.name == "cuda" else 41)
    x = random_array(rng, dtype, n, "add", exact=False)
    enc = ps.delta_encode(backend.asarray(x), order, tuple_size, backend=backend.backend)
    if np.dtype(dtype).kind in "iu":
        # the plain loops would take minutes at a GPU's sizes: the CPU backend, checked above
        expected = (ps.delta_encode(x, order, tuple_size, backend="cpu") if backend.name == "cuda"
                    else reference_delta_encode(x, order, tuple_size))
        assert_scan_equal(enc, expected)
        assert_scan_equal(ps.delta_decode(enc, order, tuple_size, backend=backend.backend), x)
    elif backend.is_triton:
        np.testing.assert_array_equal(backend.to_numpy(enc), ps.delta_encode(x, order, tuple_size, backend="cpu"))
    else:
        # |x| < 1: pass k subtracts values below 2^k, each rounding by at most half an ulp there
        atol = order * 2.0 ** order * np.finfo(dtype).eps
        np.testing.assert_allclose(enc, reference_delta_encode(x, order, tuple_size), rtol=0, atol=atol)


@pytest.mark.parametrize("order", [9, 17, 30])
@pytest.mark.parametrize("axis", [0, 1])
def test_compiled_high_orders_use_two_buffers(rng, order, axis):
    """Orders above the compiled pass's 8 run as passes into two buffers taking turns, not
    a copy of the array per pass: the peak of new memory is the result and one scratch
    buffer (three or four arrays when each pass copied its input), and the results
    are the reference's."""
    import tracemalloc

    from prefixscan.backends.cpu import compiled

    if not compiled.available():
        pytest.skip("the compiled CPU backend needs Numba")
    x = random_array(rng, "int64", (8, 4096), "add")
    # The plain loops are slow: the first 64 columns (each element depends on those before it only).
    expected = reference_delta_encode(x[:, :64], order, 2, axis=axis)
    ps.delta_encode(x, order, 2, axis=axis, backend="cpu")  # compiled once, outside the measure
    tracemalloc.start()
    try:
        got = ps.delta_encode(x, order, 2, axis=axis, backend="cpu")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 2.5 * x.nbytes, f"peak {peak / x.nbytes:.2f} arrays of x's size"
    np.testing.assert_array_equal(got[:, :64], expected)
