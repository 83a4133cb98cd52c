"""The GPU radix sort's kernels (prefixscan/primitives/sort/triton.py, triton_kernels.py).

What every backend shares (dtypes, NaN, -0.0, stability, values, axes, unique,
run_length_encode) is tested in tests/algorithms/test_sort.py; here what is
particular to Onesweep on the engine: one histogram launch, then one launch per
digit pass that moves keys (the passes whose digit is the same for every key are
not launched), the ping-pong of the payload, the tile's limits, and on the device
large sizes, more than 2^31 keys and bitwise repeats.
"""

from __future__ import annotations

import numpy as np
import pytest

from .device import CUDA, DEVICE, DEVICE_MARK, torch

import prefixscan as ps  # noqa: E402
from prefixscan.testing import reference_argsort  # noqa: E402

pytestmark = DEVICE_MARK


def _tensor(a):
    return torch.from_numpy(np.array(a, copy=True)).to(DEVICE)


def test_one_launch_per_digit_pass_that_moves_keys(kernels_run, rng):
    """int64 keys below 2^8 take two of sixteen 4-bit passes, key_bits=3 one, all-equal
    keys none (the histogram alone, read back once); each result against the reference."""
    from prefixscan.primitives.sort.triton_kernels import digit_pass_kernel, histogram_kernel

    n = 40
    x = rng.integers(0, 256, n)
    x[:2] = [0, 255]  # both digits vary
    got, moved = ps.sort(_tensor(x), values=_tensor(x * 3), backend="triton")
    assert kernels_run == [histogram_kernel, digit_pass_kernel, digit_pass_kernel]
    np.testing.assert_array_equal(got.cpu().numpy(), np.sort(x))
    np.testing.assert_array_equal(moved.cpu().numpy(), np.sort(x) * 3)
    kernels_run.clear()
    small = x % 8
    perm = ps.argsort(_tensor(small), key_bits=3, descending=True, backend="triton")
    assert kernels_run == [histogram_kernel, digit_pass_kernel]
    np.testing.assert_array_equal(perm.cpu().numpy(), reference_argsort(small, descending=True))
    kernels_run.clear()
    same = np.full(n, -3.5, np.float32)
    perm = ps.argsort(_tensor(same), backend="triton")
    assert kernels_run == [histogram_kernel]
    np.testing.assert_array_equal(perm.cpu().numpy(), np.arange(n))


def test_argsort_index_through_three_passes(rng):
    """argsort's payload: the index written by the first pass (int32), copied by the
    middle one, widened to int64 by the last; keys not written by the last pass."""
    n = 45  # two tiles in the interpreter
    x = rng.integers(0, 1 << 12, n).astype(np.int32)
    x[:2] = [0, (1 << 12) - 1]
    perm = ps.argsort(_tensor(x), backend="triton")
    assert perm.dtype == torch.int64
    np.testing.assert_array_equal(perm.cpu().numpy(), np.argsort(x, kind="stable"))


def test_sort_tile_limits():
    from prefixscan.primitives.sort.triton import SortTile
    from prefixscan.primitives.sort.triton_kernels import MAX_BLOCK

    for bad in (dict(block=48), dict(window=3), dict(hist_block=100)):
        with pytest.raises(ValueError, match="power of two"):
            SortTile(**{**dict(block=64, num_warps=2), **bad})
    with pytest.raises(ValueError, match="at most"):
        SortTile(block=2 * MAX_BLOCK, num_warps=8)
    with pytest.raises(ValueError, match="rank must be one of"):
        SortTile(block=64, num_warps=2, rank="warp")


@pytest.mark.parametrize("rank, block", [("columns", 32), ("packed", 32), ("packed", 128)])
def test_every_ranking_under_a_forced_tile(rng, rank, block):
    """Both rankings of the digit pass (eight block-wide cumulative sums; packed 8-bit
    counters scanned along chunks of 32 keys: one chunk a tile, or four), through the
    public functions under forced_tile: partial last tiles, every digit, signed and
    float keys, a payload, argsort."""
    from prefixscan.primitives.sort.triton import SortTile, forced_tile

    tile = SortTile(block=block, num_warps=1, window=2, hist_block=32, hist_items=2, rank=rank)
    x = rng.integers(-300, 300, 203).astype(np.int16)
    f = rng.standard_normal(77).astype(np.float32)
    f[::9] = np.nan
    with forced_tile(tile):
        np.testing.assert_array_equal(ps.argsort(_tensor(x), backend="triton").cpu().numpy(),
                                      np.argsort(x, kind="stable"))
        got, moved = ps.sort(_tensor(f), values=_tensor(np.arange(77, dtype=np.int32)), backend="triton")
        order = np.argsort(f, kind="stable")
        np.testing.assert_array_equal(got.cpu().numpy(), f[order])
        np.testing.assert_array_equal(moved.cpu().numpy(), order)
    with pytest.raises(TypeError, match="SortTile"):
        with forced_tile((32, 1)):
            pass


