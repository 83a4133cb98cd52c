"""Interleaved columns on a 1-D tile: the (B, M, K) layout for small K.

Tuple sizes and a short last axis scanned along axis 0.  The lane is read as one
contiguous run of M * K elements in 1-D tiles (16-byte vectors, as the 1-D scan
kernel of :mod:`.lookback`), and element i belongs to column i % K.  Column c is
scanned as the tile with every other column's elements replaced by the identity: K
masked scans of the tile instead of one scan of a [ROWS, KB] tile, whose strided
columns cost a warp shuffle scan per row (0.55-0.66 of copy for tuple sizes 2-8 on
the H200, and 0.18 for 5, whose 20-byte rows cannot be vectors).  Masked elements are
identities, so the order of the operands is kept and any monoid works.  Tile-local,
K reductions and scans cost 0.98 / 0.94 / 0.63 of copy for K = 2 / 5 / 8 (int32,
H200, 2^27), but with the look-back the kernel measured (H200, 2^27,
docs/design/tuple-sizes.md): int32 K = 2 0.80 (2-D kernel 0.66), 3 0.31 (0.23), 4 0.58
(0.59), 5 0.21 (0.18), 8 0.33 (0.55); int64 worse than the 2-D kernel at every K.  So
the dispatch (RoutingPolicy.columns_max) takes it for one 4-byte field and K <= 3
only.  Status entries are per (tile, column), as in the 2-D kernel, and the carry is
the engine's per-column one (:func:`..engine.pipeline.carry_columns`).
"""

from __future__ import annotations

import triton
import triton.language as tl

from ..device.tiles import _load_at, _ordered_reduce, _scalars, _scan_tile, _select, _store_at, _where, _within
from ..engine.pipeline import carry_columns, tile_id

__all__ = ["scan_cols_kernel"]


@triton.jit
def _tile_cols(io, status, L, vid, tiles_per_lane, epoch, MONOID: tl.constexpr, PROTOCOL: tl.constexpr,
               SCAN: tl.constexpr, TILE: tl.constexpr, FULL: tl.constexpr):
    """Tile ``vid`` of :func:`scan_cols_kernel`; ``FULL``: every element inside the lane."""
    x_ptrs, y_ptrs, ident_ptrs, init_ptrs = io
    INCLUSIVE: tl.constexpr = SCAN[0]
    REVERSE: tl.constexpr = SCAN[1]
    HAS_INIT: tl.constexpr = SCAN[2]
    BLOCK: tl.constexpr = TILE[0]
    RAKE: tl.constexpr = TILE[1]
    SINGLE_TILE: tl.constexpr = TILE[2]
    MULTI_LANE: tl.constexpr = TILE[3]
    KB: tl.constexpr = TILE[4]
    K: tl.constexpr = TILE[5]
    lane = vid // tiles_per_lane
    tile = vid % tiles_per_lane
    ident = _scalars(ident_ptrs, 0)
    rank = tl.arange(0, BLOCK)
    inside = None if FULL else tile * BLOCK + rank < L
    # Scan order runs backwards through memory for reverse scans (mirrored indices,
    # as the 1-D kernel does for non-commutative ones): position p is element L-1-p.
    if REVERSE:
        start = L - 1 - tile * BLOCK
        local = -rank
        step = K
        col = ((start % K).to(tl.int32) + K * BLOCK - rank) % K
    else:
        start = tile * BLOCK
        local = rank
        step = -K
        col = ((start % K).to(tl.int32) + rank) % K
    base = (lane * L + start) if MULTI_LANE else start
    x = _load_at(x_ptrs, base, local, inside, ident)
    if INCLUSIVE:
        scan_in = x
    else:
        # The element before in the same column, when it is in this tile (earlier
        # tiles' elements come with the look-back's prefix).
        scan_in = _load_at(x_ptrs, base, local + step, _within(inside, rank >= K), ident)
    kcols = tl.arange(0, KB)
    if HAS_INIT:
        seed = _load_at(init_ptrs, lane * K, kcols, kcols < K, ident)
    else:
        seed = _where(kcols >= 0, ident, ident)  # [KB] copies of the identity
    if SINGLE_TILE:
        prefix = seed
    else:
        agg = _where(kcols >= 0, ident, ident)  # columns >= K keep the identity
        for c in tl.static_range(K):
            agg = _where(kcols == c, _ordered_reduce(_where(col == c, x, ident), MONOID[1], MONOID[2]), agg)
        prefix = carry_columns(status, vid * KB + kcols, lane * tiles_per_lane, tile, agg, seed, ident, epoch,
                               MONOID, PROTOCOL, KB)
    y = x
    for c in tl.static_range(K):
        scanned = _scan_tile(_where(col == c, scan_in, ident), ident, MONOID[0], MONOID[1], False, RAKE)
        y = _where(col == c, MONOID[0](_select(prefix, kcols == c, 0), scanned), y)
    _store_at(y_ptrs, base, local, y, inside)


@triton.jit(do_not_specialize=["tiles_per_lane", "tile_base", "epoch"])
def scan_cols_kernel(io, status, counter_ptr, L, tiles_per_lane, tile_base, epoch, MONOID: tl.constexpr,
                     PROTOCOL: tl.constexpr, SCAN: tl.constexpr, TILE: tl.constexpr):
    """Scan the (B, M, K) layout along M as lanes of ``L = M * K`` elements in 1-D
    tiles, element i of a lane in column i % K (see :func:`_tile_cols`); status
    entries ``tile * KB + column``.  Grouped arguments as the 1-D scan kernel's,
    ``SCAN`` (INCLUSIVE, REVERSE, HAS_INIT), ``TILE`` (BLOCK, RAKE, SINGLE_TILE,
    MULTI_LANE, KB, K)."""
    vid, full = tile_id(counter_ptr, tile_base, tiles_per_lane, L, TILE[0], TILE[2])
    if full:
        _tile_cols(io, status, L, vid, tiles_per_lane, epoch, MONOID, PROTOCOL, SCAN, TILE, True)
    else:
        _tile_cols(io, status, L, vid, tiles_per_lane, epoch, MONOID, PROTOCOL, SCAN, TILE, False)
