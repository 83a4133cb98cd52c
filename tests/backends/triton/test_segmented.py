"""The single-pass segmented scan kernel (prefixscan/primitives/segmented/triton.py).

Behaviour shared with the CPU backend (operators, flags/offsets/keys,
inclusive/exclusive/reverse, init, dtype, out, bad input) is tested on every
backend in tests/algorithms/test_segmented.py; here what is particular to the
kernel: one launch, offsets spread over many look-back steps and tiles full of
empty segments, and on the device sizes past 2^31 and bitwise repeats.
"""

from __future__ import annotations

import numpy as np
import pytest

from .device import CUDA, DEVICE, DEVICE_MARK, torch

import prefixscan as ps  # noqa: E402
from prefixscan.testing import reference_segmented_scan  # noqa: E402

pytestmark = DEVICE_MARK


def _tensor(a):
    return torch.from_numpy(np.array(a, copy=True)).to(DEVICE)


def _segmented(x, **kwargs):
    return ps.segmented_scan(x, backend="triton", **kwargs)


def test_one_pass_of_the_segmented_kernel(kernels_run, rng):
    """Offsets: the bit-setting launch over the offsets, then one pass of the segmented
    kernel over x; flags and keys: that pass alone."""
    from prefixscan.primitives.segmented.triton import mark_offsets_kernel, segmented_kernel

    n = 1000 if CUDA else 150  # several tiles either way (interpreter tiles: 32 elements)
    x = rng.integers(-100, 100, n).astype(np.int32)
    offsets = np.sort(rng.integers(0, n, 9))
    offsets[0] = 0
    got = _segmented(_tensor(x), offsets=_tensor(offsets))
    assert kernels_run == [mark_offsets_kernel, segmented_kernel]
    np.testing.assert_array_equal(got.cpu().numpy(), reference_segmented_scan(x, offsets=offsets))
    kernels_run.clear()
    heads = np.zeros(n, bool)
    heads[offsets] = True
    got = _segmented(_tensor(x), flags=_tensor(heads))
    assert kernels_run == [segmented_kernel]
    np.testing.assert_array_equal(got.cpu().numpy(), reference_segmented_scan(x, offsets=offsets))


@pytest.mark.parametrize("reverse", [False, True], ids=["fwd", "rev"])
def test_tiles_full_of_empty_segments(rng, reverse):
    """More offsets inside one tile than the tile has elements (empty segments): bits
    set by several offsets each, at tile edges too."""
    n = 100
    x = rng.integers(-100, 100, n).astype(np.int64)
    offsets = np.sort(np.concatenate([[0], np.full(70, 37), np.full(40, 64), rng.integers(0, n + 1, 20), [n, n]]))
    for inclusive in (True, False):
        got = _segmented(_tensor(x), offsets=_tensor(offsets), inclusive=inclusive, reverse=reverse)
        expected = reference_segmented_scan(x, offsets=offsets, inclusive=inclusive, reverse=reverse)
        np.testing.assert_array_equal(got.cpu().numpy(), expected)


VARIANTS = {"16x1": dict(block=16, num_warps=1), "64x1": dict(block=64, num_warps=1),
            "4/thread": dict(elements_per_thread=4)}


@pytest.mark.parametrize("variant", sorted(VARIANTS))
@pytest.mark.parametrize("kind", ["offsets", "flags", "keys"])
def test_kernel_tiles(rng, variant, kind):
    """Tiles of :class:`SegmentedTile` against the reference, every segment description:
    offsets with empty segments, duplicates inside and at tile edges and a trailing n,
    forward and reverse, inclusive and exclusive."""
    from prefixscan.primitives.segmented.triton import SegmentedTile, forced_tile

    tile = SegmentedTile(**VARIANTS[variant])
    n = 97
    x = rng.integers(-100, 100, n).astype(np.int64)
    offsets = np.sort(np.concatenate([[0, 16, 16, 32, 48, 64, n, n], np.full(20, 37), rng.integers(0, n, 9)]))
    heads = np.zeros(n, bool)
    heads[offsets[offsets < n]] = True
    how = {"offsets": dict(offsets=offsets), "flags": dict(flags=heads),
           "keys": dict(keys=np.cumsum(heads).astype(np.int16))}[kind]
    cases = [(True, False), (False, False), (True, True), (False, True)]
    with forced_tile(tile):
        for inclusive, reverse in cases:
            given = {k: _tensor(v) for k, v in how.items()}
            got = _segmented(_tensor(x), inclusive=inclusive, reverse=reverse, **given)
            expected = reference_segmented_scan(x, inclusive=inclusive, reverse=reverse, **how)
            np.testing.assert_array_equal(got.cpu().numpy(), expected, err_msg=f"{inclusive=} {reverse=}")


