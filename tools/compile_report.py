"""Compile the look-back kernels for sm_90 without a GPU and report what the code does.

Reads the compiler's output before spending device time: 16-byte vector loads and
stores of the tile, volatile status loads per thread in the look-back (more than
one per window entry means the window is replicated in every thread), atomics,
shared memory, and spilled registers ("local" loads/stores).

    python tools/compile_report.py                  # the PTX report
    python tools/compile_report.py --status-reads   # JSON: how the look-back reads status words

``--status-reads`` compiles the tiles whose look-back Triton's layout pass once
duplicated (docs/design/status-words.md) and counts, per kernel, volatile loads and
atomic adds in the TTGIR; tests/backends/triton/test_compiled.py runs it.  Run from the repository
root with the package installed (``pip install -e .``) and without TRITON_INTERPRET.
"""

from __future__ import annotations

import argparse
import itertools
import json
import re
import time

import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

from prefixscan import AFFINE
from prefixscan.backends.triton.scan import lookback
from prefixscan.backends.triton.device.combine import combine_functions
from prefixscan.monoid import BUILTIN_OPS

TARGET = GPUTarget("cuda", 90, 32)


def compile_variant(kernel, acc: str, ints: dict, constexprs: dict, num_warps: int, fields: int = 1,
                    maxnreg: int | None = None, through: str | None = None):
    """Compile a scan kernel of the engine for sm_90: ``io`` field tuples of ``acc``
    pointers, the status buffers as tagged words (and flags), the constexprs flat.
    ``through``: stop after that stage and return its text (:func:`compile_through`)."""
    constexprs = lookback.grouped_constexprs(kernel, constexprs)
    ptrs = (f"*{acc}",) * fields
    sig = {"io": (ptrs, ptrs, ptrs, ptrs), "status": ("*i64", "*i32", ptrs, ptrs), "counter_ptr": "*i64"}
    sig.update(ints)
    sig.update({k: "constexpr" for k in constexprs})
    names = kernel.arg_names
    io, status = names.index("io"), names.index("status")
    attrs = {(io, group, i): [["tt.divisibility", 16]] for group in range(4) for i in range(fields)}
    attrs.update({(status, 0): [["tt.divisibility", 16]], (status, 1): [["tt.divisibility", 16]]})
    length = "M" if "M" in names else "L"  # scan_cols_kernel: lanes of L = M * K elements
    # scan_1d_kernel's M is not specialized (its ALIGNED constexpr says what 16 divides)
    specialized = ("counter_ptr",) if kernel is lookback.scan_1d_kernel else ("counter_ptr", length)
    attrs.update({(names.index(k),): [["tt.divisibility", 16]] for k in specialized})
    src = ASTSource(kernel, sig, constexprs={(names.index(k),): v for k, v in constexprs.items()}, attrs=attrs)
    options = {"num_warps": num_warps} if maxnreg is None else {"num_warps": num_warps, "maxnreg": maxnreg}
    if through is not None:
        return compile_through(src, options, through)
    return triton.compile(src, target=TARGET, options=options)


def compile_through(src, options: dict, last: str):
    """Compile ``src`` for sm_90 up to the stage ``last`` ("ttgir", "llir" or "ptx") and
    return that stage's module as text: the checks that read the TTGIR, or that only ask
    whether the front end and the lowering to LLVM accept a variant, skip ptxas and the
    cache (about 1.5 of a variant's 4.5 s on a 2-core machine, and all of LLVM for TTGIR).
    Triton 3.6's pipeline, as ``triton.compile`` runs it."""
    from triton._C.libtriton import ir
    from triton.compiler.compiler import make_backend

    backend = make_backend(TARGET)
    opts = backend.parse_options(dict(options))
    stages: dict = {}
    backend.add_stages(stages, opts, src.language)
    context = ir.context()
    ir.load_dialects(context)
    backend.load_dialects(context)
    module = src.make_ir(TARGET, opts, backend.get_codegen_implementation(opts), backend.get_module_map(), context)
    metadata = {"hash": "staged", "target": TARGET, **opts.__dict__}
    for ext, stage in list(stages.items())[list(stages).index(src.ext):]:
        module = stage(module, metadata)
        if ext == last:
            return str(module)
    raise ValueError(f"no stage {last!r} in {list(stages)}")


