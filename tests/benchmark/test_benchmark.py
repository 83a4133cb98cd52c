"""``prefixscan bench`` and the benchmark package (CPU, small sizes): the outputs,
verification of every peer, argument parsing, ``--fresh``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import pytest

from prefixscan.cli import main


def test_bench_outputs(tmp_path, capsys):
    out = tmp_path / "bench"
    extra = tmp_path / "extra" / "r.json"
    status = main(["bench", "--quick", "--sizes", "10:12", "--dtypes", "int32", "--out", str(out),
                   "--json", str(extra), "--no-progress"])
    text = capsys.readouterr().out
    assert status == 0, text
    for name in ("results.json", "results.md", "plot.png"):
        assert (out / name).is_file() and (out / name).stat().st_size > 0, name
    assert extra.is_file()
    assert (out / "plot.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    data = json.loads((out / "results.json").read_text())
    assert json.loads(extra.read_text()) == data
    meta = data["metadata"]
    for key in ("date", "host", "device", "device_name", "versions", "sizes", "dtypes"):
        assert key in meta, key
    assert meta["device"] == "cpu"
    assert meta["sizes"] == [1024, 2048, 4096]
    assert meta["dtypes"] == ["int32"]
    assert meta["versions"]["numpy"] and meta["versions"]["prefixscan"]

    records = data["records"]
    impls = {r["impl"] for r in records}
    assert {"copy", "prefixscan", "numpy.cumsum", "numpy.add.accumulate"} <= impls
    assert len(records) == len(impls) * 3
    for r in records:
        assert r["verified"] is True, r
        assert r["status"] == "ok", r
        assert r["dtype"] == "int32" and r["n"] in (1024, 2048, 4096)
        assert r["order"] == 1 and r["tuple_size"] == 1
        assert r["seconds"] > 0 and r["gelem_per_s"] > 0 and r["gb_per_s"] > 0
        assert r["gb_per_s"] == pytest.approx(r["gelem_per_s"] * 2 * 4)
        assert r["ratio_to_copy"] > 0
        if r["impl"] == "copy":
            assert r["ratio_to_copy"] == pytest.approx(1.0)

    md = (out / "results.md").read_text()
    assert "| n |" in md and "prefixscan" in md and "## int32" in md
    assert "2^12" in text and "prefixscan" in text  # the table printed at the end


def test_bench_api_order_tuple(tmp_path):
    from prefixscan.benchmark import run_benchmark, write_outputs

    result = run_benchmark(device="cpu", sizes=[10], dtypes=["int64", "float32"], repeats=2,
                           order=2, tuple_size=3, progress=False)
    recs = result["records"]
    assert recs and all(r["verified"] for r in recs), recs
    assert {r["n"] for r in recs} == {1023}
    assert all(r["order"] == 2 and r["tuple_size"] == 3 for r in recs)
    paths = write_outputs(result, tmp_path, plot=False)
    assert paths["json"].is_file() and paths["markdown"].is_file()
    assert not (tmp_path / "plot.png").exists()


def test_bench_flags_wrong_peer():
    """A peer whose answer is wrong is reported FAILED and not timed."""
    import numpy as np

    from prefixscan.benchmark.cases import SizeCase
    from prefixscan.benchmark.peers import Implementation
    from prefixscan.benchmark.runner import Progress, measure_host

    def broken(ins, outs):
        return [lambda o=o: o for o in outs]  # leaves zeros

    impls = [Implementation("copy", lambda ins, outs: [lambda: (outs[0].__setitem__(Ellipsis, ins[0]),
                                                              outs[0])[1]], "cpu", is_copy=True),
             Implementation("broken", broken, "cpu")]
    skipped = []
    case = SizeCase(dtype="int32", n=1024, log2n=10, order=1, tuple_size=1, repeats=2)
    recs = measure_host(impls, case, np.random.default_rng(0), Progress(2, False), skipped)
    by = {r["impl"]: r for r in recs}
    assert by["copy"]["verified"] and by["copy"]["seconds"] > 0
    assert by["broken"]["status"] == "FAILED" and not by["broken"]["verified"]
    assert by["broken"]["seconds"] is None


def test_parse_sizes():
    from prefixscan.benchmark import parse_dtypes, parse_sizes, parse_strategies

    assert parse_sizes("10:12") == [10, 11, 12]
    assert parse_sizes("10:24:2") == [10, 12, 14, 16, 18, 20, 22, 24]
    assert parse_sizes("20,10") == [10, 20]
    assert parse_sizes(None, "cpu") == list(range(10, 25, 2))
    assert parse_sizes(None, "cuda") == list(range(10, 31))
    assert parse_dtypes("int32, float64") == ["int32", "float64"]
    with pytest.raises(ValueError):
        parse_sizes("12:10")
    with pytest.raises(ValueError):
        parse_dtypes("complex64")
    assert parse_strategies(None) == []
    assert parse_strategies("chained, persistent,chained") == ["chained", "persistent"]
    assert "decoupled_lookback" in parse_strategies("all")
    with pytest.raises(ValueError):
        parse_strategies("nonesuch")


def test_bench_fresh(tmp_path, capfd):
    """--fresh re-runs the same arguments in a new process with an empty tuning cache."""
    from prefixscan import tuning

    out = tmp_path / "fresh"
    extra = tmp_path / "fresh.json"
    status = main(["bench", "--fresh", "--quick", "--sizes", "10", "--dtypes", "int32", "--repeats", "2",
                   "--out", str(out), "--json", str(extra), "--no-progress", "--no-plot"])
    text = capfd.readouterr()
    assert status == 0, text
    data = json.loads((out / "results.json").read_text())
    meta = data["metadata"]
    assert meta["tuning_cache"] == "fresh process, empty user tuning cache"
    assert meta["fresh_process"] is True
    assert meta["tuning_cache_dir"] != str(tuning.cache_dir())
    assert not Path(meta["tuning_cache_dir"]).exists()  # the temporary cache is gone
    assert meta["sizes"] == [1024] and meta["dtypes"] == ["int32"] and meta["repeats"] == 2
    assert {r["impl"] for r in data["records"]} >= {"copy", "prefixscan"}
    assert json.loads(extra.read_text()) == data
    assert "fresh process, empty user tuning cache" in (out / "results.md").read_text()
    assert not (out / "plot.png").exists()
    assert "2^10" in text.out  # the child's table


def test_report_names_the_tuning_table_in_force():
    """A CUDA run records which table each GPU used; the report prints it."""
    from prefixscan.benchmark import format_markdown, run_benchmark

    result = run_benchmark(device="cpu", sizes=[8], dtypes="int32", repeats=1, progress=False, quick=True,
                           primitives=False)
    assert "tuning_tables" not in result["metadata"]  # the CPU reads no tuning table
    result["metadata"]["tuning_tables"] = ["cuda:0 NVIDIA H100 80GB HBM3: table: shipped"]
    assert "- tuning table of cuda:0 NVIDIA H100 80GB HBM3: table: shipped" in format_markdown(result)


def test_copy_roof_is_the_fastest_copy():
    """On the CPU the copy record is the faster of numpy.copyto and the compiled loop."""
    from prefixscan.benchmark import run_benchmark
    from prefixscan.benchmark.roof import copy_variants

    result = run_benchmark(device="cpu", sizes=[12], dtypes=["float32"], repeats=3, progress=False, quick=True)
    copies = [r for r in result["records"] if r["impl"].startswith("copy")]
    assert len(copies) == 1, copies
    copy = copies[0]
    variants = dict(copy_variants())
    assert set(copy["copy_seconds"]) == set(variants)
    assert copy["seconds"] == min(copy["copy_seconds"].values())
    assert copy["copy_seconds"][copy["roof"]] == copy["seconds"]
    assert result["primitives"] == []  # quick: no primitives unless asked


def test_time_interleaved_rotates_and_stops():
    from prefixscan.benchmark.runner import MIN_ROUNDS, time_interleaved

    calls = []
    fns = [lambda k=k: calls.append(k) for k in range(3)]
    samples = time_interleaved(fns, rounds=50, budget=0.0, first_seconds=[1.0, 1.0, 1.0])
    assert [len(s) for s in samples] == [MIN_ROUNDS] * 3  # budget spent: the minimum of rounds
    assert calls[:3] == [0, 1, 2] and calls[3:6] == [1, 2, 0]  # one call per sample, rotated order
    assert all(t >= 0 for s in samples for t in s)


def test_primitives_rows(tmp_path, capsys):
    """Every primitive row is verified against its idiom and timed with its copy roof."""
    out = tmp_path / "prim"
    status = main(["bench", "--quick", "--sizes", "10", "--dtypes", "int32", "--repeats", "2",
                   "--primitives", "on", "--primitive-size", "12", "--out", str(out), "--no-progress",
                   "--no-plot"])
    text = capsys.readouterr().out
    assert status == 0, text
    data = json.loads((out / "results.json").read_text())
    rows = data["primitives"]
    assert {r["primitive"] for r in rows} >= {"segmented_scan", "compact", "logaddexp float64", "order 8 int32",
                                              "tuple size 8 int32", "affine"}
    import importlib.util

    has_scipy = importlib.util.find_spec("scipy") is not None  # the bench and test extras install it
    for r in rows:
        if r["status"] == "skipped":  # SciPy missing: lfilter is the idiom
            assert r["primitive"] == "linear_recurrence" and not has_scipy, r
            assert r["error"] == "SciPy is not installed"
            continue
        assert r["status"] == "ok" and r["verified"], r
        assert r["seconds"] > 0 and r["peer_seconds"] > 0 and r["copy_seconds"] > 0
        assert r["ratio_to_copy"] == pytest.approx(r["copy_seconds"] / r["seconds"])
        assert r["speedup"] == pytest.approx(r["peer_seconds"] / r["seconds"])
    assert "[primitives, n = 2^12]" in text and "## Primitives (n = 2^12)" in (out / "results.md").read_text()


def test_primitive_mismatch_is_reported():
    """A prefixscan result that differs from the idiom's is FAILED and not timed."""
    import numpy as np

    from prefixscan.benchmark.primitives import Primitive, _time_case

    x = np.arange(100, dtype=np.int32)
    case = Primitive("wrong", "int32", 100, "-", lambda: x + 1, "identity", lambda: x, 2 * x.nbytes)
    rec = _time_case(case, repeats=2, budget=0.01)
    assert rec["status"] == "FAILED" and "differ" in rec["error"] and "seconds" not in rec
    close = Primitive("close", "float32", 100, "-", lambda: x.astype(np.float32) * (1 + 1e-7), "identity",
                      lambda: x.astype(np.float32), 2 * x.nbytes, rtol=1e-5)
    assert _time_case(close, repeats=2, budget=0.01)["verified"]


