"""``prefixscan bench --fresh``: the numbers a new user gets out of the box.

The benchmark re-runs in a new Python process (``python -m prefixscan bench``
with the same arguments minus ``--fresh``) whose ``PREFIXSCAN_CACHE_DIR`` is a
new empty temporary directory: no tuned table from earlier runs, no compiled
kernel or memo of this process, first-use tuning (where enabled) exactly as a
first call would do it.  Afterwards the results are marked ``metadata
["tuning_cache"] = "fresh process, empty user tuning cache"``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Sequence

import prefixscan

from .report import FRESH_NOTE, write_outputs

__all__ = ["run_fresh"]


def run_fresh(bench_argv: Sequence[str], out_dir: str | os.PathLike,
              json_file: str | os.PathLike | None = None) -> int:
    """Run ``prefixscan bench *bench_argv`` (which must not hold ``--fresh``) in a
    child process with an empty tuning cache, writing into ``out_dir``; then
    record the fresh start in its ``results.json`` / ``results.md`` (and
    ``json_file``).  Returns the child's exit status."""
    if "--fresh" in bench_argv:
        raise ValueError("run_fresh: the child's arguments must not hold --fresh")
    sys.stdout.flush()
    sys.stderr.flush()
    with tempfile.TemporaryDirectory(prefix="prefixscan-fresh-cache-") as cache:
        env = dict(os.environ)
        env["PREFIXSCAN_CACHE_DIR"] = cache
        # The child imports this very prefixscan, installed or not.
        package_root = str(Path(prefixscan.__file__).resolve().parents[1])
        env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH")) if p)
        print(f"--fresh: running the benchmark in a new Python process, tuning cache {cache} (empty)",
              file=sys.stderr, flush=True)
        status = subprocess.run([sys.executable, "-m", "prefixscan", "bench", *bench_argv], env=env).returncode
    results = Path(out_dir) / "results.json"
    if status in (0, 1) and results.is_file():
        result = json.loads(results.read_text())
        result["metadata"]["tuning_cache"] = FRESH_NOTE
        result["metadata"]["fresh_process"] = True
        write_outputs(result, out_dir, plot=False, json_file=json_file)
    return status
