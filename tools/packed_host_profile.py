"""Host time of a packed ``linear_recurrence`` call against the same call unpacked.
(Run on a CUDA machine.)

    python3 tools/packed_host_profile.py [--shape 1,32768,1024] [--calls 50] [--rounds 5] [--seeded]

(1, 32768, 1024) float32 along axis 1, cut into the recurrence benchmark's 9 sequences
(benchmarks/recurrence.py, ``PACKED``), against the same tensors unpacked; offsets as a
list, a NumPy int64 array and a CUDA tensor; forward, and forward + backward.  For each:

* host ms a call back to back: ``--calls`` calls queued behind a GPU sleep, the host's
  seconds over the calls, the median of ``--rounds`` (whether the GPU was still busy at
  the end of every round is printed: a call that waited on the GPU would have drained
  it);
* host ms of one call behind a GPU sleep (a call that waits takes the sleep);
* device ms a call queued: CUDA events around the same back-to-back calls (the host
  ahead of the GPU, as in a training loop);
* torch operations a call (top-level ``aten::`` events under ``torch.profiler``), the
  device's activities a call (kernels, copies and their kinds), and the Python function
  calls a call (``cProfile``).

``--seeded`` adds a seed per sequence (per lane unpacked) and the final states.  The
target: a packed call with listed offsets within 10% of the unpacked call in queued
device time (the benchmark's measure, which a host-bound call inflates); the host
time's ratio and difference are printed beside it (checking the offsets and building
the flags on the host costs tens of microseconds, which the GPU's time hides while
the host stays ahead).  Each variant is first run back to back behind a sleep
once, so that torch's caching host allocator holds a page-locked block for every call
in flight (its first allocations, ``cudaHostAlloc``, are not the steady state).
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import statistics
import time
from collections import Counter

import numpy as np
import torch

import prefixscan as ps

CUTS = (0.0, 0.05, 0.12, 0.3, 0.31, 0.5, 0.62, 0.8, 0.93)  # benchmarks/recurrence.py PACKED
SLEEP_CYCLES_PER_MS = 2_000_000  # torch.cuda._sleep cycles, at up to ~2 GHz


def _queued(fn, calls: int) -> tuple[float, float, bool]:
    """(host ms a call, device ms a call, GPU still busy after the last call) of ``calls``
    calls queued behind a GPU sleep long enough to cover the host's work."""
    torch.cuda.synchronize()
    torch.cuda._sleep(SLEEP_CYCLES_PER_MS * max(50, 2 * calls))  # about 2 ms a call and at least 50 ms
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    host = time.perf_counter() - t0
    end.record()
    busy = not torch.cuda.current_stream().query()
    torch.cuda.synchronize()
    return host * 1e3 / calls, start.elapsed_time(end) / calls, busy


def _behind_sleep(fn) -> float:
    """Host ms of one call queued behind a 50 ms GPU sleep."""
    torch.cuda.synchronize()
    torch.cuda._sleep(SLEEP_CYCLES_PER_MS * 50)
    t0 = time.perf_counter()
    fn()
    host = time.perf_counter() - t0
    torch.cuda.synchronize()
    return host * 1e3


def _work(fn) -> tuple[int, Counter]:
    """Top-level torch operations of one call, and its device activities by kind."""
    from torch.profiler import ProfilerActivity, profile

    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    events = prof.events()
    ops = [e for e in events if e.name.startswith("aten::")
           and (e.cpu_parent is None or not e.cpu_parent.name.startswith("aten::"))]
    device = Counter(e.name.split("(")[0].strip()[:40] for e in events
                     if e.device_type == torch.autograd.DeviceType.CUDA)
    return len(ops), device


def _python_calls(fn) -> int:
    prof = cProfile.Profile()
    prof.enable()
    fn()
    prof.disable()
    torch.cuda.synchronize()
    return pstats.Stats(prof).total_calls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--shape", default="1,32768,1024", help="B,T,C (float32, along T)")
    parser.add_argument("--calls", type=int, default=50, help="calls back to back per timing")
    parser.add_argument("--rounds", type=int, default=5, help="timings per variant (medians reported)")
    parser.add_argument("--seeded", action="store_true", help="a seed per sequence and the final states")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("needs a CUDA device")
    shape = tuple(int(s) for s in args.shape.split(","))
    B, T, C = shape
    listed = sorted({int(c * T) for c in CUTS}) + [T]
    count = len(listed) - 1
    offsets = {"unpacked": None, "list": listed, "numpy int64": np.asarray(listed, dtype=np.int64),
               "cuda tensor": torch.tensor(listed, device="cuda")}
    gen = torch.Generator(device="cuda").manual_seed(0)
    a = torch.rand(shape, device="cuda", generator=gen) * 0.5 + 0.45
    b = torch.randn(shape, device="cuda", generator=gen)
    grad = torch.randn(shape, device="cuda", generator=gen)
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}, {shape} float32 along axis 1, "
          f"{count} sequences, offsets {listed}, {args.calls} calls a timing"
          + (", seeds and final states" if args.seeded else ""))
    rows = []
    for pass_ in ("forward", "forward+backward"):
        grads = pass_ != "forward"
        x, y = a.clone().requires_grad_(grads), b.clone().requires_grad_(grads)
        for name, given in offsets.items():
            init = None
            if args.seeded:
                init = torch.randn((B, C) if given is None else (B, count, C), device="cuda", generator=gen)

            def call(given=given, init=init, x=x, y=y, grads=grads):
                out = ps.linear_recurrence(x, y, axis=1, offsets=given, init=init, return_final=args.seeded)
                if grads:
                    x.grad = y.grad = None
                    h, final = out if args.seeded else (out, None)
                    loss = (h * grad).sum()
                    (loss if final is None else loss + final.sum()).backward()

            for _ in range(5):
                call()
            _queued(call, args.calls)  # the host allocator's page-locked blocks for every call in flight
            rounds = [_queued(call, args.calls) for _ in range(args.rounds)]
            host = statistics.median(r[0] for r in rounds)
            device = statistics.median(r[1] for r in rounds)
            busy = all(r[2] for r in rounds)
            ops, activities = _work(call)
            rows.append(dict(pass_=pass_, offsets=name, host=host, behind=_behind_sleep(call), device=device,
                             busy=busy, ops=ops, activities=activities, python=_python_calls(call)))
    print("\n| pass | offsets | host ms/call | one call behind sleep ms | queued device ms/call | GPU busy "
          "| torch ops | python calls | device work a call |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        work = ", ".join(f"{k} x{v}" for k, v in sorted(r["activities"].items()))
        print(f"| {r['pass_']} | {r['offsets']} | {r['host']:.3f} | {r['behind']:.3f} | {r['device']:.3f} | "
              f"{r['busy']} | {r['ops']} | {r['python']} | {work} |")
    print()
    for pass_ in ("forward", "forward+backward"):
        plain = next(r for r in rows if r["pass_"] == pass_ and r["offsets"] == "unpacked")
        for r in rows:
            if r["pass_"] == pass_ and r["offsets"] != "unpacked":
                host, device = r["host"] / plain["host"], r["device"] / plain["device"]
                verdict = "within 10%" if device <= 1.1 else "NOT within 10%"
                print(f"{pass_}, {r['offsets']}: queued device {device:.2f}x of unpacked ({verdict}); host "
                      f"{host:.2f}x ({r['host'] - plain['host']:+.3f} ms a call)")


if __name__ == "__main__":
    main()
