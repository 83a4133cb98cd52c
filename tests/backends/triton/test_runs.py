"""The runs mode of the compaction kernel: ``unique`` and ``run_length_encode`` on the
GPU backend (prefixscan/primitives/compaction/triton.py ``run_fields``; the sort's
entry points in prefixscan/primitives/sort/triton.py).

A tile compares each key with the one before it (keys equal by value: -0.0 equals
0.0; a NaN equals nothing for run_length_encode and every NaN for unique; 16-bit
floats through float32), keeps the heads of the runs and writes each run's length,
finishing runs that go on past the tile with the later tiles' elements.  Against the
plain-loop references of prefixscan.testing on every dtype, at sizes around the
interpreter's 32-element tile (0, 1, 2, one tile, primes, runs longer than a tile,
runs that start exactly at a tile), with outputs poisoned first; on the device
larger sizes around its 2048-element tile and millions of elements against torch.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from .device import CUDA, DEVICE, DEVICE_MARK, torch

import prefixscan as ps  # noqa: E402
from prefixscan.primitives.compaction import triton as compaction  # noqa: E402
from prefixscan.testing import reference_run_length_encode, reference_unique  # noqa: E402

pytestmark = DEVICE_MARK

DTYPES = ["bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64", "float16", "bfloat16",
          "float32", "float64"]
#: Around the interpreter's 32-element tile (and a single tile of 16); on the device
#: also around its 2048-element tile.
SIZES = [0, 1, 2, 17, 31, 32, 33, 64, 65, 97] + ([2047, 2048, 2049, 4096, 4099, 100_003] if CUDA else [])
#: Float keys' specials: NaNs of two payloads and both signs, both zeros, infinities.
FLOAT_SPECIALS = {"float16": (np.uint16, [0x7E00, 0x7C01, 0xFE00, 0x8000, 0x0000, 0x7C00, 0xFC00, 0x0001]),
                  "float32": (np.uint32, [0x7FC00000, 0x7F800001, 0xFFC00000, 0x80000000, 0, 0x7F800000,
                                          0xFF800000, 1]),
                  "float64": (np.uint64, [0x7FF8000000000000, 0x7FF0000000000001, 0xFFF8000000000000,
                                          0x8000000000000000, 0, 0x7FF0000000000000, 0xFFF0000000000000, 1])}


def pool_of(rng, dtype: str, size: int) -> np.ndarray:
    """``size`` random keys of ``dtype`` and, for floats, the specials (bfloat16:
    float32 values that bfloat16 holds exactly, NaN payloads of its width)."""
    if dtype == "bool":
        return np.array([False, True])
    if dtype == "bfloat16":
        return torch.from_numpy(pool_of(rng, "float32", size)).to(torch.bfloat16).float().numpy()
    if np.dtype(dtype).kind in "iu":
        info = np.iinfo(dtype)
        return np.concatenate([rng.integers(info.min, info.max, size, dtype=dtype, endpoint=True),
                               np.array([info.min, info.max], dtype)])
    storage, specials = FLOAT_SPECIALS[dtype]
    normal = (rng.standard_normal(size) * 10.0 ** rng.integers(-3, 4, size)).astype(dtype)
    return np.concatenate([normal, np.array(specials, storage).view(dtype)])


def runs_of(rng, dtype: str, n: int, longest: int = 8) -> np.ndarray:
    """``n`` keys in runs of 1 to ``longest - 1`` equal keys (and some of 40: longer
    than a tile), adjacent NaNs among them, zeros of both signs mixed within runs."""
    pool = pool_of(rng, dtype, max(4, n // 8))
    lengths = rng.integers(1, longest, n + 1)
    lengths[rng.random(n + 1) < 0.05] = 40
    x = np.repeat(pool[rng.integers(0, pool.size, n + 1)], lengths)[:n].copy()
    if x.dtype.kind == "f":
        zeros = np.flatnonzero(x == 0)
        x[zeros] = np.where(rng.random(zeros.size) < 0.5, -0.0, 0.0).astype(x.dtype)
    return x


def place(x: np.ndarray, dtype: str):
    """Keys on the device (bfloat16: converted by torch on the host, as the reference's
    values are: CUDA's conversion gives a NaN other bits than the CPU's)."""
    t = torch.from_numpy(np.array(x, copy=True))
    return (t.to(torch.bfloat16) if dtype == "bfloat16" else t).to(DEVICE)


def bits(a) -> np.ndarray:
    """Elements as unsigned integers of their width (tensors: on the host)."""
    if isinstance(a, torch.Tensor):
        a = a.detach().cpu()
        a = a.view(torch.int16).numpy() if a.dtype == torch.bfloat16 else a.numpy()
    a = np.ascontiguousarray(a)
    return a.view(np.dtype(f"u{a.dtype.itemsize}"))


def expected_bits(values: np.ndarray, dtype: str) -> np.ndarray:
    """The reference's values as the bits of ``dtype`` (bfloat16 rounded by torch, as the keys were)."""
    if dtype == "bfloat16":
        return bits(torch.from_numpy(values).to(torch.bfloat16))
    return bits(values)


