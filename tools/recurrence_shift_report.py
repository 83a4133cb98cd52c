"""What the fused backward's shifted reads compile to, without a GPU: the recurrence kernel's
backward (:mod:`prefixscan.primitives.recurrence.triton_kernel`) compiled for sm_90 with each
``RecurrencePlan.shift`` ("load", "edge") on the shapes whose backward was measured
(docs/design/recurrence.md, "The backward's shifted reads"), one table row per kernel: registers, spills and shared
memory (cuobjdump's resource line; Triton's shared-memory size), the SASS's global loads by
width, shared-memory loads and stores, warp shuffles and barriers, and the TTGIR's gathers
and layout conversions.

    python tools/recurrence_shift_report.py                 # the table (about a minute a kernel)
    python tools/recurrence_shift_report.py --dtype bfloat16 --shift edge --ttgir /tmp/ttgir
    python tools/recurrence_shift_report.py --ptx --json --shape time   # no ptxas (the CI's check)

The launch's arguments are :func:`triton_kernel._launch`'s for CPU tensors of the shape (its
kernel launch replaced by a capture; the data are never touched), with the two constexprs
that the interpreter sets otherwise taken as a CUDA launch takes them (the chunk count
computed in the kernel, the ``"edge"`` vectors of a compiled tile), specialized as Triton's
launcher specializes them (alignment, integers equal to 1 or multiples of 16).  The plan is
``plan_for``'s on 132 SMs (the H200), ``shift`` replaced.  Run from the repository root
without TRITON_INTERPRET; needs triton's bundled ptxas and cuobjdump (tools/sass_report.py).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import re
import sys
import time
from pathlib import Path
from unittest import mock

import torch
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
from triton.compiler.compiler import make_backend
from triton.runtime.jit import create_function_from_signature

from prefixscan.primitives.recurrence import triton_kernel as R
from prefixscan.primitives.recurrence.triton_plans import _edge_vectors
from prefixscan.primitives.recurrence.triton_shift import SHIFTS
from compile_report import compile_through
from sass_report import opcode_mix, resources, sass

TARGET = GPUTarget("cuda", 90, 32)
H200_SMS = 132
#: (shape, axis) by name: the recurrence benchmark's two layouts (its
#: (4, 2048, 8192) along the last axis compiles to the same kernel as (8, 1024, 4096)), time
#: contiguous in tiles of 4 lanes, and the look-back of few long lanes.
SHAPES = {"time": ((8, 1024, 4096), 2), "lanes": ((8, 4096, 1024), 1), "time-4-lanes": ((64, 64, 256), 2),
          "lookback": ((1, 64, 1 << 20), 2)}
DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16}
#: PTX instructions counted (--ptx): global loads as vectors or scalars, shared memory, shuffles, barriers.
PTX = {"ld.global.v4": r"ld\.global(\.\w+)*\.v4\.", "ld.global.v2": r"ld\.global(\.\w+)*\.v2\.",
       "ld.global.scalar": r"ld\.global(\.(?!v[24]\.)\w+)*\.[bfsu]\d+\s", "st.global": r"st\.global",
       "ld.shared": r"ld\.shared", "st.shared": r"st\.shared", "shfl": r"shfl\.sync", "bar": r"bar\.sync", "cp.async": r"cp\.async\.cg"}


def backward_launch(shape, axis: int, dtype, shift: str):
    """The backward's Launch (init given, dL/da wanted, a forward recurrence) as a CUDA
    launch would make it, and its plan."""
    lanes = math.prod(shape[:axis])
    T, Q = shape[axis], math.prod(shape[axis + 1:])
    plan = dataclasses.replace(R.plan_for(lanes, T, Q, H200_SMS, False, backward=True), shift=shift)
    a, h, grad = (torch.empty(shape, dtype=dtype) for _ in range(3))
    init = torch.empty(shape[:axis] + shape[axis + 1:], dtype=dtype)
    seen = []
    with mock.patch.object(R.runtime, "launch_kernel", lambda launch: seen.append(launch)):
        R.linear_recurrence_backward(a, h, grad, init, axis, False, plan=plan)
    launch = seen[0]
    strides = R._geometry(tuple(a.shape), axis, (a, grad))[4][0][:3]
    tile = launch.constexprs["TILE"]
    tile = tile[:5] + (0, tile[6]) + _edge_vectors(plan, T, Q, strides, a, h, False)
    return dataclasses.replace(launch, interpreter=False, constexprs=dict(launch.constexprs, TILE=tile)), plan


def source(launch):
    """``launch``'s kernel as Triton's launcher would specialize it, and its options."""
    kernel = launch.kernel
    backend = make_backend(TARGET)
    binder = create_function_from_signature(kernel.signature, kernel.params, backend)
    bound, specialization, options = binder(*launch.args, **launch.constexprs)
    options, signature, constexprs, attrs = kernel._pack_args(backend, {"num_warps": launch.num_warps}, bound,
                                                              specialization, options)
    return ASTSource(kernel, signature, constexprs, attrs), options.__dict__


def sass_counts(launch) -> dict:
    """Compiled through ptxas: registers and the SASS's memory, shuffle and barrier instructions."""
    src, options = source(launch)
    compiled = triton.compile(src, target=TARGET, options=options)
    mix = opcode_mix(sass(compiled))
    ttgir = compiled.asm["ttgir"]
    out = {"regs": resources(compiled), "smem": compiled.metadata.shared}
    for name in ("LDG", "LDGSTS", "STG", "LDS", "STS", "SHFL", "BAR"):  # LDGSTS: cp.async, global to shared
        out[name] = sum(n for op, n in mix.items() if op.split(".")[0] == name)
    out["LDG.128"] = sum(n for op, n in mix.items() if op.split(".")[0] == "LDG" and op.endswith(".128"))
    return dict(out, **_ttgir_counts(ttgir))


