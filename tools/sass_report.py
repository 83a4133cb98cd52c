"""The compiler's report on the orders kernel (``blocked.orders_kernel``) without a GPU:
compile a case for sm_90 (Hopper) offline and print registers, spills, shared memory and the
instruction mix of the SASS, to read before spending device time.

    python tools/sass_report.py int64 8 1            # dtype, order, tuple size (launch defaults)
    python tools/sass_report.py int64 1 8 --sass k.sass --grep LDG
    python tools/sass_report.py int32 1 5 --odd-length   # a length not a multiple of 16

Needs triton (its bundled ptxas/nvdisasm) and no CUDA device; the constexprs are the ones
the orders kernel's launcher passes at a large length.  Run from the repository root with
the package installed (``pip install -e .``) and without TRITON_INTERPRET.
"""

from __future__ import annotations

import argparse
import collections
import os
import re
import subprocess
import sys
import tempfile

import triton
from triton.backends.compiler import GPUTarget
from triton.experimental.gluon._runtime import GluonASTSource

from prefixscan.backends.triton.scan import orders as blocked, orders_rules as blocked_rules


def compile_case(dtype: str, order: int, tuple_size: int, window: int | None = None, window_warps: int | None = None,
                 tile: tuple | None = None, maxnreg: int | None = "default", chunks: int | None = None,
                 vectors: bool | None = None, odd_length: bool = False):
    itemsize = 8 if dtype == "int64" else 4
    block, columns, rows, warps = blocked_rules.blocked_block(itemsize, tuple_size, False, tile, order)
    if maxnreg == "default":
        maxnreg = blocked_rules.blocked_register_cap(itemsize, order, tuple_size)
    window = window or blocked_rules.BLOCKED_WINDOW_PER_WARP * warps
    window_warps = window_warps or warps
    kernel = blocked.orders_kernel
    pointer = "*i64" if itemsize == 8 else "*i32"
    signature = dict(x_ptr=pointer, y_ptr=pointer, status_ptr="*i64", counter_ptr="*i64", length="i32", tiles="i32",
                     tile_base="i64", epoch="i64", lookback="i64")
    constexprs = dict(ACC=blocked.gl.int64 if itemsize == 8 else blocked.gl.int32, Q=order, S=columns, R=rows,
                      V=16 // itemsize, TS=tuple_size, WARPS=warps, WINDOW=window, WIN_WARPS=min(window_warps, warps),
                      WPV=itemsize // 4, STRIDED=blocked_rules.blocked_strided(order, tuple_size),
                      CH=1 if blocked_rules.blocked_strided(order, tuple_size) else blocked_rules.blocked_chunks(itemsize, rows)
                      if chunks is None else chunks,
                      PREFIXES=True,
                      VECTORS=blocked_rules.blocked_reader(itemsize, order, tuple_size) if vectors is None else vectors)
    for name in constexprs:
        signature[name] = "constexpr"
    # Pointers are 16-byte aligned; a length that is a multiple of 16 is specialized as such
    # (``odd_length``: one that is not, e.g. 2^27 - 3 for tuple size 5: another compile).
    attrs = {(i,): [["tt.divisibility", 16]] for i in range(4 if odd_length else 5)}
    source = GluonASTSource(kernel, signature, constexprs, attrs)
    options = dict(num_warps=warps)
    if maxnreg is not None:
        options["maxnreg"] = maxnreg
    return triton.compile(source, target=GPUTarget("cuda", 90, 32), options=options)


def _tool(name: str) -> str:
    return os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", name)


def sass(compiled) -> str:
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(compiled.asm["cubin"])
        f.flush()
        return subprocess.run([_tool("nvdisasm"), "-c", f.name], check=True, capture_output=True, text=True).stdout


def resources(compiled) -> str:
    """cuobjdump's resource line (registers, stack, shared memory) of the kernel."""
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(compiled.asm["cubin"])
        f.flush()
        out = subprocess.run([_tool("cuobjdump"), "-res-usage", f.name], check=True, capture_output=True,
                             text=True).stdout
    return " ".join(line.strip() for line in out.splitlines() if "REG" in line)


def opcode_mix(text: str) -> collections.Counter:
    mix = collections.Counter()
    for line in text.splitlines():
        m = re.match(r"\s*/\*[0-9a-f]+\*/\s+(@!?U?P\w+\s+)?([A-Z][A-Z0-9_]*)(\.[A-Z0-9_.]+)?", line)
        if m:
            mix[m.group(2) + (m.group(3) or "")] += 1
    return mix


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("dtype", choices=("int32", "int64"))
    parser.add_argument("order", type=int)
    parser.add_argument("tuple_size", type=int)
    parser.add_argument("--maxnreg", type=int)
    parser.add_argument("--vectors", type=int, choices=(0, 1), help="look-back words as vectors (launch's choice without it)")
    parser.add_argument("--odd-length", action="store_true", help="a length that is not a multiple of 16")
    parser.add_argument("--rows", type=int, help="elements per thread's row (the launch's default without it)")
    parser.add_argument("--sass", help="write the SASS here")
    parser.add_argument("--grep", help="print the SASS lines holding this")
    args = parser.parse_args()
    compiled = compile_case(args.dtype, args.order, args.tuple_size,
                            maxnreg=args.maxnreg if args.maxnreg else "default",
                            vectors=None if args.vectors is None else bool(args.vectors),
                            tile=(args.rows, 4) if args.rows else None, odd_length=args.odd_length)
    text = sass(compiled)
    print(f"{args.dtype} order {args.order} tuple size {args.tuple_size}: {resources(compiled)}, "
          f"{compiled.metadata.shared} bytes of shared memory (Triton)")
    mix = opcode_mix(text)
    print(" ".join(f"{op}:{n}" for op, n in sorted(mix.items(), key=lambda kv: -kv[1]) if n >= 4))
    if args.sass:
        with open(args.sass, "w") as f:
            f.write(text)
    if args.grep:
        print("\n".join(line for line in text.splitlines() if args.grep in line))
    return 0


if __name__ == "__main__":
    sys.exit(main())
