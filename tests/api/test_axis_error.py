"""Axes as NumPy has them: an out-of-range axis raises NumPy's ``AxisError`` (a
``ValueError`` and an ``IndexError``) from every function that takes one, on every
backend and path (NumPy arrays, tensors, autograd, dask); a 0-d array is a
1-element 1-D one for the NumPy drop-ins, as in NumPy, and has no axis for ``scan``."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

import prefixscan as ps
from prefixscan.testing import poisoned, random_array

try:
    from numpy.exceptions import AxisError
except ImportError:  # NumPy < 1.25
    from numpy import AxisError

HAS_TORCH = importlib.util.find_spec("torch") is not None


def _raises_axis_error(fn, *args, **kwargs):
    with pytest.raises(AxisError) as excinfo:
        fn(*args, **kwargs)
    assert isinstance(excinfo.value, ValueError) and isinstance(excinfo.value, IndexError)
    assert "axis" in str(excinfo.value)


DROP_INS = ["cumsum", "cumprod", "cummax", "cummin"]


def test_axis_error_everywhere(backend, rng):
    x = backend.asarray(random_array(rng, "int32", (3, 4), "add"))
    on = dict(backend=backend.backend)
    for axis in (2, -3, 7):
        _raises_axis_error(ps.scan, x, axis=axis, **on)
        _raises_axis_error(ps.make_scan("max", axis=axis, **on), x)
        for name in DROP_INS + ["cumulative_sum", "cumulative_prod"]:
            _raises_axis_error(getattr(ps, name), x, axis=axis, **on)
        _raises_axis_error(ps.delta_encode, x, axis=axis, **on)
        _raises_axis_error(ps.delta_decode, x, axis=axis, **on)
        a = backend.asarray(random_array(rng, "float32", (3, 4), "add"))
        _raises_axis_error(ps.linear_recurrence, a, a, axis=axis, **on)
    # An out given too: nothing written.
    sentinel = poisoned((3, 4), "int64")
    out = backend.asarray(sentinel.copy())
    _raises_axis_error(ps.cumsum, x, axis=2, out=out, **on)
    np.testing.assert_array_equal(backend.to_numpy(out), sentinel)


@pytest.mark.skipif(not HAS_TORCH, reason="needs torch")
def test_axis_error_on_the_autograd_path():
    import torch

    x = torch.ones(3, 4, requires_grad=True)
    _raises_axis_error(ps.scan, x, axis=2)
    _raises_axis_error(ps.cumsum, x, axis=-3)
    _raises_axis_error(ps.cumulative_sum, x, axis=2)
    _raises_axis_error(ps.linear_recurrence, x, x, axis=2)


def test_axis_error_on_dask_arrays():
    da = pytest.importorskip("dask.array")
    x = da.ones((6, 4), chunks=(3, 2))
    _raises_axis_error(ps.scan, x, axis=2)
    _raises_axis_error(ps.cumsum, x, axis=-3)
    _raises_axis_error(ps.delta_encode, x, axis=2)
    _raises_axis_error(ps.linear_recurrence, x, x, axis=2)


def test_zero_d_drop_ins_are_one_element_1d(backend):
    """``numpy.cumsum(np.array(5), axis=0)`` is ``[5]``: the drop-ins give the same,
    for axis 0, -1 and None, and refuse any other axis."""
    on = dict(backend=backend.backend)
    value = np.array(5, dtype=np.int32)
    x = backend.asarray(value)
    for name, reference in (("cumsum", np.cumsum), ("cumprod", np.cumprod),
                            ("cummax", np.maximum.accumulate), ("cummin", np.minimum.accumulate)):
        for axis in (0, -1, None):
            got = getattr(ps, name)(x, axis=axis, **on)
            expected = reference(value.reshape(1)) if name in ("cummax", "cummin") else reference(value, axis=axis)
            assert tuple(got.shape) == (1,)
            np.testing.assert_array_equal(backend.to_numpy(got), expected)
            assert backend.to_numpy(got).dtype == expected.dtype
        out = backend.asarray(poisoned(1, backend.to_numpy(got).dtype))
        assert getattr(ps, name)(x, axis=0, out=out, **on) is out
        for axis in (1, -2):
            _raises_axis_error(getattr(ps, name), x, axis=axis, **on)
    # scan keeps x's shape for an integer axis, which a 0-d array does not have.
    _raises_axis_error(ps.scan, x, axis=0, **on)
    assert tuple(ps.scan(x, **on).shape) == (1,)


@pytest.mark.skipif(not HAS_TORCH, reason="needs torch")
def test_zero_d_drop_ins_on_the_autograd_path():
    import torch

    x = torch.tensor(3.0, requires_grad=True)
    y = ps.cumsum(x, axis=0)
    assert tuple(y.shape) == (1,)
    y.sum().backward()
    assert float(x.grad) == 1.0
