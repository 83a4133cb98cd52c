"""segmented_scan (algorithms/segmented.py) by flags, offsets and keys, against the
plain-loop reference of prefixscan.testing.
"""

from __future__ import annotations

import numpy as np
import pytest

import prefixscan as ps
from prefixscan.testing import (
    affine_data,
    affine_monoid,
    assert_scan_equal,
    random_array,
    reference_segmented_scan,
)


def _random_flags(rng, n, p=0.15):
    f = rng.random(n) < p
    return f


def _random_offsets(rng, n, k):
    inner = np.sort(rng.integers(0, n + 1, size=k)) if n else np.zeros(k, dtype=np.int64)
    offs = np.concatenate([[0], inner])
    return offs.astype(np.int64)


def _random_keys(rng, n):
    runs = rng.integers(1, 6, size=n)
    keys = np.repeat(rng.integers(0, 4, size=n), runs)[:n]
    return keys


SEG_OPS = [("add", "int32"), ("add", "float64"), ("max", "float32"), ("mul", "int64"), ("xor", "uint8"),
           ("min", "int16"), ("logaddexp", "float64")]


def _seg_check(got, expected, op):
    rtol = 1e-12 if (op == "logaddexp") else 0.0
    if np.asarray(expected).dtype.kind in "biu":
        rtol = None
    assert_scan_equal(got, expected, rtol=rtol, n=1)


@pytest.mark.parametrize("reverse", [False, True], ids=["fwd", "rev"])
@pytest.mark.parametrize("inclusive", [True, False], ids=["inc", "exc"])
@pytest.mark.parametrize("op,dtype", SEG_OPS, ids=[f"{o}-{d}" for o, d in SEG_OPS])
@pytest.mark.parametrize("how", ["flags", "offsets", "keys"])
def test_segmented(rng, how, op, dtype, inclusive, reverse):
    for n in [1, 2, 17, 300]:
        x = random_array(rng, dtype, n, op)
        if how == "flags":
            flags = _random_flags(rng, n)
            flags[0] = bool(rng.integers(2))  # element 0 starts a segment either way
            kw = dict(flags=flags)
        elif how == "offsets":
            offs = _random_offsets(rng, n, int(rng.integers(0, 8)))
            kw = dict(offsets=offs)
        else:
            keys = _random_keys(rng, n)
            kw = dict(keys=keys)
        expected = reference_segmented_scan(x, op, inclusive=inclusive, reverse=reverse, **kw)
        got = ps.segmented_scan(x, op, inclusive=inclusive, reverse=reverse, **kw)
        assert isinstance(got, np.ndarray)
        _seg_check(got, expected, op)


def test_segmented_offsets_empty_segments_and_trailing_n():
    x = np.arange(1, 11, dtype=np.int64)
    # Segments [0,0) [0,3) [3,3) [3,7) [7,10) [10,10): empty ones included, trailing n.
    offs = np.array([0, 0, 3, 3, 7, 10])
    np.testing.assert_array_equal(ps.segmented_scan(x, offsets=offs), [1, 3, 6, 4, 9, 15, 22, 8, 17, 27])
    np.testing.assert_array_equal(ps.segmented_scan(x, offsets=offs, inclusive=False),
                                  [0, 1, 3, 0, 4, 9, 15, 0, 8, 17])
    np.testing.assert_array_equal(ps.segmented_scan(x, offsets=offs, reverse=True),
                                  [6, 5, 3, 22, 18, 13, 7, 27, 19, 10])
    np.testing.assert_array_equal(ps.segmented_scan(x, offsets=offs, reverse=True, inclusive=False),
                                  [5, 3, 0, 18, 13, 7, 0, 19, 10, 0])
    # Same segmentation as a Python list, as int32, as flags and as keys.
    np.testing.assert_array_equal(ps.segmented_scan(x, offsets=[0, 3, 7]), [1, 3, 6, 4, 9, 15, 22, 8, 17, 27])
    np.testing.assert_array_equal(ps.segmented_scan(x, offsets=np.array([0, 3, 7, 10], np.int32)),
                                  [1, 3, 6, 4, 9, 15, 22, 8, 17, 27])
    flags = np.zeros(10, bool)
    flags[[3, 7]] = True
    np.testing.assert_array_equal(ps.segmented_scan(x, flags=flags), [1, 3, 6, 4, 9, 15, 22, 8, 17, 27])
    keys = np.array([5, 5, 5, 2, 2, 2, 2, 5, 5, 5])
    np.testing.assert_array_equal(ps.segmented_scan(x, keys=keys), [1, 3, 6, 4, 9, 15, 22, 8, 17, 27])


def test_segmented_single_segment_is_scan(rng):
    x = random_array(rng, "int32", 500, "add")
    for kw in [dict(), dict(inclusive=False), dict(reverse=True), dict(reverse=True, inclusive=False)]:
        expected = ps.scan(x, "add", **kw)
        np.testing.assert_array_equal(ps.segmented_scan(x, "add", offsets=[0], **kw), expected)
        np.testing.assert_array_equal(ps.segmented_scan(x, "add", flags=np.zeros(500, bool), **kw), expected)
        np.testing.assert_array_equal(ps.segmented_scan(x, "add", keys=np.zeros(500, np.int8), **kw), expected)
    # Every element its own segment.
    np.testing.assert_array_equal(ps.segmented_scan(x, "add", flags=np.ones(500, bool)), x)
    np.testing.assert_array_equal(ps.segmented_scan(x, "add", offsets=np.arange(500)), x)
    np.testing.assert_array_equal(ps.segmented_scan(x, "add", keys=np.arange(500)), x)


@pytest.mark.parametrize("reverse", [False, True], ids=["fwd", "rev"])
@pytest.mark.parametrize("inclusive", [True, False], ids=["inc", "exc"])
def test_segmented_affine(rng, inclusive, reverse):
    for n in [1, 5, 64, 257]:
        a, b = affine_data(rng, n, "int64")
        offs = _random_offsets(rng, n, 5)
        expected = reference_segmented_scan((a, b), affine_monoid(), offsets=offs, inclusive=inclusive,
                                            reverse=reverse)
        got = ps.segmented_scan((a, b), affine_monoid(), offsets=offs, inclusive=inclusive, reverse=reverse)
        assert isinstance(got, tuple) and len(got) == 2
        for g, e in zip(got, expected):
            assert_scan_equal(g, e)
        flags = _random_flags(rng, n, 0.2)
        expected = reference_segmented_scan((a, b), affine_monoid(), flags=flags, inclusive=inclusive,
                                            reverse=reverse)
        got = ps.segmented_scan((a, b), affine_monoid(), flags=flags, inclusive=inclusive, reverse=reverse)
        for g, e in zip(got, expected):
            assert_scan_equal(g, e)


def test_segmented_dtype_kept_and_wraps():
    x = np.array([100, 100, 100, 100], dtype=np.int8)
    got = ps.segmented_scan(x, offsets=[0, 2])
    assert got.dtype == np.int8
    np.testing.assert_array_equal(got, np.array([100, -56, 100, -56], np.int8))


def test_segmented_empty():
    x = np.empty(0, dtype=np.float32)
    assert ps.segmented_scan(x, offsets=np.array([0])).shape == (0,)
    assert ps.segmented_scan(x, flags=np.empty(0, bool)).shape == (0,)
    assert ps.segmented_scan(x, keys=np.empty(0, np.int64)).shape == (0,)
