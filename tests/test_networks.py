"""The CPU scan networks (networks.py): serial, Kogge-Stone, Sklansky, Brent-Kung and
reduce-then-scan through ``scan(..., backend="cpu", algorithm=...)`` against the
plain-loop reference of prefixscan.testing, with commutative and non-commutative
monoids; ``networks.describe``'s sizes and depths against the textbook bounds.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import prefixscan as ps
from prefixscan import networks
from prefixscan import where as ps_where
from prefixscan.testing import (
    affine_data,
    affine_monoid,
    assert_scan_equal,
    matmul2_data,
    matmul2_monoid,
    random_array,
    reference_scan,
)

NETWORK_NAMES = ["serial", "kogge_stone", "sklansky", "brent_kung", "reduce_then_scan"]


def first_nonzero(x, y):
    """Keeps the earliest non-zero value (non-commutative, idempotent)."""
    return ps_where(x != 0, x, y)


def first_nonzero_py(x, y):
    return x if x != 0 else y


NET_SIZES = [0, 1, 2, 3, 4, 5, 7, 8, 9, 16, 31, 33, 64, 100, 257, 1000, 1024, 1025]


@pytest.mark.parametrize("n", NET_SIZES, ids=lambda n: f"n{n}")
@pytest.mark.parametrize("name", NETWORK_NAMES)
def test_networks_builtin(rng, name, n):
    x = random_array(rng, "int64", n, "add")
    got = ps.scan(x, "add", backend="cpu", algorithm=name)
    assert_scan_equal(got, reference_scan(x, "add"))
    x = random_array(rng, "float32", n, "max")
    got = ps.scan(x, "max", backend="cpu", algorithm=name, inclusive=False, reverse=True)
    assert_scan_equal(got, reference_scan(x, "max", inclusive=False, reverse=True))


@pytest.mark.parametrize("n", NET_SIZES, ids=lambda n: f"n{n}")
@pytest.mark.parametrize("name", NETWORK_NAMES)
def test_networks_affine(rng, name, n):
    a, b = affine_data(rng, n, "int64")
    m = affine_monoid()
    for kw in [dict(), dict(reverse=True), dict(inclusive=False), dict(inclusive=False, reverse=True),
               dict(init=(np.int64(2), np.int64(-3))), dict(init=(np.int64(-1), np.int64(5)), reverse=True)]:
        expected = reference_scan((a, b), affine_monoid(), **kw)
        got = ps.scan((a, b), m, backend="cpu", algorithm=name, **kw)
        assert isinstance(got, tuple) and len(got) == 2
        for g, e in zip(got, expected):
            assert_scan_equal(g, e, err_msg=f"{name} {kw}")


@pytest.mark.parametrize("n", [0, 1, 2, 3, 5, 8, 13, 64, 127, 300], ids=lambda n: f"n{n}")
@pytest.mark.parametrize("name", NETWORK_NAMES)
def test_networks_matmul2(rng, name, n):
    fields = matmul2_data(rng, n, "int64")
    m = matmul2_monoid()
    for kw in [dict(), dict(reverse=True), dict(inclusive=False, reverse=True)]:
        expected = reference_scan(fields, matmul2_monoid(), **kw)
        got = ps.scan(fields, m, backend="cpu", algorithm=name, **kw)
        assert len(got) == 4
        for g, e in zip(got, expected):
            assert_scan_equal(g, e, err_msg=f"{name} {kw}")


@pytest.mark.parametrize("name", NETWORK_NAMES)
def test_networks_first_nonzero_2d_tuple_order(rng, name):
    m = ps.Monoid(first_nonzero, 0, name="first_nonzero")
    x = rng.integers(-2, 3, size=(5, 48)).astype(np.int32)
    x[x < 0] = 0
    for kw in [dict(axis=1), dict(axis=0, reverse=True), dict(axis=1, tuple_size=4, inclusive=False),
               dict(axis=-1, tuple_size=3, order=3, reverse=True), dict(axis=None, tuple_size=8, order=2)]:
        expected = reference_scan(x, first_nonzero_py, identity=0, **kw)
        got = ps.scan(x, m, backend="cpu", algorithm=name, **kw)
        assert_scan_equal(got, expected, err_msg=f"{name} {kw}")


@pytest.mark.parametrize("name", NETWORK_NAMES)
def test_networks_affine_float_axis(rng, name):
    a, b = affine_data(rng, (6, 200), "float64")
    m = affine_monoid()
    init = (np.ones(6), rng.normal(size=6))
    for kw in [dict(axis=1), dict(axis=1, reverse=True, init=init), dict(axis=0, inclusive=False)]:
        expected = reference_scan((a, b), affine_monoid(), **kw)
        got = ps.scan((a, b), m, backend="cpu", algorithm=name, **kw)
        for g, e in zip(got, expected):
            assert_scan_equal(g, e, n=200, rtol=1e-10, err_msg=f"{name} {kw}")


@pytest.mark.parametrize("name", NETWORK_NAMES + ["auto", None])
def test_networks_agree_with_default(rng, name):
    x = random_array(rng, "uint16", (3, 257), "mul")
    got = ps.scan(x, "mul", axis=1, backend="cpu", algorithm=name)
    assert_scan_equal(got, ps.scan(x, "mul", axis=1))
    assert_scan_equal(got, reference_scan(x, "mul", axis=1))


# networks.describe ----------------------------------------------------------


def _L(n):
    return math.ceil(math.log2(n)) if n > 1 else 0


DESCRIBE_SIZES = [1, 2, 3, 4, 5, 6, 7, 8, 9, 15, 16, 17, 31, 32, 33, 100, 128, 255, 256, 1000, 1024, 1025, 4096]


@pytest.mark.parametrize("n", DESCRIBE_SIZES, ids=lambda n: f"n{n}")
def test_describe_textbook(n):
    L = _L(n)
    pow2 = n & (n - 1) == 0
    assert networks.describe("serial", n) == (n - 1, n - 1)
    assert networks.describe("kogge_stone", n) == (n * L - (2**L - 1), L)
    size, depth = networks.describe("sklansky", n)
    assert depth == L
    if pow2:
        assert size == (n // 2) * L
    else:
        assert n - 1 <= size <= math.ceil(n / 2) * L
    size, depth = networks.describe("brent_kung", n)
    if n == 1:
        assert (size, depth) == (0, 0)
    elif pow2:
        # Longest operator chain: 2L - 2 (the first down-sweep operator runs
        # beside the last up-sweep one); n = 2 has a single operator.
        assert (size, depth) == (2 * n - 2 - L, max(1, 2 * L - 2))
    else:
        assert n - 1 <= size <= 2 * n - 2
        assert L <= depth <= 2 * L - 1
    for name in NETWORK_NAMES:
        size, depth = networks.describe(name, n)
        # Any prefix circuit: size >= n-1, depth >= ceil(log2 n), and Snir's bound size + depth >= 2n - 2.
        assert size >= n - 1, name
        assert depth >= L, name
        assert size + depth >= 2 * n - 2, name
        assert depth <= size, name


@pytest.mark.parametrize("n", [1024, 1025, 4096, 10000])
def test_describe_reduce_then_scan(n):
    size, depth = networks.describe("reduce_then_scan", n)
    assert size >= n - 1
    assert depth < size
