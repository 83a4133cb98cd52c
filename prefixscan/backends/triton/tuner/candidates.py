"""Which (strategy, tile) pairs the tuner measures.

Every strategy of :mod:`..planning.registry` can run (each has a launcher in the scan
path), so availability is the registry's list, not an import probe.  The grid
is small and ordered most promising first, so a budget that runs out skips
the least likely ones: each strategy's hand-measured default tile
of the key (:func:`..planning.tiles.default_config`), then the decoupled look-back's
neighbours.
The full grid adds every fixed tile that ``benchmarks/sweep.py`` times, so
the tuned choice is measured against each of them, and the raking in-tile scan
(Merrill & Grimshaw 2009's SRTS).  Nothing here imports torch or triton.
"""

from __future__ import annotations

from typing import Sequence

from ..planning.registry import STRATEGY_NAMES, strategy_available
from ..planning.tiles import TileConfig, default_config
from ..planning.keys import Candidate

__all__ = ["BENCH_TILES", "EXTRA_TILES", "CHAINED_TILES", "OCCUPANCY_CANDIDATES", "candidate_grid",
           "available_strategies"]

#: Every fixed (block, warps, window) that ``benchmarks/sweep.py`` times (its CONFIGS):
#: all are candidates, so the tuned choice is measured against each of them.
BENCH_TILES = ((4096, 4, 32), (4096, 8, 32), (8192, 4, 32), (8192, 8, 32), (16384, 4, 32), (16384, 8, 32),
               (8192, 8, 16), (8192, 8, 64), (16384, 16, 32), (32768, 16, 32))
#: Neighbours outside the sweep: the smallest and largest 4-warp tiles.
EXTRA_TILES = ((2048, 4, 32), (32768, 4, 32))
#: Chained hand-off: one serial hand-off per tile, so larger tiles are the ones worth trying.
CHAINED_TILES = ((16384, 4), (32768, 8))
#: Register caps tried on the tuned decoupled look-back tile (:func:`.search.refine_occupancy`),
#: as resident tiles per SM by warps per tile: caps of 128 and 96 registers for 4 warps,
#: 128 and 80 for 8 (tiles.register_cap).
OCCUPANCY_CANDIDATES = {4: (4, 5), 8: (2, 3)}


def available_strategies(names: Sequence[str] = STRATEGY_NAMES) -> list[str]:
    """The strategies of ``names`` that can run here, in order."""
    return [s for s in names if strategy_available(s)]


def candidate_grid(strategies: Sequence[str], nbytes: int, floating: bool, n: int,
                   quick: bool = False, K: int = 1) -> list[Candidate]:
    """A small grid of tiles per strategy, most promising first.

    Every strategy's default tile (the key's, :func:`..planning.tiles.default_config`, for
    ``n`` elements per lane in ``K`` streams) comes first, then the default's neighbours
    for the decoupled look-back (block x2 and /2, the other warp count).  That
    is all in ``quick`` mode (first use).  Otherwise also: the decoupled
    look-back on every tile of :data:`BENCH_TILES` (the fixed choices of
    ``benchmarks/sweep.py``) and :data:`EXTRA_TILES`, and on its default tile
    with the raking in-tile scan (rows of the elements one thread holds, Merrill
    & Grimshaw's SRTS); chained on :data:`CHAINED_TILES`; every other strategy
    on its default's block x2 and /2.  Blocks that hold all ``n`` elements in one
    tile run alike (the single-tile path): one of them is kept.
    """
    d = default_config(nbytes, floating, K, n)
    out: list[Candidate] = []

    def add(strategy, block, warps, window):
        c = Candidate(strategy, TileConfig(block, warps, window, d.max_kb, d.packed))
        if block >= 64 and c not in out:
            out.append(c)

    for s in strategies:
        add(s, d.block, d.num_warps, d.window)
    other = 8 if d.num_warps == 4 else 4
    if "decoupled_lookback" in strategies:
        for block, warps in ((d.block * 2, d.num_warps), (d.block // 2, d.num_warps), (d.block, other)):
            add("decoupled_lookback", block, warps, d.window)
    if not quick:
        for s in strategies:
            if s == "decoupled_lookback":
                for block, warps, window in BENCH_TILES + EXTRA_TILES:
                    add(s, block, warps, window)
                per_thread = d.block // (32 * d.num_warps)
                if per_thread >= 2:
                    c = Candidate(s, TileConfig(d.block, d.num_warps, d.window, d.max_kb, d.packed, per_thread))
                    if c not in out:
                        out.append(c)
            elif s == "chained":
                for block, warps in CHAINED_TILES:
                    add(s, block, warps, d.window)
            else:
                for block in (d.block * 2, d.block // 2):
                    add(s, block, d.num_warps, d.window)
    kept, single = [], set()
    for c in out:  # defaults come first, so they are the ones kept
        if c.tile.block >= n:
            sig = (c.strategy, c.tile.num_warps, c.tile.window)
            if sig in single:
                continue
            single.add(sig)
        kept.append(c)
    return kept

