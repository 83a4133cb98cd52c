"""Compile the default 1-D sums ahead of time for sm_90 (no GPU needed).

Writes, into ``prefixscan/backends/triton/aot/sm90/``, one cubin (zlib-compressed) and one
JSON per variant of ``scan_1d_kernel`` that ``prefixscan.cumsum`` of a contiguous int32,
int64, float32 or float64 CUDA tensor of 2^10 to 2^28 elements launches on an H200 with
the shipped table (forward, inclusive, unseeded, one lane; int32 sums accumulate in
int64, as NumPy's cumsum does), and that ``prefixscan.scan`` of int32 launches (int32 sums
in int32).  The variant's signature, constexprs and options are
the ones Triton's JIT computes for that launch: the arguments are bound by Triton's own
binder (``create_function_from_signature``, ``JITFunction._pack_args``) and compiled by
``triton.compile`` as the JIT does, without line info (the code is the same, the file a
third of the size).  The loader (:mod:`prefixscan.backends.triton.aot`) launches them
through the CUDA driver without importing Triton.

    python tools/aot_build.py            # build every variant (about 3 s each on 2 cores)
    python tools/aot_build.py --list     # the variants, without compiling
    python tools/aot_build.py --only NAME --out DIR

Run from the repository root with the Triton version the loader will check against.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import sys
import zlib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from prefixscan.backends.triton.aot import kernel_args  # noqa: E402
from prefixscan.backends.triton.aot.variants import (DATA_DIR, TARGET, constexprs,  # noqa: E402
                                                     plan_1d, variant_name)
from prefixscan.backends.triton.planning import shipped  # noqa: E402
from prefixscan.backends.triton.planning.keys import entry_key  # noqa: E402

#: (input dtype, accumulator and result dtype) of prefixscan.cumsum on the GPU, and scan's int32.
DTYPES = (("int32", "int64"), ("int32", "int32"), ("int64", "int64"), ("float32", "float32"), ("float64", "float64"))
#: The lengths whose variants are shipped: 2^10 .. 2^28.
LOG2_RANGE = (10, 28)
TABLE = "NVIDIA H200"


def lengths():
    """Lengths that meet every variant of 2^10 .. 2^28: each power of two and the next length."""
    lo, hi = LOG2_RANGE
    for k in range(lo, hi + 1):
        yield 1 << k
        if k < hi:
            yield (1 << k) + 1


def variants(table_gpu: str = TABLE) -> dict:
    """name -> (x dtype, acc dtype, plan, tile) of every shipped variant."""
    import torch

    table = shipped.load_shipped(shipped.shipped_path(table_gpu))
    out: dict = {}
    for x_dtype, acc_dtype in DTYPES:
        acc = getattr(torch, acc_dtype)
        for n in lengths():
            entry = table.entries.get(entry_key(acc.itemsize, acc.is_floating_point, "builtin", 1, n))
            if entry is None or entry.strategy != "decoupled_lookback":
                continue  # the scan would take another strategy (or first-use tuning)
            tile = entry.tile_for("decoupled_lookback")
            plan = plan_1d(tile, n, acc)
            out.setdefault(variant_name(x_dtype, acc_dtype, plan), (x_dtype, acc_dtype, plan, tile))
    return out


def _flatten(sig, attrs, path, out):
    if isinstance(sig, tuple):
        for i, s in enumerate(sig):
            _flatten(s, attrs[i] if attrs is not None else None, path + (i,), out)
        return
    if sig == "constexpr":
        raise ValueError(f"argument {path} was specialized into a constant: the variant depends on its value")
    param = {"name": ".".join(map(str, path)), "type": sig}
    if sig.startswith("*"):
        param["align"] = 16 if attrs == "D" else 1
    elif attrs is not None:
        raise ValueError(f"integer argument {path} is specialized ({attrs!r})")
    out.append(param)


def bind(x_dtype: str, acc_dtype: str, plan, length: int):
    """Triton's own binding of the launch ``launch_lookback`` makes: (kernel, bound
    arguments, specialization, options, kwargs), on CPU tensors of the right dtypes."""
    import torch
    from triton import knobs
    from triton.backends.compiler import GPUTarget
    from triton.compiler import make_backend
    from triton.runtime.jit import create_function_from_signature

    from prefixscan.backends.triton.device.combine import combine_functions
    from prefixscan.backends.triton.engine.state import DeviceState, Status
    from prefixscan.backends.triton.scan.lookback import scan_1d_kernel
    from prefixscan.monoid import BUILTIN_OPS

    cpu = torch.device("cpu")
    acc = getattr(torch, acc_dtype)
    x = torch.empty(16, dtype=getattr(torch, x_dtype))
    y = torch.empty(16, dtype=acc)
    ident = torch.zeros(1, dtype=acc)
    if plan.single:
        status = Status((ident, ident, (ident,), (ident,)), ident, 0, 0)
    else:
        state = DeviceState(cpu)
        buffers = state.begin(plan.tiles, (acc,), plan.words)
        status = Status(buffers, state.counter, 12345, state.epoch, state)
    args = kernel_args(((x,), (y,), (ident,), (ident,)), status, length, plan.tiles)
    pair, flat = combine_functions(BUILTIN_OPS["add"], 1, False)
    c = constexprs(plan)
    kwargs = dict(MONOID=(pair, flat, True), PROTOCOL=tuple(c["PROTOCOL"]), SCAN=tuple(c["SCAN"]),
                  TILE=tuple(c["TILE"]), num_warps=plan.num_warps)
    if plan.maxnreg is not None:
        kwargs["maxnreg"] = plan.maxnreg
    # What JITFunction.run adds before binding.
    kwargs["debug"] = kwargs.get("debug", scan_1d_kernel.debug) or knobs.runtime.debug
    kwargs["instrumentation_mode"] = knobs.compilation.instrumentation_mode
    backend = make_backend(GPUTarget(TARGET["backend"], TARGET["arch"], TARGET["warp_size"]))
    binder = create_function_from_signature(scan_1d_kernel.signature, scan_1d_kernel.params, backend)
    bound, specialization, options = binder(*args, **kwargs)
    return scan_1d_kernel, backend, bound, specialization, options, kwargs


PTX_ENTRY = re.compile(r"\.entry\s+(\w+)\s*\((.*?)\)", re.S)


def ptx_params(ptx: str) -> tuple[str, list[str]]:
    """The kernel's name and parameter types (u64, u32, ...) from its PTX entry."""
    m = PTX_ENTRY.search(ptx)
    return m.group(1), re.findall(r"\.param\s+\.(\w+)", m.group(2))


