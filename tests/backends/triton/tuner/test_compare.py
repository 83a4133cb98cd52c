"""The tuned choice against every fixed choice (tuner/compare.py, what the
benchmark reports).

Fakes and fixtures: fakes.py and conftest.py of this folder.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

from prefixscan._environment import interpreter_mode  # noqa: E402
from prefixscan.backends.triton.planning import planner, tiles  # noqa: E402
from prefixscan.backends.triton.planning.tiles import TileConfig, default_config  # noqa: E402
from prefixscan.backends.triton.tuner import candidates, compare  # noqa: E402
from prefixscan.backends.triton.planning import keys  # noqa: E402

from .fakes import D4  # noqa: E402


def test_fixed_choices_are_the_sweep_tiles_and_the_default():
    choices = compare.fixed_choices(4, False, strategies=["decoupled_lookback"])
    assert choices[0] == ("default table (no tuning)", keys.Candidate("decoupled_lookback", D4))
    tiles = {(c.tile.block, c.tile.num_warps, c.tile.window) for _, c in choices}
    assert tiles == set(candidates.BENCH_TILES) | {(D4.block, D4.num_warps, D4.window)}
    assert len(choices) == len(tiles)
    with_chained = compare.fixed_choices(8, True, tiles=[(4096, 4, 32)], strategies=["decoupled_lookback", "chained"])
    assert [label for label, _ in with_chained][-1] == "chained (default tile)"


@pytest.mark.interpreter
@pytest.mark.skipif(not interpreter_mode(), reason="needs Triton's interpreter")
def test_compare_tuned_times_every_choice_and_judges_within_noise(monkeypatch):
    x = torch.arange(1, 9, dtype=torch.int32)  # tiny: the interpreter takes ~0.03 s a call
    d = default_config(4, False, 1, 8)
    other = next(t for t in [(4096, 4, 32), (2048, 8, 32)] if TileConfig(*t) != d)  # fixed tiles, not the default
    sweep = [other, (8192, 8, 32)]
    fast = {None: 1.0, d: 1.1, TileConfig(*other): 1.2, TileConfig(8192, 8, 32): 1.3}
    seen = []

    def timer(fn):  # the tile in force tells the choice apart (None: the tuned path)
        fn()
        seen.append(planner.current_override())
        return fast[planner.current_override()]

    expected = torch.cumsum(x, 0, dtype=torch.int32)
    rec = compare.compare_tuned(x, tiles=sweep, strategies=["decoupled_lookback"], timer=timer, rounds=3,
                                check=lambda r: torch.equal(r, expected))
    assert rec["ok"] and rec["best_fixed"] == "default table (no tuning)"
    assert rec["best_fixed_over_tuned"] == pytest.approx(1.1) and rec["noise"] == 0
    assert [row["label"] for row in rec["choices"]][0] == "tuned"
    assert all(row["verified"] and len(row["samples"]) == 3 for row in rec["choices"])
    assert rec["tuned"]["strategy"] == "decoupled_lookback" and rec["tuned"]["block"] == tiles.INTERPRETER_TILE.block
    assert len(seen) == 3 * 4 and seen[:4] != seen[4:8]  # every round, in a rotated order
    assert planner.current_override() is None

    fast[TileConfig(8192, 8, 32)] = 0.5  # a fixed choice twice as fast: not ok
    rec = compare.compare_tuned(x, tiles=sweep, strategies=["decoupled_lookback"], timer=timer, rounds=2)
    assert not rec["ok"] and rec["best_fixed"].endswith("b=8192 w=8 win=32")
    assert "SLOWER THAN A FIXED CHOICE" in compare.format_comparison([dict(rec, case="int32 8")])

    # a fixed choice that computes a wrong result never counts as the best
    verdicts = iter([True, True, True, False])  # in the order of rec["choices"]
    rec = compare.compare_tuned(x, tiles=sweep, strategies=["decoupled_lookback"], timer=timer, rounds=2,
                                check=lambda r: next(verdicts))
    assert rec["choices"][3]["verified"] is False and rec["ok"]
    assert "WRONG RESULT" in compare.format_comparison([rec])

    # noise: the tuned choice 5% slower than the best fixed one passes only if the
    # measurements spread by more than that
    fast.update({None: 1.05, TileConfig(8192, 8, 32): 1.0})
    assert not compare.compare_tuned(x, tiles=sweep, strategies=["decoupled_lookback"], timer=timer)["ok"]
    assert compare.compare_tuned(x, tiles=sweep, strategies=["decoupled_lookback"], timer=timer,
                                 noise_floor=0.06)["ok"]


def test_compare_tuned_rejects_bad_arguments():
    with pytest.raises(ValueError, match="rounds"):
        compare.compare_tuned(torch.ones(4), rounds=0)
    with pytest.raises(TypeError, match="x: expected a torch tensor"):
        compare.compare_tuned([1, 2, 3])
