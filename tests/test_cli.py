"""The command line: ``prefixscan info``, ``check`` and ``bench`` (CPU, small sizes)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from prefixscan import _reference as ref
from prefixscan.cli import main

ROOT = Path(__file__).resolve().parents[1]


def _env():
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def test_info(capsys):
    assert main(["info"]) == 0
    text = capsys.readouterr().out
    assert "prefixscan" in text
    assert "NumPy" in text and "Python" in text
    assert "backends:" in text and "cpu" in text


def test_check_quick(capsys):
    status = main(["check", "--quick", "--seed", "1234"])
    text = capsys.readouterr().out
    lines = [ln for ln in text.splitlines() if ln.startswith(("PASS", "FAIL", "SKIP"))]
    assert len(lines) >= 20, text
    assert not [ln for ln in lines if ln.startswith("FAIL")], text
    assert status == 0, text


def test_check_only_filter(capsys):
    assert main(["check", "--quick", "--only", "compact"]) == 0
    lines = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("PASS")]
    assert len(lines) == 1 and "compact" in lines[0]


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
    from prefixscan.bench import run_benchmark, write_outputs

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
    from prefixscan import bench

    def broken(ins, outs):
        return [lambda o=o: o for o in outs]  # leaves zeros

    impls = [bench._Impl("copy", lambda ins, outs: [lambda: (outs[0].__setitem__(Ellipsis, ins[0]),
                                                           outs[0])[1]], "cpu", is_copy=True),
             bench._Impl("broken", broken, "cpu")]
    import numpy as np

    skipped = []
    recs = bench._bench_size_cpu(impls, "int32", 1024, 10, 1, 1, 2, np.random.default_rng(0),
                                 bench._Progress(2, False), skipped)
    by = {r["impl"]: r for r in recs}
    assert by["copy"]["verified"] and by["copy"]["seconds"] > 0
    assert by["broken"]["status"] == "FAILED" and not by["broken"]["verified"]
    assert by["broken"]["seconds"] is None


def test_parse_sizes():
    from prefixscan.bench import parse_dtypes, parse_sizes

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


def test_bench_bad_arguments(capsys):
    assert main(["bench", "--sizes", "x:y", "--out", "unused"]) == 2
    assert main(["bench", "--dtypes", "object", "--out", "unused"]) == 2


def test_reference_semantics():
    # docs/semantics.md examples, on the plain-loop reference itself.
    x = [1, 2, 3, 4]
    assert ref.scan_1d(x, "add", dtype="int32") == [1, 3, 6, 10]
    assert ref.scan_1d(x, "add", dtype="int32", inclusive=False, init=10) == [10, 11, 13, 16]
    assert ref.scan_1d(x, "add", dtype="int32", reverse=True) == [10, 9, 7, 4]
    assert ref.scan_1d(x, "add", dtype="int32", reverse=True, inclusive=False) == [9, 7, 4, 0]
    assert ref.scan_1d([1, 2, 3, 4, 5, 6], "add", dtype="int32", tuple_size=2) == [1, 2, 4, 6, 9, 12]
    assert ref.scan_1d(x, "add", dtype="int32", order=2) == [1, 4, 10, 20]
    assert ref.scan_1d([2**31 - 1, 1], "add", dtype="int32") == [2**31 - 1, -(2**31)]
    assert ref.segmented_scan([1, 2, 3, 4], [1, 0, 1, 0], "add", dtype="int64") == [1, 3, 3, 7]
    assert ref.flags_from_offsets([0, 2, 2, 4], 4) == [True, False, True, False]
    assert ref.flags_from_keys([5, 5, 7, 5]) == [True, False, True, True]
    assert ref.compact([1, 2, 3], [True, False, True]) == [1, 3]
    d = ref.delta_encode([5, 7, 1, 9, 3, 3], 2, 2, dtype="int8")
    assert ref.delta_decode(d, 2, 2, dtype="int8") == [5, 7, 1, 9, 3, 3]
    assert ref.linear_recurrence([1, 2], [1, 1], 3) == [4, 9]
    assert ref.linear_recurrence([1, 2], [1, 1], 3, reverse=True) == [8, 7]


def test_module_help():
    proc = subprocess.run([sys.executable, "-m", "prefixscan", "--help"], capture_output=True,
                          text=True, cwd=str(ROOT), env=_env(), timeout=60)
    assert proc.returncode == 0, proc.stderr
    for word in ("info", "check", "bench"):
        assert word in proc.stdout


def test_no_heavy_imports_at_import_time():
    code = ("import sys, prefixscan.cli, prefixscan.bench, prefixscan.check, prefixscan._reference; "
            "bad = [m for m in ('torch', 'cupy', 'jax', 'matplotlib', 'triton') if m in sys.modules]; "
            "print(bad); sys.exit(1 if bad else 0)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=str(ROOT), env=_env(), timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_check_skips_only_deliberate_not_implemented():
    """A NotImplementedError raised by prefixscan's own code is a SKIP; one
    coming from a library it calls (torch's missing kernels, say) is a FAIL."""
    from prefixscan import check

    class _Ctx:
        class dev:  # noqa: N801
            name = "cuda"

    with pytest.raises(NotImplementedError) as info:
        check.f_algorithms(_Ctx())
    assert check._deliberate(info.value)

    def library_call():
        raise NotImplementedError("ufunc_add_CUDA not implemented for 'UInt16'")

    with pytest.raises(NotImplementedError) as info:
        library_call()
    assert not check._deliberate(info.value)


def test_cuda_device_without_gpu(capsys):
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("a GPU is present")
    assert main(["check", "--device", "cuda", "--quick"]) == 2
    assert main(["bench", "--device", "cuda", "--quick", "--out", "unused"]) == 2
    assert "CUDA" in capsys.readouterr().err
