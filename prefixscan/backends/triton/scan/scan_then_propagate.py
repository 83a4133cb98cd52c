"""Strategy ``scan_then_propagate``: scan tiles, scan the tile totals, add them back.

Merrill & Grimshaw 2009, section 3.4.1 (the recursive scheme of CUDPP, Sengupta
et al. 2007): pass 1 scans every tile, writes the local scan and the tile's
total (:func:`.strategy_blocks.stp_local_kernel`); the totals, a ``(B, tiles,
K)`` array in scan order, are scanned by the same algorithm recursively
(exclusive, seeded with ``init``); pass 3 (:func:`stp_add_kernel`) combines each
tile's carry with its local scan.  Traffic ~4n: read x, write local, read local,
write y, plus ~4n/tile per level below.  Auxiliary memory: n/tile + n/tile^2 +
.. totals, and an n-element accumulator-dtype scratch where the output dtype is
narrower (float16, bfloat16), so that local scans are not rounded twice.
2 log_tile(n) + 1 launches.  Deterministic: carries combine in an order fixed by
the sizes (docs/design/strategies.md).
"""

from __future__ import annotations

import dataclasses

import triton
import triton.language as tl

from ..device.tiles import _load_fields, _scalars, _store_fields
from .job import ScanJob
from .strategy_blocks import (LOCAL_KEYS, _bcast, _place, job_geometry, last_plan, launch_strategy_kernel, pick,
                              scan_one_tile, stp_local_kernel, strategy_constexprs)

__all__ = ["launch", "stp_add_kernel"]


@triton.jit(do_not_specialize=["col_blocks", "tiles"])
def stp_add_kernel(loc_ptrs, y_ptrs, ident_ptrs, carry_ptrs, M, K, col_blocks, tiles,
                   PAIR: tl.constexpr, REVERSE: tl.constexpr, BACKWARD: tl.constexpr,
                   MULTI_LANE: tl.constexpr, EXACT_K: tl.constexpr, ROWS: tl.constexpr, KB: tl.constexpr):
    """y = carry of the tile (exclusive scan of the tile totals) combined with its local scan."""
    vid = tl.program_id(0).to(tl.int64)
    group = vid // tiles
    tile = vid % tiles
    lane = group // col_blocks
    cblock = group % col_blocks
    ident = _scalars(ident_ptrs, 0)
    stride = KB if EXACT_K else K
    base = lane * M * stride if MULTI_LANE else 0
    pos, inside, prev, prev_ok = _place(tile, cblock, M, stride, ROWS, KB, REVERSE, BACKWARD)
    local = _load_fields(loc_ptrs, base + pos, inside, ident)
    if KB == 1:
        carry = _scalars(carry_ptrs, lane * tiles + tile)
    else:
        col = cblock * KB + tl.arange(0, KB)
        carry = _load_fields(carry_ptrs, (lane * tiles + tile) * K + col, col < K, ident)
    _store_fields(y_ptrs, base + pos, PAIR(_bcast(carry, KB), local), inside)


def launch(job: ScanJob) -> None:
    """Recursive scan-then-propagate (CUDPP): local tile scans and tile totals, the
    totals scanned recursively (exclusive, seeded), carries combined in a last pass."""
    g = job_geometry(job, "scan_then_propagate")
    levels = _level(job, job.config.inclusive, job.config.reverse)
    total = job.B * g.col_blocks * g.tiles
    last_plan["scan_then_propagate"] = dict(grid=total, tile=g.rows * g.kb, tiles=total, levels=levels)


def _level(job: ScanJob, inclusive: bool, reverse: bool) -> int:
    """One level (and the levels below it); returns the number of levels."""
    import torch

    g = job_geometry(job, "scan_then_propagate")
    if g.tiles == 1:
        scan_one_tile(job, g, inclusive, reverse)
        return 1
    device, B, M, K, idents = job.device, job.B, job.M, job.K, job.idents
    # Local scans stay in the accumulator dtype: a float16 output is rounded once,
    # after the carry, not twice.
    locs = tuple(y if y.dtype == a else torch.empty(y.shape, dtype=a, device=device) for y, a in zip(job.ys, job.accs))
    sums = tuple(torch.empty(B * g.tiles * K, dtype=a, device=device) for a in job.accs)
    c = strategy_constexprs(job, g, inclusive, reverse)
    c.update(SEED=False)
    grid = B * g.col_blocks * g.tiles
    launch_strategy_kernel(job, stp_local_kernel, grid, g.num_warps,
                           (job.xs, locs, idents, idents, sums, M, K, g.col_blocks, g.tiles), pick(c, *LOCAL_KEYS),
                           (M, K))
    # The totals form a (B, tiles, K) array in scan order: their exclusive scan,
    # seeded with the inits, is every tile's carry.  In place, forwards (the
    # totals are already in scan order, whatever the direction of the scan).
    levels = _level(dataclasses.replace(job, xs=sums, ys=sums, M=g.tiles), False, False)
    launch_strategy_kernel(job, stp_add_kernel, grid, g.num_warps,
                           (locs, job.ys, idents, sums, M, K, g.col_blocks, g.tiles),
                           pick(c, "PAIR", "REVERSE", "BACKWARD", "MULTI_LANE", "EXACT_K", "ROWS", "KB"), (M, K))
    return levels + 1
