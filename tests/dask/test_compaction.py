"""prefixscan.compact and prefixscan.partition on dask arrays, against NumPy's
boolean indexing: lazy results (no task runs until asked), chunk sizes unknown
as dask's own ``x[mask]``, chunks of none, one and many elements, chunks of the
compiled CPU path (8192+), N-D arrays, struct fields, a dask mask with an
in-memory x and the reverse, ``size=k`` (a known shape, merged by a tree), and
the arguments of the in-memory functions that are never computed behind the
caller's back."""

from __future__ import annotations

import math

import numpy as np
import pytest

import prefixscan as ps
from prefixscan.testing import random_array

da = pytest.importorskip("dask.array")
from .lazy import no_task_runs  # noqa: E402  (after the skip: it imports dask)


def unknown_chunks(y, blocks: int) -> None:
    assert isinstance(y, da.Array) and y.ndim == 1
    assert len(y.chunks[0]) == blocks and all(math.isnan(c) for c in y.chunks[0])


def random_mask(rng, shape, density=0.4) -> np.ndarray:
    mask = rng.random(shape) < density
    if mask.size > 1:
        mask.flat[0], mask.flat[-1] = True, False  # both kinds, whatever the draw
    return mask


CHUNKINGS = [(0, ((0,),)), (1, ((1,),)), (2, ((1, 1),)), (31, ((10, 0, 1, 20),)), (257, ((128, 129),)),
             (20011, ((8191, 1, 8192, 3627),))]  # 20011: a prime; 8192: the compiled CPU path


@pytest.mark.parametrize("n,chunks", CHUNKINGS)
@pytest.mark.parametrize("dtype", ["int32", "float64", "bool", "uint8"])
def test_compact_is_lazy_and_equals_boolean_indexing(rng, chunks_on, n, chunks, dtype):
    to_library, to_numpy = chunks_on
    x = random_array(rng, dtype, (n,)) if n else np.zeros(0, dtype)
    mask = random_mask(rng, n)
    lx, lm = da.from_array(to_library(x), chunks=chunks), da.from_array(to_library(mask), chunks=chunks)
    with no_task_runs():
        y = ps.compact(lx, lm)
    unknown_chunks(y, len(chunks[0]))
    assert y.dtype == x.dtype
    got = to_numpy(y.compute())
    assert got.dtype == x.dtype
    np.testing.assert_array_equal(got, x[mask])
    np.testing.assert_array_equal(to_numpy(lx[lm].compute()), got)  # dask's own x[mask]


@pytest.mark.parametrize("n,chunks", CHUNKINGS)
def test_partition_is_lazy_kept_then_rejected(rng, chunks_on, n, chunks):
    to_library, to_numpy = chunks_on
    x = random_array(rng, "int64", (n,)) if n else np.zeros(0, np.int64)
    mask = random_mask(rng, n)
    lx, lm = da.from_array(to_library(x), chunks=chunks), da.from_array(to_library(mask), chunks=chunks)
    with no_task_runs():
        values, count = ps.partition(lx, lm)
    unknown_chunks(values, 2 * len(chunks[0]))  # every kept block, then every rejected block
    assert isinstance(count, da.Array) and count.shape == () and count.dtype == np.int64
    np.testing.assert_array_equal(to_numpy(values.compute()), np.concatenate([x[mask], x[~mask]]))
    assert int(to_numpy(count.compute())) == np.count_nonzero(mask)


def test_n_d_arrays_and_structs_in_c_order(rng):
    x = random_array(rng, "float32", (9, 14))
    z = random_array(rng, "int16", (9, 14))
    mask = random_mask(rng, (9, 14))
    lx, lz, lm = (da.from_array(a, chunks=(4, 5)) for a in (x, z, mask))
    with no_task_runs():
        one = ps.compact(lx, lm)
        both = ps.compact((lx, lz), lm)
        (px, pz), count = ps.partition((lx, lz), lm)
    np.testing.assert_array_equal(one.compute(), x[mask])
    assert isinstance(both, tuple) and len(both) == 2
    np.testing.assert_array_equal(both[0].compute(), x[mask])
    np.testing.assert_array_equal(both[1].compute(), z[mask])
    np.testing.assert_array_equal(px.compute(), np.concatenate([x[mask], x[~mask]]))
    np.testing.assert_array_equal(pz.compute(), np.concatenate([z[mask], z[~mask]]))
    assert int(count.compute()) == np.count_nonzero(mask)


def test_an_in_memory_x_or_mask_beside_a_dask_one(rng):
    x = random_array(rng, "int32", (50,))
    mask = random_mask(rng, 50)
    lx, lm = da.from_array(x, chunks=7), da.from_array(mask, chunks=(20, 30))
    with no_task_runs():
        a, b = ps.compact(x, lm), ps.compact(lx, mask)  # each takes the dask argument's chunks
        c = ps.compact(lx, lm)  # chunks aligned on x's
        values, count = ps.partition(x, lm)
        mixed = ps.compact((x, lx), mask)  # fields of both kinds
    unknown_chunks(a, 2)
    unknown_chunks(b, 8)
    unknown_chunks(c, 8)
    for y in (a, b, c) + mixed:
        np.testing.assert_array_equal(y.compute(), x[mask])
    np.testing.assert_array_equal(values.compute(), np.concatenate([x[mask], x[~mask]]))
    assert int(count.compute()) == np.count_nonzero(mask)


