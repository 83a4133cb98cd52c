"""linear_recurrence(log_space=True) (primitives/recurrence/): ``a`` holds log decays,
``h[t] = exp(a[t]) h[t-1] + b[t]``.

Against an independent reference: the plain loop of prefixscan.testing fed
``exp(a)`` in float64.  One test body per backend present (the ``backend``
fixture: NumPy on the CPU backend, CPU tensors in Triton's interpreter, CUDA
tensors); CPU sizes cross the compiled path's threshold (arrays of >= 8192
elements run the Numba loop, smaller ones the NumPy scan of the log-space affine
monoid).  Long spans whose products of decays underflow in linear space: a log
decay of -1000 per step gives h == b (not 0 * inf, not NaN), and a lane's total
keeps the sum of its log decays where the product of the decays is 0.
"""

from __future__ import annotations

import numpy as np
import pytest

import prefixscan as ps
from prefixscan.primitives.recurrence.affine import LOG_AFFINE, LOG_AFFINE_BACKWARD
from prefixscan.primitives.recurrence.in_memory import linear_recurrence_total
from prefixscan.testing import assert_scan_equal, reference_linear_recurrence


def _log_data(rng, shape, dtype="float64"):
    """Log decays from -3 to 0.2 (decays 0.05 to 1.22: some grow the state) and inputs."""
    return rng.uniform(-3.0, 0.2, size=shape).astype(dtype), rng.normal(size=shape).astype(dtype)


def _expected(la, b, **kwargs):
    """The plain loop fed exp(la), in float64."""
    la, b = np.asarray(la, np.float64), np.asarray(b, np.float64)
    return reference_linear_recurrence(np.exp(la), b, dtype=np.float64, **kwargs)


def _check(got, expected, dtype):
    rtol = {"float64": 1e-12, "float32": 2e-5}.get(np.dtype(dtype).name, 2e-2)
    mag = float(np.max(np.abs(expected))) if expected.size else 1.0
    assert_scan_equal(np.asarray(got, np.float64), expected, mag=mag, rtol=rtol)


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
@pytest.mark.parametrize("reverse", [False, True], ids=["fwd", "rev"])
@pytest.mark.parametrize("n", [0, 1, 7, 17, 8193])
def test_host_arrays(rng, n, reverse, dtype):
    """1-D host arrays on both CPU paths (8193 elements: the compiled loop), with and
    without init; float16 accumulates in float32 (rounded once: within a few of its
    ulps); the inputs are not written."""
    la, b = _log_data(rng, n, dtype)
    la0, b0 = la.copy(), b.copy()
    got = ps.linear_recurrence(la, b, reverse=reverse, log_space=True)
    assert got.dtype == np.dtype(dtype) and got.shape == (n,)
    _check(got, _expected(la, b, reverse=reverse), dtype)
    init = np.array(rng.normal(), dtype=dtype)[()]
    _check(ps.linear_recurrence(la, b, init=init, reverse=reverse, log_space=True),
           _expected(la, b, init=init, reverse=reverse), dtype)
    np.testing.assert_array_equal(la, la0)
    np.testing.assert_array_equal(b, b0)


def test_log_affine_monoid_composes_log_decays(rng):
    """The monoids themselves: scanning (la, b) gives the summed log decays and h."""
    la, b = _log_data(rng, 50)
    coef, h = ps.scan((la, b), LOG_AFFINE)
    np.testing.assert_allclose(coef, np.cumsum(la), rtol=1e-12)
    _check(h, _expected(la, b), "float64")
    coef, h = ps.scan((la, b), LOG_AFFINE_BACKWARD, reverse=True)
    np.testing.assert_allclose(coef, np.cumsum(la[::-1])[::-1], rtol=1e-12)
    _check(h, _expected(la, b, reverse=True), "float64")