PATTERNS = {"v4 ld": r"ld\.global(\.\w+)*\.v4", "v2 ld": r"ld\.global(\.\w+)*\.v2",
            "v4 st": r"st\.global(\.\w+)*\.v4", "volatile": r"ld\.volatile", "atom": r"atom\.",
            "local": r"l[ds]\.local"}


def report(label: str, compiled, seconds: float) -> None:
    ptx = compiled.asm["ptx"]
    counts = "  ".join(f"{name} {len(re.findall(p, ptx)):3d}" for name, p in PATTERNS.items())
    instructions = sum(1 for line in ptx.splitlines() if line.startswith("\t") and not line.startswith("\t//")
                       and not line.startswith("\t."))
    print(f"{label:44s} {counts}  ptx {instructions:5d}  smem {compiled.metadata.shared:6d}  {seconds:4.1f}s",
          flush=True)


INTS_1D = {"M": "i64", "tiles_per_lane": "i64", "tile_base": "i64", "epoch": "i32", "order_stride": "i64",
           "order": "i32"}
INTS_2D = {"M": "i64", "K": "i64", "col_blocks": "i64", "tiles_per_lane": "i64", "tile_base": "i64",
           "epoch": "i32", "order_stride": "i64", "order": "i32"}
INTS_COLS = {"L": "i64", "tiles_per_lane": "i64", "tile_base": "i64", "epoch": "i32"}


def status_reads() -> dict:
    """Per kernel: status words per entry, volatile loads and atomic adds in the TTGIR.

    The chained (window 1) and windowed 2-D kernel with 8 warps, K = 3 padded to 4
    columns, had its volatile window load duplicated into two layouts; the 1-D ones
    (int64, and order 2 with two fields per entry) and the masked-columns kernel are
    there for contrast."""
    pair, flat = combine_functions(BUILTIN_OPS["add"], 1)

    def counts(ttgir, words):
        return {"words": words, "volatile_loads": ttgir.count("isVolatile = true"),
                "atomic_adds": ttgir.count("atomic_rmw add")}

    out = {}
    for window in (1, 32):
        c = dict(PAIR=pair, FLAT=flat, COMMUTATIVE=True, INCLUSIVE=True, REVERSE=False, HAS_INIT=True, WORDS=1,
                 SINGLE_TILE=False, MULTI_LANE=False,
                 ALIGNED=False, CHAINED=window == 1, ROWS=8192, KB=4, WINDOW=window,
                 ORDERED=False, DELAYED=False, RAKE=0, EXACT_K=False)
        out[f"2d-window{window}"] = counts(compile_variant(lookback.scan_2d_kernel, "i32", INTS_2D, c, 8, through="ttgir"), 1)
    c = dict(PAIR=pair, FLAT=flat, COMMUTATIVE=True, INCLUSIVE=True, REVERSE=False, HAS_INIT=True, WORDS=2,
             SINGLE_TILE=False, MULTI_LANE=False, ALIGNED=False, CHAINED=False, BLOCK=4096, WINDOW=32, ORDERED=False,
             DELAYED=False, RAKE=0, ORDER2=False)
    out["1d-int64"] = counts(compile_variant(lookback.scan_1d_kernel, "i64", INTS_1D, c, 4, through="ttgir"), 2)
    c = dict(c, WORDS=2, ORDERED=False, ORDER2=True, BLOCK=8192)  # order 2: two int32 fields per entry
    out["1d-order2-int32"] = counts(compile_variant(lookback.scan_1d_kernel, "i32", INTS_1D, c, 4, through="ttgir"), 2)
    c = dict(PAIR=pair, FLAT=flat, COMMUTATIVE=True, INCLUSIVE=False, REVERSE=False, HAS_INIT=True, WORDS=1,
             SINGLE_TILE=False, MULTI_LANE=True, CHAINED=False, BLOCK=4096, WINDOW=8, K=3, KB=4, RAKE=0)
    out["columns-K3"] = counts(compile_variant(lookback.scan_cols_kernel, "i32", INTS_COLS, c, 4, through="ttgir"), 1)
    return out