def _fields_of(nbytes: int) -> tuple:
    """torch dtypes of a struct of ``nbytes`` bytes: 8-, 4-, 2- and 1-byte fields."""
    fields = []
    for dtype in (torch.int64, torch.int32, torch.int16, torch.int8):
        while nbytes >= dtype.itemsize:
            fields.append(dtype)
            nbytes -= dtype.itemsize
    return tuple(fields)


@pytest.mark.parametrize("elements_per_thread", [1, 2, 3, 16, 64])
def test_planned_tile_is_a_power_of_two_for_every_struct_size(elements_per_thread):
    """The launcher's tile for structs of 1 to 64 bytes (the planner's defaults, as on a
    device without a tuned table, capped at ``elements_per_thread`` per thread) is a
    power of two of at least 16 elements: 12-, 6- and 24-byte structs (tuple sizes 3 of
    int32, int16, int64) once gave 682- or 1365-element tiles, which ``tl.arange``
    refuses to compile."""
    from prefixscan.primitives.segmented.triton import SegmentedTile, forced_tile, plan_tile

    with forced_tile(SegmentedTile(elements_per_thread=elements_per_thread)):
        for nbytes in range(1, 65):
            accs = _fields_of(nbytes)
            assert sum(a.itemsize for a in accs) == nbytes
            for n in (1000, 1 << 20, 1 << 27):
                _, _, block, num_warps, single = plan_tile(torch.device("cpu"), accs, None, n, interpreter=False)
                assert block >= 16 and block & (block - 1) == 0, (nbytes, n, block)
                if not single:  # the cap holds: at most elements_per_thread words of 4 bytes per thread
                    assert block * max(nbytes, 4) <= max(16 * max(nbytes, 4),
                                                         elements_per_thread * 32 * num_warps * 4), (nbytes, block)


def test_capped_block_rounds_down_to_a_power_of_two():
    from prefixscan.primitives.segmented.triton import capped_block

    assert capped_block(4096, 16, 4, 12) == 512  # 682 elements of 12 bytes fit; 512 is the power of two below
    assert capped_block(4096, 16, 4, 6) == 1024  # 6 bytes count as 8: 1024
    assert capped_block(8192, 16, 8, 24) == 512  # 682
    assert capped_block(256, 16, 4, 4) == 256  # under the cap: the planner's block
    assert capped_block(4096, 1, 1, 64) == 16  # never under 16


def _sum3(a, b):
    return a[0] + b[0], a[1] + b[1], a[2] + b[2]


@pytest.mark.parametrize("dtype", ["int32", "int16", "int64"])
def test_three_field_struct_under_a_capped_tile(rng, dtype):
    """A 3-field struct (12, 6 or 24 bytes) segmented scan whose tile the cap sets: at 2
    elements per thread of one warp the cap is 21, 42 or 10 elements, rounded down to a
    power of two (tl.arange refused 21 and 42)."""
    from prefixscan.primitives.segmented.triton import SegmentedTile, forced_tile

    n = 100
    low, high = (-50, 50)
    fields = tuple(rng.integers(low, high, n).astype(dtype) for _ in range(3))
    offsets = np.sort(np.concatenate([[0], rng.integers(0, n, 6)]))
    monoid = ps.Monoid(_sum3, (0, 0, 0), name="sum3", commutative=True)
    tile = SegmentedTile(num_warps=1, elements_per_thread=2)
    with forced_tile(tile):
        for inclusive in (True, False):
            got = _segmented(tuple(_tensor(f) for f in fields), op=monoid, offsets=_tensor(offsets),
                             inclusive=inclusive)
            for g, f in zip(got, fields):
                expected = reference_segmented_scan(f, offsets=offsets, inclusive=inclusive)
                np.testing.assert_array_equal(g.cpu().numpy(), expected, err_msg=f"{inclusive=}")


@pytest.mark.gpu
@pytest.mark.skipif(not CUDA, reason="needs a CUDA device")
@pytest.mark.parametrize("dtype", ["int32", "int16", "int64"])
def test_three_field_structs_compile_with_the_planned_tile(dtype):
    """12-, 6- and 24-byte structs with the planner's tile (capped per thread): these
    failed to compile (CompilationError from tl.arange) before the cap was rounded to a
    power of two.  Against the CPU backend."""
    rng = np.random.default_rng(12)
    n = 100_003
    fields = tuple(rng.integers(-50, 50, n).astype(dtype) for _ in range(3))
    offsets = np.unique(np.concatenate([[0], rng.integers(0, n, 300)]))
    monoid = ps.Monoid(_sum3, (0, 0, 0), name="sum3", commutative=True)
    for inclusive in (True, False):
        got = _segmented(tuple(_tensor(f) for f in fields), op=monoid, offsets=_tensor(offsets), inclusive=inclusive)
        expected = ps.segmented_scan(fields, monoid, offsets=offsets, inclusive=inclusive, backend="cpu")
        for g, e in zip(got, expected):
            np.testing.assert_array_equal(g.cpu().numpy(), e)


