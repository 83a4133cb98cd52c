"""Properties of the compiled kernels that the interpreter cannot show.

The kernels are compiled for sm_90 without a GPU (``bench/compile_report.py``),
in a subprocess because under ``TRITON_INTERPRET=1`` ``triton.jit`` returns an
interpreted function that cannot be compiled.

Status words of the look-back must be read by exactly one operation per read in
the source: Triton's layout pass once duplicated a volatile window load of the
2-D look-back into two loads in two layouts (flags from one, values from the
other), and a word that changed between them gave wrong prefixes on the H200
now and then.  Reads are atomics now, which the compiler never duplicates.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("triton")

ROOT = Path(__file__).resolve().parents[1]

# Tiles whose look-back had been duplicated: the chained (WINDOW 1) and windowed
# 2-D kernel with 8 warps, K = 3 padded to 4 columns; 1-D ones for contrast (int64,
# and order 2 with two fields per entry); the masked-columns kernel.
SCRIPT = r"""
import json, sys
sys.path.insert(0, "bench"); sys.path.insert(0, ".")
from compile_report import compile_variant, kernels, combine_functions, BUILTIN_OPS
pair, flat = combine_functions(BUILTIN_OPS["add"], 1)
ints = {"M": "i64", "K": "i64", "col_blocks": "i64", "tiles_per_lane": "i64", "tile_base": "i64",
        "epoch": "i32", "order_stride": "i64", "order": "i32"}
out = {}
for window in (1, 32):
    c = dict(PAIR=pair, FLAT=flat, COMMUTATIVE=True, INCLUSIVE=True, REVERSE=False, HAS_INIT=True, WORDS=1,
             SINGLE_TILE=False, MULTI_LANE=False, CHAINED=window == 1, ROWS=8192, KB=4, WINDOW=window,
             ORDERED=False, DELAYED=False, RAKE=0, EXACT_K=False)
    ttgir = compile_variant(kernels.scan_2d_kernel, "i32", ints, c, 8).asm["ttgir"]
    out[f"2d-window{window}"] = {"words": 1, "volatile_loads": ttgir.count("isVolatile = true"),
                                 "atomic_adds": ttgir.count("atomic_rmw add")}
ints_1d = {k: v for k, v in ints.items() if k not in ("K", "col_blocks")}
c = dict(PAIR=pair, FLAT=flat, COMMUTATIVE=True, INCLUSIVE=True, REVERSE=False, HAS_INIT=True, WORDS=2,
         SINGLE_TILE=False, MULTI_LANE=False, CHAINED=False, BLOCK=4096, WINDOW=32, ORDERED=False,
         DELAYED=False, RAKE=0, ORDER2=False)
ttgir = compile_variant(kernels.scan_1d_kernel, "i64", ints_1d, c, 4).asm["ttgir"]
out["1d-int64"] = {"words": 2, "volatile_loads": ttgir.count("isVolatile = true"),
                   "atomic_adds": ttgir.count("atomic_rmw add")}
c = dict(c, WORDS=2, ORDERED=False, ORDER2=True, BLOCK=8192)  # order 2: two int32 fields per entry
ttgir = compile_variant(kernels.scan_1d_kernel, "i32", ints_1d, c, 4).asm["ttgir"]
out["1d-order2-int32"] = {"words": 2, "volatile_loads": ttgir.count("isVolatile = true"),
                          "atomic_adds": ttgir.count("atomic_rmw add")}
ints_cols = {"L": "i64", "tiles_per_lane": "i64", "tile_base": "i64", "epoch": "i32"}
c = dict(PAIR=pair, FLAT=flat, COMMUTATIVE=True, INCLUSIVE=False, REVERSE=False, HAS_INIT=True, WORDS=1,
         SINGLE_TILE=False, MULTI_LANE=True, CHAINED=False, BLOCK=4096, WINDOW=8, K=3, KB=4, RAKE=0)
ttgir = compile_variant(kernels.scan_cols_kernel, "i32", ints_cols, c, 4).asm["ttgir"]
out["columns-K3"] = {"words": 1, "volatile_loads": ttgir.count("isVolatile = true"),
                     "atomic_adds": ttgir.count("atomic_rmw add")}
print(json.dumps(out))
"""


def test_status_words_are_read_by_atomics_only():
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    done = subprocess.run([sys.executable, "-c", SCRIPT], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    counts = json.loads(done.stdout.strip().splitlines()[-1])
    for name, c in counts.items():
        # Tagged words only: no volatile load at all.  Atomic adds: the tile
        # counter and one status read per copy of the tile code (full / partial),
        # whatever the words per entry (read together: one round trip, not one per word).
        assert c["volatile_loads"] == 0, (name, c)
        assert c["atomic_adds"] == 3, (name, c)


@pytest.mark.parametrize("case", [("int32", "1", "5"), ("int64", "1", "5"), ("int32", "8", "1")])
def test_blocked_kernel_keeps_registers_at_lengths_not_a_multiple_of_16(case):
    """blocked.orders_kernel compiled (sm_90, launch defaults) for a length that is not a
    multiple of 16 has no stack frame: a partial tile's masks once kept ~100 element offsets
    live from the tile's entry to its store and spilled them in every tile (int32 tuple
    size 5: 408 bytes, order 8: 24 bytes at 255 registers; NOTES.md "Run n")."""
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    done = subprocess.run([sys.executable, "bench/sass_report.py", *case, "--odd-length"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    report = done.stdout.splitlines()[0]
    assert " STACK:0 " in report and " LOCAL:0 " in report, report