def test_one_named_statistic_everywhere(capsys):
    """``seconds`` is the median on every device (scans and primitives alike), the fastest
    sample kept beside it; the metadata, the tables and ``bench --help`` say so."""
    from prefixscan.benchmark import format_markdown, format_table, run_benchmark
    from prefixscan.benchmark.report import STATISTIC
    from prefixscan.cli import main

    result = run_benchmark(device="cpu", sizes=[10], dtypes=["int32"], repeats=5, progress=False, quick=True,
                           primitives=True, primitive_log2=10)
    assert result["metadata"]["statistic"] == STATISTIC["cpu"] == STATISTIC["cuda"] == "median"
    for r in result["records"] + [p for p in result["primitives"] if p["status"] == "ok"]:
        assert r["samples"] >= 3
        assert r["seconds"] == r["seconds_median"] >= r["seconds_min"], r
    assert "median of interleaved rounds" in format_table(result).splitlines()[1]
    assert "median of interleaved rounds" in format_markdown(result)
    assert main(["bench", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "the median reported on both" in text


def test_lfilter_row_is_skipped_without_scipy(monkeypatch):
    """Without SciPy the linear_recurrence row says so and costs nothing in the plan."""
    import sys

    import numpy as np

    from prefixscan.benchmark.primitives import expected_seconds, measure_primitives

    monkeypatch.setitem(sys.modules, "scipy", None)
    monkeypatch.setitem(sys.modules, "scipy.signal", None)
    rows = {r["primitive"]: r for r in measure_primitives(8, np.random.default_rng(1), repeats=1, budget=0.01)}
    assert rows["linear_recurrence"]["status"] == "skipped"
    assert rows["linear_recurrence"]["error"] == "SciPy is not installed"
    assert rows["compact"]["status"] == "ok"
    assert expected_seconds("linear_recurrence", 23) < 0.01 * expected_seconds("compact", 23)


def test_cold_start_child_rows_are_checked():
    """The cold-start benchmark's rows, run in this process on the CPU: the stream's
    lengths are distinct and in range, and every row says whether its results matched."""
    from tests.repo_scripts import load_script

    cold = load_script("benchmarks/cold_start.py", "cold_start_script")
    lengths = cold._lengths(40)
    assert len(set(lengths)) == 40 and all(1000 <= m <= 200_000 for m in lengths)
    args = argparse.Namespace(row="stream", peer="prefixscan", device="cpu", n=1000, lengths=5)
    row = cold._child(args)
    assert row["correct"] is True and row["calls"] == 5 and row["total_s"] > 0
    row = cold._child(argparse.Namespace(row="first", peer="torch", device="cpu", n=1000, lengths=5))
    assert row["correct"] is True and row["call_s"] >= 0


def test_cold_start_compiles_the_package_to_bytecode_first(monkeypatch, tmp_path):
    """The rows must not pay for compiling prefixscan's modules (as an installed package
    never does): the bytecode of every module is written before them."""
    import importlib.util

    from tests.repo_scripts import ROOT, load_script

    cold = load_script("benchmarks/cold_start.py", "cold_start_script")
    monkeypatch.setattr(sys, "pycache_prefix", str(tmp_path))
    assert cold._compile_package()
    for module in ("__init__.py", "backends/triton/aot/__init__.py", "backends/triton/planning/planner.py"):
        source = str(ROOT / "prefixscan" / module)
        assert Path(importlib.util.cache_from_source(source)).is_file(), module
