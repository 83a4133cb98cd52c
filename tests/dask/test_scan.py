"""prefixscan.scan and the functions built on it, on dask arrays, against the
plain-loop reference: every operator class, user and struct monoids, any axis,
inclusive/exclusive/init/reverse, orders and tuple sizes with chunk edges that
cut tuples, chunks of one element and of none, many chunks (the carry tree),
laziness, the graph's shape, and bad input refused before any graph is built."""

from __future__ import annotations

import collections
import subprocess
import sys

import numpy as np
import pytest

import prefixscan as ps
from prefixscan.testing import (
    affine_data,
    affine_monoid,
    assert_scan_equal,
    first_nonzero_monoid,
    matmul2_data,
    matmul2_monoid,
    random_array,
    random_init,
    reference_scan,
    sparse_array,
    tolerance_for,
)

da = pytest.importorskip("dask.array")


def random_chunks(rng, n: int, pieces: int) -> tuple:
    """``pieces`` chunk sizes summing to n, some of them 0 or 1 where n allows."""
    cuts = np.sort(rng.integers(0, n + 1, size=pieces - 1))
    sizes = np.diff(np.concatenate([[0], cuts, [n]]))
    return tuple(int(s) for s in sizes)


def lazy(x, chunks, to_library=lambda a: a):
    return da.from_array(to_library(x), chunks=chunks)


def check(got, x, op, to_numpy=lambda a: a, **kwargs):
    """``got`` (a dask array or tuple of them) computed, against the reference scan of x."""
    want = reference_scan(x, op, **kwargs)
    if isinstance(got, tuple):
        for g, w in zip(got, want):
            assert_scan_equal(to_numpy(g.compute()), w)
    else:
        assert_scan_equal(to_numpy(got.compute()), want, **tolerance_for(x, op, **kwargs))


OPERATORS = [("add", "int32"), ("add", "float32"), ("mul", "int64"), ("max", "float64"), ("min", "int8"),
             ("and", "uint16"), ("or", "bool"), ("xor", "uint8"), ("logaddexp", "float32"), ("add", "complex64")]


@pytest.mark.parametrize("op,dtype", OPERATORS)
@pytest.mark.parametrize("inclusive,reverse,seeded", [(True, False, False), (False, True, True),
                                                      (True, True, True), (False, False, False)])
def test_every_operator_class(rng, chunks_on, op, dtype, inclusive, reverse, seeded):
    to_library, to_numpy = chunks_on
    x = random_array(rng, dtype, (3, 47), op)
    init = random_init(rng, dtype, (3,), op) if seeded else None
    chunks = ((2, 1), random_chunks(rng, 47, 6))
    if dtype.startswith("complex") and type(to_library(x)).__module__.startswith("cupy"):
        # CuPy chunks go to the Triton backend, which has no complex types: refused on the
        # metadata, before a chunk is computed.
        with pytest.raises(TypeError, match="x: the Triton backend has no complex types"):
            ps.scan(lazy(x, chunks, to_library), op, axis=1, inclusive=inclusive, reverse=reverse, init=init)
        return
    y = ps.scan(lazy(x, chunks, to_library), op, axis=1, inclusive=inclusive, reverse=reverse, init=init)
    assert y.chunks == chunks
    check(y, x, op, to_numpy, axis=1, inclusive=inclusive, reverse=reverse, init=init)


@pytest.mark.parametrize("axis", [0, 1, -1, None])
def test_any_axis_with_blocks_of_lanes(rng, chunks_on, axis):
    to_library, to_numpy = chunks_on
    x = random_array(rng, "int64", (23, 17), "add")
    chunks = (random_chunks(rng, 23, 5), random_chunks(rng, 17, 3))
    y = ps.scan(lazy(x, chunks, to_library), axis=axis, init=np.int64(7), inclusive=False)
    if axis is not None:
        assert y.chunks == chunks
    check(y, x, "add", to_numpy, axis=axis, init=np.int64(7), inclusive=False)