def poison(nbytes: int) -> None:
    """Leave a freed block of 0x7F bytes where the next outputs may be allocated, so
    that an element the kernel forgets to write shows as garbage, not zero."""
    block = torch.full((max(nbytes, 1),), 0x7F, dtype=torch.uint8, device=DEVICE)
    del block


@pytest.mark.parametrize("dtype", DTYPES)
def test_run_length_encode_every_dtype(rng, dtype):
    for n in SIZES:
        x = runs_of(rng, dtype, n)
        poison(16 * n)
        values, counts = ps.run_length_encode(place(x, dtype), backend="triton")
        want_values, want_counts = reference_run_length_encode(x)
        np.testing.assert_array_equal(bits(values), expected_bits(want_values, dtype), err_msg=f"n={n}")
        assert counts.dtype == torch.int64
        np.testing.assert_array_equal(counts.cpu().numpy(), want_counts, err_msg=f"n={n}")


@pytest.mark.parametrize("dtype", DTYPES)
def test_unique_every_dtype(rng, dtype):
    """Sorted keys' runs (NaNs one value) with every output, against the reference and NumPy."""
    for n in ([0, 1, 2, 33, 70] if not CUDA else [0, 1, 2, 33, 4099, 100_003]):
        x = runs_of(rng, dtype, n)
        rng.shuffle(x)
        poison(32 * n)
        values, index, inverse, counts = ps.unique(place(x, dtype), return_index=True, return_inverse=True,
                                                   return_counts=True, backend="triton")
        expected = reference_unique(x)
        np.testing.assert_array_equal(bits(values), expected_bits(expected[0], dtype), err_msg=f"n={n}")
        for got, want in zip((index, inverse, counts), expected[1:]):
            assert got.dtype == torch.int64
            np.testing.assert_array_equal(got.cpu().numpy(), want, err_msg=f"n={n}")
        if dtype != "bfloat16":  # by value: NumPy's unstable sort may pick another NaN or zero
            np.testing.assert_array_equal(values.cpu().numpy(), np.unique(x), err_msg=f"n={n}")


@pytest.mark.parametrize("flags", [(False, False, False), (True, False, False), (False, True, False),
                                   (False, False, True), (True, False, True)],
                         ids=["values", "index", "inverse", "counts", "index-counts"])
