"""compact (algorithms/compaction.py) against the plain-loop reference of
prefixscan.testing.
"""

from __future__ import annotations

import numpy as np
import pytest

import prefixscan as ps
from prefixscan.testing import random_array, reference_compact


@pytest.mark.parametrize("dtype", ["int8", "uint64", "float16", "float64", "complex64", "bool"])
@pytest.mark.parametrize("shape", [(0,), (1,), (100,), (7, 9), (3, 4, 5)], ids=lambda s: "x".join(map(str, s)))
def test_compact(rng, dtype, shape):
    op = "add" if np.dtype(dtype).kind != "b" else "xor"
    x = random_array(rng, dtype, shape, op)
    for p in [0.0, 0.3, 1.0]:
        mask = rng.random(shape) < p
        got = ps.compact(x, mask)
        expected = reference_compact(x, mask)
        assert isinstance(got, np.ndarray)
        assert got.dtype == x.dtype and got.shape == expected.shape
        np.testing.assert_array_equal(got, expected)
        np.testing.assert_array_equal(got, x[mask])


def test_compact_preserves_order(rng):
    x = np.arange(1000, dtype=np.int64)
    mask = rng.random(1000) < 0.5
    got = ps.compact(x, mask)
    assert (np.diff(got) > 0).all()
    np.testing.assert_array_equal(got, np.flatnonzero(mask))
