"""Tile sizes, warps and look-back window per device, element size and size bucket.

The table below holds measured choices (see ``bench/results``); it is not yet
keyed by device: it was measured on an H100 and is used on every GPU.  In the interpreter tiles are tiny so
that multi-tile look-back paths run on small inputs.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class TileConfig:
    block: int  # elements per tile (rows * KB for the 2-D kernel)
    num_warps: int
    window: int  # predecessors inspected per look-back step
    max_kb: int = 32  # widest column block of the 2-D kernel
    packed: bool | None = None  # None: pack flag and value when the value has <= 32 bits
    # In-tile scan: 0 for tl.associative_scan, else raking with rows of this many
    # elements (a power of two; Merrill & Grimshaw's SRTS, see kernels._raking_scan).
    raking: int = 0


_INTERPRETER = TileConfig(block=32, num_warps=1, window=4, max_kb=4)

# (element bytes, floating) -> config.  Measured on an H100 80GB HBM3 at n = 2^28
# (4-byte) and 2^27 (8-byte), bench/results/2026-11-21-h100/tile-sweep.log: fewer warps
# per tile won every time (4 warps beat 8 by 20-40%), larger tiles helped 4-byte ints.
_MEASURED = {(4, False): TileConfig(16384, 4, 32), (4, True): TileConfig(8192, 4, 32),
             (8, False): TileConfig(4096, 8, 32), (8, True): TileConfig(8192, 4, 32)}
# Element sizes not measured yet: the 4-byte choice scaled to about 64 KB per tile.
_FALLBACK = {1: TileConfig(16384, 4, 32), 2: TileConfig(16384, 4, 32)}

_override: TileConfig | None = None


def set_override(config: TileConfig | None) -> None:
    """Force a tile configuration (benchmark sweeps and tests); None restores the table."""
    global _override
    _override = config


def choose_config(device, itemsize: int, floating: bool, M: int, K: int, interpreter: bool) -> TileConfig:
    if _override is not None:
        return _override
    if interpreter:
        return _INTERPRETER
    return _MEASURED.get((itemsize, floating)) or _FALLBACK.get(itemsize) or _MEASURED[(8, floating)]


def raking_rows(config: TileConfig, rows: int) -> int:
    """The raking row length a tile of ``rows`` elements along the scan axis gets:
    the config's, capped at the tile, 0 (tl.associative_scan) when off or not a
    power of two."""
    rake = min(int(config.raking or 0), rows)
    return rake if rake >= 2 and rake & (rake - 1) == 0 else 0
