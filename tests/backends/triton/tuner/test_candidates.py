"""The candidate grid (tuner/candidates.py): small, and covering the tiles of
``benchmarks/sweep.py``.

Fakes and fixtures: fakes.py and conftest.py of this folder.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

from prefixscan.backends.triton.planning.registry import STRATEGY_NAMES  # noqa: E402
from prefixscan.backends.triton.planning.tiles import TileConfig, default_config  # noqa: E402
from prefixscan.backends.triton.tuner import candidates  # noqa: E402
from prefixscan.backends.triton.planning import keys  # noqa: E402
from tests.repo_scripts import load_script  # noqa: E402


def load_sweep():
    return load_script("benchmarks/sweep.py", "sweep_for_test")


@pytest.mark.parametrize("nbytes, floating", [(4, False), (4, True), (8, False), (8, True)])
def test_candidate_grid_is_small_and_covers_the_sweep(nbytes, floating):
    strategies = list(STRATEGY_NAMES)
    d = default_config(nbytes, floating)
    full = candidates.candidate_grid(strategies, nbytes, floating, 1 << 28)
    quick = candidates.candidate_grid(strategies, nbytes, floating, 1 << 24, quick=True)
    assert len(set(full)) == len(full) and len(full) <= 26
    # + 1: the decoupled look-back's default tile with the raking in-tile scan
    assert len(candidates.candidate_grid(["decoupled_lookback", "chained"], nbytes, floating, 1 << 28)) <= 17
    assert any(c.tile.raking for c in full) and not any(c.tile.raking for c in quick)
    assert len(quick) <= 8
    assert full[:len(strategies)] == [keys.Candidate(s, d) for s in strategies]  # baselines first
    tiles = {c.tile for c in full if c.strategy == "decoupled_lookback"}
    for block, warps, window in load_sweep().CONFIGS:
        assert TileConfig(block, warps, window) in tiles, (block, warps, window)
    assert set(load_sweep().CONFIGS) == set(candidates.BENCH_TILES)


def test_sweep_reference_check_along_axis_0():
    sweep = load_sweep()
    x = torch.arange(20, dtype=torch.int64).reshape(5, 4)
    check = sweep.reference_check(x, 0)
    good = torch.cumsum(x, 0)
    assert check(good)
    bad = good.clone()
    bad[3, 2] += 1
    assert not check(bad)
    xf = torch.linspace(-1, 1, 20, dtype=torch.float32).reshape(5, 4)
    assert sweep.reference_check(xf, 0)(torch.cumsum(xf, 0)) and not sweep.reference_check(xf, 0)(xf)


def test_candidate_grid_prunes_single_tile_duplicates():
    grid = candidates.candidate_grid(["decoupled_lookback"], 4, False, 4096)
    single = [(c.tile.num_warps, c.tile.window) for c in grid if c.tile.block >= 4096]
    assert len(single) == len(set(single))
    assert grid[0] == keys.Candidate("decoupled_lookback", default_config(4, False, 1, 4096))
    assert any(c.tile.block < 4096 for c in grid)