def test_compacting_a_compacted_array(rng):
    x = random_array(rng, "int64", (200,))
    lx = da.from_array(x, chunks=30)
    once = ps.compact(lx, lx % 3 != 0)  # unknown chunk sizes, aligned with a mask computed from it
    with no_task_runs():
        twice = ps.compact(once, once > 0)
    kept = x[x % 3 != 0]
    np.testing.assert_array_equal(twice.compute(), kept[kept > 0])
    with pytest.raises(ValueError, match="compute_chunk_sizes"):
        ps.compact(once, np.ones(len(kept), bool))  # an in-memory mask needs the chunk sizes


@pytest.mark.parametrize("size", [0, 1, 5, 57, 58, 59, 400])
def test_compact_to_a_size(rng, chunks_on, size):
    to_library, to_numpy = chunks_on
    x = random_array(rng, "float32", (300,))
    z = random_array(rng, "int8", (300,))
    mask = random_mask(rng, 300, density=0.2)
    mask[:] = False
    mask[rng.choice(300, 58, replace=False)] = True  # 58 selected: sizes below, at and above
    chunks = ((7,) * 40 + (20,),)  # 41 chunks: a tree of merges two levels deep
    lx, lz, lm = (da.from_array(to_library(a), chunks=chunks) for a in (x, z, mask))
    with no_task_runs():
        values, count = ps.compact(lx, lm, size=size, fill_value=-7)
        (vx, vz), count2 = ps.compact((lx, lz), lm, size=size, fill_value=-7)
    for got, a in ((values, x), (vx, x), (vz, z)):
        assert isinstance(got, da.Array) and got.chunks == ((size,),) and got.dtype == a.dtype
        want, kept = np.full(size, -7, a.dtype), min(size, 58)
        want[:kept] = a[mask][:kept]
        np.testing.assert_array_equal(to_numpy(got.compute()), want)
    assert isinstance(count, da.Array) and count.shape == () and count.dtype == np.int64
    assert int(to_numpy(count.compute())) == int(to_numpy(count2.compute())) == 58
    np.testing.assert_array_equal(to_numpy(values.compute()), to_numpy(ps.compact(x, mask, size=size,
                                                                                     fill_value=-7)[0]))


def test_bad_input_is_refused_before_any_graph(rng):
    lx = da.from_array(random_array(rng, "int32", (20,)), chunks=6)
    with no_task_runs():
        with pytest.raises(ValueError, match="mask has shape"):
            ps.compact(lx, da.ones(21, dtype=bool, chunks=6))
        with pytest.raises(TypeError, match="mask must be a bool"):
            ps.partition(lx, lx)
        with pytest.raises(ValueError, match="size must be >= 0"):
            ps.compact(lx, lx > 0, size=-1)
        with pytest.raises(ValueError, match="fill_value"):
            ps.compact(lx, lx > 0, size=3, fill_value=0.5)
        with pytest.raises(TypeError, match="fill_value"):
            ps.compact(lx, lx > 0, size=3, fill_value="a")


def test_in_memory_calls_never_compute_a_dask_argument(rng):
    """A dask array where an in-memory call reads values (init, out, segments,
    offsets, a field beside in-memory ones) is refused by name, before any task."""
    x = random_array(rng, "float64", (20,))
    lx = da.from_array(x, chunks=6)
    with no_task_runs():
        for call, name in [(lambda: ps.scan(x, init=da.from_array(np.array(1.0))), "init"),
                           (lambda: ps.scan(x, out=da.zeros(20)), "out"),
                           (lambda: ps.scan((x, lx), ps.testing.affine_monoid()), "x"),
                           (lambda: ps.segmented_scan(x, offsets=[0, 5], init=da.from_array(np.array(1.0))), "init"),
                           (lambda: ps.segmented_scan(x, offsets=[0, 5], out=da.zeros(20)), "out"),
                           (lambda: ps.segmented_scan(x, flags=lx > 3), "flags"),
                           (lambda: ps.segmented_scan(x, offsets=da.from_array(np.array([0, 5]))), "offsets"),
                           (lambda: ps.segmented_scan(x, keys=lx), "keys"),
                           (lambda: ps.linear_recurrence(x, x, init=da.from_array(np.array(1.0))), "init"),
                           (lambda: ps.linear_recurrence(x, x, offsets=da.from_array(np.array([0, 5, 20]))),
                            "offsets")]:
            with pytest.raises(TypeError, match=f"^{name}: .*dask"):
                call()
