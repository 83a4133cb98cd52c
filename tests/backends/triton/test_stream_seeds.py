"""Per-stream seeds (``init`` of shape lanes + (tuple_size,)) on the Triton backend
with axes after the scanned one: each lane's seeds go to its own columns.

The kernels see a ``(B, M, K)`` view whose K columns are ordered (stream, inner
position); ``init`` comes ordered (inner position, stream).  Checked against the
plain-loop reference for every strategy, inclusive and exclusive, orders 1 and 2,
forwards and reversed, and a two-field non-commutative monoid.
"""

from __future__ import annotations

import numpy as np
import pytest

import prefixscan as ps
from prefixscan.backends.triton.planning.registry import STRATEGY_NAMES
from prefixscan.testing import (affine_data, affine_monoid, assert_scan_equal, backends_under_test,
                                reference_scan)

TRITON = [b for b in backends_under_test() if b.is_triton]
pytestmark = pytest.mark.skipif(not TRITON, reason="no Triton backend here")


def _on(a):
    return TRITON[0].asarray(a)


def _back(a):
    return TRITON[0].to_numpy(a)


def test_minimal_example():
    x = np.arange(1, 5, dtype=np.int32).reshape(2, 2)
    init = np.array([[10, 20], [30, 40]], dtype=np.int32)  # init[lane, stream]
    got = ps.scan(_on(x), backend="triton", axis=0, tuple_size=2, init=_on(init), inclusive=False)
    np.testing.assert_array_equal(_back(got), [[10, 30], [20, 40]])


CASES = [  # (shape, axis, tuple_size)
    ((4, 3), 0, 2),
    ((2, 6, 5), 1, 3),
    ((6, 2, 3), 0, 2),
    ((3, 4, 2), -2, 2),
    ((2, 2, 3), 1, 2),  # one step per lane: the seed is the whole exclusive result
]


@pytest.mark.parametrize("strategy", ("auto",) + STRATEGY_NAMES)
@pytest.mark.parametrize("shape, axis, s", CASES)
def test_add_seeds_every_strategy(shape, axis, s, strategy):
    rng = np.random.default_rng(sum(shape) * 7 + s)
    x = rng.integers(-50, 50, size=shape).astype(np.int32)
    lanes = shape[:axis % len(shape)] + shape[axis % len(shape) + 1:]
    init = rng.integers(-1000, 1000, size=lanes + (s,)).astype(np.int32)
    for inclusive in (False, True):
        for order in (1, 2):
            for reverse in (False, True):
                kwargs = dict(axis=axis, tuple_size=s, inclusive=inclusive, order=order, reverse=reverse)
                expected = reference_scan(x, "add", init=init, **kwargs)
                got = ps.scan(_on(x), "add", backend="triton", strategy=strategy, init=_on(init), **kwargs)
                assert_scan_equal(_back(got), expected, err_msg=f"{kwargs} {strategy}")


@pytest.mark.parametrize("strategy", ("auto", "reduce_then_scan", "scan_then_propagate"))
def test_float_max_seeds_from_numpy_init(strategy):
    # A host init (NumPy) broadcast from fewer dimensions goes the same way.
    rng = np.random.default_rng(5)
    x = rng.standard_normal((3, 4, 5)).astype(np.float32)
    init = rng.standard_normal((5, 2)).astype(np.float32)  # broadcast over the leading lane axis
    kwargs = dict(axis=1, tuple_size=2, inclusive=False)
    expected = reference_scan(x, "max", init=init, **kwargs)
    got = ps.scan(_on(x), "max", backend="triton", strategy=strategy, init=init, **kwargs)
    assert_scan_equal(_back(got), expected, err_msg=strategy)


@pytest.mark.parametrize("strategy", ("auto", "chained", "persistent"))
def test_struct_monoid_seeds(strategy):
    # Two fields, not commutative: a seed in the wrong column changes the result.
    rng = np.random.default_rng(11)
    shape, s = (2, 4, 3), 2
    x = affine_data(rng, shape, "int64")
    init = tuple(np.asarray(f) for f in affine_data(rng, (2, 3, s), "int64"))
    for reverse in (False, True):
        kwargs = dict(axis=1, tuple_size=s, inclusive=False, reverse=reverse)
        expected = reference_scan(x, affine_monoid(), init=init, **kwargs)
        got = ps.scan(tuple(_on(f) for f in x), affine_monoid(), backend="triton", strategy=strategy,
                      init=tuple(_on(f) for f in init), **kwargs)
        for g, e in zip(got, expected):
            assert_scan_equal(_back(g), e, err_msg=f"{kwargs} {strategy}")