def ptx_report() -> None:
    pair, flat = combine_functions(BUILTIN_OPS["add"], 1)
    ints_1d, ints_2d = INTS_1D, INTS_2D
    for acc, block, warps in (("i32", 16384, 4), ("fp32", 8192, 4), ("i64", 4096, 8), ("fp64", 8192, 4)):
        for inclusive, reverse in ((True, False), (False, False), (True, True)):
            c = dict(PAIR=pair, FLAT=flat, COMMUTATIVE=True, INCLUSIVE=inclusive, REVERSE=reverse,
                     HAS_INIT=False, WORDS=1 if acc in ("i32", "fp32") else 2, SINGLE_TILE=False, MULTI_LANE=False,
                     ALIGNED=False, CHAINED=False,
                     ORDERED=False, DELAYED=False, RAKE=0, ORDER2=False,
                     BLOCK=block, WINDOW=32)
            t = time.time()
            k = compile_variant(lookback.scan_1d_kernel, acc, ints_1d, c, warps)
            report(f"1d {acc} b={block} w={warps} incl={inclusive} rev={reverse}", k, time.time() - t)
    # order > 1: the runtime loop over orders, inclusive and delayed (exclusive)
    # and order 2 of a sum with one look-back over two-field entries (ORDER2)
    for acc, block, warps in (("i32", 16384, 4), ("i64", 4096, 8)):
        for delayed, order2 in ((False, False), (True, False), (False, True)):
            c = dict(PAIR=pair, FLAT=flat, COMMUTATIVE=True, INCLUSIVE=True, REVERSE=False, HAS_INIT=False,
                     WORDS=(1 if acc == "i32" else 2) * (1 + order2), SINGLE_TILE=False, MULTI_LANE=False,
                     ALIGNED=False,
                     CHAINED=False, BLOCK=block, WINDOW=32, ORDERED=not order2, DELAYED=delayed, RAKE=0,
                     ORDER2=order2)
            t = time.time()
            k = compile_variant(lookback.scan_1d_kernel, acc, ints_1d, c, warps)
            report(f"1d {acc} b={block} w={warps} ordered delayed={delayed} order2={order2}", k, time.time() - t)
    for kb, rows in ((4, 2048), (8, 1024), (32, 256)):
        c = dict(PAIR=pair, FLAT=flat, COMMUTATIVE=True, INCLUSIVE=True, REVERSE=False, HAS_INIT=False,
                 WORDS=1, SINGLE_TILE=False, MULTI_LANE=False,
                 ALIGNED=False, CHAINED=False, ROWS=rows, KB=kb, WINDOW=32,
                 ORDERED=False, DELAYED=False, RAKE=0)
        for exact in (True, False):
            t = time.time()
            k = compile_variant(lookback.scan_2d_kernel, "i32", ints_2d, dict(c, EXACT_K=exact), 4)
            report(f"2d i32 rows={rows} kb={kb} w=4 exact_k={exact}", k, time.time() - t)
    pair, flat = combine_functions(AFFINE, 2)
    for acc in ("fp32", "fp64"):
        c = dict(PAIR=pair, FLAT=flat, COMMUTATIVE=False, INCLUSIVE=True, REVERSE=False, HAS_INIT=False,
                 WORDS=0, SINGLE_TILE=False, MULTI_LANE=True, ALIGNED=True, CHAINED=False, BLOCK=4096, WINDOW=32,
                 ORDERED=False, DELAYED=False, RAKE=0, ORDER2=False)
        t = time.time()
        k = compile_variant(lookback.scan_1d_kernel, acc, ints_1d, c, 4, fields=2)
        report(f"1d affine {acc} b=4096 w=4 (2 fields)", k, time.time() - t)
    # deterministic=True: the chained hand-off, tagged words (1, 2) and the flag protocol, 1-D and 2-D
    pair, flat = combine_functions(BUILTIN_OPS["add"], 1)
    for acc, words in (("fp32", 1), ("fp64", 2), ("fp64", 0)):
        c = dict(PAIR=pair, FLAT=flat, COMMUTATIVE=True, INCLUSIVE=True, REVERSE=False, HAS_INIT=False,
                 WORDS=words, SINGLE_TILE=False, MULTI_LANE=False, ALIGNED=False, CHAINED=True, BLOCK=8192, WINDOW=1,
                 ORDERED=False, DELAYED=False, RAKE=0)
        t = time.time()
        report(f"1d chained {acc}", compile_variant(lookback.scan_1d_kernel, acc, ints_1d, dict(c, ORDER2=False), 4),
               time.time() - t)
        c = dict(c, EXACT_K=True, ROWS=2048, KB=4)
        del c["BLOCK"]
        t = time.time()
        report(f"2d chained {acc}", compile_variant(lookback.scan_2d_kernel, acc, ints_2d, c, 4), time.time() - t)


