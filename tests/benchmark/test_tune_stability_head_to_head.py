"""tools/tune_stability.py --head-to-head: differing choices timed against each other on
the key's real workload, in Triton's interpreter."""

from __future__ import annotations

import dataclasses

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

from prefixscan._environment import interpreter_mode  # noqa: E402
from prefixscan.backends.triton.planning import planner  # noqa: E402
from prefixscan.backends.triton.planning.tiles import default_config  # noqa: E402
from prefixscan.backends.triton.planning import keys  # noqa: E402
from tests.repo_scripts import load_script  # noqa: E402

tune_stability = load_script("tools/tune_stability.py", "tune_stability")


def record(tile, measured):
    """A tuned look-back record choosing ``tile``, with these (tile, seconds) measured."""
    return {"strategy": "decoupled_lookback", "tile": keys.tile_dict(tile), "n": 96, "K": 1,
            "measured": [dict(keys.tile_dict(t), strategy="decoupled_lookback", seconds=sec, samples=9)
                         for t, sec in measured]}


@pytest.mark.interpreter
@pytest.mark.skipif(not interpreter_mode(), reason="needs Triton's interpreter")
def test_head_to_head_measures_both_choices_in_interleaved_rounds():
    """Two runs chose different tiles, each measuring the other's within 2% of its own
    (the comparison passes); timed against each other on the key's real workload
    (verified first), in alternating order, a 1% gap passes and a 10% gap fails."""
    small = default_config(4, False, 1, 96)
    other = dataclasses.replace(small, num_warps=small.num_warps * 2)
    key = "4B-int-builtin-1d-n<=2^16"
    first = {key: record(small, [(small, 1.0), (other, 1.01)])}
    second = {key: record(other, [(other, 1.0), (small, 1.015)])}
    order = []

    def timer(slower):
        def time(fn):
            fn()
            tile = planner.current_override()
            order.append(tile)
            return slower if tile == other else 1.0
        return time

    for slower, passes in ((1.01, True), (1.10, False)):
        order.clear()
        rows = tune_stability.compare(first, second, 0.02)
        assert rows[0]["passes"] and not rows[0]["same"]
        tune_stability.head_to_head(rows, first, second, rounds=5, tolerance=0.02, device="cpu",
                                    timer=timer(slower))
        h = rows[0]["head_to_head"]
        assert rows[0]["passes"] is passes and h["rounds"] == 5 and abs(h["ratio"] - slower) < 1e-9
        assert order == [other, small, small, other] * 2 + [other, small]


def test_head_to_head_refuses_a_key_it_cannot_build():
    with pytest.raises(ValueError, match="built-in keys"):
        tune_stability._accumulator("8B-float-user-1d-n<=2^16")
    with pytest.raises(ValueError, match="built-in keys"):
        tune_stability._accumulator("2B-int-builtin-1d-n<=2^16")
