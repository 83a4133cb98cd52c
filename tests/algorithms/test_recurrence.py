"""linear_recurrence (primitives/recurrence/) against the plain-loop reference of
prefixscan.testing.
"""

from __future__ import annotations

import numpy as np
import pytest

import prefixscan as ps
from prefixscan.primitives.recurrence.affine import AFFINE_BACKWARD
from prefixscan.primitives.recurrence.in_memory import linear_recurrence_total
from prefixscan.testing import assert_scan_equal, reference_linear_recurrence


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


def test_scan_of_affine_maps_is_the_recurrence(backend, rng):
    """``scan`` with the affine monoid (forwards) or its mirror (backwards) along any
    axis computes what linear_recurrence does, on every backend."""
    a = (0.5 + 0.5 * rng.random((3, 70, 4))).astype(np.float32)
    b = rng.standard_normal((3, 70, 4)).astype(np.float32)
    for axis, reverse in ((1, False), (1, True), (-1, False), (0, True)):
        monoid = AFFINE_BACKWARD if reverse else ps.AFFINE
        coef, got = ps.scan(backend.asarray((a, b)), monoid, axis=axis, reverse=reverse, backend=backend.backend)
        expected = reference_linear_recurrence(a, b, axis=axis, reverse=reverse)
        np.testing.assert_allclose(backend.to_numpy(got), expected, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("dtype", ["float32", "complex128"])
@pytest.mark.parametrize("reverse", [False, True], ids=["fwd", "rev"])
@pytest.mark.parametrize("layout", ["BCT", "TC"])
def test_linear_recurrence_broadcast_decay_every_backend(backend, rng, layout, reverse, dtype):
    """A decay broadcast over batch and time (read in place: one call per batch index on
    the compiled CPU loop, zero strides in the Triton kernel) with a per-lane init; the
    CPU case is large enough for the compiled loop (>= 8192 elements)."""
    if dtype.startswith("complex") and backend.name != "cpu":
        pytest.skip("complex host arrays: the CPU backend")
    steps = 3001 if backend.name == "cpu" else 21
    if layout == "BCT":
        shape, a_shape, axis = (2, 3, steps), (3, 1), 2
    else:
        shape, a_shape, axis = (steps, 5), (1, 5), 0
    a = rng.uniform(0.5, 0.95, size=a_shape).astype(dtype)
    b = rng.normal(size=shape).astype(dtype)
    if dtype.startswith("complex"):
        a = (a * np.exp(1j * rng.uniform(-1, 1, size=a_shape))).astype(dtype)
        b = (b + 1j * rng.normal(size=shape)).astype(dtype)
    init = rng.normal(size=shape[:axis] + shape[axis + 1:]).astype(dtype)
    got = ps.linear_recurrence(backend.asarray(a), backend.asarray(b), init=backend.asarray(init), axis=axis,
                               reverse=reverse, backend=backend.backend)
    expected = reference_linear_recurrence(np.broadcast_to(a, shape), b, init=init, axis=axis, reverse=reverse)
    _lr_check(backend.to_numpy(got), expected, "float32" if dtype == "float32" else "float64")


@pytest.mark.parametrize("dtype", ["float32", "float64", "complex128"])
@pytest.mark.parametrize("reverse", [False, True], ids=["fwd", "rev"])
@pytest.mark.parametrize("case", ["lanes", "rows", "broadcast", "middle", "empty"])
def test_linear_recurrence_total_every_backend(backend, rng, case, reverse, dtype):
    """Each lane's map (product of a, last state from zero) of the reduce step of a
    recurrence held in pieces: the compiled one-read loop on the CPU (sizes >= 8192
    elements), a product and the recurrence elsewhere; against the plain-loop reference."""
    if dtype.startswith("complex") and backend.name != "cpu":
        pytest.skip("complex host arrays: the CPU backend")
    steps = 3001 if backend.name == "cpu" else 21
    shape, a_shape, axis = {"lanes": ((3, steps), (3, steps), 1), "rows": ((steps, 5), (steps, 5), 0),
                            "broadcast": ((2, 3, steps), (3, 1), 2), "middle": ((2, steps, 3), (2, steps, 3), -2),
                            "empty": ((4, 0), (4, 0), 1)}[case]
    a = rng.uniform(0.998, 1.001, size=a_shape).astype(dtype)  # products of thousands of steps stay near 1
    b = rng.normal(size=shape).astype(dtype)
    if dtype.startswith("complex"):
        a = (a * np.exp(0.01j * rng.uniform(-1, 1, size=a_shape))).astype(dtype)
        b = (b + 1j * rng.normal(size=shape)).astype(dtype)
    product, state = linear_recurrence_total(backend.asarray(a), backend.asarray(b), axis=axis, reverse=reverse,
                                             backend=backend.backend)
    full = np.broadcast_to(a, shape).astype(np.complex128 if dtype.startswith("complex") else np.float64)
    ax = axis % len(shape)
    lanes = shape[:ax] + shape[ax + 1:]
    h = reference_linear_recurrence(full, b.astype(full.dtype), axis=ax, reverse=reverse)
    expected_state = np.take(h, 0 if reverse else shape[ax] - 1, axis=ax) if shape[ax] else np.zeros(lanes)
    product, state = backend.to_numpy(product), backend.to_numpy(state)
    assert product.shape == state.shape == lanes
    np.testing.assert_allclose(product, np.prod(full, axis=ax), rtol=1e-4 if dtype == "float32" else 1e-10)
    assert state.dtype == np.dtype(dtype)
    # a near 1: the state is a random walk of thousands of float32 steps, summed in another order
    mag = float(np.max(np.abs(expected_state))) if expected_state.size else 1.0
    assert_scan_equal(state, expected_state.astype(dtype), mag=mag, rtol=1e-4 if dtype == "float32" else 1e-12)


@pytest.mark.parametrize("axis,error", [(1.0, TypeError), (True, TypeError), ("1", TypeError),
                                        (np.uint64(2**63), ValueError), (2, ValueError), (-3, ValueError)])
def test_axis_is_an_index_on_every_array_type(backend, axis, error):
    """``axis`` is checked as an integer index in range, for host arrays and tensors
    alike, before any work: a float or a bool is not an axis."""
    a = backend.asarray(np.full((3, 4), 0.5))
    with pytest.raises(error, match=r"\baxis\b"):
        ps.linear_recurrence(a, a, axis=axis, backend=backend.backend)
    got = ps.linear_recurrence(a, a, axis=np.int64(-1), backend=backend.backend)
    np.testing.assert_allclose(backend.to_numpy(got), reference_linear_recurrence(np.full((3, 4), 0.5),
                                                                                  np.full((3, 4), 0.5)))
