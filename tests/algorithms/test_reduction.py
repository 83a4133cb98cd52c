"""The monoid reduction (prefixscan/primitives/scan/reduction.py) against the last row of
the reference scan: built-in operators, user and struct monoids, tuple sizes, any
axis, empty lanes; the GPU path's torch reductions run here on CPU tensors."""

from __future__ import annotations

import numpy as np
import pytest

from prefixscan._normalize import build_request, make_config
from prefixscan.primitives.scan import reduction
from prefixscan.testing import (
    affine_data,
    affine_monoid,
    first_nonzero_monoid,
    random_array,
    reference_scan,
    sparse_array,
)

OPERATORS = [("add", "int32"), ("add", "float64"), ("mul", "int64"), ("max", "float32"), ("min", "uint8"),
             ("and", "uint16"), ("or", "bool"), ("xor", "int8"), ("logaddexp", "float64"), ("add", "float16")]


def expected_totals(x, op, axis, s, n):
    """The reference's last row per lane and stream, shaped as scan's init."""
    y = reference_scan(x, op, axis=axis, tuple_size=s)
    if isinstance(y, tuple):
        return tuple(expected_totals_of(f, axis, s, n) for f in y)
    return expected_totals_of(y, axis, s, n)


def expected_totals_of(y, axis, s, n):
    last = np.take(y, range(n - s, n), axis=-1 if axis is None else axis)
    last = np.moveaxis(last, -1 if axis is None else axis, -1)
    return last if s > 1 else last[..., 0]


@pytest.mark.parametrize("op,dtype", OPERATORS)
@pytest.mark.parametrize("n,s,axis", [(1, 1, 1), (17, 1, 1), (30, 3, 1), (64, 2, 0), (33, 1, None)])
def test_builtin_operators(rng, op, dtype, n, s, axis):
    shape = (n, 3) if axis == 0 else (3, n)
    if axis is None:
        shape = (n,)
    x = random_array(rng, dtype, shape, op)
    got = reduction.reduce(x, op, axis=axis, tuple_size=s)
    want = expected_totals(x, op, axis, s, n)
    if np.dtype(dtype).kind == "f":
        np.testing.assert_allclose(got, want, rtol=2e-2 if dtype == "float16" else 1e-5)
    else:
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("n", [1, 2, 3, 7, 64, 65, 100])
def test_user_monoids_keep_the_order(rng, n):
    a, b = affine_data(rng, (2, n), "int64", small=False)
    got = reduction.reduce((a, b), affine_monoid(), axis=1)
    for g, w in zip(got, expected_totals((a, b), affine_monoid(), 1, 1, n)):
        np.testing.assert_array_equal(g, w)
    x = sparse_array(rng, "int32", (n * 2,))
    np.testing.assert_array_equal(reduction.reduce(x, first_nonzero_monoid(), tuple_size=2),
                                  expected_totals(x, first_nonzero_monoid(), None, 2, n * 2))


def test_empty_lanes_give_the_identity():
    np.testing.assert_array_equal(reduction.reduce(np.zeros((2, 0), np.int16), "min", axis=1), [32767, 32767])
    a, b = reduction.reduce((np.zeros(0), np.zeros(0)), affine_monoid())
    assert (a, b) == (1.0, 0.0)
    assert reduction.reduce(np.zeros((3, 0)), "max", axis=0).shape == (0,)  # no lanes


@pytest.mark.parametrize("op,dtype", [("add", "int32"), ("mul", "float64"), ("max", "bool"), ("min", "float32"),
                                      ("xor", "uint16"), ("or", "uint64"), ("logaddexp", "float32")])
@pytest.mark.parametrize("axis", [0, 1])
def test_the_torch_path(rng, op, dtype, axis):
    """The reductions GPU tensors take, run on CPU tensors."""
    torch = pytest.importorskip("torch")
    x = random_array(rng, dtype, (3, 40) if axis else (40, 3), op)
    config = make_config(op, axis=axis, inclusive=True, reverse=False, order=1, tuple_size=2, dtype=None,
                         backend=None, algorithm=None)
    request = build_request(config, torch.from_numpy(x), None, None)
    (got,) = reduction._reduce_torch([torch.from_numpy(x)], request)
    want = expected_totals(x, op, axis, 2, 40).reshape(3, 2)
    np.testing.assert_allclose(got.numpy().astype(np.float64), want.astype(np.float64), rtol=1e-5)


def test_logaddexp_of_infinities_and_nan():
    inf, nan = np.inf, np.nan
    lanes = np.array([[-inf, -inf, -inf], [1.0, inf, 2.0], [nan, 1.0, 2.0], [inf, nan, -inf], [3.0, -inf, 3.0]],
                     np.float32)
    got = reduction.reduce(lanes, "logaddexp", axis=1)
    want = reference_scan(lanes, "logaddexp", axis=1)[:, -1]
    np.testing.assert_allclose(got, want, rtol=1e-6)  # NaN and infinities in the same places
