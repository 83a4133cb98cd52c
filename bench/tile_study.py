"""Tile-local costs (no look-back), on the device: what the in-tile work allows.

Two questions from run e (NOTES.md):

* float64 reaches 0.82 of copy with the look-back that gives int64 0.90.  Is the
  difference in the tile?  Striped tile-local scans of float64 against int64
  (same bytes, same layout; the int64 case of bench/arrangement_study.py ran at 0.96).
* Orders (issue 4): order q runs q look-backs in sequence per tile (0.70 / 0.43 /
  0.31 of copy for q = 2 / 5 / 8, int32).  A single look-back over the vector of q
  carries (binomial shift) needs the tile's q local totals first, so the in-tile
  work grows from q reduce + q scans to 2q scans.  Which is the ceiling: time both
  tile-local ("reduce+scan" = today's arithmetic, "2q scans" = the single
  look-back's) for q = 1, 2, 5, 8.  If today's arithmetic alone already sits near
  the measured ratios, the look-backs are not what limits orders.

    python bench/tile_study.py --json tile.json
"""

from __future__ import annotations

import argparse
import sys

import triton
import triton.language as tl

from arrangement_study import _add, _time, case_recorder, scan_striped, write_records  # noqa: E402  (bench/ on sys.path)


@triton.jit
def _last(v, BLOCK: tl.constexpr):
    return tl.sum(tl.where(tl.arange(0, BLOCK) == BLOCK - 1, v, 0), 0)


@triton.jit
def orders_reduce_scan(x_ptr, y_ptr, agg_ptr, Q: tl.constexpr, BLOCK: tl.constexpr):
    """Today's per-order arithmetic without the look-backs: q times (reduce, scan)."""
    pid = tl.program_id(0).to(tl.int64)
    off = tl.arange(0, BLOCK)
    v = tl.load(x_ptr + pid * BLOCK + off)
    total = tl.sum(v, 0) * 0
    for _ in tl.static_range(Q):
        total += tl.sum(v, 0)
        v = tl.associative_scan(v, 0, _add)
    tl.store(y_ptr + pid * BLOCK + off, v)
    tl.store(agg_ptr + pid, total)


@triton.jit
def orders_two_pass(x_ptr, y_ptr, Q: tl.constexpr, BLOCK: tl.constexpr):
    """The single look-back's arithmetic: q unseeded scans for the local totals, then
    q scans seeded with carries (here the totals, as stand-ins)."""
    pid = tl.program_id(0).to(tl.int64)
    off = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + pid * BLOCK + off)
    u = x
    carries = ()
    for _ in tl.static_range(Q):
        u = tl.associative_scan(u, 0, _add)
        carries = carries + (_last(u, BLOCK),)
    v = x
    for k in tl.static_range(Q):
        v = tl.associative_scan(v, 0, _add) + carries[k]
    tl.store(y_ptr + pid * BLOCK + off, v)


def tile_orders(x, block: int, q: int):
    """The reference of tile-local order-q scans: q cumulative sums of each tile of ``block``."""
    import torch

    v = x.view(-1, block)
    for _ in range(q):
        v = torch.cumsum(v, 1, dtype=x.dtype)
    return v.reshape(-1)


def main() -> int:
    import torch

    parser = argparse.ArgumentParser()
    parser.add_argument("--json", required=True)
    args = parser.parse_args()
    records = []
    gen = torch.Generator(device="cuda").manual_seed(7)
    n = 1 << 27
    for dtype in (torch.int32, torch.int64, torch.float64):
        x = torch.randint(-99, 99, (n,), device="cuda", generator=gen).to(dtype)
        y = torch.empty_like(x)
        copy = _time(lambda: y.copy_(x))

        case = case_recorder(records, x, y, copy)

        for block in (2048, 4096, 8192):
            for warps in (4, 8):
                if block // (32 * warps) < 16 // x.element_size():
                    continue
                grid = (n // block,)
                tiles = lambda: torch.cumsum(x.view(-1, block), 1, dtype=dtype).view(-1)  # noqa: E731
                case(f"scan b={block} w={warps}", lambda: scan_striped[grid](x, y, BLOCK=block, num_warps=warps),
                     tiles, block=block, warps=warps)
        if dtype != torch.float64:
            block, warps = 4096, 4
            grid = (n // block,)
            agg = torch.empty(n // block, dtype=dtype, device="cuda")
            for q in (1, 2, 5, 8):
                case(f"order {q} reduce+scan b={block}",
                     lambda: orders_reduce_scan[grid](x, y, agg, Q=q, BLOCK=block, num_warps=warps),
                     lambda: tile_orders(x, block, q),
                     block=block, warps=warps, order=q, design="reduce+scan")
                case(f"order {q} 2q scans b={block}",
                     lambda: orders_two_pass[grid](x, y, Q=q, BLOCK=block, num_warps=warps),
                     block=block, warps=warps, order=q, design="2q scans")
        del x, y
    write_records(args.json, records)
    return 0


if __name__ == "__main__":
    sys.exit(main())
