"""``prefixscan tune`` and ``tune_all`` (tuner/session.py): argument checks, one
job per key, the table written, ``info``.

Fakes and fixtures: fakes.py and conftest.py of this folder.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

import prefixscan.tuning as tuning  # noqa: E402
from prefixscan.backends.triton.planning import planner  # noqa: E402
from prefixscan.backends.triton.planning import keys, table  # noqa: E402
from prefixscan.backends.triton.tuner import measure, session  # noqa: E402
from prefixscan.cli import main  # noqa: E402

from .fakes import DEV, GPU, KEY_20, forget, two_tile_result, write_table  # noqa: E402

ROOT = Path(__file__).resolve().parents[4]


def test_tune_without_gpu_says_what_is_missing(capsys):
    if torch.cuda.is_available():
        pytest.skip("a GPU is present")
    assert main(["tune"]) == 2
    err = capsys.readouterr().err
    assert "prefixscan tune" in err and "CUDA" in err


def test_tune_rejects_two_sizes_in_one_bucket(capsys):
    assert main(["tune", "--sizes", "20,21"]) == 2
    assert "same size bucket" in capsys.readouterr().err
    assert main(["tune", "--strategies", "bogus"]) == 2
    assert "bogus" in capsys.readouterr().err


@pytest.mark.parametrize("argv, message", [
    (["--dtypes", "bool"], "--dtypes: 'bool'"), (["--dtypes", "int32,nonsense"], "--dtypes"),
    (["--sizes", "x"], "--sizes"), (["--sizes", "40"], "--sizes: log2 size 40"),
    (["--layouts", "3d"], "--layouts: unknown '3d'"), (["--ops", "mul"], "--ops"),
    (["--budget", "0"], "--budget"), (["--repeats", "0"], "--repeats"), (["--rounds", "2"], "--rounds"),
])
def test_tune_bad_arguments_name_the_argument(capsys, argv, message):
    assert main(["tune"] + argv) == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize("kw, message", [
    (dict(sizes=[20, 21]), r"sizes: 2\^20 and 2\^21"), (dict(sizes=[2.5]), "sizes"),
    (dict(dtypes=["complex64"]), "dtypes"), (dict(ops="builtin", layouts=[]), "layouts: empty"),
    (dict(strategies=["fastest"]), "strategies"), (dict(repeats=True), "repeats"),
    (dict(budget=-1), "budget"), (dict(device="cpu"), "device"), (dict(rounds=2), "rounds: expected"),
    (dict(rounds=True), "rounds"),
])
def test_tune_all_bad_arguments_name_the_argument(kw, message):
    with pytest.raises(ValueError, match=message):
        session.tune_all(**kw)


def test_tune_all_plans_keys_shares_the_budget_and_writes_the_table(fake_gpu, monkeypatch, capsys):
    """tune_all with the device side faked: one job per key (float16 accumulates in
    float32: no key of its own), the compiling key of each group gets a larger
    budget share, a failing key is reported and the others still land on disk."""
    calls = []
    result, T1, _ = two_tile_result()

    def fake(device, accs, monoid=None, K=1, n=0, **kw):
        calls.append(dict(accs=accs, monoid=monoid, K=K, n=n, **kw))
        if accs == [torch.float32] and K == 4 and n == 1 << 16:
            raise RuntimeError("launch failed")
        return result

    monkeypatch.setattr(measure, "tune_workload", fake)
    out = session.tune_all(device="cuda:0", dtypes=["int32", "float16", "float32"], sizes=[16, 20], ops=["builtin"],
                      layouts=["1d", "2d"], budget=100.0, repeats=3, rounds=5)
    assert [(c["accs"], c["K"], c["n"]) for c in calls] == [
        ([torch.int32], 1, 1 << 20), ([torch.int32], 1, 1 << 16), ([torch.int32], 4, 1 << 20),
        ([torch.int32], 4, 1 << 16), ([torch.float32], 1, 1 << 20), ([torch.float32], 1, 1 << 16),
        ([torch.float32], 4, 1 << 20), ([torch.float32], 4, 1 << 16)]
    assert all(c["repeats"] == 3 and c["rounds"] == 5 and c["monoid"] is None for c in calls)
    total_weight = 4 * (session.COMPILE_WEIGHT + 1)
    assert calls[0]["budget"] == pytest.approx(100.0 * session.COMPILE_WEIGHT / total_weight, rel=0.05)
    assert calls[1]["budget"] < calls[0]["budget"] / 2
    bad = keys.entry_key(4, True, "builtin", 4, 1 << 16)
    assert list(out["failed"]) == [bad] and "launch failed" in out["failed"][bad]
    assert len(out["entries"]) == 7 and bad not in out["entries"]
    on_disk = json.loads(table.cache_path(GPU).read_text())["entries"]
    assert set(on_disk) == set(out["entries"]) and on_disk[KEY_20]["source"] == "prefixscan tune"
    assert on_disk[KEY_20]["rounds"] == 5
    assert "[8/8]" in capsys.readouterr().err


def test_tune_command_end_to_end_with_a_fake_device(fake_gpu, monkeypatch, capsys, tmp_path):
    result, T1, _ = two_tile_result()
    monkeypatch.setattr(tuning, "unavailable_reason", lambda: "")
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    monkeypatch.setattr(measure, "tune_workload", lambda *a, **k: result)
    path = tmp_path / "out" / "tune.json"
    assert main(["tune", "--dtypes", "int32", "--sizes", "20", "--ops", "builtin", "--layouts", "1d",
                 "--json", str(path)]) == 0
    out = capsys.readouterr().out
    assert KEY_20 in out and "wrote" in out and GPU in out
    data = json.loads(path.read_text())
    assert list(data["entries"]) == [KEY_20] and data["entries"][KEY_20]["tile"]["block"] == T1.tile.block
    monkeypatch.setenv("PREFIXSCAN_AUTOTUNE", "0")
    forget()  # a new process: scans read what the command wrote
    assert planner.choose_config(DEV, 4, False, 1 << 19, 1, False) == T1.tile


def test_tune_help():
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    out = subprocess.run([sys.executable, "-m", "prefixscan", "tune", "--help"], capture_output=True, text=True,
                         env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    for flag in ("--dtypes", "--sizes", "--budget", "--strategies", "--json", "--clear", "--device"):
        assert flag in out.stdout


def test_tune_clear(fake_gpu, capsys):
    write_table({KEY_20: two_tile_result()[0]})
    write_table({KEY_20: two_tile_result()[0]}, gpu="Another GPU")
    (fake_gpu / "unrelated.txt").write_text("keep")
    assert main(["tune", "--clear"]) == 0
    assert "2 tuning table(s) removed" in capsys.readouterr().out
    assert [p.name for p in fake_gpu.iterdir()] == ["unrelated.txt"]


def test_info_shows_cache_path_and_table_presence(fake_gpu, capsys):
    lines = session.info_lines(gpu_names=[GPU])
    text = "\n".join(lines)
    assert str(fake_gpu) in text and "no tuned table" in text
    write_table({KEY_20: two_tile_result()[0]})
    text = "\n".join(session.info_lines(gpu_names=[GPU]))
    assert str(table.cache_path(GPU)) in text and "tuned table present, 1 entries" in text
    assert main(["info"]) == 0
    out = capsys.readouterr().out
    assert "tuning:" in out and str(fake_gpu) in out
