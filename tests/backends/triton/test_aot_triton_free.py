"""The shipped sums reach nothing of Triton (on the CPU, CUDA faked by tools/aot_host_bench.py).

A stream of new lengths through the shipped kernels, from before ``import prefixscan`` to
its last call, with ``TRITON_CACHE_DIR`` an empty directory: no ``triton`` import, no file
opened or listed under Triton's package or cache directories, no subprocess (Triton
compiles its helpers with the C compiler), and the directory still empty afterwards
(docs/design/cold-start.md, "An empty Triton cache").  The audit itself is checked on
Triton's own cache.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

pytest.importorskip("torch")
pytest.importorskip("triton")

from tests.repo_scripts import ROOT, load_script  # noqa: E402


@pytest.mark.skipif(shutil.which("gcc") is None, reason="the stub libcuda.so.1 is compiled with gcc")
def test_a_stream_of_the_shipped_sums_reaches_nothing_of_triton(tmp_path):
    bench = load_script("tools/aot_host_bench.py", "aot_host_bench")
    out = tmp_path / "rows.json"
    assert bench.main(["--runs", "1", "--lengths", "60", "--tree", str(ROOT), "--audit-triton", "--json", str(out)]) == 0
    (row,) = json.loads(out.read_text())["runs"][str(ROOT)]
    assert row["triton_cache_files"] == 0 and not row["triton_imported"]
    events = row["triton_events"]
    assert events["imports"] == [] and events["files"] == [] and events["subprocess"] == []
    assert events["dlopen"] == ["libcuda.so.1"]  # the driver (the stub), by the loader


_AUDITED = r"""
import importlib.util, json, sys
spec = importlib.util.spec_from_file_location("cold_start", sys.argv[1])
cold = importlib.util.module_from_spec(spec)
spec.loader.exec_module(cold)
record = cold.audit_triton()
from triton.runtime.cache import get_cache_manager
cache = get_cache_manager("ab" * 32)
cache.put(b"{}", "kernel.json")
cache.get_file("kernel.json")
print(json.dumps({key: len(v) for key, v in record.items()}))
"""


def test_the_audit_sees_tritons_import_and_cache(tmp_path):
    env = dict(os.environ, TRITON_CACHE_DIR=str(tmp_path))
    proc = subprocess.run([sys.executable, "-c", _AUDITED, str(ROOT / "benchmarks" / "cold_start.py")], env=env,
                          capture_output=True, text=True, check=True, cwd=tmp_path)
    counts = json.loads(proc.stdout.strip().splitlines()[-1])
    assert counts["imports"] > 0 and counts["files"] >= 3  # mkdir, the file written, its rename
