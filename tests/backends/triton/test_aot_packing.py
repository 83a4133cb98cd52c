"""The shipped variants' kernel parameters, packed in one block (aot/packing.py), on the CPU.

The block must be laid out as the kernel's parameters: every shipped cubin's own records
(``.nv.info`` EIATTR_KPARAM_INFO: offset and size of each parameter, and the total) are
read and compared with the packing, and with a layout computed here from the JSON's types
alone (natural alignment).  A packed block holds each value at its cubin offset, as the
kernel reads it, and its pointer array points at each parameter; every check of the
per-parameter packing still refuses, with the same messages.  No GPU, no Triton.
"""

from __future__ import annotations

import ctypes
import threading
import zlib
from types import SimpleNamespace

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from prefixscan.backends.triton import aot  # noqa: E402
from prefixscan.backends.triton.aot.packing import Packing, cubin_parameters  # noqa: E402
from prefixscan.backends.triton.aot.variants import DATA_DIR, load_spec  # noqa: E402

SHIPPED = sorted(p.stem for p in DATA_DIR.glob("*.json"))
MULTI = "scan1d-int32-int64-b4096-w4-r0-m0-s2x16-multi"
WIDTHS = {"i32": 4, "i64": 8}


def _cubin(name: str) -> tuple[dict, bytes]:
    spec = load_spec(name)
    return spec, zlib.decompress((DATA_DIR / spec["cubin"]).read_bytes())