@pytest.mark.parametrize("n", [0, 1, 2, 13, 31, 32, 33])
def test_sizes_and_single_chunks(rng, n):
    x = random_array(rng, "int32", (n,), "xor")
    for chunks in [(n,), (1,) * n or (0,), random_chunks(rng, n, 4)]:
        check(ps.scan(lazy(x, (chunks,)), "xor", reverse=True), x, "xor", reverse=True)


@pytest.mark.parametrize("order,tuple_size", [(1, 3), (2, 1), (3, 2), (2, 5)])
@pytest.mark.parametrize("inclusive,reverse", [(True, False), (False, False), (True, True), (False, True)])
def test_orders_and_tuples_cut_by_chunk_edges(rng, order, tuple_size, inclusive, reverse):
    n = 60
    x = random_array(rng, "int64", (2, n), "add")
    init = random_array(rng, "int64", (2,) + ((tuple_size,) if tuple_size > 1 else ()), "add")
    chunks = ((1, 1), (7, 0, 1, 13, 11, 28))  # edges at 7, 8, 21 and 32 cut tuples of 2, 3 and 5
    y = ps.scan(lazy(x, chunks), axis=1, inclusive=inclusive, reverse=reverse, init=init, order=order,
                tuple_size=tuple_size)
    check(y, x, "add", axis=1, inclusive=inclusive, reverse=reverse, init=init, order=order,
          tuple_size=tuple_size)


def test_orders_of_float16_keep_the_float32_accumulator_between_passes(rng):
    x = rng.uniform(-1, 1, size=96).astype(np.float16)
    y = ps.scan(lazy(x, ((10, 50, 36),)), order=3, tuple_size=2)
    check(y, x, "add", order=3, tuple_size=2)


@pytest.mark.parametrize("reverse", [False, True])
def test_non_commutative_struct_monoids(rng, chunks_on, reverse):
    to_library, to_numpy = chunks_on
    a, b = affine_data(rng, (71,), "int64", small=False)
    # Fields chunked differently: the second follows the first's chunks.
    x = (lazy(a, ((20, 1, 0, 30, 20),), to_library), lazy(b, ((35, 36),), to_library))
    y = ps.scan(x, affine_monoid(), reverse=reverse, inclusive=False)
    assert [f.chunks for f in y] == [((20, 1, 0, 30, 20),)] * 2
    check(y, (a, b), affine_monoid(), to_numpy, reverse=reverse, inclusive=False)
    m = matmul2_data(rng, (40,))
    y = ps.scan(tuple(lazy(f, ((9, 11, 20),), to_library) for f in m), matmul2_monoid(), order=2, tuple_size=2)
    check(y, m, matmul2_monoid(), to_numpy, order=2, tuple_size=2)


def test_user_monoid_of_one_field(rng):
    x = sparse_array(rng, "int32", (5, 40))
    y = ps.scan(lazy(x, ((5,), (3, 17, 20))), first_nonzero_monoid(), axis=1, reverse=True)
    check(y, x, first_nonzero_monoid(), axis=1, reverse=True)


@pytest.mark.parametrize("reverse", [False, True])
def test_many_chunks_go_through_the_carry_tree(rng, reverse):
    x = random_array(rng, "int64", (3000,), "add")  # 1500 chunks: three levels of fan-in 32
    y = ps.scan(lazy(x, 2), reverse=reverse, inclusive=False, init=np.int64(-5))
    check(y, x, "add", reverse=reverse, inclusive=False, init=np.int64(-5))


def test_numpy_drop_ins_and_make_scan(rng):
    x = random_array(rng, "int8", (4, 30), "add")
    lx = lazy(x, (2, 7))
    assert ps.cumsum(lx).dtype == np.cumsum(x).dtype
    np.testing.assert_array_equal(ps.cumsum(lx).compute(), np.cumsum(x))
    np.testing.assert_array_equal(ps.cumsum(lx, axis=0, exclusive=True).compute(),
                                  reference_scan(x.astype(np.int64), axis=0, inclusive=False))
    np.testing.assert_array_equal(ps.cumprod(lx, axis=1, reverse=True).compute(),
                                  reference_scan(x.astype(np.int64), "mul", axis=1, reverse=True))
    np.testing.assert_array_equal(ps.cummax(lx, axis=1).compute(), np.maximum.accumulate(x, axis=1))
    np.testing.assert_array_equal(ps.cummin(lx, axis=0).compute(), np.minimum.accumulate(x, axis=0))
    flags = rng.random(50) < 0.5
    np.testing.assert_array_equal(ps.cumsum(lazy(flags, 9)).compute(), np.cumsum(flags))
    running_max = ps.make_scan("max", axis=-1)
    np.testing.assert_array_equal(running_max(lx).compute(), np.maximum.accumulate(x, axis=-1))


