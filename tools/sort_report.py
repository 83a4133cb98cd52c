"""Compile the sort's kernels for sm_90 without a GPU: registers, spills, tiles per SM.

The digit pass of the GPU radix sort (``prefixscan.primitives.sort.triton_kernels``)
ranks a tile's keys by packed one-hot cumulative sums, whose registers grow with
the tile; this report compiles the histogram and the digit pass for every key
width and kind, with each payload (none, the index written as the first pass
writes it, copied int32 / int64 values) and the wide (int64 counts) form, and
prints ptxas's registers per thread, spill stores in the SASS and the tiles an SM
holds at that register count (``occupancy_report``'s helpers).

    python tools/sort_report.py [--block 2048 --warps 8] [--only int32] [--quick] [--json]

``--json`` prints ``{label: "ok" or the error}``; ``--quick`` compiles a few dtypes
and payloads (about two minutes on a loaded 2-core machine: too slow for the test
suite; benchmarks/device.sh's ``sort_tests`` profile runs it).  The numbers behind
the GPU tile's choice are in docs/design/sort.md.  Run from the repository root,
without TRITON_INTERPRET.
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
import time

import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

from prefixscan.backends.triton.device.combine import combine_functions
from prefixscan.monoid import BUILTIN_OPS
from prefixscan.primitives.sort import triton_kernels as kernels
from prefixscan.primitives.sort.keys import SORTABLE_DTYPES, key_code
from prefixscan.primitives.sort.triton import GPU_TILE, RANKINGS, _key_constexpr

TARGET = GPUTarget("cuda", 90, 32)
#: Triton pointer types of the keys' storage, by width.
STORAGE = {8: "i8", 16: "i16", 32: "i32", 64: "i64"}


def _compile_pass(code, payload: int, pay_in: str, pay_out: str, block: int, warps: int, window: int,
                 wide: bool = False, write_keys: bool = True, rank: str = "packed"):
    """The digit pass for keys of ``code`` and a payload mode (0 none, 1 index, 2 copied)."""
    kernel = kernels.digit_pass_kernel
    pair, flat = combine_functions(BUILTIN_OPS["add"], 1)
    words = 2 if wide else 1
    keys = f"*{STORAGE[code.width]}"
    sig = {"io": (keys, keys, f"*{pay_in}", f"*{pay_out}"), "status": ("*i64", "*i64", ("*i64",), ("*i64",)),
           "counter_ptr": "*i64", "hist_ptr": "*i64" if wide else "*i32", "L": "i64" if wide else "i32",
           "tiles_per_lane": "i64" if wide else "i32", "shift": "i32", "pass_index": "i32", "passes": "i32",
           "tile_base": "i64", "epoch": "i32"}
    constexprs = dict(MONOID=(pair, flat, True), PROTOCOL=(words, window, False), KEY=_key_constexpr(code),
                      TILE=(block, False, payload, write_keys, wide, RANKINGS.index(rank)))
    sig.update({k: "constexpr" for k in constexprs})
    names = kernel.arg_names
    src = ASTSource(kernel, sig, constexprs={(names.index(k),): v for k, v in constexprs.items()})
    return triton.compile(src, target=TARGET, options={"num_warps": warps})


def compile_histogram(code, block: int, items: int, warps: int = 4):
    kernel = kernels.histogram_kernel
    passes = code.passes(kernels.DIGIT_BITS)
    constexprs = dict(KEY=_key_constexpr(code), PASSES=passes, PB=1 << (passes - 1).bit_length(), BLOCK=block,
                      ITEMS=items)
    sig = {"keys_ptr": f"*{STORAGE[code.width]}", "hist_ptr": "*i32", "L": "i32", "spans": "i32"}
    sig.update({k: "constexpr" for k in constexprs})
    names = kernel.arg_names
    src = ASTSource(kernel, sig, constexprs={(names.index(k),): v for k, v in constexprs.items()})
    return triton.compile(src, target=TARGET, options={"num_warps": warps})


def cases(block: int, warps: int, window: int, quick: bool, rank: str = "packed"):
    """(label, compile()) of each variant."""
    compile_pass = functools.partial(_compile_pass, rank=rank)
    dtypes = ("int8", "float16", "int32", "float32", "float64", "bool") if quick else SORTABLE_DTYPES
    for dtype in dtypes:
        code = key_code(dtype)
        yield f"histogram {dtype}", lambda code=code: compile_histogram(code, GPU_TILE.hist_block,
                                                                        GPU_TILE.hist_items)
        yield f"pass {dtype} keys", lambda code=code: compile_pass(code, 0, "i32", "i32", block, warps, window)
        yield f"pass {dtype} argsort first", lambda code=code: compile_pass(code, 1, "i32", "i32", block, warps,
                                                                            window, write_keys=True)
        if not quick:
            yield f"pass {dtype} argsort last", lambda code=code: compile_pass(code, 2, "i32", "i64", block, warps,
                                                                               window, write_keys=False)
            yield f"pass {dtype} int64 values", lambda code=code: compile_pass(code, 2, "i64", "i64", block, warps,
                                                                               window)
    code = key_code("int32", descending=True, key_bits=3)
    yield "pass int32 key_bits=3 descending argsort", lambda: compile_pass(code, 1, "i32", "i64", block, warps,
                                                                           window, write_keys=False)
    yield "pass float32 wide (int64 counts)", lambda: compile_pass(key_code("float32"), 2, "i64", "i64", block, warps,
                                                                   window, wide=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--block", type=int, default=GPU_TILE.block)
    parser.add_argument("--warps", type=int, default=GPU_TILE.num_warps)
    parser.add_argument("--window", type=int, default=GPU_TILE.window)
    parser.add_argument("--rank", default=GPU_TILE.rank, choices=RANKINGS, help="the digit pass's ranking")
    parser.add_argument("--only", default=None, help="substring of the labels to compile")
    parser.add_argument("--quick", action="store_true", help="a few dtypes and payloads only")
    parser.add_argument("--json", action="store_true", help="print {label: 'ok' or the error}")
    args = parser.parse_args()
    if not args.json:
        sys.path.insert(0, __file__.rsplit("/", 1)[0])
        from occupancy_report import resident_tiles, resources  # tools/, the script's folder
    results = {}
    for label, build in cases(args.block, args.warps, args.window, args.quick, args.rank):
        if args.only and args.only not in label:
            continue
        t = time.time()
        try:
            compiled = build()
        except Exception as exc:  # noqa: BLE001 - reported per variant
            results[label] = f"{type(exc).__name__}: {exc}"[:500]
            if not args.json:
                print(f"{label:44s} FAILED {results[label]}", flush=True)
            continue
        results[label] = "ok"
        if not args.json:
            warps = 4 if label.startswith("histogram") else args.warps
            regs, spills = resources(compiled)
            print(f"{label:44s} warps {warps}  regs {regs:3d}  spill stores {spills:3d}  "
                  f"tiles/SM {resident_tiles(regs, warps)}  smem {compiled.metadata.shared:6d}  "
                  f"{time.time() - t:4.1f}s", flush=True)
    if args.json:
        print(json.dumps(results))
    return 0 if all(v == "ok" for v in results.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
