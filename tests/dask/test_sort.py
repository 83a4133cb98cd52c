"""prefixscan.sort and prefixscan.argsort on dask arrays: lazy (no task runs until
asked), each block sorted along an axis held in one chunk, x's chunks kept, values
(one array or a tuple) moved with their keys, and an axis cut into several chunks
refused with the rechunk that makes it work."""

from __future__ import annotations


import numpy as np
import pytest

import prefixscan as ps
from prefixscan.testing import reference_argsort

da = pytest.importorskip("dask.array")
from .lazy import no_task_runs  # noqa: E402  (after the skip: it imports dask)


def test_rows_sorted_block_by_block(rng, chunks_on):
    to, back = chunks_on
    x = rng.integers(-50, 50, (9, 300)).astype(np.float32)
    x[::2, ::7] = np.nan
    v = rng.standard_normal(x.shape)
    w = rng.integers(0, 9, x.shape).astype(np.int8)
    dx = da.from_array(to(x), chunks=(4, -1))
    with no_task_runs():
        perm = ps.argsort(dx, descending=True)
        dv, dw = da.from_array(to(v), chunks=(3, -1)), da.from_array(to(w), chunks=(4, -1))
        keys, (dv, dw) = ps.sort(dx, values=(dv, dw))
        keys1, dv1 = ps.sort(dx, axis=1, values=da.from_array(to(v), chunks=(4, -1)))
    assert perm.chunks == dx.chunks and keys.chunks == dx.chunks and perm.dtype == np.int64
    expected = reference_argsort(x)
    np.testing.assert_array_equal(back(perm.compute()), reference_argsort(x, descending=True))
    np.testing.assert_array_equal(back(keys.compute()), np.take_along_axis(x, expected, 1))
    np.testing.assert_array_equal(back(dv.compute()), np.take_along_axis(v, expected, 1))
    np.testing.assert_array_equal(back(dw.compute()), np.take_along_axis(w, expected, 1))
    np.testing.assert_array_equal(back(dv1.compute()), np.take_along_axis(v, expected, 1))
    np.testing.assert_array_equal(back(keys1.compute()), back(keys.compute()))


def test_axis_zero_and_the_flattened_array_of_one_chunk(rng):
    x = rng.integers(0, 5, (30, 7))
    dx = da.from_array(x, chunks=(-1, 3))
    np.testing.assert_array_equal(ps.argsort(dx, axis=0, key_bits=3).compute(), reference_argsort(x, axis=0))
    np.testing.assert_array_equal(ps.argsort(da.from_array(x, chunks=-1), axis=None).compute(),
                                  reference_argsort(x, axis=None))


def test_an_axis_in_several_chunks_is_refused(rng):
    dx = da.from_array(rng.integers(0, 5, (6, 10)), chunks=(3, 5))
    with no_task_runs():
        with pytest.raises(ValueError, match=r"axis=1: x has 2 chunks along the sorted axis.*rechunk\(\{1: -1\}\)"):
            ps.sort(dx)
        with pytest.raises(ValueError, match=r"axis=None .* several chunks"):
            ps.argsort(dx, axis=None)
        with pytest.raises(TypeError, match="x and values must both be dask arrays"):
            ps.sort(dx, values=np.zeros((6, 10)))
        with pytest.raises(TypeError, match="unique of a dask array"):
            ps.unique(dx[0])