def build(name: str, x_dtype: str, acc_dtype: str, plan, out_dir: Path) -> dict:
    """Compile one variant; write ``name.cubin.z`` and ``name.json``; return the JSON."""
    import triton
    from triton import knobs
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    length = plan.block if plan.single else plan.block * plan.tiles
    kernel, backend, bound, specialization, options, kwargs = bind(x_dtype, acc_dtype, plan, length)
    opts, signature, cx, attrs = kernel._pack_args(backend, kwargs, bound, specialization, options)
    params: list = []
    for (arg, sig), (_, attr) in zip(signature.items(), specialization):
        if sig != "constexpr":
            _flatten(sig, attr, (arg,), params)
    knobs.compilation.disable_line_info = True
    compiled = triton.compile(ASTSource(kernel, signature, cx, attrs),
                              target=GPUTarget(TARGET["backend"], TARGET["arch"], TARGET["warp_size"]),
                              options=opts.__dict__)
    md = compiled.metadata
    for field, want in (("global_scratch_size", 0), ("profile_scratch_size", 0), ("num_ctas", 1),
                        ("launch_pdl", False), ("launch_cooperative_grid", False)):
        if getattr(md, field) != want:
            raise ValueError(f"{name}: {field}={getattr(md, field)!r}; the loader launches only {want!r}")
    # Triton's launcher appends the global and profile scratch pointers to every kernel.
    params += [{"name": "global_scratch", "type": "*i8", "align": 1, "null": True},
               {"name": "profile_scratch", "type": "*i8", "align": 1, "null": True}]
    entry, ptx_types = ptx_params(compiled.asm["ptx"])
    want = ["u64" if p["type"].startswith("*") else {"i32": "u32", "i64": "u64"}[p["type"]] for p in params]
    if entry != md.name or ptx_types != want:
        raise ValueError(f"{name}: PTX entry {entry}({ptx_types}) is not the parameter list {want}")
    cubin = compiled.asm["cubin"]
    (out_dir / f"{name}.cubin.z").write_bytes(zlib.compress(cubin, 9))
    spec = {
        "kernel": "scan_1d_kernel", "name": md.name, "target": TARGET, "triton": triton.__version__,
        "x_dtype": x_dtype, "acc_dtype": acc_dtype, "num_warps": md.num_warps, "num_ctas": md.num_ctas,
        "shared": md.shared, "maxnreg": plan.maxnreg, "line_info": False,
        "max_length": plan.block if plan.single else (1 << 31) - 1,
        "plan": plan._asdict(), "constexprs": constexprs(plan),
        "monoid": {"name": "add", "commutative": True}, "params": params,
        "cubin": f"{name}.cubin.z", "cubin_bytes": len(cubin), "cubin_sha256": hashlib.sha256(cubin).hexdigest(),
    }
    del spec["plan"]["tiles"]  # per call, not per variant
    (out_dir / f"{name}.json").write_text(json.dumps(spec, indent=1, sort_keys=True) + "\n")
    return spec


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--list", action="store_true", help="list the variants and exit")
    p.add_argument("--only", action="append", help="build only this variant (repeatable)")
    p.add_argument("--out", type=Path, default=DATA_DIR, help="output folder (default: the package's)")
    args = p.parse_args(argv)
    if os.environ.get("TRITON_INTERPRET", "0") not in ("", "0"):
        p.error("TRITON_INTERPRET is set: the kernels would be the interpreter's; unset it")
    todo = variants()
    if args.only:
        missing = set(args.only) - set(todo)
        if missing:
            p.error(f"--only: no variant {sorted(missing)}; --list shows them")
        todo = {k: v for k, v in todo.items() if k in args.only}
    if args.list:
        for name in todo:
            print(name)
        return 0
    args.out.mkdir(parents=True, exist_ok=True)
    total = 0
    for name, (x_dtype, acc_dtype, plan, _tile) in todo.items():
        spec = build(name, x_dtype, acc_dtype, plan, args.out)
        size = (args.out / spec["cubin"]).stat().st_size
        total += size + (args.out / f"{name}.json").stat().st_size
        print(f"{name}: cubin {spec['cubin_bytes']} bytes ({size} compressed), shared {spec['shared']}", flush=True)
    print(f"{len(todo)} variants, {total} bytes in {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
