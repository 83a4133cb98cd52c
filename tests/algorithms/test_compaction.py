"""compact (primitives/compaction/: api.py; the one-pass kernels of triton.py and
compiled.py) against x[mask] and the plain-loop reference of prefixscan.testing, on
every backend present.
"""

from __future__ import annotations

import dataclasses

import importlib
import importlib.util

import numpy as np
import pytest

import prefixscan as ps
from prefixscan.testing import random_array, reference_compact

# Tile boundaries: the interpreter's tiles hold 32 elements, the GPU's 1024-4096.
SIZES = [0, 1, 2, 7, 31, 32, 33, 63, 64, 65, 97, 127, 128, 129, 257, 1021]
GPU_SIZES = [1023, 1024, 1025, 2047, 2048, 2049, 4095, 4096, 4097, 65537, 1_000_003]


def expected_fixed(x, mask, size, fill):
    """``compact(size=...)`` by the reference: the first selected elements, then fill."""
    selected = reference_compact(x, mask)
    out = np.full(size, fill, dtype=x.dtype)
    kept = min(size, selected.shape[0])
    out[:kept] = selected[:kept]
    return out


def masks(rng, n):
    """None kept, all kept, and random fractions (the last one half)."""
    return {"none": np.zeros(n, bool), "all": np.ones(n, bool), "sparse": rng.random(n) < 0.05,
            "half": rng.random(n) < 0.5}


def poison(backend, nbytes):
    """Leave a freed block of 0x7F bytes where the next outputs may be allocated, so
    that an element the kernels forget to write shows as garbage, not zero."""
    block = backend.asarray(np.full(max(nbytes, 1), 0x7F, np.uint8))
    del block


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


def test_compact_sizes(backend, rng):
    sizes = SIZES + GPU_SIZES if backend.name == "cuda" else SIZES
    if backend.name == "triton-interpreter":  # about 0.1 s a launch: tile edges and many tiles
        sizes = [0, 1, 2, 31, 32, 33, 64, 65, 129, 1021]
    for n in sizes:
        x = random_array(rng, "int32", (n,))
        for name, mask in masks(rng, n).items():
            poison(backend, 4 * n)
            got = backend.to_numpy(ps.compact(backend.asarray(x), backend.asarray(mask), backend=backend.backend))
            assert got.dtype == x.dtype, (n, name)
            np.testing.assert_array_equal(got, x[mask], err_msg=f"n={n} {name}")


@pytest.mark.parametrize("dtype", ["int8", "uint16", "float16", "bfloat16", "float32", "int64", "float64",
                                   "complex64", "complex128", "bool"])
def test_compact_dtypes_bitwise(backend, rng, dtype):
    if dtype == "bfloat16" and not backend.is_triton:
        pytest.skip("bfloat16 arrays are torch tensors")
    if dtype == "bfloat16":
        import torch

        x = backend.asarray(random_array(rng, "float32", (101,))).to(torch.bfloat16)
        x_np = x.float().cpu().numpy()
    else:
        x_np = random_array(rng, dtype, (101,), "add" if dtype != "bool" else "xor")
        if np.dtype(dtype).kind == "f":
            x_np[::7] = -0.0  # signs of zero and NaN payloads travel as bits
            x_np[3::11] = np.nan
        x = backend.asarray(x_np)
    mask = rng.random(101) < 0.6
    got = ps.compact(x, backend.asarray(mask), backend=backend.backend)
    expected = x_np[mask]
    got_np = backend.to_numpy(got)
    if dtype != "bfloat16":
        assert got_np.dtype == expected.dtype
        np.testing.assert_array_equal(got_np.view(np.uint8), expected.view(np.uint8))
    else:
        np.testing.assert_array_equal(got_np, expected)
    fill = True if dtype == "bool" else 1
    values, count = ps.compact(x, backend.asarray(mask), size=40, fill_value=fill, backend=backend.backend)
    assert int(count) == mask.sum()
    np.testing.assert_array_equal(backend.to_numpy(values), expected_fixed(np.asarray(x_np), mask, 40, fill))