def compile_outcome(compile_fn) -> str:
    """"ok" when ``compile_fn()`` compiles, else the error (reported: the tests show
    which variant and why)."""
    try:
        compile_fn()
        return "ok"
    except Exception as error:
        return f"{type(error).__name__}: {str(error)[-400:]}"


def builtin_ops() -> dict:
    """Compile the 1-D look-back kernel with every built-in operator's combine (float32,
    or int32 for the bitwise ones): the interpreter runs combines that compiled Triton
    rejects (a module global that is not a constexpr, say).  Lowered to LLVM, not through
    ptxas (the GPU tests run that).  Per operator: "ok" or the error."""
    out = {}
    for name, monoid in BUILTIN_OPS.items():
        acc = "fp32" if "f" in monoid.dtype_kinds else "i32"
        pair, flat = combine_functions(monoid, 1)
        c = dict(PAIR=pair, FLAT=flat, COMMUTATIVE=True, INCLUSIVE=True, REVERSE=False, HAS_INIT=False, WORDS=1,
                 SINGLE_TILE=False, MULTI_LANE=False,
                 ALIGNED=False, CHAINED=False, ORDERED=False, DELAYED=False, RAKE=0,
                 ORDER2=False, BLOCK=4096, WINDOW=32)
        out[name] = compile_outcome(lambda: compile_variant(lookback.scan_1d_kernel, acc, INTS_1D, c, 4,
                                                            through="llir"))
    return out


ACCUMULATORS = {"i8": 1, "u8": 1, "i16": 1, "i32": 1, "i64": 2, "fp16": 1, "bf16": 1, "fp32": 1, "fp64": 2}


