"""Time the fused backward's shifted reads on a GPU: ``RecurrencePlan.shift`` "load" (the
default), "edge" and "gather" (prefixscan/primitives/recurrence/triton_shift.py) under
``plan_for``'s backward tiling, on (8, 1024, 4096) and (4, 2048, 8192) along the last
axis (time contiguous) and (8, 4096, 1024) along axis 1 (lanes contiguous), float32 and
bfloat16, init given, dL/da wanted.

Per case: the device time of one backward call queued behind a GPU sleep (median of
``--repeats`` calls, rounds of the forms interleaved, the median round), its ratio to
the roof (a device copy moving the 5 arrays' bytes: a, dL/dh and h read, dL/db and dL/da
written; timed the same way), and the largest absolute difference of each form's two
outputs from the load form's (0: the same bits).

    python tools/recurrence_shift_bench.py                       # all cases, markdown table
    python tools/recurrence_shift_bench.py --out results.json    # and the records as JSON
    python tools/recurrence_shift_bench.py --shape 8x1024x4096 --dtype bfloat16 --shift edge --once
        # one call of each chosen backward after a warm-up, for a profiler:
        # ncu --kernel-name recurrence_kernel --launch-skip 1 --set full python tools/...

Run from the repository root (the package importable) with a CUDA device.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import statistics
import sys
import time

import torch

from prefixscan.primitives.recurrence import triton_kernel as R
from prefixscan.primitives.recurrence.triton_shift import SHIFTS
from prefixscan.timing import time_cuda_events

#: (shape, axis): the two time-contiguous shapes of the profiles that found the backward
#: L1-bound (docs/design/recurrence.md, "Measurements") and the lanes-contiguous one.
CASES = [((8, 1024, 4096), 2), ((4, 2048, 8192), 2), ((8, 4096, 1024), 1)]
DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16}


def queued_ms(fns, repeats: int) -> list[float]:
    """Milliseconds per call of each of ``fns``, queued behind a GPU sleep
    (:func:`prefixscan.timing.time_cuda_events`): the median of ``repeats`` calls."""
    t = time.perf_counter()
    for fn in fns:
        fn()
    host = (time.perf_counter() - t) / len(fns)
    torch.cuda.synchronize()
    return [statistics.median(time_cuda_events([fn], repeats, host)) * 1e3 for fn in fns]


def case_inputs(shape, axis: int, dtype, seed: int = 0):
    """a in (0.3, 0.95), h its recurrence of normal b from a normal init, a normal dL/dh."""
    g = torch.Generator(device="cuda").manual_seed(seed)
    a = (torch.rand(shape, generator=g, device="cuda") * 0.65 + 0.3).to(dtype)
    b = torch.randn(shape, generator=g, device="cuda").to(dtype)
    init = torch.randn(shape[:axis] + shape[axis + 1:], generator=g, device="cuda").to(dtype)
    grad = torch.randn(shape, generator=g, device="cuda").to(dtype)
    h = R.linear_recurrence(a, b, init, axis, False)
    return a, h, grad, init


def run_case(shape, axis: int, dtype_name: str, shifts, repeats: int, rounds: int, once: bool) -> list[dict]:
    dtype = DTYPES[dtype_name]
    a, h, grad, init = case_inputs(shape, axis, dtype)
    lanes, T, Q = math.prod(shape[:axis]), shape[axis], math.prod(shape[axis + 1:])
    sms = torch.cuda.get_device_properties(a.device).multi_processor_count
    base = R.plan_for(lanes, T, Q, sms, False, backward=True)
    plans = {shift: dataclasses.replace(base, shift=shift) for shift in shifts}

    def call(shift):
        return lambda: R.linear_recurrence_backward(a, h, grad, init, axis, False, plan=plans[shift])

    outputs = {shift: call(shift)() for shift in shifts}  # compiles, and the results compared
    reference = outputs.get("load") or R.linear_recurrence_backward(a, h, grad, init, axis, False,
                                                                    plan=dataclasses.replace(base, shift="load"))
    torch.cuda.synchronize()
    if once:
        for shift in shifts:
            call(shift)()
        torch.cuda.synchronize()
        return []
    n = a.numel()
    src = torch.empty(5 * n // 2, dtype=dtype, device="cuda").fill_(1)  # a copy moves 5 arrays' bytes
    dst = torch.empty_like(src)
    samples = {shift: [] for shift in list(shifts) + ["copy"]}
    fns = [call(shift) for shift in shifts] + [lambda: dst.copy_(src)]
    for _ in range(rounds):  # the forms interleaved: clocks and neighbours drift alike for each
        for name, ms in zip(list(shifts) + ["copy"], queued_ms(fns, repeats)):
            samples[name].append(ms)
    roof = statistics.median(samples["copy"])
    records = []
    for shift in shifts:
        ms = statistics.median(samples[shift])
        diff = max((got.float() - want.float()).abs().max().item() for got, want in zip(outputs[shift], reference))
        records.append(dict(shape=list(shape), axis=axis, dtype=dtype_name, shift=shift, plan=str(plans[shift]),
                            queued_ms=ms, rounds_ms=samples[shift], copy_ms=roof, of_roof=roof / ms,
                            vs_load=statistics.median(samples["load"]) / ms if "load" in samples else None,
                            max_abs_diff_vs_load=diff))
    return records


def markdown(records: list[dict], device: str) -> str:
    lines = [f"Fused backward, shifted reads ({device}; queued device time, median of rounds)", "",
             "| shape | axis | dtype | shift | ms | of roof (copy of 5 arrays) | load / this | max abs diff vs load |",
             "|---|---|---|---|---|---|---|---|"]
    for r in records:
        vs = "" if r["vs_load"] is None else f"{r['vs_load']:.3f}"
        lines.append(f"| {'x'.join(map(str, r['shape']))} | {r['axis']} | {r['dtype']} | {r['shift']} | "
                     f"{r['queued_ms']:.4f} | {r['of_roof']:.3f} | {vs} | {r['max_abs_diff_vs_load']:.3g} |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--shape", action="append", help="e.g. 8x1024x4096 (default: all three)")
    parser.add_argument("--dtype", choices=sorted(DTYPES), action="append")
    parser.add_argument("--shift", choices=SHIFTS, action="append", help="default: all three")
    parser.add_argument("--repeats", type=int, default=30, help="queued calls a round")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--once", action="store_true", help="one call of each form, no timing (for a profiler)")
    parser.add_argument("--out", help="write the records here as JSON")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        parser.error("needs a CUDA device")
    shifts = tuple(args.shift or SHIFTS)
    cases = [(s, axis) for s, axis in CASES if not args.shape or "x".join(map(str, s)) in args.shape]
    records = []
    for shape, axis in cases:
        for dtype_name in args.dtype or DTYPES:
            found = run_case(shape, axis, dtype_name, shifts, args.repeats, args.rounds, args.once)
            records.extend(found)
            for r in found:
                print(f"{'x'.join(map(str, shape))} axis {axis} {dtype_name} {r['shift']}: {r['queued_ms']:.4f} ms, "
                      f"{r['of_roof']:.3f} of the roof, max abs diff {r['max_abs_diff_vs_load']:.3g}", flush=True)
    if records:
        print()
        print(markdown(records, torch.cuda.get_device_name()))
    if args.out:
        with open(args.out, "w") as f:
            json.dump(dict(device=torch.cuda.get_device_name(), records=records), f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
