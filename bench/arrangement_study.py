"""Striped vs blocked tile arrangement, tile-local (no look-back), on the device.

Hypothesis (compiled PTX, NOTES.md "Run e"): with Triton's coalesced ("striped")
layout a thread holds 16 bytes of consecutive elements per repetition, so
``tl.associative_scan`` runs a warp shuffle scan for every 16-byte chunk: per
element 1.25 shuffle steps for int32, 5 for int64 and for 2-D tiles of four int32
columns, which matches the measured order int32 0.88 > int64 0.67 > 2-D 0.57.
In a "blocked" arrangement (Merrill & Grimshaw's blocked items per thread, as
CUB's BLOCK_LOAD_DIRECT) each thread loads a contiguous run of the tile, scans it
serially in registers, and only its run total goes across threads: 12 shuffles
per 16K-element tile instead of 388.  The price: a warp's 16-byte loads are no
longer contiguous (lanes a run apart), so L1 must merge them.  This study
measures both halves: copies in both arrangements (memory pattern only) and
tile-local scans (memory + in-tile scan), as ratios to torch's copy.

    python bench/arrangement_study.py --json arrangement.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys

import triton
import triton.language as tl

sys.path.insert(0, ".")
from prefixscan.bench import _time_cuda_events  # noqa: E402


@triton.jit
def _add(a, b):
    return a + b


@triton.jit
def _excl_incl(ea, ia, eb, ib):
    return ia + eb, ia + ib


@triton.jit
def _blocked_offsets(T: tl.constexpr, RB: tl.constexpr, RS: tl.constexpr, V: tl.constexpr):
    """[T, RB, RS, V] offsets: thread t owns runs of RS*V consecutive elements, RB of them
    (run rb at rb*T*RS*V + t*RS*V)."""
    t = tl.arange(0, T)[:, None, None, None]
    rb = tl.arange(0, RB)[None, :, None, None]
    rs = tl.arange(0, RS)[None, None, :, None]
    e = tl.arange(0, V)[None, None, None, :]
    return rb * (T * RS * V) + t * (RS * V) + rs * V + e


@triton.jit
def copy_striped(x_ptr, y_ptr, BLOCK: tl.constexpr):
    base = tl.program_id(0).to(tl.int64) * BLOCK
    off = tl.arange(0, BLOCK)
    tl.store(y_ptr + base + off, tl.load(x_ptr + base + off))


@triton.jit
def copy_blocked(x_ptr, y_ptr, T: tl.constexpr, RB: tl.constexpr, RS: tl.constexpr, V: tl.constexpr):
    base = tl.program_id(0).to(tl.int64) * (T * RB * RS * V)
    off = _blocked_offsets(T, RB, RS, V)
    tl.store(y_ptr + base + off, tl.load(x_ptr + base + off))


@triton.jit
def scan_striped(x_ptr, y_ptr, BLOCK: tl.constexpr):
    base = tl.program_id(0).to(tl.int64) * BLOCK
    off = tl.arange(0, BLOCK)
    tl.store(y_ptr + base + off, tl.associative_scan(tl.load(x_ptr + base + off), 0, _add))


@triton.jit
def scan_blocked(x_ptr, y_ptr, T: tl.constexpr, R: tl.constexpr, V: tl.constexpr):
    """Thread t scans its R*V consecutive elements, then the T run totals are scanned."""
    base = tl.program_id(0).to(tl.int64) * (T * R * V)
    t = tl.arange(0, T)[:, None, None]
    r = tl.arange(0, R)[None, :, None]
    e = tl.arange(0, V)[None, None, :]
    off = t * (R * V) + r * V + e
    x = tl.load(x_ptr + base + off)
    s = tl.associative_scan(x, 2, _add)
    chunk = tl.broadcast_to(tl.sum(tl.where(e == V - 1, s, 0), 2, keep_dims=True), [T, R, V])
    ex_r, in_r = tl.associative_scan((tl.zeros_like(chunk), chunk), 1, _excl_incl)
    tot = tl.sum(tl.sum(tl.where((r == R - 1) & (e == V - 1), in_r, 0), 2), 1)
    ex_t, in_t = tl.associative_scan((tl.zeros_like(tot), tot), 0, _excl_incl)
    tl.store(y_ptr + base + off, ex_t[:, None, None] + ex_r + s)


@triton.jit
def scan2d_striped(x_ptr, y_ptr, ROWS: tl.constexpr, KB: tl.constexpr):
    base = tl.program_id(0).to(tl.int64) * (ROWS * KB)
    off = tl.arange(0, ROWS)[:, None] * KB + tl.arange(0, KB)[None, :]
    tl.store(y_ptr + base + off, tl.associative_scan(tl.load(x_ptr + base + off), 0, _add))


@triton.jit
def scan2d_blocked(x_ptr, y_ptr, T: tl.constexpr, R: tl.constexpr, KB: tl.constexpr):
    """KB interleaved columns; thread t owns R consecutive rows."""
    base = tl.program_id(0).to(tl.int64) * (T * R * KB)
    t = tl.arange(0, T)[:, None, None]
    r = tl.arange(0, R)[None, :, None]
    c = tl.arange(0, KB)[None, None, :]
    off = (t * R + r) * KB + c
    x = tl.load(x_ptr + base + off)
    ex_r, in_r = tl.associative_scan((tl.zeros_like(x), x), 1, _excl_incl)
    tot = tl.sum(tl.where(r == R - 1, in_r, 0), 1)  # [T, KB]
    ex_t, in_t = tl.associative_scan((tl.zeros_like(tot), tot), 0, _excl_incl)
    tl.store(y_ptr + base + off, ex_t[:, None, :] + in_r)


def _time(fn):
    """Median device seconds of 20 calls after a warm-up (compiles)."""
    import torch

    fn()
    torch.cuda.synchronize()
    return statistics.median(_time_cuda_events([fn], 20, 1e-5))


def case_recorder(records: list, x, y, copy_seconds: float):
    """``case(label, fn, check=None, **meta)``: poison ``y``, time ``fn`` (which writes
    ``y`` from ``x``), compare ``y`` with ``check()`` when given, and record and print
    the ratio to ``copy_seconds``."""
    import torch

    dtype = str(x.dtype).split(".")[-1]

    def case(label, fn, check=None, **meta):
        y.fill_(-7)
        sec = _time(fn)
        ok = None if check is None else bool(torch.equal(y, check()))
        rec = dict(dtype=dtype, n=x.numel(), case=label, seconds=sec, ratio_to_copy=copy_seconds / sec, ok=ok,
                   **meta)
        records.append(rec)
        print(f"{dtype:8s} {label:34s} {sec * 1e6:9.1f} us  {copy_seconds / sec:5.2f} of copy  ok={ok}", flush=True)

    return case


def write_records(path: str, records: list) -> None:
    import torch

    meta = {"gpu": torch.cuda.get_device_name(), "triton": triton.__version__, "torch": torch.__version__}
    with open(path, "w") as f:
        json.dump({"meta": meta, "records": records}, f, indent=1)


def main() -> int:
    import torch

    parser = argparse.ArgumentParser()
    parser.add_argument("--json", required=True)
    args = parser.parse_args()
    records = []
    gen = torch.Generator(device="cuda").manual_seed(5)
    for dtype, log_n in ((torch.int32, 28), (torch.int64, 27)):
        n = 1 << log_n
        x = torch.randint(-99, 99, (n,), dtype=dtype, device="cuda", generator=gen)
        y = torch.empty_like(x)
        copy = _time(lambda: y.copy_(x))
        vec = 16 // x.element_size()

        case = case_recorder(records, x, y, copy)

        for block in (4096, 8192, 16384):
            for warps in (4, 8):
                T = 32 * warps
                per_thread = block // T
                if per_thread < vec:
                    continue
                grid = (n // block,)
                case(f"copy striped b={block} w={warps}", lambda: copy_striped[grid](x, y, BLOCK=block,
                                                                                     num_warps=warps),
                     block=block, warps=warps)
                run = per_thread
                while run >= vec:
                    rs = run // vec
                    rb = per_thread // run
                    case(f"copy blocked b={block} w={warps} run={run}",
                         lambda: copy_blocked[grid](x, y, T=T, RB=rb, RS=rs, V=vec, num_warps=warps),
                         block=block, warps=warps, run=run)
                    run //= 4
                tiles = lambda: torch.cumsum(x.view(-1, block), 1, dtype=dtype).view(-1)  # noqa: E731
                case(f"scan striped b={block} w={warps}", lambda: scan_striped[grid](x, y, BLOCK=block,
                                                                                     num_warps=warps),
                     tiles, block=block, warps=warps)
                case(f"scan blocked b={block} w={warps}",
                     lambda: scan_blocked[grid](x, y, T=T, R=per_thread // vec, V=vec, num_warps=warps),
                     tiles, block=block, warps=warps)
        if dtype == torch.int32:
            for kb in (2, 4, 8):
                for block in (8192, 16384):
                    rows = block // kb
                    grid = (n // block,)
                    tiles = lambda: torch.cumsum(x.view(-1, rows, kb), 1, dtype=dtype).view(-1)  # noqa: E731
                    case(f"2d kb={kb} striped b={block}",
                         lambda: scan2d_striped[grid](x, y, ROWS=rows, KB=kb, num_warps=4), tiles,
                         block=block, kb=kb)
                    case(f"2d kb={kb} blocked b={block}",
                         lambda: scan2d_blocked[grid](x, y, T=128, R=rows // 128, KB=kb, num_warps=4), tiles,
                         block=block, kb=kb)
        del x, y
    write_records(args.json, records)
    return 0


if __name__ == "__main__":
    sys.exit(main())
