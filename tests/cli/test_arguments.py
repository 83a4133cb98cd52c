"""Every argument of every command is checked before any work: a bad one exits
with status 2, the command's own usage and one line naming the option, never a
traceback, and nothing has run (no benchmark, no self-test, no tune)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from prefixscan import benchmark, check, tuning
from prefixscan._cli_args import check_output_dir, check_output_file
from prefixscan.cli import main

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def no_work(monkeypatch):
    """The functions that do the work fail the test if they are called."""
    def forbidden(*args, **kwargs):
        raise AssertionError("the work started before the arguments were refused")

    monkeypatch.setattr(benchmark, "run_benchmark", forbidden)
    monkeypatch.setattr(benchmark, "run_fresh", forbidden)
    monkeypatch.setattr(check, "run_checks", forbidden)
    monkeypatch.setattr(tuning, "tune", forbidden)
    monkeypatch.setattr(tuning, "clear", forbidden)


def _refused(capsys, argv, flag):
    status = main(argv)
    captured = capsys.readouterr()
    err = captured.err
    assert status == 2, (argv, captured)
    assert "Traceback" not in err, err
    last = err.strip().splitlines()[-1]
    command = argv[0]
    assert last.startswith(f"prefixscan {command}: error: "), err
    assert flag in last, (flag, err)
    assert f"usage: prefixscan {command}" in err, err  # the command's usage, not the top-level one
    assert captured.out == ""
    return last


BAD = [
    (["bench", "--primitive-size", "-3"], "--primitive-size"),
    (["bench", "--primitive-size", "0"], "--primitive-size"),  # was silently replaced by 23
    (["bench", "--primitive-size", "41"], "--primitive-size"),
    (["bench", "--quick", "--primitive-size", "12"], "--primitive-size"),  # was silently ignored
    (["bench", "--repeats", "0"], "--repeats"),  # was silently made 1
    (["bench", "--repeats", "-5"], "--repeats"),
    (["bench", "--repeats", "two"], "--repeats"),
    (["bench", "--sizes", "10:x"], "--sizes"),  # was "invalid literal for int()"
    (["bench", "--sizes", "12:10"], "--sizes"),
    (["bench", "--sizes", "41"], "--sizes"),
    (["bench", "--sizes", "40"], "--sizes"),  # no machine holds 2^40 elements
    (["bench", "--seed", "-1"], "--seed"),  # was "expected non-negative integer"
    (["bench", "--order", "0"], "--order"),
    (["bench", "--order", "65"], "--order"),
    (["bench", "--tuple-size", "0"], "--tuple-size"),
    (["bench", "--tuple-size", "2048", "--sizes", "10"], "--tuple-size"),
    (["bench", "--dtypes", "bfloat16"], "--dtypes"),  # NumPy has none: cuda only
    (["bench", "--dtypes", "complex64"], "--dtypes"),
    (["bench", "--dtypes", "float16", "--order", "2", "--sizes", "12"], "--dtypes"),
    (["bench", "--strategies", "nonesuch"], "--strategies"),
    (["bench", "--device", "cuda", "--primitives", "on"], "--primitives"),
    (["bench", "--bogus"], "--bogus"),  # printed the top-level usage
    (["check", "--only", "nonsense"], "--only"),  # passed with 0 checks
    (["check", "--seed", "-1"], "--seed"),
    (["check", "--bogus"], "--bogus"),
    (["info", "--bogus"], "--bogus"),
    (["tune", "--repeats", "0"], "--repeats"),
    (["tune", "--rounds", "2"], "--rounds"),
    (["tune", "--budget", "nan"], "--budget"),
    (["tune", "--budget", "-1"], "--budget"),
    (["tune", "--sizes", "17,18"], "--sizes"),  # one size per bucket
    (["tune", "--sizes", "16,x"], "--sizes"),
    (["tune", "--dtypes", "bool"], "--dtypes"),
    (["tune", "--ops", "nonesuch"], "--ops"),
    (["tune", "--clear", "--sizes", "16"], "--clear"),
]


@pytest.mark.parametrize("argv,flag", BAD, ids=[" ".join(a) for a, _ in BAD])
def test_bad_argument_is_refused_before_any_work(no_work, capsys, tmp_path, monkeypatch, argv, flag):
    monkeypatch.chdir(tmp_path)  # the default --out would be created here
    _refused(capsys, argv, flag)
    assert list(tmp_path.iterdir()) == []  # nothing written, no output directory created


def _unwritable(tmp_path):
    """Paths no one can create, root included: under a regular file, and under /proc."""
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    paths = [blocker / "sub"]
    if Path("/proc/self").is_dir():
        paths.append(Path("/proc/nope"))
    return blocker, paths


def test_unwritable_outputs_are_refused_before_any_work(no_work, capsys, tmp_path):
    blocker, paths = _unwritable(tmp_path)
    for path in paths:
        assert "--out" in _refused(capsys, ["bench", "--out", str(path)], "--out")
        last = _refused(capsys, ["bench", "--out", str(tmp_path / "ok"), "--json", str(path / "r.json")], "--json")
        assert str(path) in last
        _refused(capsys, ["bench", "--fresh", "--out", str(path)], "--out")
        if not tuning.unavailable_reason():  # without a GPU tune stops earlier, on the GPU
            _refused(capsys, ["tune", "--json", str(path / "t.json")], "--json")
    _refused(capsys, ["bench", "--out", str(blocker)], "--out")  # a file, not a directory
    _refused(capsys, ["bench", "--json", str(tmp_path)], "--json")  # a directory, not a file
    assert blocker.read_text() == "x"


def test_bad_output_path_in_a_new_process_fails_at_once(tmp_path):
    """Through ``python -m prefixscan``: exit 2 before the benchmark runs (it printed
    its whole table, then died with a traceback)."""
    blocker, _ = _unwritable(tmp_path)
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    for extra in (["--out", str(blocker / "d")], ["--out", str(tmp_path / "d"), "--json", str(blocker / "r.json")]):
        proc = subprocess.run([sys.executable, "-m", "prefixscan", "bench", "--quick", "--sizes", "10",
                               "--dtypes", "int32", "--no-progress", *extra],
                              capture_output=True, text=True, cwd=str(tmp_path), env=env, timeout=120)
        assert proc.returncode == 2, proc.stdout + proc.stderr
        assert "Traceback" not in proc.stderr and proc.stdout == "", proc.stdout + proc.stderr
        assert proc.stderr.strip().splitlines()[-1].startswith("prefixscan bench: error: argument --")
    assert not (tmp_path / "d").exists()


def test_output_checks_leave_nothing_behind(tmp_path):
    out = tmp_path / "new" / "deeper"
    check_output_dir(out)
    check_output_file(tmp_path / "other" / "r.json")
    check_output_file(tmp_path / "r.json")
    assert list(tmp_path.iterdir()) == []  # missing directories are created by the writes, later
    out.mkdir(parents=True)
    check_output_dir(out)
    assert list(out.iterdir()) == []
    target = tmp_path / "r.json"
    target.write_text("kept")
    check_output_file(target)  # an existing file is neither truncated nor removed
    assert target.read_text() == "kept"
    with pytest.raises(ValueError, match="not a directory"):
        check_output_dir(target)
    with pytest.raises(ValueError, match="is a directory"):
        check_output_file(out)


def test_check_only_matching_nothing_is_an_error(capsys):
    with pytest.raises(ValueError, match="nonsense"):
        check.run_checks(only="nonsense")
    assert check.main(only="nonsense") == 2
    assert "nonsense" in capsys.readouterr().err
    assert [name for name, _ in check.select_features("COMPACT")] == ["compact"]
    assert len(check.select_features(None)) == len(check.FEATURES)


def test_valid_arguments_pass(no_work, capsys, tmp_path, monkeypatch):
    """The checks refuse only what is wrong: the edge values are taken (the run
    itself is replaced here, so the arguments reach it)."""
    seen = {}

    def fake_main(args):
        seen.update(vars(args))
        return 0

    monkeypatch.setattr(benchmark, "main_from_args", fake_main)
    for argv in (["bench", "--repeats", "1", "--order", "64", "--tuple-size", "1024", "--sizes", "0:10",
                  "--seed", "0", "--out", str(tmp_path / "o"), "--json", str(tmp_path / "j" / "r.json")],
                 ["bench", "--primitives", "on", "--primitive-size", "3", "--quick", "--out", str(tmp_path / "o")],
                 ["bench", "--strategies", "all", "--out", str(tmp_path / "o")]):
        seen.clear()
        assert main(argv) == 0, capsys.readouterr()
        assert seen["out"] == str(tmp_path / "o")
    assert list(tmp_path.iterdir()) == []  # checking the outputs wrote nothing


def test_sizes_must_fit_the_host_memory():
    """The largest case's host arrays are estimated before the run: 2^30 elements
    need about 9 GiB on the host for a CUDA run (int8 data and the 8-byte reference)
    and several times more on the CPU (an output per implementation)."""
    from prefixscan.benchmark.cases import check_run

    gib = 2**30
    check_run("cuda", ["int32"], [10, 30], 1, 1, memory_bytes=16 * gib)
    with pytest.raises(ValueError, match=r"^--sizes: 2\^31 .* this machine has 16 GiB"):
        check_run("cuda", ["int32"], [31], 1, 1, memory_bytes=16 * gib)
    with pytest.raises(ValueError, match=r"^--sizes: 2\^30"):
        check_run("cpu", ["float64"], [30], 1, 1, memory_bytes=64 * gib)
    check_run("cpu", ["float64"], [24], 1, 1, memory_bytes=4 * gib, primitives=True, primitive_log2=23)
    with pytest.raises(ValueError, match=r"^--primitive-size: 2\^27"):
        check_run("cpu", ["float64"], [24], 1, 1, memory_bytes=4 * gib, primitives=True, primitive_log2=27)
    check_run("cpu", ["float64"], [40], 1, 1, memory_bytes=None)  # memory unknown: not checked
