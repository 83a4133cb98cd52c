"""Sums keep the sign of zero as NumPy's ``cumsum`` does, on every backend present.

The identity of IEEE addition is -0.0 (``-0.0 + x`` is ``x`` for every ``x``, -0.0
included, where ``0.0 + -0.0`` is ``0.0``), and it is the add monoid's identity for
floats and complex numbers: kernels that pad tiles, seed lanes or shift in the
identity then leave a sum of negative zeros negative.  An exclusive float sum
without ``init`` starts with that identity, -0.0 (docs/semantics.md).  Checked bit
for bit (``==`` cannot tell the zeros apart) against NumPy's ``cumsum`` for the
inclusive scans and against the plain-loop reference.
"""

from __future__ import annotations

import numpy as np
import pytest

import prefixscan as ps
from prefixscan.testing import reference_scan

FLOATS = ["float16", "float32", "float64", "complex64", "complex128"]
CASES = [dict(), dict(inclusive=False), dict(reverse=True), dict(inclusive=False, reverse=True)]


def _negative_zeros(dtype: str, shape) -> np.ndarray:
    x = np.zeros(shape, dtype)
    x[...] = complex(-0.0, -0.0) if np.dtype(dtype).kind == "c" else -0.0
    return x


def _sign_bits(a: np.ndarray) -> np.ndarray:
    """Each element's sign bits (real and imaginary parts apart)."""
    a = np.ascontiguousarray(a)
    return np.signbit(a.view(a.real.dtype) if a.dtype.kind == "c" else a)


def _lengths(backend) -> list[int]:
    """Two elements, and lengths over several tiles (32 in the interpreter, thousands
    on a GPU) and past the compiled CPU kernels' threshold of 8192."""
    return [1, 2, 97] + ([9000] if backend.name == "cpu" else [70_001] if backend.name == "cuda" else [])


@pytest.mark.parametrize("dtype", FLOATS)
def test_sums_of_negative_zeros_stay_negative(backend, dtype):
    if backend.is_triton and dtype.startswith("complex"):
        pytest.skip("the Triton backend has no complex types")
    for n in _lengths(backend):
        x = _negative_zeros(dtype, n)
        for kw in CASES:
            got = backend.to_numpy(ps.scan(backend.asarray(x), "add", backend=backend.backend, **kw))
            assert got.dtype == x.dtype
            assert _sign_bits(got).all(), f"n={n} {kw}: {got[:4]}"
            if kw.get("inclusive", True):
                expected = np.flip(np.cumsum(np.flip(x))) if kw.get("reverse") else np.cumsum(x)
                np.testing.assert_array_equal(_sign_bits(got), _sign_bits(expected))
        got = backend.to_numpy(ps.cumsum(backend.asarray(x), backend=backend.backend))
        np.testing.assert_array_equal(_sign_bits(got), _sign_bits(np.cumsum(x)))


def test_signs_follow_numpy_and_the_reference(backend, rng):
    """Mixed zeros and values: each output's sign as NumPy's cumsum (inclusive) and the
    plain loop (every flavour) give it; ``init=0.0`` seeds with +0.0."""
    n = 97
    x = rng.choice(np.array([-0.0, 0.0, -1.5, 1.5]), n)
    x[:5] = -0.0
    x[50:60] = -0.0
    for kw in CASES:
        got = backend.to_numpy(ps.scan(backend.asarray(x), "add", backend=backend.backend, **kw))
        expected = reference_scan(x, "add", **kw)
        np.testing.assert_array_equal(got, expected)
        np.testing.assert_array_equal(_sign_bits(got), _sign_bits(expected), err_msg=str(kw))
    np.testing.assert_array_equal(_sign_bits(backend.to_numpy(ps.cumsum(backend.asarray(x), backend=backend.backend))),
                                  _sign_bits(np.cumsum(x)))
    seeded = backend.to_numpy(ps.scan(backend.asarray(_negative_zeros("float64", 3)), "add", init=0.0,
                                      inclusive=False, backend=backend.backend))
    assert not _sign_bits(seeded).any()  # 0.0 + -0.0 is 0.0


def test_exclusive_sum_starts_with_negative_zero(backend):
    """No NumPy function scans exclusively: the first element is the identity, -0.0,
    which equals 0.0; ``init=0.0`` gives +0.0.  Integer sums start with 0."""
    x = np.array([1.5, 2.0, -3.0])
    got = backend.to_numpy(ps.cumsum(backend.asarray(x), exclusive=True, backend=backend.backend))
    np.testing.assert_array_equal(got, [0.0, 1.5, 3.5])
    assert np.signbit(got[0])
    got = backend.to_numpy(ps.scan(backend.asarray(x), "add", inclusive=False, init=0.0, backend=backend.backend))
    assert not np.signbit(got[0])
    got = backend.to_numpy(ps.cumsum(backend.asarray(x), exclusive=True, reverse=True, backend=backend.backend))
    np.testing.assert_array_equal(got, [-1.0, -3.0, 0.0])
    assert np.signbit(got[-1])


def test_kernel_layouts_keep_negative_zeros(backend):
    """The 2-D and column layouts, tuple sizes, orders, segments and struct monoids."""
    on = dict(backend=backend.backend)
    x2 = _negative_zeros("float32", (40, 3))
    for kw in (dict(axis=0), dict(axis=1), dict(axis=0, inclusive=False), dict(axis=0, reverse=True)):
        assert _sign_bits(backend.to_numpy(ps.scan(backend.asarray(x2), "add", **kw, **on))).all(), kw
    x = _negative_zeros("float64", 66)
    for kw in (dict(tuple_size=3), dict(order=2), dict(order=3, inclusive=False), dict(tuple_size=2, order=2)):
        assert _sign_bits(backend.to_numpy(ps.scan(backend.asarray(x), "add", **kw, **on))).all(), kw
    offsets = np.array([0, 5, 40])
    for kw in (dict(), dict(inclusive=False), dict(reverse=True, inclusive=False)):
        got = backend.to_numpy(ps.segmented_scan(backend.asarray(x), offsets=backend.asarray(offsets), **kw, **on))
        assert _sign_bits(got).all(), kw
    fields = (_negative_zeros("float32", 70), _negative_zeros("float64", 70))
    pair = ps.Monoid(_add_pair, (-0.0, -0.0), name="add_pair", commutative=True)
    for kw in (dict(), dict(inclusive=False)):
        got = ps.scan(tuple(backend.asarray(f) for f in fields), pair, **kw, **on)
        assert all(_sign_bits(backend.to_numpy(g)).all() for g in got), kw


def _add_pair(a, b):
    return a[0] + b[0], a[1] + b[1]


def test_every_gpu_strategy_keeps_negative_zeros(backend):
    if not backend.is_triton:
        pytest.skip("strategies are the Triton backend's")
    from prefixscan.backends.triton.planning.registry import STRATEGY_NAMES

    n = 97 if backend.name == "triton-interpreter" else 1_000_003
    x = backend.asarray(_negative_zeros("float32", n))
    x2 = backend.asarray(_negative_zeros("float32", (n // 3, 3)))
    for strategy in STRATEGY_NAMES:
        for kw in CASES:
            got = ps.scan(x, "add", strategy=strategy, backend="triton", **kw)
            assert _sign_bits(backend.to_numpy(got)).all(), (strategy, kw)
        got = ps.scan(x2, "add", axis=0, strategy=strategy, backend="triton")
        assert _sign_bits(backend.to_numpy(got)).all(), (strategy, "axis 0")
