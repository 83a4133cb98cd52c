"""Device-memory traffic of each strategy, counted from the algorithm.

The model behind ``prefixscan bench --strategies``: elements read and written
per input element (Merrill & Grimshaw 2009, sections 3.4.1-3.4.3: ~4 for
scan-then-propagate, ~3 for reduce-then-scan; ~2 for the single-pass
strategies of Merrill & Garland 2016 and SAM, Maleki et al. PLDI 2016).
"""

from __future__ import annotations

from .registry import STRATEGY_NAMES
from ..scan.strategy_blocks import geometry, last_plan

__all__ = ["plan", "traffic_per_element"]


def plan(strategy: str, n: int, K: int, acc, device, interpreter: bool, order: int = 1) -> dict:
    """How ``strategy`` scans ``n`` elements as ``n // K`` rows of K columns in the
    accumulator dtype ``acc`` (a torch dtype): programs, tile, columns per tile and
    the device-memory traffic per element of ``order`` passes.  The grids of the
    fixed-grid strategies are those of their last launch (run one first)."""
    if strategy not in STRATEGY_NAMES:
        raise ValueError(f"strategy: unknown strategy {strategy!r}; choose from {', '.join(STRATEGY_NAMES)}")
    g = geometry(device, (acc,), max(1, n // K), K, interpreter, strategy)
    tile, tiles = g.rows * g.kb, g.tiles * g.col_blocks
    grid = last_plan.get(strategy, {}).get("grid", tiles) if strategy in ("reduce_then_scan", "persistent") else tiles
    return dict(strategy=strategy, grid=grid, tile=tile, columns=g.kb, raking=g.rake,
                traffic_per_element=order * traffic_per_element(strategy, n, tile, blocks=grid, columns=g.kb))


def traffic_per_element(strategy: str, n: int, tile: int, *, blocks: int = 264, columns: int = 1) -> float:
    """Elements read + written in device memory per input element by ``strategy``
    scanning one lane of ``n`` elements in tiles of ``tile`` elements, counted from
    the algorithm: input and output, local scans, tile totals and carries
    (recursively), partials, status and ring entries (one per column of a tile:
    ``columns`` is KB of the 2-D layout).  Flags and tags are not counted.
    ``blocks``: C of reduce_then_scan, G of persistent (default: an H100's 132
    SMs x 2).  At large n: scan_then_propagate ~4, reduce_then_scan ~3, the
    single-pass strategies ~2 (Merrill & Grimshaw 2009, sections 3.4.1-3.4.3;
    Merrill & Garland 2016)."""
    if strategy not in STRATEGY_NAMES:
        raise ValueError(f"strategy: unknown strategy {strategy!r}; choose from {', '.join(STRATEGY_NAMES)}")
    n, tile, kb = int(n), max(1, int(tile)), max(1, int(columns))
    if n <= 0:
        return 0.0
    tiles = -(-n // tile)
    if tiles == 1:
        return 2.0  # one pass whatever the strategy
    if strategy == "decoupled_lookback":
        # Per tile: aggregate and inclusive prefix published, about one predecessor read.
        moved = 2 * n + 3 * tiles * kb
    elif strategy == "chained":
        moved = 2 * n + 2 * tiles * kb  # one inclusive prefix written and read per tile
    elif strategy == "scan_then_propagate":
        def stp(m: int) -> int:  # m elements of which m / kb per column
            t = -(-m // tile)
            if t == 1:
                return 2 * m
            # read x, write the local scan and t totals; scan the totals; read the
            # local scan and t carries, write y
            return 2 * m + t * kb + stp(t * kb) + 2 * m + t * kb
        moved = stp(n)
    elif strategy == "reduce_then_scan":
        c = min(blocks, tiles)
        # reduce (read n, write C), scan the partials (read C, write C), scan
        # (read C carries and n, write n): 3n + 4C (Merrill & Grimshaw's O(3n + 3C))
        moved = 3 * n + 4 * c * kb
    else:  # persistent
        g = min(blocks, tiles)
        # per chunk: its total written, the G - 1 between it and its block's last
        # chunk read (from a ring of 3G entries: L2 hits, SAM's point)
        moved = 2 * n + tiles * g * kb
    return moved / n
