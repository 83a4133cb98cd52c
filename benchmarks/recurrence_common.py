"""Timing and table helpers shared by the recurrence benchmarks (``recurrence.py`` and
``recurrence_logspace.py``): device time per call one call at a time and queued behind a
GPU sleep, a copy of the same bytes as the roof, markdown cells."""

from __future__ import annotations

import statistics
import time

from prefixscan.timing import median_cuda_seconds, time_cuda_events


def _cuda_time(fn, repeats: int, warmup: int = 3) -> float:
    """Median milliseconds of ``fn()`` by CUDA events."""
    return median_cuda_seconds(fn, repeats, warmup) * 1e3


def _queued_time(fn, repeats: int, warmup: int = 3) -> float:
    """Median milliseconds of ``fn()`` by CUDA events with the calls queued behind a GPU
    sleep (:func:`prefixscan.timing.time_cuda_events`): the device's time per call when
    the host keeps ahead of the GPU, as in a training loop; ``_cuda_time`` adds the
    host's time before the first launch of each call."""
    import torch

    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    t = time.perf_counter()
    fn()
    host = time.perf_counter() - t
    torch.cuda.synchronize()
    return statistics.median(time_cuda_events([fn], repeats, host)) * 1e3


def _both(rec: dict, prefix: str, fn, repeats: int) -> None:
    """``rec[prefix + "ms"]`` (one call per sample) and ``rec[prefix + "queued_ms"]``."""
    rec[prefix + "ms"], rec[prefix + "repeats"] = _adaptive(fn, repeats)
    rec[prefix + "queued_ms"] = _queued_time(fn, rec[prefix + "repeats"], warmup=1)


def _adaptive(fn, repeats: int) -> tuple[float, int]:
    """``_cuda_time`` with fewer repeats for slow peers (one call over 50 ms: 5 repeats)."""
    import torch

    t = time.perf_counter()
    fn()
    torch.cuda.synchronize()
    once = time.perf_counter() - t
    n = repeats if once < 0.05 else 5
    return _cuda_time(fn, n, warmup=1), n


def _copy_ms(elements: int, itemsize: int, repeats: int, timer=None) -> float:
    """Milliseconds of a device copy of ``elements`` items of ``itemsize`` bytes (2x bytes
    moved), by ``timer`` (``_cuda_time``, or ``_queued_time`` for the queued timings' roof)."""
    import torch

    dtype = {2: torch.bfloat16, 4: torch.float32}[itemsize]
    src = torch.empty(elements, dtype=dtype, device="cuda").fill_(1)
    dst = torch.empty_like(src)
    return (timer or _cuda_time)(lambda: dst.copy_(src), repeats)


def _fwd_bwd(run, a, b, grad):
    def step():
        a.grad = b.grad = None
        run(a, b).backward(grad)
    return step


def _cells(r: dict, keys) -> list[str]:
    """``r``'s values at ``keys`` for a table: milliseconds (a key ending in ``ms``) to
    3 decimals, ratios to 2, nan where a key is missing."""
    return [f"{r.get(k, float('nan')):.{3 if k.endswith('ms') else 2}f}" for k in keys]


def _row(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"
