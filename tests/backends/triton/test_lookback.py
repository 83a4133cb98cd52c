"""The decoupled look-back and chained kernels (lookback.py): masked columns and
where the dispatch takes them, register caps, one launch per scan, chained
determinism, races on the device.

Device, sizes and data: device.py of this folder.
"""

from __future__ import annotations

import numpy as np
import pytest

# First: it skips this module where no Triton backend runs.
from .device import CUDA, DEVICE_MARK, random_data, reference, to_device, torch, tuples_per_lane

import prefixscan as ps  # noqa: E402
from prefixscan.backends.triton.scan import orders as blocked, lookback  # noqa: E402
from prefixscan.backends.triton.planning import planner, tiles  # noqa: E402
from prefixscan.backends.triton.planning.policy import routing  # noqa: E402
from prefixscan.testing import assert_scan_equal, tolerance_for  # noqa: E402

pytestmark = DEVICE_MARK


# The (B, M, K) layout on 1-D tiles with masked columns (lookback.scan_cols_kernel),
# forced for every K and type here; the dispatch uses it where it measured faster.
COLUMN_CASES = [("int32", 2, True, False), ("int32", 3, False, True), ("float32", 3, True, True),
                ("int64", 5, False, False), ("uint8", 6, True, True), ("int16", 7, False, True)]


@pytest.mark.parametrize("dtype,k,inclusive,reverse", COLUMN_CASES, ids=[f"{c[0]}-K{c[1]}-incl{c[2]}-rev{c[3]}"
                                                                         for c in COLUMN_CASES])
def test_masked_columns_kernel(kernels_run, dtype, k, inclusive, reverse):
    """Two lanes with a per-lane, per-column seed; tiles that cut rows (tile sizes are
    powers of two, rows are K elements).  On the GPU a 4096-element tile: the tuned
    2-byte tile (32768) unrolls K scans of it, and int16 K = 7 took 6.5 minutes to
    compile (a configuration the dispatch never picks: columns are for K <= 3 of 4 bytes)."""
    rng = np.random.default_rng(k)
    x = random_data(rng, dtype, (2, 23 * (4099 if CUDA else 1), k))
    init = random_data(rng, dtype, (2, k))
    expected = ps.scan(x, axis=1, init=init, inclusive=inclusive, reverse=reverse, backend="cpu")
    tile = tiles.TileConfig(block=4096, num_warps=4, window=16) if CUDA else None
    with routing(columns_max=8, columns_itemsizes=(1, 2, 4, 8)), planner.override(tile):
        got = ps.scan(to_device(x), axis=1, init=to_device(init), inclusive=inclusive, reverse=reverse, backend="triton")
    assert kernels_run == [lookback.scan_cols_kernel]
    if np.dtype(dtype).kind == "f":
        np.testing.assert_allclose(got.cpu().numpy(), expected, rtol=1e-5, atol=1e-3)
    else:
        np.testing.assert_array_equal(got.cpu().numpy(), expected)


def test_masked_columns_dispatch(kernels_run):
    """Masked columns where they measured faster (one 4-byte field, K <= RoutingPolicy.columns_max,
    order 1); the 2-D kernel otherwise."""
    rng = np.random.default_rng(3)
    for shape, dtype, kw, kernel in (((50, 2), "float32", dict(axis=0), lookback.scan_cols_kernel),
                                     ((50, 2), "int32", dict(axis=0, op="max"), lookback.scan_cols_kernel),
                                     ((150,), "float32", dict(tuple_size=3), lookback.scan_cols_kernel),
                                     ((50, 4), "float32", dict(axis=0), lookback.scan_2d_kernel),
                                     ((50, 2), "int64", dict(axis=0, op="max"), lookback.scan_2d_kernel),
                                     ((50, 4), "int32", dict(axis=0), blocked.orders_kernel),
                                     ((50, 16), "int32", dict(axis=0), blocked.orders_kernel),
                                     ((50, 2), "int64", dict(axis=0), blocked.orders_kernel),
                                     ((3, 50, 2), "int32", dict(axis=1), lookback.scan_cols_kernel),
                                     ((100,), "int32", dict(tuple_size=2, order=2), blocked.orders_kernel),
                                     ((100,), "float32", dict(tuple_size=2, order=2), lookback.scan_2d_kernel),
                                     ((99,), "int32", dict(tuple_size=3, order=2), blocked.orders_kernel),
                                     ((50, 32), "int32", dict(axis=0), lookback.scan_2d_kernel),
                                     ((50, 8), "int64", dict(axis=0), blocked.orders_kernel),
                                     ((50, 16), "int64", dict(axis=0), lookback.scan_2d_kernel)):
        kernels_run.clear()
        x = random_data(rng, dtype, shape)
        op = kw.pop("op", "add")
        got = ps.scan(to_device(x), op, backend="triton", **kw)
        assert kernels_run == [kernel], (shape, dtype, kw)
        np.testing.assert_allclose(got.cpu().numpy(), ps.scan(x, op, backend="cpu", **kw), rtol=1e-5)


