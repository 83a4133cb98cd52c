"""Count-like arguments are bounded before any work: ``order`` at most 64 (every
backend's work grows with it), ``tuple_size`` and ``compact``'s ``size`` no larger
than an array can be; the limits themselves work on every backend."""

from __future__ import annotations

import importlib.util
import re

import numpy as np
import pytest

import prefixscan as ps
from prefixscan.testing import poisoned, random_array, reference_delta_encode

HAS_TORCH = importlib.util.find_spec("torch") is not None
MAX_ORDER = 64


def _raises_naming(name, fn, *args, **kwargs):
    """ValueError whose message names the argument as a word of its own (not ``arr.size``)."""
    with pytest.raises(ValueError) as excinfo:
        fn(*args, **kwargs)
    assert re.search(rf"(?<![\w.]){name}(?!\w)", str(excinfo.value)), str(excinfo.value)
    return excinfo


@pytest.mark.parametrize("order", [MAX_ORDER + 1, 10**9, 2**70])
def test_order_above_the_limit_refused(backend, order):
    """Empty and small arrays alike (an empty one ran no pass before, a small one
    q passes: 2**70 never returned)."""
    on = dict(backend=backend.backend)
    for n in (0, 5):
        x = backend.asarray(np.arange(n, dtype=np.int64))
        excinfo = _raises_naming("order", ps.scan, x, order=order, **on)
        assert str(MAX_ORDER) in str(excinfo.value)
        _raises_naming("order", ps.make_scan, order=order, **on)
        _raises_naming("order", ps.delta_encode, x, order, **on)
        _raises_naming("order", ps.delta_decode, x, order, **on)
        sentinel = poisoned(n, "int64")
        out = backend.asarray(sentinel.copy())
        _raises_naming("order", ps.scan, x, order=order, out=out, **on)
        np.testing.assert_array_equal(backend.to_numpy(out), sentinel)


@pytest.mark.skipif(not HAS_TORCH, reason="needs torch")
def test_order_limit_on_the_autograd_path():
    import torch

    _raises_naming("order", ps.scan, torch.ones(5, requires_grad=True), order=MAX_ORDER + 1)


def test_order_limit_on_dask_arrays():
    da = pytest.importorskip("dask.array")
    _raises_naming("order", ps.scan, da.ones(10, chunks=5), order=MAX_ORDER + 1)
    _raises_naming("order", ps.delta_encode, da.ones(10, chunks=5), MAX_ORDER + 1)


def test_highest_order_runs(backend, rng):
    """Order 64: 64 repeated sums (int64 wraps alike), and delta coding round trips;
    the Triton delta encoder runs it as passes of at most 8 orders."""
    on = dict(backend=backend.backend)
    n = 41
    x = random_array(rng, "int64", n, "add")
    expected = x.copy()
    for _ in range(MAX_ORDER):
        expected = np.cumsum(expected)
    got = ps.scan(backend.asarray(x), order=MAX_ORDER, **on)
    np.testing.assert_array_equal(backend.to_numpy(got), expected)
    for q, s in ((9, 1), (17, 2), (MAX_ORDER, 1)):
        x = random_array(rng, "int32", 40, "add")
        enc = ps.delta_encode(backend.asarray(x), q, s, **on)
        np.testing.assert_array_equal(backend.to_numpy(enc), reference_delta_encode(x, q, s), err_msg=f"q={q}")
        dec = ps.delta_decode(enc, q, s, **on)
        np.testing.assert_array_equal(backend.to_numpy(dec), x, err_msg=f"q={q}")


@pytest.mark.parametrize("tuple_size", [2**62, 2**70])
def test_tuple_size_beyond_any_array_refused(backend, tuple_size):
    """Only an empty lane is divided by it; NumPy failed there without naming it."""
    on = dict(backend=backend.backend)
    x = backend.asarray(np.zeros((3, 0)))
    _raises_naming("tuple_size", ps.scan, x, axis=1, tuple_size=tuple_size, **on)
    _raises_naming("tuple_size", ps.make_scan, tuple_size=tuple_size, **on)
    _raises_naming("tuple_size", ps.delta_encode, x, 1, tuple_size, axis=1, **on)
    assert tuple(ps.scan(x, axis=1, tuple_size=3, **on).shape) == (3, 0)  # a small one still divides it


@pytest.mark.parametrize("size", [2**62, 2**70])
def test_compact_size_beyond_any_array_refused(backend, size):
    on = dict(backend=backend.backend)
    x = backend.asarray(np.arange(5))
    mask = backend.asarray(np.ones(5, bool))
    _raises_naming("size", ps.compact, x, mask, size=size, **on)
    values, count = ps.compact(x, mask, size=7, **on)
    assert tuple(values.shape) == (7,) and int(count) == 5