def dtype_matrix() -> dict:
    """Compile the look-back kernels (1-D plain, order 2 in one look-back, the ordered loop
    of higher orders, exclusive; 2-D rows; masked columns) with every accumulator type a
    scan can keep: the interpreter computes ``16384 * int8`` where compiled Triton refuses
    the constant.  Per variant: "ok" or the error.  One variant of each kernel per type
    (the plain 1-D one, the 2-D rows, the masked columns) is lowered to LLVM, the 1-D
    kernel's other modes through Triton's GPU passes only (TTGIR: where the type errors
    of a mode are, in a third of the time)."""
    pair, flat = combine_functions(BUILTIN_OPS["add"], 1)
    out = {}

    def attempt(label, kernel, acc, ints, constexprs, warps):
        through = "llir" if label.endswith("-plain") or not label.startswith("1d-") else "ttgir"
        out[label] = compile_outcome(lambda: compile_variant(kernel, acc, ints, constexprs, warps, through=through))

    for acc, words in ACCUMULATORS.items():
        base = dict(PAIR=pair, FLAT=flat, COMMUTATIVE=True, INCLUSIVE=True, REVERSE=False, HAS_INIT=False,
                    WORDS=words, SINGLE_TILE=False, MULTI_LANE=False, ALIGNED=False, CHAINED=False, ORDERED=False,
                    DELAYED=False, RAKE=0, ORDER2=False, BLOCK=16384 // (1 + (words == 2)), WINDOW=32)
        for name, change in (("plain", {}), ("order2", dict(ORDER2=True, WORDS=2 * words)),
                             ("ordered", dict(ORDERED=True)), ("ordered-exclusive", dict(ORDERED=True, DELAYED=True)),
                             ("chained-reverse", dict(CHAINED=True, WINDOW=1, REVERSE=True))):
            attempt(f"1d-{acc}-{name}", lookback.scan_1d_kernel, acc, INTS_1D, dict(base, **change), 4)
        rows = {k: v for k, v in base.items() if k not in ("BLOCK", "ORDER2")}
        attempt(f"2d-{acc}", lookback.scan_2d_kernel, acc, INTS_2D, dict(rows, ROWS=2048, KB=4, EXACT_K=False), 4)
        cols = {k: v for k, v in base.items() if k not in ("ORDERED", "DELAYED", "ORDER2")}
        attempt(f"cols-{acc}", lookback.scan_cols_kernel, acc, INTS_COLS,
                dict(cols, MULTI_LANE=True, INCLUSIVE=False, BLOCK=4096, WINDOW=8, K=3, KB=4), 4)
    return out


def recurrence_variants() -> dict:
    """Compile the recurrence kernel (:mod:`prefixscan.primitives.recurrence.triton_kernel`) for
    sm_90: forward, fused backward and the lane maps only (``TOTAL``), the walk (its
    chunk loop plain and pipelined over 3 stages) and the look-back, both orientations,
    real and complex, float32 and bfloat16 data, and real log decays (``LOG``: float32,
    the pipelined walk and the look-back; ``LOG_SPLIT``'s scan forward and backward, time
    contiguous); packed sequences' restart flags (``RESTART``: float32, linear and log,
    the forward's pipelined walk and the backward's look-back, one orientation each); the
    backward's adjoint from after the end (``HAS_FINAL``: its pipelined walk and look-back).
    Per variant: "ok" or the error."""
    from prefixscan.primitives.recurrence import triton_kernel as R, triton_maps as maps

    kernel = R.recurrence_kernel
    names = kernel.arg_names
    out = {}
    for data, (complex_values, log), mode, (lookback, stages), time_axis, split, restart in itertools.product(
            ("fp32", "bf16"), ((False, False), (True, False), (False, True)), ("forward", "backward", "total"),
            ((False, 1), (False, 3), (True, 1)), (0, 1), (False, True), (False, True)):
        if complex_values and data != "fp32":
            continue
        if restart and (data != "fp32" or complex_values or mode == "total" or split != log
                        or (stages == 1 and not lookback) or (lookback == (mode == "forward"))
                        or (time_axis == 1) == log):
            continue  # four: the flags read forward in the walk, shifted in the backward's look-back
        if log and (data != "fp32" or stages == 1 and not lookback):  # LOG changes the arithmetic, not the loads
            continue
        if split and not (log and mode != "total" and (time_axis == 1 or restart)):  # LOG_SPLIT: the tile's scan
            continue
        fields = 4 if complex_values else 2
        if log:
            pair, flat = R.log_affine_pair, R.log_affine_flat
        elif complex_values:
            pair, flat = maps._complex_affine_pair, maps._complex_affine_flat
        else:
            pair, flat = maps._affine_pair, maps._affine_flat
        written = "fp32" if mode == "total" else data  # the lane maps are stored in the accumulator type
        # the adjoint from after the end (a later rank's): the backward's pipelined walk and look-back
        final = mode == "backward" and (lookback or stages > 1)
        sig = dict(io=(f"*{data}", f"*{data}", f"*{data}", f"*{written}", f"*{written}", "*fp32", "*u8", "*fp32"),
                   status=("*i64", "*i64", ("*i64",) * fields, ("*i64",) * fields), counter_ptr="*i64",
                   sizes=("i64",) * 3, strides_a=("i64",) * 4, strides_v=("i64",) * 4, P="i64", QB="i64", segs="i64",
                   tile_base="i64", epoch="i32")
        block_lanes = 64 if time_axis == 0 else (1 if lookback else 4)
        constexprs = dict(PAIR=pair, FLAT=flat, FIELDS=(triton.language.float32, complex_values, log, split),
                          MODE=(False, mode != "total", mode == "backward", mode == "backward", mode == "total",
                                restart, final),
                          TILE=(time_axis, lookback, 4096 // block_lanes, block_lanes, stages, 0, 0, 1, 1),
                          PROTOCOL=(fields, 4, False))
        sig.update({k: "constexpr" for k in constexprs})
        src = ASTSource(kernel, sig, constexprs={(names.index(k),): v for k, v in constexprs.items()})
        label = (f"{mode}-{data}{'-complex' if complex_values else ''}{'-log' if log else ''}"
                 f"{'-split' if split else ''}{'-restart' if restart else ''}{'-final' if final else ''}-"
                 f"{'lookback' if lookback else f'walk-stages{stages}'}-axis{time_axis}")
        # Lowered to LLVM in the plain real modes, the complex, log, split and restart
        # variations through Triton's GPU passes only (where their type errors are: a
        # third of the time); none through ptxas, which the GPU tests run.
        through = "ttgir" if complex_values or log or split or restart else "llir"
        out[label] = compile_outcome(lambda: compile_through(src, {"num_warps": 4}, through))
    out.update(recurrence_shift_variants())
    return out


def recurrence_shift_variants() -> dict:
    """The fused backward's shifted reads moved in registers (``RecurrencePlan.shift``,
    :mod:`prefixscan.primitives.recurrence.triton_shift`) through Triton's GPU passes:
    "edge" (vectors of 4 float32 or 8 bfloat16 elements, time contiguous: the walk and the
    look-back), with init.  Unspecialized (no alignment known), so the "edge" tile converts layouts here;
    tools/recurrence_shift_report.py compiles the launch's specialization."""
    from prefixscan.primitives.recurrence import triton_kernel as R, triton_maps as maps
    from prefixscan.primitives.recurrence.triton_shift import SHIFTS

    kernel = R.recurrence_kernel
    names = kernel.arg_names
    cases = [("edge", data, look, 1, 1) for data in ("fp32", "bf16") for look in (False, True)]
    out = {}
    for shift, data, look, stages, time_axis in cases:
        sig = dict(io=(f"*{data}",) * 5 + ("*fp32", "*u8", "*fp32"), status=("*i64", "*i64", ("*i64",) * 2, ("*i64",) * 2),
                   counter_ptr="*i64", sizes=("i64",) * 3, strides_a=("i64",) * 4, strides_v=("i64",) * 4, P="i64",
                   QB="i64", segs="i64", tile_base="i64", epoch="i32")
        block_lanes = 64 if time_axis == 0 else (1 if look else 4)
        vec = (8 if data == "bf16" else 4) if shift == "edge" else 1
        constexprs = dict(PAIR=maps._affine_pair, FLAT=maps._affine_flat,
                          FIELDS=(triton.language.float32, False, False, False),
                          MODE=(False, True, True, True, False, False, False),
                          TILE=(time_axis, look, 4096 // block_lanes, block_lanes, stages, 0, SHIFTS.index(shift),
                                vec, vec),
                          PROTOCOL=(2, 4, False))
        sig.update({k: "constexpr" for k in constexprs})
        src = ASTSource(kernel, sig, constexprs={(names.index(k),): v for k, v in constexprs.items()})
        label = f"backward-{data}-{shift}-{'lookback' if look else f'walk-stages{stages}'}-axis{time_axis}"
        out[label] = compile_outcome(lambda: compile_through(src, {"num_warps": 4}, "ttgir"))
    return out


@triton.jit(do_not_specialize=["counts", "m"])
def _specialization_probe(sizes, counts, n, m):
    pass


def tuple_specialization() -> dict:
    """How Triton's argument binder specializes integers for sm_90 (no GPU needed): a
    kernel ``probe(sizes, counts, n, m)`` with ``counts`` and ``m`` in
    ``do_not_specialize``, bound to ``(16, 1, 3), (16, 1, 5), 1, 1``.  Returns
    ``{argument: [(type, specialization) per integer]}``: Triton 3.6 keeps
    ``do_not_specialize`` for top-level integers only, so ``counts``'s 1 is a constant and
    its 16 divisible by 16, which the launch key (``runtime.launch.launch_key``) records."""
    from triton.compiler.compiler import make_backend
    from triton.runtime.jit import create_function_from_signature

    kernel = _specialization_probe
    binder = create_function_from_signature(kernel.signature, kernel.params, make_backend(TARGET))
    _, specialization, _ = binder((16, 1, 3), (16, 1, 5), 1, 1)
    out = {}
    for name, (types, attrs) in zip(kernel.arg_names, specialization):
        if isinstance(types, tuple):
            out[name] = [[t, a] for t, a in zip(types, attrs)]
        else:
            out[name] = [[types, attrs]]
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--status-reads", action="store_true",
                        help="print JSON counts of status-word reads per kernel instead of the PTX report")
    parser.add_argument("--builtin-ops", action="store_true",
                        help="print JSON: does every built-in operator's kernel compile for sm_90")
    parser.add_argument("--dtypes", action="store_true",
                        help="print JSON: does each look-back kernel compile for every accumulator type")
    parser.add_argument("--recurrence", action="store_true",
                        help="print JSON: does each recurrence kernel variant compile")
    parser.add_argument("--tuple-specialization", action="store_true",
                        help="print JSON: how Triton specializes integers inside tuple arguments")
    args = parser.parse_args()
    if args.tuple_specialization:
        print(json.dumps(tuple_specialization()))
    elif args.recurrence:
        print(json.dumps(recurrence_variants()))
    elif args.dtypes:
        print(json.dumps(dtype_matrix()))
    elif args.builtin_ops:
        print(json.dumps(builtin_ops()))
    elif args.status_reads:
        print(json.dumps(status_reads()))
    else:
        ptx_report()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
