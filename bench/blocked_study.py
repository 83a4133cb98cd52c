"""Tile-local order-q scans in thread-contiguous ("blocked") registers, Gluon, on the device.

Why (NOTES.md, runs e-g): Triton's ``tl.associative_scan`` on the coalesced layout runs
one warp shuffle scan per 16-byte chunk a thread holds, so every order of a higher-order
scan costs about 5 shuffles per 4 int32 (per 2 int64) elements, and int64 orders are
bound by it (tile-local order 5 / 8 int64: 0.42 / 0.26 of copy on the H200).  Plain
Triton cannot give a thread a contiguous run from coalesced loads (run e: blocked loads
are uncoalesced, 0.3-0.7 of copy); Gluon can: load coalesced, ``convert_layout`` through
shared memory to one row of R elements per thread, scan the row serially (no shuffles),
then one value per thread crosses threads.

Arithmetic timed here is that of a single look-back over the carry vector: q in-thread
scans for the row totals, q cross-thread scans of one value per thread, q more in-thread
scans seeded with the carries (stand-ins: the cross-thread results).  Against it, the
striped kernels of ``bench/tile_study.py`` in the same process.

    python bench/blocked_study.py --json blocked.json
"""

from __future__ import annotations

import argparse
import sys

from triton.experimental import gluon
from triton.experimental.gluon import language as gl

from arrangement_study import _time, case_recorder, write_records  # noqa: E402  (bench/ on sys.path)


@gluon.jit
def _gadd(a, b):
    return a + b


@gluon.jit
def _thread_scan(values, WARPS: gl.constexpr):
    """Inclusive scan of one value per thread (a row total) across threads: Triton's scan
    lowering takes blocked layouts only, and the row layout's slice puts value t in thread
    t just as this 1-D layout does (the conversions move nothing)."""
    flat: gl.constexpr = gl.BlockedLayout([1], [32], [WARPS], [0])
    return gl.convert_layout(gl.associative_scan(gl.convert_layout(values, flat), 0, _gadd), values.type.layout)


@gluon.jit
def _thread_scan_cols(values, S: gl.constexpr, WARPS: gl.constexpr):
    """``_thread_scan`` of S values per thread ([T, S]), along threads."""
    flat: gl.constexpr = gl.BlockedLayout([1, S], [32, 1], [WARPS, 1], [1, 0])
    return gl.convert_layout(gl.associative_scan(gl.convert_layout(values, flat), 0, _gadd), values.type.layout)


