"""The command line (cli.py): ``prefixscan info``, ``--help``, argument errors, what it
imports, ``--device cuda`` without a GPU.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from prefixscan.cli import main

ROOT = Path(__file__).resolve().parents[2]


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


def test_bench_fresh_argv():
    """The child gets the same arguments minus --fresh."""
    from prefixscan.cli import _argv_without, build_parser

    args = build_parser().parse_args(["bench", "--fresh", "--sizes", "10:12", "--tuple-size", "3",
                                      "--no-plot", "--out", "d"])
    assert _argv_without(args, args.command_parser, "fresh") == [
        "--sizes", "10:12", "--out", "d", "--tuple-size", "3", "--no-plot"]


def test_bench_bad_arguments(capsys):
    assert main(["bench", "--sizes", "x:y", "--out", "unused"]) == 2
    assert main(["bench", "--dtypes", "object", "--out", "unused"]) == 2


def test_module_help():
    proc = subprocess.run([sys.executable, "-m", "prefixscan", "--help"], capture_output=True,
                          text=True, cwd=str(ROOT), env=_env(), timeout=60)
    assert proc.returncode == 0, proc.stderr
    for word in ("info", "check", "bench"):
        assert word in proc.stdout


def test_no_heavy_imports_at_import_time():
    code = ("import sys, prefixscan.cli, prefixscan.benchmark, prefixscan.check, prefixscan.testing, "
            "prefixscan.tuning; "
            "bad = [m for m in ('torch', 'cupy', 'jax', 'matplotlib', 'triton') if m in sys.modules]; "
            "print(bad); sys.exit(1 if bad else 0)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=str(ROOT), env=_env(), timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_cuda_device_without_gpu(capsys):
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("a GPU is present")
    assert main(["check", "--device", "cuda", "--quick"]) == 2
    assert main(["bench", "--device", "cuda", "--quick", "--out", "unused"]) == 2
    assert "CUDA" in capsys.readouterr().err
