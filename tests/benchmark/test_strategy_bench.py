"""``prefixscan bench --strategies`` on tiny sizes in Triton's interpreter: every GPU
meta-strategy verified and timed next to ``deterministic=True``, with its modelled
traffic; the ``--strategies`` argument.
"""

from __future__ import annotations

import json

import pytest

from prefixscan._environment import interpreter_mode
from prefixscan.backends.triton.planning.registry import STRATEGY_NAMES
from prefixscan.benchmark import parse_strategies
from prefixscan.cli import main


@pytest.mark.interpreter
@pytest.mark.skipif(not interpreter_mode(), reason="needs Triton's interpreter (the device runs the real bench)")
def test_bench_strategies_smoke(tmp_path, capsys):
    pytest.importorskip("torch")
    pytest.importorskip("triton")
    from prefixscan.backends.triton.planning import traffic
    status = main(["bench", "--device", "cpu", "--strategies", "all", "--sizes", "6", "--dtypes", "int32",
                   "--repeats", "1", "--out", str(tmp_path), "--no-progress"])
    text = capsys.readouterr().out
    assert status == 0, text
    data = json.loads((tmp_path / "results.json").read_text())
    recs = {r["impl"]: r for r in data["records"]}
    for s in STRATEGY_NAMES:
        rec = recs[f"strategy:{s}"]
        assert rec["status"] == "ok" and rec["verified"], rec["error"]
        assert rec["strategy"] == s and rec["traffic_per_element"] == pytest.approx(
            traffic.traffic_per_element(s, 64, rec["tile"], blocks=rec["grid"]))
        assert rec["ratio_to_copy"] > 0
    assert recs["strategy:scan_then_propagate"]["traffic_per_element"] > 2.0  # 64 elements = 2 tiles of 32
    det = recs["deterministic"]  # what deterministic=True costs, next to the strategies
    assert det["status"] == "ok" and det["verified"] and det["ratio_to_copy"] > 0
    md = (tmp_path / "results.md").read_text()
    assert "traffic" in md and "strategy:persistent" in md
    assert (tmp_path / "plot.png").read_bytes()[:4] == b"\x89PNG"


def test_strategies_argument(tmp_path, capsys):
    """"all" is the registry's order; names keep the order given, once each."""
    assert parse_strategies("all") == list(STRATEGY_NAMES) == [
        "decoupled_lookback", "chained", "reduce_then_scan", "scan_then_propagate", "persistent"]
    assert parse_strategies("persistent, chained") == ["persistent", "chained"]
    with pytest.raises(ValueError, match="--strategies"):
        parse_strategies("lookback")
    assert main(["bench", "--strategies", "fast", "--out", str(tmp_path / "unused")]) == 2
    assert "--strategies" in capsys.readouterr().err