@gluon.jit
def blocked_orders(x_ptr, y_ptr, Q: gl.constexpr, R: gl.constexpr, V: gl.constexpr, WARPS: gl.constexpr,
                   SEEDED: gl.constexpr):
    T: gl.constexpr = 32 * WARPS
    io: gl.constexpr = gl.BlockedLayout([1, V], [32 * V // R, R // V], [WARPS, 1], [1, 0])
    rows_layout: gl.constexpr = gl.BlockedLayout([1, R], [32, 1], [WARPS, 1], [1, 0])
    pid = gl.program_id(0).to(gl.int64)
    r = gl.arange(0, T, layout=gl.SliceLayout(1, io))
    c = gl.arange(0, R, layout=gl.SliceLayout(0, io))
    offs = pid * (T * R) + gl.expand_dims(r, 1) * R + gl.expand_dims(c, 0)
    x = gl.convert_layout(gl.load(x_ptr + offs), rows_layout)
    y = x
    totals = gl.sum(y, axis=1)
    carry = _thread_scan(totals, WARPS) - totals  # exclusive: order 1 is exact
    for _ in gl.static_range(Q - 1):
        y = gl.associative_scan(y, 1, _gadd)
        totals = gl.sum(y, axis=1) + carry
        carry = _thread_scan(totals, WARPS)
    if SEEDED:
        y = x
        for _ in gl.static_range(Q):
            y = gl.associative_scan(y, 1, _gadd) + gl.expand_dims(carry, 1)
    else:
        y = gl.associative_scan(y, 1, _gadd) + gl.expand_dims(carry, 1)
    gl.store(y_ptr + offs, gl.convert_layout(y, io))


@gluon.jit
def blocked_tuples(x_ptr, y_ptr, S: gl.constexpr, R: gl.constexpr, V: gl.constexpr, WARPS: gl.constexpr):
    """Tuple size S (a power of two dividing R): a row of R elements is [R // S, S]; the lag-S
    scan runs along axis 1 in the thread, then S values per thread cross threads."""
    T: gl.constexpr = 32 * WARPS
    G: gl.constexpr = R // S
    if S >= V:
        io: gl.constexpr = gl.BlockedLayout([1, 1, V], [32 * V // R, G, S // V], [WARPS, 1, 1], [2, 1, 0])
    else:
        io: gl.constexpr = gl.BlockedLayout([1, V // S, S], [32 * V // R, G * S // V, 1], [WARPS, 1, 1], [2, 1, 0])
    rows_layout: gl.constexpr = gl.BlockedLayout([1, G, S], [32, 1, 1], [WARPS, 1, 1], [2, 1, 0])
    pid = gl.program_id(0).to(gl.int64)
    r = gl.arange(0, T, layout=gl.SliceLayout(1, gl.SliceLayout(2, io)))
    g = gl.arange(0, G, layout=gl.SliceLayout(0, gl.SliceLayout(2, io)))
    s = gl.arange(0, S, layout=gl.SliceLayout(0, gl.SliceLayout(1, io)))
    offs = (pid * (T * R) + gl.expand_dims(gl.expand_dims(r, 1), 2) * R + gl.expand_dims(gl.expand_dims(g, 0), 2) * S
            + gl.expand_dims(gl.expand_dims(s, 0), 1))
    x = gl.convert_layout(gl.load(x_ptr + offs), rows_layout)
    y = gl.associative_scan(x, 1, _gadd)
    totals = gl.sum(x, axis=1)
    y = y + gl.expand_dims(_thread_scan_cols(totals, S, WARPS) - totals, 1)
    gl.store(y_ptr + offs, gl.convert_layout(y, io))


def main() -> int:
    import torch

    from tile_study import orders_reduce_scan, tile_orders  # noqa: E402

    parser = argparse.ArgumentParser()
    parser.add_argument("--json", required=True)
    args = parser.parse_args()
    records = []
    gen = torch.Generator(device="cuda").manual_seed(7)
    n = 1 << 27
    for dtype in (torch.int32, torch.int64):
        x = torch.randint(-99, 99, (n,), device="cuda", generator=gen).to(dtype)
        y = torch.empty_like(x)
        copy = _time(lambda: y.copy_(x))
        case = case_recorder(records, x, y, copy)
        v = 16 // x.element_size()
        for q in (1, 2, 5, 8):
            block = 4096
            agg = torch.empty(n // block, dtype=dtype, device="cuda")
            case(f"order {q} striped reduce+scan b={block}",
                 lambda: orders_reduce_scan[(n // block,)](x, y, agg, Q=q, BLOCK=block, num_warps=4),
                 lambda: tile_orders(x, block, q), block=block, warps=4, order=q, design="striped")
            for rr in (16, 32) if v == 4 else (8, 16):
                for warps in (4, 8):
                    block = 32 * warps * rr
                    for seeded in (True,):
                        case(f"order {q} blocked R={rr} w={warps} seeded={seeded}",
                             lambda: blocked_orders[(n // block,)](x, y, Q=q, R=rr, V=v, WARPS=warps, SEEDED=seeded,
                                                                   num_warps=warps),
                             (lambda: torch.cumsum(x, 0, dtype=dtype).view(-1, block).sub(
                                 torch.cumsum(x, 0, dtype=dtype).view(-1, block)[:, :1] - x.view(-1, block)[:, :1]
                             ).view(-1)) if q == 1 else None,
                             block=block, warps=warps, order=q, design=f"blocked seeded={seeded}", run=rr)
        for s in (2, 4, 8):
            for rr in (16, 32) if v == 4 else (8, 16):
                warps = 4
                block = 32 * warps * rr
                case(f"tuple {s} blocked R={rr} w={warps}",
                     lambda: blocked_tuples[(n // block,)](x, y, S=s, R=rr, V=v, WARPS=warps, num_warps=warps),
                     lambda: torch.cumsum(x.view(-1, block // s, s), 1, dtype=dtype).view(-1),
                     block=block, warps=warps, tuple_size=s, design="blocked", run=rr)
        del x, y
    write_records(args.json, records)
    return 0


if __name__ == "__main__":
    sys.exit(main())