def test_nothing_is_computed_until_asked(rng):
    def boom(block):
        raise AssertionError("a chunk was computed while the graph was built")

    x = da.from_array(random_array(rng, "int32", (40,), "add"), chunks=7).map_blocks(boom, dtype=np.int32)
    y = ps.scan(x, order=2, tuple_size=2, init=np.array([1, 2], np.int32))  # builds every layer
    assert isinstance(y, da.Array) and y.chunks == x.chunks
    ps.cumsum(x), ps.delta_encode(x, 2, 2), ps.linear_recurrence(x.astype(np.float64), x.astype(np.float64))


def test_each_chunk_is_read_once_per_round_and_once_more_to_scan(rng):
    reads = collections.Counter()

    def load(block, block_info=None):  # the input's own task: counts its runs
        reads[block_info[0]["chunk-location"]] += 1
        return block

    data = random_array(rng, "int64", (1000,), "add")
    x = da.from_array(data, chunks=10).map_blocks(load, dtype=data.dtype)  # 100 chunks
    for order in (1, 2):
        reads.clear()
        np.testing.assert_array_equal(ps.scan(x, order=order).compute(), reference_scan(data, order=order))
        assert len(reads) == 100 and set(reads.values()) == {order + 1}


def test_no_task_holds_two_chunks():
    from dask.core import get_dependencies

    x = da.zeros(1000, chunks=10, dtype=np.int64) + 1
    graph = dict(ps.scan(x, order=2).__dask_graph__())
    small = ("prefixscan-totals", "prefixscan-carries")  # layers of totals and carries: a lane's worth each
    for key in graph:
        dependencies = get_dependencies(graph, key)
        chunks = [d for d in dependencies if not str(d[0] if isinstance(d, tuple) else d).startswith(small)]
        assert len(chunks) <= 1, f"{key} depends on {len(chunks)} chunks"
        if str(key[0]).startswith("prefixscan-carries"):
            assert not chunks  # the carry tree reads totals and carries only


@pytest.mark.parametrize("order,tuple_size", [(1, 1), (2, 3), (3, 2)])
def test_delta_coding(rng, chunks_on, order, tuple_size):
    to_library, to_numpy = chunks_on
    x = random_array(rng, "int32", (3, 48), "add")
    chunks = ((2, 1), (5, 1, 0, 20, 22))  # chunks shorter than order * tuple_size
    d = ps.delta_encode(lazy(x, chunks, to_library), order, tuple_size)
    assert d.chunks == chunks
    want = ps.testing.reference_delta_encode(x, order, tuple_size)
    np.testing.assert_array_equal(to_numpy(d.compute()), want)
    np.testing.assert_array_equal(to_numpy(ps.delta_decode(d, order, tuple_size).compute()), x)


