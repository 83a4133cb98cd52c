"""Tile configurations (tiles.py): register caps from occupancy, raking rows.

Plain arithmetic: neither torch nor Triton needed.
"""

from __future__ import annotations

import pytest

from prefixscan.backends.triton.planning import tiles
from prefixscan.backends.triton.planning.tiles import TileConfig


@pytest.mark.parametrize("occupancy, warps, cap", [(0, 4, None), (4, 4, 128), (3, 4, 168), (5, 4, 96), (6, 4, 80),
                                                   (2, 8, 128), (1, 1, 248), (64, 1, 32), (64, 32, 24)])
def test_register_cap(occupancy, warps, cap):
    """Registers per SM over the resident tiles' threads, down to ptxas's unit of 8,
    within what ptxas accepts (at most 255, and a floor no kernel spills below)."""
    assert tiles.register_cap(TileConfig(4096, warps, 32, occupancy=occupancy)) == cap


def test_raking_rows():
    cfg = tiles.TileConfig(64, 1, 2, raking=16)
    assert tiles.raking_rows(cfg, 64) == 16
    assert tiles.raking_rows(cfg, 8) == 8  # capped at the tile
    assert tiles.raking_rows(cfg, 1) == 0  # a one-row tile has nothing to rake
    assert tiles.raking_rows(tiles.TileConfig(64, 1, 2, raking=12), 64) == 0  # not a power of two
    assert tiles.raking_rows(tiles.TileConfig(64, 1, 2), 64) == 0
