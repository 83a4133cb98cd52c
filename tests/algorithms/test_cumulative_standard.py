"""``cumulative_sum`` / ``cumulative_prod``, the array API standard's functions,
against ``numpy.cumulative_sum`` / ``numpy.cumulative_prod`` (NumPy >= 2.1) on
every backend present (NumPy arrays on the CPU, torch tensors in the interpreter
or on the GPU): values, dtypes, shapes, ``include_initial`` and the axis rules."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

import prefixscan as ps
from prefixscan.testing import random_array

HAS_TORCH = importlib.util.find_spec("torch") is not None
needs_numpy_standard = pytest.mark.skipif(not hasattr(np, "cumulative_sum"),
                                          reason="numpy.cumulative_sum needs NumPy >= 2.1")

FUNCTIONS = [("cumulative_sum", "add"), ("cumulative_prod", "mul")]
DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
          "float16", "float32", "float64", "complex128"]
#: Triton's interpreter takes about 0.1 s a launch: it runs one dtype of each size and kind.
INTERPRETED_DTYPES = ("bool", "int8", "uint16", "int64", "float16", "float32")
LAYOUTS = [((37,), None), ((37,), 0), ((37,), -1), ((), None), ((), 0), ((), -1), ((0,), None),
           ((5, 33), 1), ((33, 5), 0), ((4, 6, 9), -2), ((2, 0, 3), 1), ((3, 0), 0)]


def _data(rng, dtype, shape, op):
    if dtype == "bool":
        return rng.integers(0, 2, shape).astype(bool)
    if dtype.startswith(("float", "complex")):  # small integers: exact in every association order
        values = rng.integers(1, 3 if op == "mul" else 9, shape) * rng.choice([-1, 1], shape)
        return values.astype(dtype)
    return random_array(rng, dtype, shape, op)


@needs_numpy_standard
@pytest.mark.parametrize("name,op", FUNCTIONS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_like_numpy(backend, rng, name, op, dtype):
    if backend.is_triton and dtype.startswith("complex"):
        pytest.skip("the Triton backend has no complex scans")
    if backend.name == "triton-interpreter" and dtype not in INTERPRETED_DTYPES:
        pytest.skip("interpreted: one dtype of each size and kind")
    fn, reference = getattr(ps, name), getattr(np, name)
    for i, (shape, axis) in enumerate(LAYOUTS):
        x = _data(rng, dtype, shape, op)
        for include_initial in (False, True):
            if backend.name == "triton-interpreter" and include_initial != bool(i % 2):
                continue  # interpreted: include_initial on every other layout
            expected = reference(x, axis=axis, include_initial=include_initial)
            got = fn(backend.asarray(x), axis=axis, include_initial=include_initial, backend=backend.backend)
            assert type(got) is type(backend.asarray(x))
            result = backend.to_numpy(got)
            assert result.shape == expected.shape, (shape, axis, include_initial)
            assert result.dtype == expected.dtype, (shape, axis, result.dtype, expected.dtype)
            np.testing.assert_array_equal(result, expected, err_msg=f"{shape} axis={axis} {include_initial}")


@needs_numpy_standard
@pytest.mark.parametrize("name,op", FUNCTIONS)
def test_dtype_argument(backend, rng, name, op):
    # Products of 40 values in {-1, 1, 2} are exact in float64 in any association order.
    x = rng.choice(np.array([-1, 1, 2], np.int16), (6, 40)) if op == "mul" else random_array(rng, "int16", (6, 40))
    for dtype in ("int32", "int64", "float64"):
        expected = getattr(np, name)(x, axis=1, dtype=dtype, include_initial=True)
        got = backend.to_numpy(getattr(ps, name)(backend.asarray(x), axis=1, dtype=dtype, include_initial=True,
                                                 backend=backend.backend))
        assert got.dtype == expected.dtype
        np.testing.assert_array_equal(got, expected)


def test_include_initial_spelled_out(backend):
    def run(fn, a, **kw):
        return backend.to_numpy(fn(backend.asarray(np.asarray(a)), backend=backend.backend, **kw))

    np.testing.assert_array_equal(run(ps.cumulative_sum, [1, 2, 3], include_initial=True), [0, 1, 3, 6])
    np.testing.assert_array_equal(run(ps.cumulative_prod, [2, 3, 4], include_initial=True), [1, 2, 6, 24])
    np.testing.assert_array_equal(run(ps.cumulative_sum, [[1, 2], [3, 4]], axis=0, include_initial=True),
                                  [[0, 0], [1, 2], [4, 6]])
    np.testing.assert_array_equal(run(ps.cumulative_sum, np.zeros(0), include_initial=True), [0.0])
    assert run(ps.cumulative_sum, np.int8([1, 2]), include_initial=True).dtype == np.int64
    assert run(ps.cumulative_prod, np.uint8([1, 2])).dtype == np.uint64


def test_argument_errors(backend):
    on = dict(backend=backend.backend)
    x2 = backend.asarray(np.ones((3, 4)))
    for fn in (ps.cumulative_sum, ps.cumulative_prod):
        with pytest.raises(ValueError, match="axis"):
            fn(x2, **on)  # an axis is required past one dimension
        with pytest.raises(TypeError, match="include_initial"):
            fn(x2, axis=0, include_initial="yes", **on)
        with pytest.raises(TypeError, match="x"):
            fn(np.array(["a", "b"]), **on)
        with pytest.raises(TypeError, match="axis"):
            fn(x2, axis=1.0, **on)


@pytest.mark.skipif(not HAS_TORCH, reason="needs torch")
def test_gradient_through_include_initial():
    import torch

    x = torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], dtype=torch.float64, requires_grad=True)
    y = ps.cumulative_sum(x, axis=1, include_initial=True)
    assert tuple(y.shape) == (2, 4)
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[3.0, 2.0, 1.0]] * 2)


@needs_numpy_standard
def test_dask_arrays_stay_lazy():
    da = pytest.importorskip("dask.array")
    rng = np.random.default_rng(3)
    x = rng.integers(-9, 9, (12, 10))
    dx = da.from_array(x, chunks=(5, 4))
    for axis in (0, 1):
        got = ps.cumulative_sum(dx, axis=axis, include_initial=True)
        assert isinstance(got, da.Array)
        np.testing.assert_array_equal(got.compute(), np.cumulative_sum(x, axis=axis, include_initial=True))