ALL_DTYPES = ["bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64", "float16",
              "bfloat16", "float32", "float64", "complex64", "complex128"]


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_compact_default_fill_is_the_dtypes_zero(backend, rng, dtype):
    """``compact(x, mask, size=k)`` without a fill_value fills with x's dtype's zero,
    ``False`` for bool (whose default fill 0 was once refused as not a bool), +0.0 for
    floats, bit for bit; a tuple x fills each field with its own zero."""
    if dtype == "bfloat16" and not backend.is_triton:
        pytest.skip("bfloat16 arrays are torch tensors")
    n = 57
    source = "float32" if dtype == "bfloat16" else dtype
    x_np = random_array(rng, source, (n,), "xor" if dtype == "bool" else "add")
    x = backend.asarray(x_np)
    if dtype == "bfloat16":
        import torch

        x = x.to(torch.bfloat16)
        x_np = x.float().cpu().numpy()
    mask = rng.random(n) < 0.4
    kept = int(mask.sum())
    poison(backend, 16 * (n + 30))
    values, count = ps.compact(x, backend.asarray(mask), size=n + 30, backend=backend.backend)
    assert int(count) == kept
    got = backend.to_numpy(values.float() if dtype == "bfloat16" else values)
    np.testing.assert_array_equal(got[:kept], x_np[mask])
    tail = got[kept:]
    assert tail.shape == (n + 30 - kept,)
    if dtype != "bfloat16":
        assert got.dtype == np.dtype(dtype)
    assert not tail.view(np.uint8).any(), f"the fill is not {dtype}'s zero: {tail[:4]}"
    if dtype == "bool":
        fields = (x, backend.asarray(x_np.astype(np.float64)))
        (flags, floats), count = ps.compact(fields, backend.asarray(mask), size=n, backend=backend.backend)
        assert not backend.to_numpy(flags)[kept:].any() and not backend.to_numpy(floats)[kept:].any()
        assert backend.to_numpy(flags).dtype == np.bool_


def test_compact_fixed_size(backend, rng):
    for n in [0, 1, 33, 257] if backend.name == "triton-interpreter" else [0, 1, 33, 100, 1021]:
        x = random_array(rng, "float32", (n,))
        for name, mask in masks(rng, n).items():
            count = int(mask.sum())
            for size in sorted({0, 1, max(count - 3, 0), count, count + 5, n + 40}):
                poison(backend, 4 * (n + 40))
                values, got_count = ps.compact(backend.asarray(x), backend.asarray(mask), size=size, fill_value=-2.5,
                                               backend=backend.backend)
                assert int(got_count) == count
                assert backend.to_numpy(got_count).shape == () and backend.to_numpy(got_count).dtype == np.int64
                np.testing.assert_array_equal(backend.to_numpy(values), expected_fixed(x, mask, size, -2.5),
                                              err_msg=f"n={n} {name} size={size}")


def test_compact_tuple(backend, rng):
    n = 130
    fields = (random_array(rng, "int64", (n,)), random_array(rng, "float32", (n,)), random_array(rng, "int8", (n,)))
    mask = rng.random(n) < 0.4
    got = ps.compact(backend.asarray(fields), backend.asarray(mask), backend=backend.backend)
    assert isinstance(got, tuple) and len(got) == 3
    for g, f in zip(backend.to_numpy(got), fields):
        np.testing.assert_array_equal(g, f[mask])
    values, count = ps.compact(backend.asarray(fields), backend.asarray(mask), size=20, fill_value=3,
                               backend=backend.backend)
    assert int(count) == mask.sum()
    for g, f in zip(backend.to_numpy(values), fields):
        np.testing.assert_array_equal(g, expected_fixed(f, mask, 20, 3))


def test_compact_multidimensional(backend, rng):
    x = random_array(rng, "int32", (7, 9, 5))
    mask = rng.random(x.shape) < 0.5
    got = ps.compact(backend.asarray(x), backend.asarray(mask), backend=backend.backend)
    np.testing.assert_array_equal(backend.to_numpy(got), x[mask])


