"""float16 cumsum / cumprod on the CPU: NumPy's results, bit for bit, on every path.

``cumsum``/``cumprod`` accumulate float16 in float16 as NumPy does: each step adds
(multiplies) in float32 and rounds to float16, in index order.  Below 8192 elements
the NumPy path runs NumPy's own accumulate; from 8192 the compiled kernels must run
the same chain (their grouped and threaded kernels re-associate, which rounds
differently), so the results match bit for bit on both sides of the threshold, and
appending an element never changes the outputs before it.
"""

from __future__ import annotations

import numpy as np
import pytest

import prefixscan as ps

SIZES = [97, 8191, 8192, 8193, 20011, (1 << 17) + 3]


def bits(a) -> np.ndarray:
    a = np.asarray(a)
    assert a.dtype == np.float16, a.dtype
    return a.view(np.uint16)


def assert_bitwise(got, expected, what: str) -> None:
    g, e = bits(got), bits(expected)
    assert g.shape == e.shape, what
    wrong = np.flatnonzero(g.reshape(-1) != e.reshape(-1))
    assert not wrong.size, (f"{what}: {wrong.size} outputs differ from NumPy's, first at {wrong[0]}: "
                            f"{np.asarray(got).reshape(-1)[wrong[0]]} != {np.asarray(expected).reshape(-1)[wrong[0]]}")


def sum_data(rng, shape) -> np.ndarray:
    return rng.standard_normal(shape).astype(np.float16)


def product_data(rng, shape) -> np.ndarray:
    """Factors near 1, so that long products stay in float16's range and keep rounding."""
    return (1 + rng.standard_normal(shape) / 500).astype(np.float16)


def test_cumprod_of_the_constant_factor():
    x = np.full(8192, np.float16(1.001))
    assert_bitwise(ps.cumprod(x), np.cumprod(x), "cumprod of 8192 x 1.001")
    assert ps.cumprod(x)[-1] == np.cumprod(x)[-1] == 1536


@pytest.mark.parametrize("n", SIZES)
def test_float16_cumsum_cumprod_equal_numpy(rng, n):
    x = sum_data(rng, n)
    assert_bitwise(ps.cumsum(x), np.cumsum(x), f"cumsum n={n}")
    assert_bitwise(ps.scan(x, dtype=np.float16), np.cumsum(x), f"scan dtype=float16 n={n}")
    p = product_data(rng, n)
    assert_bitwise(ps.cumprod(p), np.cumprod(p), f"cumprod n={n}")
    out = np.full(n, np.nan, np.float16)
    assert ps.cumsum(x, out=out) is out
    assert_bitwise(out, np.cumsum(x), f"cumsum out= n={n}")


@pytest.mark.parametrize("n", [97, 8193, 20011])
def test_float16_flavours_equal_numpy(rng, n):
    """Exclusive, reverse, seeded, order 2, tuples: each the same chain as NumPy's."""
    x = sum_data(rng, n)
    zero = np.array([-0.0], np.float16)  # an exclusive sum starts with the identity, -0.0 (docs/semantics.md)
    assert_bitwise(ps.cumsum(x, exclusive=True), np.concatenate([zero, np.cumsum(x)[:-1]]), "exclusive")
    assert_bitwise(ps.cumsum(x, reverse=True), np.cumsum(x[::-1])[::-1], "reverse")
    assert_bitwise(ps.cumsum(x, exclusive=True, reverse=True),
                   np.concatenate([np.cumsum(x[::-1])[:-1][::-1], zero]), "exclusive reverse")
    seed = np.float16(3.25)
    assert_bitwise(ps.scan(x, init=seed, dtype=np.float16), np.cumsum(np.concatenate([[seed], x]))[1:], "init")
    with np.errstate(over="ignore"):  # the second sums leave float16's range at the end
        assert_bitwise(ps.scan(x, order=2, dtype=np.float16), np.cumsum(np.cumsum(x)), "order 2")
    m = n - n % 2
    assert_bitwise(ps.scan(x[:m], tuple_size=2, dtype=np.float16),
                   np.cumsum(x[:m].reshape(-1, 2), axis=0).reshape(-1), "tuple_size 2")
    p = product_data(rng, n)
    assert_bitwise(ps.cumprod(p, reverse=True), np.cumprod(p[::-1])[::-1], "cumprod reverse")


@pytest.mark.parametrize("shape", [(300, 100), (100, 300), (3, 9001)])
def test_float16_axes_equal_numpy(rng, shape):
    x = sum_data(rng, shape)
    for axis in (None, 0, 1):
        assert_bitwise(ps.cumsum(x, axis=axis), np.cumsum(x, axis=axis), f"cumsum {shape} axis={axis}")
    p = product_data(rng, shape)
    assert_bitwise(ps.cumprod(p, axis=1), np.cumprod(p, axis=1), f"cumprod {shape} axis=1")


def test_appending_leaves_earlier_outputs_unchanged(rng):
    """The prefix property, across the compiled path's threshold."""
    x = sum_data(rng, 20011)
    p = product_data(rng, 20011)
    full_sum, full_product = bits(ps.cumsum(x)), bits(ps.cumprod(p))
    for m in (1, 97, 8191, 8192, 8193, 16384, 20010):
        np.testing.assert_array_equal(bits(ps.cumsum(x[:m])), full_sum[:m], err_msg=f"cumsum of the first {m}")
        np.testing.assert_array_equal(bits(ps.cumprod(p[:m])), full_product[:m], err_msg=f"cumprod of the first {m}")
