"""Timers shared by the benchmark and the tuner.

Kept apart from both so that the Triton backend's tuner can time candidates
without importing the benchmark (as Triton's autotuner takes ``do_bench`` from
``triton.testing``).  CUDA timings use event pairs queued behind a short GPU
sleep, so each pair measures device time rather than the host's launch cost;
wall-clock timings synchronize around the calls and include the host's work.
"""

from __future__ import annotations

import math
import statistics
import time
from typing import Callable

__all__ = ["time_cpu", "time_cuda_events", "median_cuda_seconds", "median_host_seconds", "per_call_cuda_events", "time_wall", "per_call_wall",
           "CPU_SAMPLE_SECONDS"]

#: Each CPU sample loops calls for about this long, so short calls are not
#: dominated by the timer's own resolution.
CPU_SAMPLE_SECONDS = 2e-3


def time_cpu(fn: Callable, repeats: int, budget: float) -> tuple[list[float], int]:
    """Samples of seconds per call, and the calls per sample: each
    sample loops ``inner`` calls; stops after ``budget`` seconds (at least 3 samples)."""
    t0 = time.perf_counter()
    fn()
    t1 = time.perf_counter() - t0
    inner = max(1, min(100000, int(math.ceil(CPU_SAMPLE_SECONDS / max(t1, 1e-9)))))
    samples: list[float] = []
    start = time.perf_counter()
    for r in range(repeats):
        t0 = time.perf_counter()
        for _ in range(inner):
            fn()
        samples.append((time.perf_counter() - t0) / inner)
        if r >= 2 and time.perf_counter() - start > budget:
            break
    return samples, inner


def time_cuda_events(fns: list[Callable], repeats: int, host_seconds: float) -> list[float]:
    """Seconds per call from CUDA event pairs, ``repeats`` samples cycling through
    ``fns`` (rotating buffers).  ``host_seconds``: the host time one call takes to
    enqueue its work (measured during warm-up), which sizes the GPU sleep."""
    import torch

    starts = [torch.cuda.Event(enable_timing=True) for _ in range(repeats)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(repeats)]
    torch.cuda.synchronize()
    sleep = getattr(torch.cuda, "_sleep", None)
    if sleep is not None:
        # Keep the GPU busy while the host queues the timed calls, so each pair
        # of events measures device time rather than launch overhead (a call
        # that synchronizes inside still shows its host time).  Cycles at up
        # to ~2 GHz: a slower clock only sleeps longer.
        budget = min(0.2, 1.5 * repeats * host_seconds + 100e-6)
        sleep(int(budget * 2.0e9))
    for r in range(repeats):
        starts[r].record()
        fns[r % len(fns)]()
        ends[r].record()
    torch.cuda.synchronize()
    return [s.elapsed_time(e) * 1e-3 for s, e in zip(starts, ends)]


def median_cuda_seconds(fn: Callable, repeats: int, warmup: int = 3) -> float:
    """Median device seconds of ``fn()`` by CUDA events, one call per sample, after
    ``warmup`` calls (scripts that time one implementation at a time)."""
    import torch

    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeats):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1e-3)
    return statistics.median(times)


def median_host_seconds(fn: Callable, repeats: int, warmup: int = 1) -> float:
    """Median wall seconds of ``fn()`` on the host, one call per sample, after ``warmup``
    calls (scripts that time one CPU implementation at a time)."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def per_call_cuda_events(fns: list[Callable], calls: int, chunks: int = 8) -> float:
    """Device seconds per call: ``calls`` back-to-back calls in ``chunks`` runs between
    events, the median run's time per call (one slow run, a clock ramp or a collection,
    moves a single mean by microseconds at small sizes)."""
    import torch

    per_chunk = max(1, calls // chunks)
    marks = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(chunks)]
    torch.cuda.synchronize()
    i = 0
    for start, end in marks:
        start.record()
        for _ in range(per_chunk):
            fns[i % len(fns)]()
            i += 1
        end.record()
    torch.cuda.synchronize()
    return statistics.median(s.elapsed_time(e) for s, e in marks) * 1e-3 / per_chunk


def time_wall(fns: list[Callable], repeats: int) -> list[float]:
    """Wall seconds per call, one synchronized call per sample (calls that block)."""
    import torch

    samples = []
    for r in range(repeats):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        fns[r % len(fns)]()
        samples.append(time.perf_counter() - t0)
    return samples


def per_call_wall(fns: list[Callable], calls: int, chunks: int = 8) -> float:
    """Wall seconds per call: ``calls`` back-to-back calls in ``chunks`` runs, each
    synchronized at both ends; the median run's time per call."""
    import torch

    per_chunk = max(1, calls // chunks)
    runs = []
    i = 0
    for _ in range(chunks):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(per_chunk):
            fns[i % len(fns)]()
            i += 1
        torch.cuda.synchronize()
        runs.append((time.perf_counter() - t0) / per_chunk)
    return statistics.median(runs)