def test_compiled_cpu_kernel_small_sizes(rng):
    """The compiled pass (the CPU backend takes it from SMALL_SCAN elements) on small
    and boundary sizes, every density and limit."""
    pytest.importorskip("numba")
    from prefixscan.primitives.compaction import compiled as compaction

    for n in [0, 1, 7, 8, 9, 63, 64, 65, 1000]:
        for mask in masks(rng, n).values():
            x = random_array(rng, "float64", (n,))
            (values,), count = compaction.compact([x], mask)
            np.testing.assert_array_equal(values, x[mask])
            assert int(count) == mask.sum() and values.flags.owndata
            for size in [0, 5, n // 2, n + 3]:
                (values,), count = compaction.compact([x], mask, size, (np.float64(9),))
                np.testing.assert_array_equal(values, expected_fixed(x, mask, size, 9.0))
                assert int(count) == mask.sum()


def test_compiled_cpu_pieces_per_thread(rng):
    """The threaded form (one piece per thread at its counted offset) on a size past
    its threshold, pieces of uneven counts, every limit."""
    pytest.importorskip("numba")
    from prefixscan.primitives.compaction import compiled as compaction

    n = compaction.THREADED_FROM + 13
    x = random_array(rng, "int64", (n,))
    for mask in masks(rng, n).values():
        mask[: n // 3] &= rng.random(n // 3) < 0.1  # the first piece sparser than the rest
        count = int(mask.sum())
        (values,), got = compaction.compact([x], mask, threads=3)
        np.testing.assert_array_equal(values, x[mask])
        assert int(got) == count
        for size in [0, 5, count // 3, count, n + 3]:
            (values,), got = compaction.compact([x], mask, size, (np.int64(-4),), threads=3)
            np.testing.assert_array_equal(values, expected_fixed(x, mask, size, -4))
            assert int(got) == count
        (values,), got = compaction.partition([x], mask, threads=3)
        np.testing.assert_array_equal(values, np.concatenate((x[mask], x[~mask])))
        assert int(got) == count


BAD_ARGUMENTS = [
    (lambda x, m: dict(x=x, mask=m[:-1]), ValueError, "mask has shape"),
    (lambda x, m: dict(x=x, mask=m.astype(np.uint8)), TypeError, "mask must be a bool"),
    (lambda x, m: dict(x=x, mask=m, size=-1), ValueError, "size must be >= 0"),
    (lambda x, m: dict(x=x, mask=m, size=2.0), TypeError, "size must be an integer"),
    (lambda x, m: dict(x=x, mask=m, size=True), TypeError, "size must be an integer"),
    (lambda x, m: dict(x=x, mask=m, size=3, fill_value=1.5), ValueError, "fill_value"),
    (lambda x, m: dict(x=x, mask=m, size=3, fill_value=np.nan), ValueError, "fill_value"),
    (lambda x, m: dict(x=x, mask=m, size=3, fill_value=1 << 40), ValueError, "fill_value"),
    (lambda x, m: dict(x=x, mask=m, size=3, fill_value="a"), TypeError, "fill_value"),
    (lambda x, m: dict(x=x, mask=m, size=3, fill_value=1j), TypeError, "fill_value"),
    (lambda x, m: dict(x=x, mask=m, size=3, fill_value=[1]), TypeError, "fill_value"),
    (lambda x, m: dict(x=(x, x[:-1]), mask=m), ValueError, r"x\[1\] has shape"),
    (lambda x, m: dict(x=(), mask=m), ValueError, "empty tuple"),
]


@pytest.mark.parametrize("case", range(len(BAD_ARGUMENTS)))
def test_bad_arguments_refused_before_work(backend, rng, monkeypatch, case):
    make, error, message = BAD_ARGUMENTS[case]
    x = random_array(rng, "int32", (50,))
    mask = rng.random(50) < 0.5

    def ran(*args, **kwargs):
        raise AssertionError("a backend ran on bad arguments")

    modules = ["prefixscan.primitives.compaction.cpu"]
    if importlib.util.find_spec("triton") is not None:  # the GPU module imports triton
        modules.append("prefixscan.primitives.compaction.triton")
    for module in map(importlib.import_module, modules):
        monkeypatch.setattr(module, "compact", ran)
        monkeypatch.setattr(module, "partition", ran)
    kwargs = make(x, mask)
    kwargs = {k: backend.asarray(v) if isinstance(v, (np.ndarray, tuple)) else v for k, v in kwargs.items()}
    with pytest.raises(error, match=message):
        ps.compact(backend=backend.backend, **kwargs)
    if "size" not in kwargs:
        with pytest.raises(error, match=message):
            ps.partition(backend=backend.backend, **kwargs)


def _cuda() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


CUDA = _cuda()
needs_cuda = pytest.mark.skipif(not CUDA, reason="needs a CUDA device")


@pytest.mark.gpu
@needs_cuda
def test_mask_on_another_device_refused(rng):
    import torch

    x = torch.from_numpy(random_array(rng, "int32", (50,))).cuda()
    with pytest.raises(ValueError, match="same device"):
        ps.compact(x, torch.ones(50, dtype=torch.bool))
    with pytest.raises(ValueError, match="same device"):
        ps.partition(x, torch.ones(50, dtype=torch.bool))


#: Kernel variants forced by the tests: (rows per thread, store form) over the default tile.
VARIANTS = {"rows1": (1, "auto"), "rows4": (4, "auto"), "rows4-scatter": (4, "rows"), "rows4-dense": (4, "dense"),
            "rows16": (16, "auto")}


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_kernel_variants(backend, rng, variant):
    """Every kernel variant (rows of 1 to 16 elements per thread, stores from the rows,
    through the warp-contiguous layout or by the tile's count): compact, compact with a
    size and partition, across tile boundaries, empty tiles and tiles under and over an
    eighth kept."""
    if not backend.is_triton:
        pytest.skip("a Triton kernel variant")
    import torch

    from prefixscan.primitives.compaction import triton as compaction

    rows, store = VARIANTS[variant]
    interpreter = backend.name != "cuda"
    tile = dataclasses.replace(compaction.default_tile(4, interpreter), rows=rows, store=store)
    sizes = [1, 33, 257] if interpreter else [1, 31, 4097, 65537, 1_000_003]
    for n in sizes:
        x = torch.from_numpy(random_array(rng, "int32", (n,))).to(backend.device)
        for name, mask_np in masks(rng, n).items():
            if name == "sparse":  # runs of empty tiles between kept elements
                mask_np = mask_np & (np.arange(n) % 97 < 20)
            mask = torch.from_numpy(mask_np).to(backend.device)
            expected = x[mask]
            (got,), count = compaction.compact_fields([x], mask, size=None, tile=tile)
            assert torch.equal(got, expected) and int(count) == int(mask_np.sum()), (n, name)
            fill = torch.full((1,), -5, dtype=x.dtype, device=x.device)
            (fixed,), count = compaction.compact_fields([x], mask, size=n // 2, fills=[fill], tile=tile)
            want = torch.full((n // 2,), -5, dtype=x.dtype, device=x.device)
            want[: min(n // 2, expected.numel())] = expected[: n // 2]
            assert torch.equal(fixed, want) and int(count) == int(mask_np.sum()), (n, name)
            (parted,), count = compaction.partition_fields([x], mask, tile=tile)
            assert torch.equal(parted, torch.cat((expected, x[~mask]))), (n, name)


@pytest.mark.gpu
@needs_cuda
@pytest.mark.parametrize("dtype", ["float32", "int64", "int8", "float64"])
@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_large_on_the_gpu(dtype, variant):
    """Many tiles in flight (the look-back under real concurrency), every density,
    every variant of the kernel, against torch's boolean indexing."""
    import torch

    from prefixscan.primitives.compaction import triton as compaction

    n = (1 << 24) + 3
    gen = torch.Generator(device="cuda").manual_seed(5)
    x = torch.randint(-1000, 1000, (n,), device="cuda", generator=gen).to(getattr(torch, dtype))
    rows, store = VARIANTS[variant]
    for p in [0.0, 0.01, 0.5, 0.99, 1.0]:
        mask = torch.rand(n, device="cuda", generator=gen) < p
        tile = dataclasses.replace(compaction.default_tile(x.element_size(), False), rows=rows, store=store)
        (got,), count = compaction.compact_fields([x], mask, size=None, tile=tile)
        assert torch.equal(got, x[mask]) and int(count) == int(mask.sum()), p
        (parted,), count = compaction.partition_fields([x], mask, tile=tile)
        assert torch.equal(parted, torch.cat((x[mask], x[~mask]))), p
        values, count = ps.compact(x, mask, size=n // 2, fill_value=7)
        expected = torch.full((n // 2,), 7, dtype=x.dtype, device="cuda")
        kept = x[mask][: n // 2]
        expected[: kept.numel()] = kept
        assert torch.equal(values, expected) and int(count) == int(mask.sum()), p


@pytest.mark.gpu
@pytest.mark.slow
@needs_cuda
def test_past_int32_elements():
    """More than 2^31 elements (int8), after smaller calls in the same process: 64-bit
    tile starts, counts and output offsets; the launch key's integer widths."""
    import torch

    small = torch.arange(100_007, device="cuda").to(torch.int8)
    small_mask = small > 0
    assert torch.equal(ps.compact(small, small_mask), small[small_mask])
    # Every third element rejected, so that the expected results are strided views
    # (no boolean indexing of > 2^31 elements needed to check).
    n = 381 * ((1 << 31) // 381 + 1400)  # whole periods of x and of the mask, past 2^31
    period = torch.arange(3 * 127, device="cuda").remainder(127).to(torch.int8)
    x = period.repeat(n // period.numel())
    mask = (torch.arange(3, device="cuda") != 1).repeat(n // 3)
    rows = x.view(-1, 3)
    kept = rows[:, [0, 2]].reshape(-1)
    rejected = rows[:, 1]
    got = ps.compact(x, mask)
    assert torch.equal(got, kept)
    del got
    values, count = ps.partition(x, mask)
    assert int(count) == kept.numel()
    assert torch.equal(values[: kept.numel()], kept) and torch.equal(values[kept.numel():], rejected)
    del values
    limited, count = ps.compact(x, mask, size=n - 5, fill_value=-1)
    assert int(count) == kept.numel()
    assert torch.equal(limited[: kept.numel()], kept) and bool((limited[kept.numel():] == -1).all())


@pytest.mark.gpu
@needs_cuda
def test_cuda_graph_capture():
    """compact(size=k) and partition run under CUDA graph capture (no host
    synchronization) and replay correctly on new data."""
    import torch

    n, size = 300_001, 200_000
    gen = torch.Generator(device="cuda").manual_seed(11)
    x = torch.randn(n, device="cuda", generator=gen)
    mask = torch.rand(n, device="cuda", generator=gen) < 0.5
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm up: compile the kernels outside the capture
        ps.compact(x, mask, size=size, fill_value=-1.0)
        ps.partition(x, mask)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        values, count = ps.compact(x, mask, size=size, fill_value=-1.0)
        parted, parted_count = ps.partition(x, mask)
    for p in [0.3, 0.9, 0.0]:
        x.copy_(torch.randn(n, device="cuda", generator=gen))
        mask.copy_(torch.rand(n, device="cuda", generator=gen) < p)
        graph.replay()
        torch.cuda.synchronize()
        kept = x[mask]
        expected = torch.full((size,), -1.0, device="cuda")
        expected[: min(size, kept.numel())] = kept[:size]
        assert int(count) == kept.numel() == int(parted_count)
        assert torch.equal(values, expected)
        assert torch.equal(parted, torch.cat((kept, x[~mask])))


@pytest.mark.gpu
@needs_cuda
def test_bitwise_repeat():
    """Repeated calls give the same bits (the look-back's result does not depend on
    which predecessors were ready)."""
    import torch

    n = (1 << 25) + 17
    gen = torch.Generator(device="cuda").manual_seed(3)
    x = torch.randn(n, device="cuda", generator=gen)
    mask = torch.rand(n, device="cuda", generator=gen) < 0.5
    first = ps.compact(x, mask)
    parted, _ = ps.partition(x, mask)
    for _ in range(10):
        assert torch.equal(ps.compact(x, mask).view(torch.int32), first.view(torch.int32))
        assert torch.equal(ps.partition(x, mask)[0].view(torch.int32), parted.view(torch.int32))
