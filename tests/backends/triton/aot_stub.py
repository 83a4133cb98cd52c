"""Run a script in a child process whose torch answers as one H200 and whose CUDA driver is
the stub ``libcuda.so.1`` of ``tools/aot_host_bench.py`` (compiled here with gcc), so that
the shipped kernels' loader makes its real driver calls and every launch is recorded.

The child's script is :data:`PRELUDE` (``torch``, ``ps``, ``aot``, ``to_cuda(tensor)`` and
``count()``, the launches so far, defined) followed by the test's body, which prints one
JSON line last: :func:`run_on_stub` returns it decoded.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from tests.repo_scripts import ROOT, load_script

needs_gcc = pytest.mark.skipif(shutil.which("gcc") is None, reason="the stub libcuda.so.1 is compiled with gcc")

PRELUDE = r"""
import ctypes, json, sys
import torch
sys.path.insert(0, sys.argv[1])
from tests.repo_scripts import load_script
bench = load_script("tools/aot_host_bench.py", "aot_host_bench")
to_cuda = bench.install_fake_cuda(torch)
stub = ctypes.CDLL("libcuda.so.1")
from pathlib import Path
(ctypes.c_int.in_dll(stub, "stub_nparams").value,) = {  # the stub reads this many per launch
    len(json.loads(f.read_text())["params"]) for f in Path(sys.argv[1], "prefixscan/backends/triton/aot/sm90").glob("*.json")}
import prefixscan as ps
from prefixscan.backends.triton import aot


def count():
    return ctypes.c_int.in_dll(stub, "stub_count").value
"""


def run_on_stub(body: str, tmp_path) -> dict:
    """The JSON object the child printed last, after :data:`PRELUDE` + ``body`` ran."""
    bench = load_script("tools/aot_host_bench.py", "aot_host_bench")
    bench.build_stub(tmp_path)
    env = dict(os.environ, LD_LIBRARY_PATH=f"{tmp_path}:{os.environ.get('LD_LIBRARY_PATH', '')}",
               PYTHONPATH=str(ROOT), PREFIXSCAN_CACHE_DIR=str(tmp_path))
    for name in ("TRITON_INTERPRET", "PREFIXSCAN_AOT", "PREFIXSCAN_AUTOTUNE"):
        env.pop(name, None)
    proc = subprocess.run([sys.executable, "-c", PRELUDE + body, str(ROOT)], env=env, capture_output=True,
                          text=True, cwd=tmp_path, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])