@pytest.mark.parametrize("reverse", [False, True])
def test_linear_recurrence(rng, chunks_on, reverse):
    to_library, to_numpy = chunks_on
    a = rng.uniform(0.5, 1.0, size=(4, 63))
    b = rng.normal(size=(4, 63))
    init = rng.normal(size=4)
    chunks = ((3, 1), (1, 20, 0, 30, 12))
    h, final = ps.linear_recurrence(lazy(a, chunks, to_library), lazy(b, chunks, to_library), init=init,
                                    reverse=reverse, return_final=True)
    assert h.chunks == chunks
    want = ps.testing.reference_linear_recurrence(a, b, init=init, reverse=reverse)
    np.testing.assert_allclose(to_numpy(h.compute()), want, rtol=1e-12)
    np.testing.assert_allclose(to_numpy(final.compute()), want[:, 0 if reverse else -1], rtol=1e-12)
    assert ps.linear_recurrence(lazy(a, chunks, to_library), lazy(b, (4, 9), to_library)).chunks == chunks
    # A per-lane decay as a NumPy array, broadcast against the dask inputs.
    decay = rng.uniform(0.5, 1.0, size=(4, 1))
    h = ps.linear_recurrence(decay, lazy(b, chunks, to_library), axis=1)
    np.testing.assert_allclose(to_numpy(h.compute()),
                               ps.testing.reference_linear_recurrence(np.broadcast_to(decay, b.shape), b),
                               rtol=1e-12)
    # Chunks of 4 x 3000 elements: totals from the one-read reduce of the CPU backend (from 8192).
    a, b = rng.uniform(0.999, 1.001, size=(4, 9000)), rng.normal(size=(4, 9000))
    h = ps.linear_recurrence(lazy(a, ((4,), (3000,) * 3), to_library), lazy(b, ((4,), (3000,) * 3), to_library),
                             reverse=reverse)
    np.testing.assert_allclose(to_numpy(h.compute()), ps.testing.reference_linear_recurrence(a, b, reverse=reverse),
                               rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("reverse", [False, True])
def test_linear_recurrence_log_space(rng, chunks_on, reverse):
    """Log decays over chunks: each chunk's total decay is the sum of its log decays and
    the totals compose in log space; against the plain loop fed exp(a) in float64, on
    the NumPy scan (small chunks) and the compiled loop.  Decays whose product
    underflows within a chunk (a log decay of -100 per step) give h == b, no NaN."""
    to_library, to_numpy = chunks_on
    la, b, init = rng.uniform(-2.0, 0.2, size=(4, 63)), rng.normal(size=(4, 63)), rng.normal(size=4)
    chunks = ((3, 1), (1, 20, 0, 30, 12))
    h, final = ps.linear_recurrence(lazy(la, chunks, to_library), lazy(b, chunks, to_library), init=init,
                                    reverse=reverse, return_final=True, log_space=True)
    want = ps.testing.reference_linear_recurrence(np.exp(la), b, init=init, reverse=reverse)
    np.testing.assert_allclose(to_numpy(h.compute()), want, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(to_numpy(final.compute()), want[:, 0 if reverse else -1], rtol=1e-12, atol=1e-14)
    steep = la - 100.0
    h = ps.linear_recurrence(lazy(steep, chunks, to_library), lazy(b, chunks, to_library), init=init,
                             reverse=reverse, log_space=True)
    np.testing.assert_array_equal(to_numpy(h.compute()), b)  # exp(-100) * anything of this size is below b's ulp
    la, b = rng.uniform(-0.01, 0.001, size=(4, 9000)), rng.normal(size=(4, 9000))
    h = ps.linear_recurrence(lazy(la, ((4,), (3000,) * 3), to_library), lazy(b, ((4,), (3000,) * 3), to_library),
                             reverse=reverse, log_space=True)
    np.testing.assert_allclose(to_numpy(h.compute()),
                               ps.testing.reference_linear_recurrence(np.exp(la), b, reverse=reverse),
                               rtol=1e-10, atol=1e-10)
    with pytest.raises(TypeError, match="log_space"):
        ps.linear_recurrence(lazy(la, ((4,), (3000,) * 3), to_library), 1.0, log_space="yes")
    with pytest.raises(TypeError, match="log_space"):
        ps.linear_recurrence(lazy(la.astype(np.complex128), ((4,), (3000,) * 3), to_library), 1.0 + 0j,
                             log_space=True)


def test_bad_input_is_refused_before_any_graph(rng):
    x = lazy(random_array(rng, "int32", (10, 12), "add"), (5, 5))
    with pytest.raises(ValueError, match="axis"):
        ps.scan(x, axis=2)
    with pytest.raises(ValueError, match="tuple_size"):
        ps.scan(x, axis=1, tuple_size=5)
    with pytest.raises(ValueError, match="init"):
        ps.scan(x, axis=1, init=np.zeros(3, np.int32))
    with pytest.raises(TypeError, match="init"):
        ps.scan(x, axis=1, init=da.zeros(10, dtype=np.int32))
    with pytest.raises(TypeError, match="out"):
        ps.scan(x, out=np.empty(120, np.int32))
    with pytest.raises(TypeError, match="x"):
        ps.scan(x, "logaddexp")
    unknown = x[x[:, 0] > 0]  # unknown chunk sizes along axis 0
    with pytest.raises(ValueError, match="compute_chunk_sizes"):
        ps.scan(unknown, axis=1)
    with pytest.raises(NotImplementedError, match="offsets"):
        ps.linear_recurrence(x.astype(float), x.astype(float), offsets=np.array([0, 12]))


def test_prefixscan_does_not_import_dask_for_other_arrays():
    code = ("import sys, numpy as np, prefixscan as ps; ps.scan(np.arange(5)); ps.cumsum([1, 2]); "
            "ps.linear_recurrence(np.ones(3), np.ones(3)); assert 'dask' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


@pytest.mark.parametrize("inclusive,reverse,seeded", [(True, False, False), (False, False, True),
                                                      (True, True, True), (False, True, False)])
def test_segmented_scan(rng, inclusive, reverse, seeded):
    n = 90
    x = random_array(rng, "int32", (n,), "add")
    # Heads on chunk edges (10, 40), inside chunks, empty segments, a trailing n; chunks of 0 and 1 elements.
    offsets = np.array([0, 3, 10, 10, 25, 40, 41, 77, 90])
    chunks = ((10, 0, 1, 29, 13, 37),)
    init = np.int32(-3) if seeded else None
    kwargs = dict(inclusive=inclusive, reverse=reverse, init=init)
    y = ps.segmented_scan(lazy(x, chunks), offsets=offsets, **kwargs)
    assert y.chunks == chunks
    want = ps.segmented_scan(x, offsets=offsets, **kwargs)  # the in-memory function, itself tested against
    np.testing.assert_array_equal(y.compute(), want)      # the reference in tests/algorithms
    np.testing.assert_array_equal(want, ps.testing.reference_segmented_scan(x, "add", offsets=offsets, **kwargs))
    # Flags and keys on the host; a long segment across many chunks.
    flags = np.zeros(n, bool)
    flags[[0, 60]] = True
    np.testing.assert_array_equal(ps.segmented_scan(lazy(x, 7), "max", flags=flags, **kwargs).compute(),
                                  ps.segmented_scan(x, "max", flags=flags, **kwargs))
    keys = np.repeat(np.arange(6), 15)
    np.testing.assert_array_equal(ps.segmented_scan(lazy(x, 8), "xor", keys=keys, **kwargs).compute(),
                                  ps.segmented_scan(x, "xor", keys=keys, **kwargs))


def test_segmented_scan_of_a_non_commutative_struct(rng):
    a, b = affine_data(rng, (50,), "int64")
    offsets = np.array([0, 12, 13, 30])
    for reverse in (False, True):
        y = ps.segmented_scan((lazy(a, 9), lazy(b, 9)), affine_monoid(), offsets=offsets, reverse=reverse)
        want = ps.testing.reference_segmented_scan((a, b), affine_monoid(), offsets=offsets, reverse=reverse)
        for g, w in zip(y, want):
            np.testing.assert_array_equal(g.compute(), w)
    with pytest.raises(TypeError, match="offsets"):
        ps.segmented_scan(lazy(a, 9), offsets=da.from_array(offsets))
    with pytest.raises(TypeError, match="out"):
        ps.segmented_scan(lazy(a, 9), offsets=offsets, out=np.empty(50, np.int64))


@pytest.mark.parametrize("shape,axis", [((0, 5), 1), ((0, 5), 0), ((3, 0), 0), ((3, 0), 1), ((0, 5), None)])
def test_empty_arrays_and_empty_lanes(shape, axis):
    x = np.arange(np.prod(shape), dtype=np.int32).reshape(shape)
    for kwargs in (dict(), dict(order=2, reverse=True, inclusive=False), dict(op="max")):
        y = ps.scan(lazy(x, 2), axis=axis, **kwargs).compute()
        want = reference_scan(x, axis=axis, **kwargs)
        assert y.shape == want.shape and y.dtype == want.dtype
