"""tools/tune_stability.py: two tuning runs' choices compared where each run measured both."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def record(strategy, block, seconds_by_block, warps=4):
    """A tuned record choosing (strategy, block) with these measured candidates."""
    tile = dict(block=block, num_warps=warps, window=32, max_kb=32, packed=None, raking=0, occupancy=0)
    measured = [dict(tile, block=b, strategy=strategy, seconds=s, samples=3) for b, s in seconds_by_block.items()]
    return {"strategy": strategy, "tile": tile, "measured": measured}


def run_tool(tmp_path, first, second, *extra):
    paths = []
    for name, entries in (("a.json", first), ("b.json", second)):
        (tmp_path / name).write_text(json.dumps({"entries": entries}))
        paths.append(str(tmp_path / name))
    done = subprocess.run([sys.executable, "tools/tune_stability.py", *paths, "--json", str(tmp_path / "rows.json"),
                           *extra], cwd=ROOT, capture_output=True, text=True, timeout=60)
    return done.returncode, done.stdout, json.loads((tmp_path / "rows.json").read_text())


def test_same_choices_and_close_ones_pass(tmp_path):
    first = {"k1": record("decoupled_lookback", 8192, {8192: 1.00, 4096: 1.01}),
             "k2": record("decoupled_lookback", 4096, {8192: 1.015, 4096: 1.00})}
    second = {"k1": record("decoupled_lookback", 8192, {8192: 2.0, 4096: 2.1}),
              "k2": record("decoupled_lookback", 8192, {8192: 1.00, 4096: 1.01})}
    code, out, rows = run_tool(tmp_path, first, second)
    assert code == 0, out
    assert [r["same"] for r in rows] == [True, False]
    assert abs(rows[1]["first_ratio"] - 1.015) < 1e-9 and abs(rows[1]["second_ratio"] - 1.01) < 1e-9
    assert "2 keys: 1 same choice, 1 different within 2%, 0 not" in out


def test_a_far_or_unmeasured_choice_fails(tmp_path):
    first = {"k1": record("decoupled_lookback", 8192, {8192: 1.00, 4096: 1.05}),
             "k2": record("decoupled_lookback", 8192, {8192: 1.00})}
    second = {"k1": record("decoupled_lookback", 4096, {8192: 1.00, 4096: 0.99}),
              "k2": record("decoupled_lookback", 2048, {2048: 1.0, 8192: 1.0})}
    code, out, rows = run_tool(tmp_path, first, second)
    assert code == 1
    assert rows[0]["passes"] is False and abs(rows[0]["first_ratio"] - 1.05) < 1e-9
    assert rows[1]["first_ratio"] is None and "not measured" in out
    code, _, rows = run_tool(tmp_path, first, second, "--tolerance", "0.06")
    assert rows[0]["passes"] and not rows[1]["passes"] and code == 1