def _natural_layout(params: list) -> list:
    """(offset, size) of each parameter from its JSON type alone: 8-byte pointers, i32 and
    i64 of their width, each aligned to its size, in order (what the CUDA ABI gives)."""
    out, at = [], 0
    for p in params:
        size = 8 if p["type"].startswith("*") else WIDTHS[p["type"]]
        at = -(-at // size) * size
        out.append((at, size))
        at += size
    return out


@pytest.mark.parametrize("name", SHIPPED)
def test_the_block_is_laid_out_as_each_cubins_parameters(name):
    spec, cubin = _cubin(name)
    recorded, total = cubin_parameters(cubin, spec["name"])
    packing = Packing(spec["params"])
    assert len(recorded) == len(spec["params"]) == 17
    assert recorded == _natural_layout(spec["params"])
    assert list(zip(packing.offsets, packing.sizes)) == recorded
    assert packing.size == total == recorded[-1][0] + recorded[-1][1]
    assert packing.mismatch(recorded, total) == ""
    assert ctypes.sizeof(packing.block) == packing.format.size  # the values, then one pointer per parameter


def _tensors(n: int) -> tuple:
    """An int32 input, its int64 output and identity (torch's host allocations: 64-byte aligned)."""
    return torch.zeros(n, dtype=torch.int32), torch.zeros(n, dtype=torch.int64), torch.zeros(1, dtype=torch.int64)


def _status(rng):
    """A status of distinct tensors (words, flags, aggregates, inclusive, counter) and
    fresh tile base and epoch."""
    buffers = [torch.zeros(int(rng.integers(1, 64)), dtype=torch.int64) for _ in range(5)]
    return SimpleNamespace(buffers=(buffers[0], buffers[1], (buffers[2],), (buffers[3],)), counter=buffers[4],
                           tile_base=int(rng.integers(0, 1 << 31)), epoch=int(rng.integers(1, 1 << 29)))


def test_a_packed_block_holds_each_value_where_the_kernel_reads_it():
    rng = np.random.default_rng()
    spec, cubin = _cubin(MULTI)
    recorded, total = cubin_parameters(cubin, spec["name"])
    n, tiles = int(rng.integers(1, 1 << 31)), int(rng.integers(1, 1 << 20))
    x, y, ident = _tensors(8)
    status = _status(rng)
    leaves = aot.kernel_leaves(((x,), (y,), (ident,), (ident,)), status, n, tiles)
    packed = Packing(spec["params"]).pack(leaves)
    assert not isinstance(packed, str), packed
    pointers, block = packed
    words, flags, (aggs,), (incls,) = status.buffers
    want = [t.data_ptr() for t in (x, y, ident, ident, words, flags, aggs, incls, status.counter)]
    want += [n, tiles, status.tile_base, status.epoch, tiles, 1, 0, 0]
    raw = ctypes.string_at(ctypes.addressof(block), total)
    got = [int.from_bytes(raw[o: o + s], "little", signed=not p["type"].startswith("*"))
           for (o, s), p in zip(recorded, spec["params"])]
    assert got == want
    assert [pointers[i] for i in range(len(recorded))] == [ctypes.addressof(block) + o for o, _ in recorded]
    # Each call packs a block of its own: a second pack leaves the first as it was.
    again = Packing(spec["params"]).pack(aot.kernel_leaves(((x,), (y,), (ident,), (ident,)), status, 5, 1))
    assert ctypes.addressof(again[1]) != ctypes.addressof(block)
    assert ctypes.string_at(ctypes.addressof(block), total) == raw


def test_kernel_leaves_is_kernel_args_flattened():
    rng = np.random.default_rng()
    x, y, ident = _tensors(8)
    io = ((x,), (y,), (ident,), (ident,))
    multi = _status(rng)
    single = SimpleNamespace(buffers=(ident, ident, (ident,), (ident,)), counter=ident, tile_base=0, epoch=0)
    for status, n, tiles in ((multi, 100_000, 25), (single, 1000, 1)):
        flat = aot._leaves(aot.kernel_args(io, status, n, tiles), [])
        assert [id(v) if torch.is_tensor(v) else v for v in aot.kernel_leaves(io, status, n, tiles)] == \
            [id(v) if torch.is_tensor(v) else v for v in flat]


def test_every_check_refuses_with_its_message():
    spec = load_spec(MULTI)
    packing = Packing(spec["params"])
    x, y, ident = _tensors(64)
    status = SimpleNamespace(buffers=(ident, ident, (ident,), (ident,)), counter=ident, tile_base=0, epoch=1)

    def leaves(x=x, n=64, **changes):
        changed = SimpleNamespace(**{**vars(status), **changes})
        return aot.kernel_leaves(((x,), (y,), (ident,), (ident,)), changed, n, 1)

    assert not isinstance(packing.pack(leaves()), str)
    assert packing.pack(leaves()[:-1]) == "14 arguments for 15 parameters"
    assert packing.pack(leaves() + [0]) == "16 arguments for 15 parameters"
    assert packing.pack(leaves(n=1 << 31)) == f"M: {1 << 31} is not i32"
    assert packing.pack(leaves(n=-(1 << 31) - 1)) == f"M: {-(1 << 31) - 1} is not i32"
    assert not isinstance(packing.pack(leaves(n=-(1 << 31))), str)  # the width's own ends pack
    assert not isinstance(packing.pack(leaves(n=(1 << 31) - 1)), str)
    assert packing.pack(leaves(n=True)) == "M: True is not i32"  # an int, not a bool
    assert packing.pack(leaves(n=np.int32(64))) == f"M: {np.int32(64)!r} is not i32"  # nor a NumPy integer
    assert packing.pack(leaves(epoch=1 << 40)) == f"epoch: {1 << 40} is not i32"
    assert packing.pack(leaves(x=x[1:], n=63)) == "io.0.0: not aligned to 16 bytes"
    assert packing.pack(leaves(x=x.float())) == "io.0.0: torch.float32 for *i32"
    assert packing.pack(leaves(counter=7)) == "counter_ptr: not a tensor"
    assert packing.pack(leaves(counter=torch.zeros(1, dtype=torch.int32))) == "counter_ptr: torch.int32 for *i64"


def test_cubin_records_are_read_strictly():
    spec, cubin = _cubin(MULTI)
    with pytest.raises(ValueError, match="not a 64-bit little-endian ELF"):
        cubin_parameters(b"\x00" * 64, spec["name"])
    with pytest.raises(ValueError, match="no .nv.info.another_kernel section"):
        cubin_parameters(cubin, "another_kernel")


def test_a_variant_whose_cubin_disagrees_is_not_loaded():
    """A JSON whose parameters are not the cubin's (here M as i64: every later offset
    moves) is refused before the module loads, and the refusal is remembered."""
    spec = load_spec(MULTI)
    wrong = dict(spec, params=[dict(p, type="i64") if p["name"] == "M" else p for p in spec["params"]])
    loads = []
    drv = SimpleNamespace(current_context=lambda: (0xC0, 0), load=lambda *a: loads.append(a) or 0xF00,
                          lock=threading.Lock())
    launcher = aot.Launcher(get_driver=lambda: drv)
    reason = launcher.function(wrong, 0)
    assert isinstance(reason, str) and reason.startswith(f"cannot load {spec['cubin']}: parameters at")
    assert launcher.function(wrong, 0) == reason and loads == []
    fn = aot.Launcher(get_driver=lambda: drv).function(spec, 0)  # the variant as shipped loads
    assert fn[:2] == (drv, 0xF00) and isinstance(fn[2], Packing) and len(loads) == 1


def test_a_parameter_type_it_cannot_pack_is_refused():
    spec = load_spec(MULTI)
    with pytest.raises(ValueError, match="M: parameter type fp32 is not packed here"):
        Packing([dict(p, type="fp32") if p["name"] == "M" else p for p in spec["params"]])
    with pytest.raises(ValueError, match="null parameters must come last"):
        Packing(spec["params"][-1:] + spec["params"][:-1])
