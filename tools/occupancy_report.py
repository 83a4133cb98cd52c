"""Registers per thread and resident tiles per SM of the headline kernels, offline (sm_90).

A look-back kernel hides its L2 round trips behind the other tiles resident on
the SM, so registers per thread bound how many tiles are in flight: with
65536 registers per SM, a 4-warp tile at 128 registers leaves room for 4
tiles, at 168 for 3 (docs/design/lookback.md).  Compiles each case with its
tuned H200 configuration (benchmarks/results/h200/2026-11-22/tuning-cache) and
prints ptxas's registers, spills (local memory) and the resident tiles per SM,
optionally under a register cap (``maxnreg``).

    python tools/occupancy_report.py [--maxnreg 128]

Run from the repository root with the package installed (``pip install -e .``);
``compile_report`` is imported from this script's folder.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile

import triton
from compile_report import INTS_1D, INTS_2D, INTS_COLS, compile_variant  # tools/ is the script's folder

from prefixscan.backends.triton.scan import lookback
from prefixscan.backends.triton.device.combine import combine_functions
from prefixscan.monoid import BUILTIN_OPS

REGISTERS_PER_SM = 65536
MAX_WARPS_PER_SM = 64


def cases():
    """(label, kernel, acc, ints, constexprs, warps): the tuned configs of the H200 table."""
    pair, flat = combine_functions(BUILTIN_OPS["add"], 1)
    base = dict(PAIR=pair, FLAT=flat, COMMUTATIVE=True, INCLUSIVE=True, REVERSE=False, HAS_INIT=False,
                SINGLE_TILE=False, MULTI_LANE=False, ALIGNED=False, CHAINED=False, RAKE=0)
    one = dict(base, ORDERED=False, DELAYED=False, ORDER2=False)
    for acc, block, words in (("i32", 8192, 1), ("fp32", 8192, 1), ("i64", 4096, 2), ("fp64", 4096, 2)):
        yield (f"1d {acc} b={block}", lookback.scan_1d_kernel, acc, INTS_1D,
               dict(one, WORDS=words, BLOCK=block, WINDOW=32 // words), 4)
    for acc in ("i32", "fp32"):
        yield (f"1d {acc} order 2 b=8192", lookback.scan_1d_kernel, acc, INTS_1D,
               dict(one, WORDS=2, BLOCK=8192, WINDOW=16, ORDER2=True), 4)
    yield ("1d i64 orders b=4096", lookback.scan_1d_kernel, "i64", INTS_1D,
           dict(one, WORDS=2, BLOCK=4096, WINDOW=16, ORDERED=True), 4)
    for acc, rows, kb in (("i32", 1024, 4), ("i32", 512, 8), ("i64", 2048, 4), ("i64", 1024, 8)):
        words = 1 if acc == "i32" else 2
        yield (f"2d {acc} rows={rows} kb={kb}", lookback.scan_2d_kernel, acc, INTS_2D,
               dict(base, WORDS=words, ROWS=rows, KB=kb, WINDOW=max(2, 32 // words // kb), EXACT_K=True,
                    ORDERED=False, DELAYED=False), 4)
    for k, kb in ((2, 2), (3, 4)):
        yield (f"cols i32 K={k} b=4096", lookback.scan_cols_kernel, "i32", INTS_COLS,
               dict(base, WORDS=1, BLOCK=4096, WINDOW=max(2, 32 // kb), K=k, KB=kb), 4)


def resources(compiled) -> tuple[int, int]:
    """(registers per thread, spill stores in the SASS): registers from the cubin by
    cuobjdump; spills counted as STL instructions (cuobjdump's LOCAL stays 0 for them)."""
    tool = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", "cuobjdump")
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(compiled.asm["cubin"])
        f.flush()
        text = subprocess.run([tool, "--dump-resource-usage", f.name], capture_output=True, text=True).stdout
    regs = int(re.search(r"REG:(\d+)", text).group(1))
    return regs, len(re.findall(r"\bSTL\b", compiled.asm["sass"]))


def resident_tiles(regs: int, warps: int) -> int:
    by_regs = REGISTERS_PER_SM // (regs * 32 * warps)  # ptxas allocates per warp in units of 256; close enough
    return min(by_regs, MAX_WARPS_PER_SM // warps)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--maxnreg", type=int, default=None)
    parser.add_argument("--only", default=None, help="substring of the case labels to compile")
    args = parser.parse_args()
    for label, kernel, acc, ints, constexprs, warps in cases():
        if args.only and args.only not in label:
            continue
        compiled = compile_variant(kernel, acc, ints, constexprs, warps, maxnreg=args.maxnreg)
        regs, spills = resources(compiled)
        print(f"{label:28s} warps {warps}  regs {regs:3d}  spill stores {spills:3d}  tiles/SM {resident_tiles(regs, warps)}",
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