def test_unique_each_output(rng, flags):
    """Each combination of outputs (the lengths are written only for counts or inverse,
    the permutation selected only for index)."""
    x = runs_of(rng, "float32", 70 if not CUDA else 100_003)
    rng.shuffle(x)
    got = ps.unique(place(x, "float32"), return_index=flags[0], return_inverse=flags[1], return_counts=flags[2],
                   backend="triton")
    got = got if isinstance(got, tuple) else (got,)
    values, index, inverse, counts = reference_unique(x)
    want = (values,) + tuple(w for w, asked in zip((index, inverse, counts), flags) if asked)
    assert len(got) == len(want)
    np.testing.assert_array_equal(bits(got[0]), bits(want[0]))
    for g, w in zip(got[1:], want[1:]):
        np.testing.assert_array_equal(g.cpu().numpy(), w)


def structured_cases(block: int) -> dict:
    """Keys whose runs sit on tile boundaries of ``block`` elements."""
    n = 3 * block + 5
    return {"all equal": np.full(n, 7, np.int32),
            "all distinct": np.arange(n, dtype=np.int32),
            "runs of a tile": np.repeat(np.arange(4, dtype=np.int32), block)[:n],
            "runs of half a tile": np.repeat(np.arange(8, dtype=np.int32), block // 2),
            "a run over two tiles": np.concatenate([np.arange(block - 3), np.full(block + 6, -1),
                                                    np.arange(block)]).astype(np.int32),
            "one head past the first tile": np.concatenate([np.zeros(block + 1), np.ones(block + 4)]).astype(np.int32),
            "the last element alone": np.concatenate([np.zeros(2 * block - 1), np.ones(1)]).astype(np.int32)}


@pytest.mark.parametrize("case", list(structured_cases(32)))
@pytest.mark.parametrize("store", compaction.STORE_FORMS)
def test_runs_on_tile_boundaries(case, store):
    """Runs over several tiles (their lengths finished by the later tiles), tiles that
    start with a head, all heads, one head; each store form, and unique's NaN rule."""
    tile = compaction.default_tile(4, not CUDA, runs=True)
    tile = dataclasses.replace(tile, store=store)
    x = structured_cases(tile.block)[case]
    (values,), counts = compaction.run_fields([place(x, "int32")], equal_nan=False, lengths=True, tile=tile)
    want_values, want_counts = reference_run_length_encode(x)
    np.testing.assert_array_equal(values.cpu().numpy(), want_values)
    np.testing.assert_array_equal(counts.cpu().numpy(), want_counts)
    f = np.where(x % 3 == 0, np.nan, x).astype(np.float32)  # NaN runs: one run for unique, one per NaN here
    for equal_nan in (False, True):
        (values,), counts = compaction.run_fields([place(f, "float32")], equal_nan=equal_nan, lengths=True, tile=tile)
        starts = [i for i in range(f.size) if i == 0 or not (f[i] == f[i - 1] or
                                                             (equal_nan and np.isnan(f[i]) and np.isnan(f[i - 1])))]
        np.testing.assert_array_equal(bits(values), bits(f[starts]))
        np.testing.assert_array_equal(counts.cpu().numpy(), np.diff(starts + [f.size]))


def test_fields_without_lengths_and_nothing_past_the_runs(rng):
    """The launch itself with poisoned outputs: a second field moves with the key, the
    lengths where asked, and nothing is written at or past the number of runs."""
    n = 100 if not CUDA else 10_007
    x = place(runs_of(rng, "int16", n), "int16")
    payload = torch.arange(n, device=DEVICE, dtype=torch.int64) * 3
    want_values, want_counts = reference_run_length_encode(x.cpu().numpy())
    heads = np.cumsum(np.concatenate([[0], want_counts[:-1]]))
    for lengths in (False, True):
        outs = [torch.full((n,), -7, dtype=torch.int16, device=DEVICE),
                torch.full((n,), -7, dtype=torch.int64, device=DEVICE)]
        if lengths:
            outs.append(torch.full((n,), -7, dtype=torch.int64, device=DEVICE))
        count = compaction._launch_select([x, payload], None, None, outs=outs, limit=n, partition=False, tile=None,
                                          runs=(1, 0))
        k = int(count)
        assert k == want_values.size
        np.testing.assert_array_equal(outs[0][:k].cpu().numpy(), want_values)
        np.testing.assert_array_equal(outs[1][:k].cpu().numpy(), heads * 3)
        if lengths:
            np.testing.assert_array_equal(outs[2][:k].cpu().numpy(), want_counts)
        for out in outs:
            assert bool((out[k:] == -7).all())


# ---------------------------------------------------------------------------
# On the device.

@pytest.mark.gpu
@pytest.mark.skipif(not CUDA, reason="needs a CUDA device")
@pytest.mark.parametrize("dtype", ["int32", "float32", "int64", "bfloat16", "uint8"])
def test_large_run_length_encode_against_torch(dtype):
    """2^24 + 3 keys (thousands of tiles) in runs of 1-7 against
    torch.unique_consecutive (NaNs never equal, -0.0 in runs of 0.0); one run over
    every tile and no runs at all."""
    gen = torch.Generator(device=DEVICE).manual_seed(24)
    n = (1 << 24) + 3
    lengths = torch.randint(1, 8, (n // 4 + 16,), device=DEVICE, generator=gen)
    if dtype in ("float32", "bfloat16"):
        keys = torch.randint(-50, 50, lengths.shape, device=DEVICE, generator=gen).to(torch.float32) / 4
        keys[::101] = float("nan")
        x = torch.repeat_interleave(keys, lengths)[:n].contiguous()
        zeros = x == 0
        x[zeros & (torch.rand(n, device=DEVICE, generator=gen) < 0.5)] = -0.0
        x = x.to(getattr(torch, dtype))
    else:
        top = 200 if dtype == "uint8" else 1 << 20
        keys = torch.randint(0, top, lengths.shape, device=DEVICE, generator=gen).to(getattr(torch, dtype))
        x = torch.repeat_interleave(keys, lengths)[:n].contiguous()
    cases = [x, torch.full((n,), 3, dtype=x.dtype, device=DEVICE)]
    if dtype in ("int32", "int64"):
        cases.append(torch.arange(n, device=DEVICE).to(x.dtype))
    view = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[x.element_size()]
    for case in cases:
        values, counts = ps.run_length_encode(case, backend="triton")
        want_values, want_counts = torch.unique_consecutive(case, return_counts=True)
        assert torch.equal(counts, want_counts)
        assert values.shape == want_values.shape
        starts = torch.cumsum(counts, 0) - counts
        assert torch.equal(values.view(view), case.view(view)[starts])  # each run's first element, bit for bit


@pytest.mark.gpu
@pytest.mark.skipif(not CUDA, reason="needs a CUDA device")
def test_large_unique_against_torch_and_numpy():
    """2^24 + 3 int32 keys against torch.unique; float32 keys with NaNs (one value) and
    -0.0 against numpy.unique."""
    gen = torch.Generator(device=DEVICE).manual_seed(25)
    n = (1 << 24) + 3
    x = torch.randint(0, 1 << 18, (n,), device=DEVICE, generator=gen, dtype=torch.int32)
    got = ps.unique(x, return_inverse=True, return_counts=True, backend="triton")
    for g, e in zip(got, torch.unique(x, return_inverse=True, return_counts=True)):
        assert torch.equal(g, e)
    f = (torch.randint(-1000, 1000, (n,), device=DEVICE, generator=gen).to(torch.float32) / 8)
    f[::977] = float("nan")
    f[::1009] = -0.0
    values, index, counts = ps.unique(f, return_index=True, return_counts=True, backend="triton")
    want_values, want_index, want_counts = np.unique(f.cpu().numpy(), return_index=True, return_counts=True)
    np.testing.assert_array_equal(values.cpu().numpy(), want_values)
    np.testing.assert_array_equal(counts.cpu().numpy(), want_counts)
    # numpy's index is the first occurrence; ours too (a stable sort): equal keys, equal index
    np.testing.assert_array_equal(index.cpu().numpy(), want_index)