@pytest.mark.gpu
@pytest.mark.skipif(not CUDA, reason="needs a CUDA device")
@pytest.mark.parametrize("dtype", ["int32", "int64"])  # one and two status words per tile
def test_repeated_large_runs_bitwise_identical(dtype):
    """A race shows as a result that changes between runs."""
    rng = np.random.default_rng(13)
    x = to_device(random_data(rng, dtype, (1 << 26) + 3))
    expected = np.cumsum(x.cpu().numpy(), dtype=dtype)
    first = ps.scan(x)
    for _ in range(5):
        again = ps.scan(x)
        assert torch.equal(first, again)
    np.testing.assert_array_equal(first.cpu().numpy(), expected)


@pytest.mark.parametrize("shape,axis", [((1000,), None), ((300, 4), 0)])
def test_deterministic_chained_scan(shape, axis):
    """deterministic=True: the chained hand-off gives the same integers as the
    look-back, and floats that are bitwise identical from run to run."""
    rng = np.random.default_rng(23)
    if CUDA:
        shape = tuple(d * 1000 for d in shape[:1]) + shape[1:]
    xi = to_device(random_data(rng, "int64", shape))
    np.testing.assert_array_equal(ps.scan(xi, axis=axis, deterministic=True, backend="triton").cpu().numpy(),
                                  ps.scan(xi.cpu().numpy(), axis=axis))
    xf = to_device(random_data(rng, "float32", shape))
    first = ps.scan(xf, axis=axis, deterministic=True, backend="triton")
    for _ in range(3 if CUDA else 1):
        assert torch.equal(first, ps.scan(xf, axis=axis, deterministic=True, backend="triton"))
    x = xf.cpu().numpy()
    assert_scan_equal(first, reference(x, "add", axis=axis), **tolerance_for(x, "add", axis=axis))


CAPPED_CASES = [("int64", 1, 1), ("float64", 1, 1), ("int32", 2, 1), ("int32", 5, 1), ("int32", 1, 3),
                ("int32", 1, 4), ("int64", 1, 4)]


@pytest.mark.parametrize("occupancy", [0, 4, 6])
@pytest.mark.parametrize("dtype,order,tuple_size", CAPPED_CASES)
def test_register_caps_give_the_same_results(dtype, order, tuple_size, occupancy):
    """Tiles forced to a register cap (TileConfig.occupancy -> maxnreg: ptxas spills
    what does not fit) compute what the uncapped kernels do: the plain 1-D kernel,
    order 2 with one look-back, the loop over orders, masked columns (K = 3) and the
    2-D kernel, against the reference, poisoned outputs.  In the interpreter the
    cap is ignored (no registers) and the logic runs the same."""
    rng = np.random.default_rng(order * 10 + tuple_size + occupancy)
    n = tuple_size * tuples_per_lane(tuple_size)
    x = random_data(rng, dtype, n) if dtype != "float64" else rng.integers(-9, 10, n).astype(dtype)
    out = to_device(np.full(n, np.nan if dtype == "float64" else -77, dtype))
    config = tiles.TileConfig(block=2048 if CUDA else 32, num_warps=4 if CUDA else 1, window=16,
                               occupancy=occupancy)
    planner.set_override(config)
    try:
        ps.scan(to_device(x), order=order, tuple_size=tuple_size, out=out, backend="triton")
    finally:
        planner.set_override(None)
    np.testing.assert_array_equal(out.cpu().numpy(), reference(x, "add", order=order, tuple_size=tuple_size),
                                  err_msg=f"cap {tiles.register_cap(config)}")


def test_order_is_one_launch(kernels_run):
    """Order q and tuple size s read and write once: a single kernel launch."""
    x = to_device(random_data(np.random.default_rng(5), "int32", 5 * 97))
    ps.scan(x, order=8, tuple_size=5, backend="triton")
    ps.scan(x, order=3, inclusive=False, backend="triton")
    assert len(kernels_run) == 2