def test_log_decay_of_minus_infinity_is_a_reset(rng):
    """exp(-inf) = 0: the state restarts from b there, on both CPU paths."""
    for n in (40, 9000):
        la, b = _log_data(rng, (2, n))
        la[:, [0, 5, n // 2]] = -np.inf
        for reverse in (False, True):
            got = ps.linear_recurrence(la, b, init=np.array([3.0, -2.0]), reverse=reverse, log_space=True)
            assert np.isfinite(got).all()
            _check(got, _expected(la, b, init=np.array([3.0, -2.0]), reverse=reverse), "float64")


@pytest.mark.parametrize("reverse", [False, True], ids=["fwd", "rev"])
@pytest.mark.parametrize("layout", ["BCT", "BTC"])
def test_every_backend(backend, rng, layout, reverse):
    """A per-channel log decay broadcast over batch and time (read in place), a per-lane
    init, both layouts; then packed sequences with one seed per sequence and their final
    states.  The CPU case is large enough for the compiled loop (>= 8192 elements)."""
    steps = 1601 if backend.name == "cpu" else 19
    if layout == "BCT":
        shape, a_shape, axis = (2, 3, steps), (3, 1), 2
    else:
        shape, a_shape, axis = (2, steps, 3), (1, 3), 1
    la = rng.uniform(-1.0, 0.05, size=a_shape).astype(np.float32)
    b = rng.normal(size=shape).astype(np.float32)
    lanes = shape[:axis] + shape[axis + 1:]
    init = rng.normal(size=lanes).astype(np.float32)
    got = ps.linear_recurrence(backend.asarray(la), backend.asarray(b), init=backend.asarray(init), axis=axis,
                               reverse=reverse, log_space=True, backend=backend.backend)
    _check(backend.to_numpy(got), _expected(np.broadcast_to(la, shape), b, init=init, axis=axis, reverse=reverse),
           "float32")
    # Packed sequences (an empty one included), each from its own seed; decays per step.
    la, b = _log_data(rng, shape, "float32")
    cuts = [0, 3, 3, steps // 2, steps]
    seeds = rng.normal(size=shape[:axis] + (len(cuts) - 1,) + shape[axis + 1:]).astype(np.float32)
    h, final = ps.linear_recurrence(backend.asarray(la), backend.asarray(b), init=backend.asarray(seeds), axis=axis,
                                    reverse=reverse, offsets=cuts, return_final=True, log_space=True,
                                    backend=backend.backend)
    pieces, finals = [], []
    for k, (s, e) in enumerate(zip(cuts[:-1], cuts[1:])):
        part = (slice(None),) * axis + (slice(s, e),)
        seed = np.take(seeds, k, axis=axis)
        piece = _expected(la[part], b[part], init=seed, axis=axis, reverse=reverse)
        pieces.append(piece)
        finals.append(np.take(piece, 0 if reverse else e - s - 1, axis=axis) if e > s else seed.astype(np.float64))
    _check(backend.to_numpy(h), np.concatenate(pieces, axis), "float32")
    _check(backend.to_numpy(final), np.stack(finals, axis), "float32")


def test_every_backend_long_span_underflow_is_exact(backend, rng):
    """A log decay of -1000 per step (exp underflows to 0 in every dtype) over spans
    longer than tiles, chunks and the compiled path's threshold: h is b exactly and no
    NaN, with or without init, forward and reverse."""
    shape = (3, 4001) if backend.name == "cpu" else (2, 37)
    for dtype in ("float32", "float64"):
        la = np.full(shape, -1000.0, dtype)
        b = rng.normal(size=shape).astype(dtype)
        for reverse in (False, True):
            got = backend.to_numpy(ps.linear_recurrence(backend.asarray(la), backend.asarray(b),
                                                        init=backend.asarray(np.full(shape[0], 5.0, dtype)),
                                                        reverse=reverse, log_space=True, backend=backend.backend))
            np.testing.assert_array_equal(got, b)


@pytest.mark.parametrize("case", ["lanes", "rows", "empty"])
def test_every_backend_totals_keep_the_sum_of_log_decays(backend, rng, case):
    """The reduce step of a recurrence held in pieces: each lane's total decay is the sum
    of its log decays, finite where the product of the decays underflows to 0 (a log
    decay of -100 per step), and its state is the recurrence's last step."""
    steps = 3001 if backend.name == "cpu" else 21
    shape, axis = {"lanes": ((3, steps), 1), "rows": ((steps, 5), 0), "empty": ((4, 0), 1)}[case]
    la = -100.0 + rng.uniform(-1, 1, size=shape)
    b = rng.normal(size=shape)
    for dtype in ("float32", "float64"):
        for reverse in (False, True):
            product, state = linear_recurrence_total(backend.asarray(la.astype(dtype)),
                                                     backend.asarray(b.astype(dtype)), axis=axis, reverse=reverse,
                                                     backend=backend.backend, log_space=True)
            product, state = backend.to_numpy(product), backend.to_numpy(state)
            np.testing.assert_allclose(product, la.astype(dtype).astype(np.float64).sum(axis),
                                       rtol=1e-5 if dtype == "float32" else 1e-12)
            assert np.isfinite(product).all()
            h = _expected(la.astype(dtype), b.astype(dtype), axis=axis, reverse=reverse)
            last = np.take(h, 0 if reverse else shape[axis] - 1, axis=axis) if shape[axis] else np.zeros(product.shape)
            np.testing.assert_allclose(state, last, rtol=1e-5 if dtype == "float32" else 1e-12, atol=1e-6)


@pytest.mark.parametrize("value", [1, 0, None, "yes", np.float64(1.0)])
def test_log_space_must_be_a_bool(value):
    """log_space is checked before any work, on every array type, naming itself."""
    torch = pytest.importorskip("torch")
    a = np.full((2, 5), -0.5)
    for x in (a, torch.from_numpy(a)):
        with pytest.raises(TypeError, match="log_space"):
            ps.linear_recurrence(x, x, log_space=value)


@pytest.mark.parametrize("dtype", ["int32", "complex128", "bool"])
def test_log_space_takes_real_floats_only(dtype):
    """Log decays are real floats: integers, complex numbers and bools are refused,
    naming log_space and the dtype, for host arrays and tensors alike."""
    a = np.ones((2, 5), dtype=dtype)
    with pytest.raises(TypeError, match="log_space.*" + dtype):
        ps.linear_recurrence(a, a, log_space=True)
    torch = pytest.importorskip("torch")
    with pytest.raises(TypeError, match="log_space.*" + dtype):
        ps.linear_recurrence(torch.from_numpy(a), torch.from_numpy(a), log_space=True)
    with pytest.raises(TypeError, match="log_space"):
        ps.linear_recurrence(torch.from_numpy(a), torch.from_numpy(a), log_space=True, offsets=[0, 2, 5])