def ptx_counts(launch) -> dict:
    """Through Triton's passes and LLVM only (no ptxas, as the CI's compile checks): the
    PTX's loads, shared memory, shuffles and barriers, and the TTGIR's."""
    src, options = source(launch)
    ttgir = compile_through(src, options, "ttgir")
    ptx = compile_through(src, options, "ptx")
    return dict({name: len(re.findall(p, ptx)) for name, p in PTX.items()}, **_ttgir_counts(ttgir))


def _ttgir_counts(ttgir: str) -> dict:
    return {"gather": ttgir.count("tt.gather"), "convert_layout": ttgir.count("ttg.convert_layout")}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--shape", choices=sorted(SHAPES), action="append")
    parser.add_argument("--dtype", choices=sorted(DTYPES), action="append")
    parser.add_argument("--shift", choices=SHIFTS, action="append")
    parser.add_argument("--ptx", action="store_true", help="stop at the PTX (no ptxas: no registers)")
    parser.add_argument("--json", action="store_true", help="print one JSON object of the counts by label")
    parser.add_argument("--ttgir", help="write each kernel's TTGIR into this folder")
    args = parser.parse_args()
    results = {}
    for name, dtype, shift in ((n, d, f) for n in args.shape or SHAPES for d in args.dtype or DTYPES
                               for f in args.shift or SHIFTS):
        shape, axis = SHAPES[name]
        launch, plan = backward_launch(shape, axis, DTYPES[dtype], shift)
        start = time.perf_counter()
        c = ptx_counts(launch) if args.ptx else sass_counts(launch)
        tile = launch.constexprs["TILE"]
        label = f"{name}-{dtype}-{shift}"
        results[label] = dict(c, shape=list(shape), axis=axis, tile=[plan.block_lanes, plan.block_time],
                              lookback=plan.lookback, stages=plan.stages, vectors=list(tile[7:9]))
        if not args.json:
            print(f"{label} {'x'.join(map(str, shape))} axis {axis}: {'look-back' if plan.lookback else 'walk'} "
                  f"tile {plan.block_lanes}x{plan.block_time} stages {plan.stages} vectors {tile[7]},{tile[8]} | "
                  + " ".join(f"{k} {v}" for k, v in c.items()) + f" | {time.perf_counter() - start:.0f}s", flush=True)
        if args.ttgir:
            src, options = source(launch)
            Path(args.ttgir).mkdir(parents=True, exist_ok=True)
            (Path(args.ttgir) / f"{label}.ttgir").write_text(compile_through(src, options, "ttgir"))
    if args.json:
        print(json.dumps(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