def test_tile_arguments_are_checked():
    from prefixscan.primitives.segmented.triton import SegmentedTile

    for bad in (dict(block=48), dict(elements_per_thread=0)):
        with pytest.raises(ValueError):
            SegmentedTile(**bad)


def test_offsets_as_a_list_and_any_integer_dtype(rng):
    n = 90
    x = rng.integers(-100, 100, n).astype(np.int32)
    offsets = [0, 5, 5, 33, 64, 65, 89]
    expected = reference_segmented_scan(x, offsets=offsets)
    # host arrays (NumPy) are copied to x's device as lists are
    for given in (offsets, np.array(offsets, np.uint16), _tensor(np.array(offsets, np.int32)),
                  _tensor(np.array(offsets, np.uint8))):
        np.testing.assert_array_equal(_segmented(_tensor(x), offsets=given).cpu().numpy(), expected)
    keys = np.repeat(np.arange(n // 3), 3)[:n]
    for dtype in (np.int8, np.uint8, np.int64, bool):
        got = _segmented(_tensor(x), keys=_tensor(keys.astype(dtype)))
        np.testing.assert_array_equal(got.cpu().numpy(), reference_segmented_scan(x, keys=keys.astype(dtype)))
    np.testing.assert_array_equal(_segmented(_tensor(x), keys=keys).cpu().numpy(), reference_segmented_scan(x, keys=keys))
    flags = np.zeros(n, bool)
    flags[[0, 7, 40]] = True
    np.testing.assert_array_equal(_segmented(_tensor(x), flags=flags).cpu().numpy(),
                                  reference_segmented_scan(x, flags=flags))


# ---------------------------------------------------------------------------
# On the device.

def _sample_segments(offsets: np.ndarray, n: int, rng, count: int) -> list[tuple[int, int]]:
    """Some [start, end) segments of a CSR description: random ones, the first, the last
    and the one holding element 2^31 (where 64-bit positions begin)."""
    ends = np.append(offsets[1:], n)
    picks = set(rng.integers(0, len(offsets), count).tolist()) | {0, len(offsets) - 1}
    picks.add(int(np.searchsorted(offsets, 1 << 31, side="right")) - 1)
    return [(int(offsets[i]), int(ends[i])) for i in sorted(picks) if 0 <= i < len(offsets)]


@pytest.mark.gpu
@pytest.mark.skipif(not CUDA, reason="needs a CUDA device")
@pytest.mark.parametrize("how", ["offsets", "flags"])
def test_past_two_to_the_31_elements(how):
    """int8 sums of 2^31 + 7 elements after a small scan (a kernel compiled for 32-bit
    lengths must not be reused for 64-bit ones); segments checked by sampling."""
    rng = np.random.default_rng(31)
    small = torch.arange(1, 100, dtype=torch.int8, device=DEVICE)
    np.testing.assert_array_equal(_segmented(small, offsets=[0, 50]).cpu().numpy(),
                                  reference_segmented_scan(small.cpu().numpy(), offsets=[0, 50]))
    n = (1 << 31) + 7
    x = torch.randint(-100, 100, (n,), dtype=torch.int8, device=DEVICE)
    lengths = rng.integers(1, 3000, n // 1000 + 10)
    starts = np.concatenate([[0], np.cumsum(lengths)])
    starts = starts[starts < n]
    starts = np.sort(np.concatenate([starts, [(1 << 31) - 3, (1 << 31) + 1]]))  # heads around 2^31
    if how == "offsets":
        y = _segmented(x, offsets=torch.from_numpy(starts).to(DEVICE))
    else:
        flags = torch.zeros(n, dtype=torch.bool, device=DEVICE)
        flags[torch.from_numpy(starts).to(DEVICE)] = True
        y = _segmented(x, flags=flags)
        del flags
    for a, b in _sample_segments(starts, n, rng, 200):
        seg = x[a:b].cpu().numpy()
        expected = np.cumsum(seg, dtype=np.int8)  # wraps like int8
        np.testing.assert_array_equal(y[a:b].cpu().numpy(), expected, err_msg=f"segment [{a}, {b})")


@pytest.mark.gpu
@pytest.mark.skipif(not CUDA, reason="needs a CUDA device")
@pytest.mark.parametrize("how", ["offsets", "flags", "keys"])
def test_bitwise_repeats_and_the_torch_idiom(how):
    """Integer sums of 2^26 elements, random segment lengths (1 to 10^5): ten runs are
    bitwise equal, and equal to a cumsum minus each segment's base."""
    rng = np.random.default_rng(26)
    n = 1 << 26
    x = torch.randint(-(1 << 30), 1 << 30, (n,), dtype=torch.int32, device=DEVICE)
    lengths = np.exp(rng.uniform(0, np.log(1e5), n // 10)).astype(np.int64) + 1
    starts = np.concatenate([[0], np.cumsum(lengths)])
    starts = torch.from_numpy(starts[starts < n]).to(DEVICE)
    heads = torch.zeros(n, dtype=torch.bool, device=DEVICE)
    heads[starts] = True
    given = {"offsets": starts, "flags": heads, "keys": torch.cumsum(heads, 0, dtype=torch.int32) * 5}[how]
    first = _segmented(x, **{how: given})
    for _ in range(10):
        assert torch.equal(_segmented(x, **{how: given}), first)
    total = torch.cumsum(x, 0, dtype=torch.int64)
    segment = torch.cumsum(heads, 0) - 1
    base = (total - x.to(torch.int64))[starts][segment]
    assert torch.equal(first, (total - base).to(torch.int32))  # int32 wraps as the low bits


@pytest.mark.gpu
@pytest.mark.skipif(not CUDA, reason="needs a CUDA device")
def test_large_float_and_struct_scans_on_the_device():
    from prefixscan.testing import affine_monoid, assert_scan_equal, matmul2_data, matmul2_monoid

    rng = np.random.default_rng(17)
    n = 3_000_017
    x = rng.standard_normal(n).astype(np.float32)
    offsets = np.unique(np.concatenate([[0], rng.integers(0, n, 3000)]))
    for reverse in (False, True):
        got = _segmented(_tensor(x), offsets=_tensor(offsets), reverse=reverse, init=0.5).cpu().numpy()
        expected = ps.segmented_scan(x.astype(np.float64), offsets=offsets, reverse=reverse, init=0.5)
        assert_scan_equal(got, expected.astype(np.float32), mag=np.abs(expected) + 1e3, n=n)
    m = 200_003
    a = rng.integers(-3, 4, m).astype(np.int64), rng.integers(-1000, 1000, m).astype(np.int64)
    flags = rng.random(m) < 0.001
    for monoid, data in [(affine_monoid(), a), (matmul2_monoid(), matmul2_data(rng, m, "int64"))]:
        for reverse in (False, True):
            got = _segmented(tuple(_tensor(f) for f in data), op=monoid, flags=_tensor(flags), reverse=reverse)
            expected = ps.segmented_scan(data, monoid, flags=flags, reverse=reverse)
            for g, e in zip(got, expected):
                np.testing.assert_array_equal(g.cpu().numpy(), e)


@pytest.mark.gpu
@pytest.mark.skipif(not CUDA, reason="needs a CUDA device")
def test_segments_on_another_device_are_refused():
    """Tensors on another device are refused naming the argument; host arrays (NumPy)
    are copied over, as lists are."""
    x = torch.arange(10, device=DEVICE)
    out = torch.full((10,), -7, device=DEVICE)
    with pytest.raises(ValueError, match="flags"):
        _segmented(x, flags=torch.zeros(10, dtype=torch.bool), out=out)
    with pytest.raises(ValueError, match="keys"):
        _segmented(x, keys=torch.zeros(10), out=out)
    with pytest.raises(ValueError, match="offsets"):
        _segmented(x, offsets=torch.tensor([0, 3]), out=out)
    assert bool((out == -7).all())
    assert _segmented(x, offsets=np.array([0, 3]), out=out) is out
    np.testing.assert_array_equal(out.cpu().numpy(), reference_segmented_scan(np.arange(10), offsets=[0, 3]))


def test_read_only_host_segments_raise_no_warning(rng):
    """Read-only NumPy offsets and flags (a broadcast view, a memory map) are copied, not
    handed to torch.from_numpy, which warns of them; the recurrence's offsets too."""
    import warnings

    x = rng.integers(-9, 9, 10).astype(np.int32)
    offsets = np.array([0, 3, 7])
    offsets.flags.writeable = False
    flags = np.broadcast_to(np.array([False]), (10,))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = _segmented(_tensor(x), offsets=offsets)
        np.testing.assert_array_equal(got.cpu().numpy(), reference_segmented_scan(x, offsets=[0, 3, 7]))
        np.testing.assert_array_equal(_segmented(_tensor(x), flags=flags).cpu().numpy(), np.cumsum(x))
        a = torch.full((2, 10), 0.5, device=DEVICE)
        ps.linear_recurrence(a, a, offsets=offsets, backend="triton")