def test_a_given_tile_and_window(rng):
    """sort_lanes with a tile of 16 keys and a look-back window of 2: seven tiles per
    lane, two lanes, the look-back stepping back past several windows."""
    from prefixscan.primitives.sort.keys import key_code
    from prefixscan.primitives.sort.triton import SortTile, sort_lanes

    tile = SortTile(block=16, num_warps=1, window=2, hist_block=16, hist_items=2)
    keys = rng.integers(0, 16, (2, 100)).astype(np.uint8)
    got, perm = sort_lanes(_tensor(keys), key_code("uint8"), argsort=True, tile=tile)
    np.testing.assert_array_equal(perm.cpu().numpy(), np.argsort(keys, axis=-1, kind="stable"))
    np.testing.assert_array_equal(got.cpu().numpy(), np.sort(keys, axis=-1))


# ---------------------------------------------------------------------------
# On the device.

@pytest.mark.gpu
@pytest.mark.skipif(not CUDA, reason="needs a CUDA device")
@pytest.mark.parametrize("dtype", ["int32", "float32", "int64", "float64", "uint16", "bfloat16"])
def test_large_sorts_against_torch(dtype):
    """2^24 + 3 keys (thousands of tiles) of every width: keys, argsort, a values array,
    against torch's stable sort; then rows of (4099, 1031) along both axes."""
    gen = torch.Generator(device=DEVICE).manual_seed(24)
    n = (1 << 24) + 3
    if dtype.startswith(("float", "bfloat")):
        x = torch.randn(n, device=DEVICE, generator=gen).to(getattr(torch, dtype))
        x[::1001] = float("nan")
        x[1::997] = -0.0
    else:
        x = torch.randint(-1000, 1000 if dtype != "uint16" else 60000, (n,), device=DEVICE, generator=gen)
        x = (x.abs() if dtype == "uint16" else x).to(getattr(torch, dtype))
    expected = torch.sort(x if dtype != "uint16" else x.to(torch.int32), stable=True)
    assert torch.equal(ps.argsort(x), expected.indices)
    got, moved = ps.sort(x, values=torch.arange(n, device=DEVICE, dtype=torch.int32))
    assert torch.equal(moved.to(torch.int64), expected.indices)
    bits = x.view(torch.int16) if dtype == "uint16" else x  # torch indexes no uint16 tensor on CUDA
    assert torch.equal(got.view(torch.uint8), bits[expected.indices].view(torch.uint8))
    rows = x[: 4099 * 1031].reshape(4099, 1031)
    for axis in (-1, 0):
        wide = rows if dtype != "uint16" else rows.to(torch.int32)
        assert torch.equal(ps.argsort(rows, axis=axis), torch.sort(wide, dim=axis, stable=True).indices)


@pytest.mark.gpu
@pytest.mark.skipif(not CUDA, reason="needs a CUDA device")
def test_unique_and_runs_against_torch():
    gen = torch.Generator(device=DEVICE).manual_seed(27)
    x = torch.randint(0, 1 << 16, ((1 << 24) + 1,), device=DEVICE, generator=gen, dtype=torch.int32)
    values, inverse, counts = torch.unique(x, return_inverse=True, return_counts=True)
    got = ps.unique(x, return_inverse=True, return_counts=True)
    for g, e in zip(got, (values, inverse, counts)):
        assert torch.equal(g, e)
    runs = torch.repeat_interleave(x[:100_000], torch.randint(1, 5, (100_000,), device=DEVICE, generator=gen))
    for g, e in zip(ps.run_length_encode(runs), torch.unique_consecutive(runs, return_counts=True)):
        assert torch.equal(g, e)


@pytest.mark.gpu
@pytest.mark.skipif(not CUDA, reason="needs a CUDA device")
def test_bitwise_repeats():
    """Ten argsorts of 2^26 float32 keys with many equal ones are bitwise equal (a race
    in the per-digit look-back would show as a changed permutation)."""
    gen = torch.Generator(device=DEVICE).manual_seed(26)
    x = torch.randint(0, 64, (1 << 26,), device=DEVICE, generator=gen).to(torch.float32)
    first = ps.argsort(x)
    assert torch.equal(first, torch.sort(x, stable=True).indices)
    for _ in range(10):
        assert torch.equal(ps.argsort(x), first)


@pytest.mark.gpu
@pytest.mark.slow
@pytest.mark.skipif(not CUDA, reason="needs a CUDA device")
def test_past_two_to_the_31_keys():
    """argsort of 2^31 + 5 int8 keys after a small sort (the wide form: int64 counts
    and lengths, int64 indices throughout): a permutation, in order, stable."""
    small = torch.tensor([3, 1, 2], dtype=torch.int8, device=DEVICE)
    assert ps.argsort(small).tolist() == [1, 2, 0]
    n = (1 << 31) + 5
    gen = torch.Generator(device=DEVICE).manual_seed(31)
    x = torch.randint(-128, 128, (n,), device=DEVICE, generator=gen, dtype=torch.int8)
    x[-3:] = torch.tensor([-128, 127, -128], dtype=torch.int8)
    perm = ps.argsort(x)
    assert perm.dtype == torch.int64 and perm.shape == (n,)
    seen = torch.zeros(n, dtype=torch.bool, device=DEVICE)
    seen[perm] = True
    assert bool(seen.all())  # a permutation
    del seen
    keys = x[perm]
    assert bool(((keys[1:] > keys[:-1]) | ((keys[1:] == keys[:-1]) & (perm[1:] > perm[:-1]))).all())  # stable
    assert int(perm[-1]) == n - 2  # the last 127
