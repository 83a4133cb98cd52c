"""Why a scan runs below its roof: each case's scan next to a device copy of the same bytes,
timed, then profiled under Nsight Compute.  (Run on the device.)

A case is ``DTYPE:LOG2N`` with optional ``:order=K``, ``:tuple=S`` or ``:rows=R`` (a 2-D
array of R rows scanned along axis 0).  Every case is warmed up (compiled, planned), timed
with CUDA events (median of 20 back-to-back calls each, the copy's then the scan's), then run
once more between ``cudaProfilerStart``/``Stop``: under ``ncu --profile-from-start off`` only
that scan's kernels are profiled (the copy is a device memcpy, not a kernel).  The device script's ``ncu`` profile runs it so.

    python tools/scan_profile.py bfloat16:28 int64:27 int32:27:order=5 float32:28:rows=65536
"""

from __future__ import annotations

import argparse
import json

import torch

import prefixscan as ps


def parse(case: str) -> dict:
    dtype, log2n, *options = case.split(":")
    spec = dict(case=case, dtype=getattr(torch, dtype), n=1 << int(log2n), order=1, tuple_size=1, rows=0)
    for option in options:
        key, value = option.split("=")
        spec[{"order": "order", "tuple": "tuple_size", "rows": "rows"}[key]] = int(value)
    return spec


def inputs(spec: dict):
    n, dtype = spec["n"], spec["dtype"]
    if dtype.is_floating_point:
        x = torch.rand(n, device="cuda").to(dtype)
    else:
        x = torch.randint(-100, 100, (n,), device="cuda", dtype=dtype)
    if spec["rows"]:
        x = x.view(spec["rows"], -1)
    return x, torch.empty_like(x), torch.empty_like(x)


def median_ms(fn, calls=20) -> float:
    events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(calls)]
    for start, end in events:
        start.record()
        fn()
        end.record()
    torch.cuda.synchronize()
    times = sorted(s.elapsed_time(e) for s, e in events)
    return times[calls // 2]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("cases", nargs="+")
    args = parser.parse_args()
    for case in args.cases:
        spec = parse(case)
        x, out, copy = inputs(spec)
        axis = 0 if spec["rows"] else -1

        def scan(x=x, out=out, axis=axis, spec=spec):
            ps.scan(x, axis=axis, order=spec["order"], tuple_size=spec["tuple_size"], out=out)

        for _ in range(3):
            scan()
            copy.copy_(x)
        copy_ms, scan_ms = median_ms(lambda c=copy, x=x: c.copy_(x)), median_ms(scan)
        torch.cuda.synchronize()
        torch.cuda.profiler.start()
        copy.copy_(x)
        scan()
        torch.cuda.synchronize()
        torch.cuda.profiler.stop()
        print(json.dumps(dict(case=case, copy_ms=round(copy_ms, 4), scan_ms=round(scan_ms, 4),
                              of_copy=round(copy_ms / scan_ms, 3))), flush=True)
        del x, out, copy, scan
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
