"""The measurement loop of ``prefixscan bench``: one :class:`~.cases.SizeCase`
at a time, every implementation on the same data, the copy roof measured in the
same process.

Each implementation is built on fresh output buffers, called once, verified
against NumPy (a wrong result is reported as FAILED and not timed), warmed up
and timed (timers from :mod:`prefixscan.timing`):

* CPU: ``time.perf_counter`` around an inner loop sized to ~2 ms, every
  implementation once per round, in rounds that rotate their order
  (:func:`time_interleaved`), the median round reported (``seconds`` =
  ``seconds_median``; ``seconds_min`` kept: other processes on a shared machine
  slow some rounds down, never speed one up, so under load the fastest round is
  the steadier, docs/design/cpu_compiled.md).  The copy roof is the
  faster of the copies of :mod:`.roof`;
* CUDA: ``torch.cuda.Event`` pairs around each call, queued behind a short GPU
  sleep so that the host's launch overhead is hidden (device time), the median
  of the repeats after a warm-up reported (``seconds`` = ``seconds_median``;
  ``seconds_min`` kept), rotating among input/output buffers that together
  exceed the L2 cache for ``n >= 2**22``; for ``n <= 2**20`` also the per-call
  time seen from Python (back-to-back calls between two events), which small
  sizes are dominated by.  JAX runs on its own streams and is timed with
  ``perf_counter`` around ``block_until_ready``.

Throughput: elements/s (Gel/s) and GB/s counting the bytes read and written
once (``2 * n * itemsize``, the least any scan must move, whatever the order),
and the ratio to the copy's throughput.
"""

from __future__ import annotations

import gc
import math
import statistics
import time

import numpy as np

from .._errors import short_error
from .._progress import Progress
from ..timing import CPU_SAMPLE_SECONDS, per_call_cuda_events, per_call_wall, time_cuda_events, time_wall
from .cases import SizeCase, itemsize_of, kind_of
from .peers import Implementation, NotApplicable, strategy_plan
from .verify import expected_result, verify_device, verify_host

__all__ = ["Progress", "measure_host", "measure_cuda", "time_interleaved", "merge_copies", "expected_seconds",
           "ROTATE_FROM_LOG2", "PER_CALL_UP_TO_LOG2", "PER_CALL_CALLS"]

ROTATE_FROM_LOG2 = 22  # rotate buffers on CUDA from this size on
SLOW_CALL_SECONDS = 1.0  # a call slower than this (twice) is timed once
PER_CALL_UP_TO_LOG2 = 20  # report host-inclusive per-call time up to this size
PER_CALL_CALLS = 200
CPU_MEASURE_BUDGET = 1.5  # seconds per CPU measurement before repeats are cut short
MIN_ROUNDS = 3  # interleaved rounds kept whatever the budget
#: Bytes per second the progress estimate's weights assume (host memory, device
#: memory); only their ratios across sizes matter, measured times correct the rest.
_HOST_BYTES_PER_S, _DEVICE_BYTES_PER_S = 4e9, 1e12


def expected_seconds(device: str, case: SizeCase, implementations: int) -> float:
    """The expected cost of measuring ``case`` (the weight of its progress step):
    per implementation, the timed rounds (on the CPU each sample loops calls for at
    least ``CPU_SAMPLE_SECONDS``) and a few passes over the data to build, call once
    and verify; on CUDA also a fixed cost per implementation (compiling, per-call
    timing) that dominates small sizes."""
    moved = 2 * case.n * itemsize_of(case.dtype)
    if device == "cpu":
        per_sample = max(CPU_SAMPLE_SECONDS, moved / _HOST_BYTES_PER_S)
        timed = min(case.repeats * per_sample, max(MIN_ROUNDS * per_sample, CPU_MEASURE_BUDGET))
        return implementations * (timed + 3 * moved / _HOST_BYTES_PER_S)
    return implementations * (0.05 + (case.repeats + 3) * moved / _DEVICE_BYTES_PER_S) + 3 * moved / _HOST_BYTES_PER_S


# ---------------------------------------------------------------------------
# Records.

def _record(impl: str, case: SizeCase, **kw) -> dict:
    rec = {"impl": impl, "dtype": case.dtype, "n": case.n, "log2n": case.log2n, "order": case.order,
           "tuple_size": case.tuple_size, "seconds": None, "seconds_min": None, "seconds_median": None, "samples": 0,
           "elements_per_s": None, "gelem_per_s": None, "gb_per_s": None, "ratio_to_copy": None,
           "verified": False, "status": "ok", "error": None}
    rec.update(kw)
    return rec


def _fill_rates(rec: dict, n: int, itemsize: int) -> None:
    sec = rec.get("seconds")
    if sec:
        rec["elements_per_s"] = n / sec
        rec["gelem_per_s"] = n / sec / 1e9
        rec["gb_per_s"] = 2 * n * itemsize / sec / 1e9
    pc = rec.get("per_call_seconds")
    if pc:
        rec["per_call_gelem_per_s"] = n / pc / 1e9


def time_interleaved(fns: list, rounds: int, budget: float, first_seconds: list | None = None) -> list[list[float]]:
    """Seconds per call of each of ``fns``, one sample per function per round: an
    inner loop of about ``CPU_SAMPLE_SECONDS``, the functions' order rotated every
    round, so that a slow phase of the machine hits them all alike.  Stops after
    ``rounds`` rounds, or after ``budget`` seconds per function (at least
    ``MIN_ROUNDS`` rounds).  The functions have been called once already;
    ``first_seconds``, the time of a warm call of each, spares one more."""
    if first_seconds is None:
        first_seconds = []
        for fn in fns:
            t0 = time.perf_counter()
            fn()
            first_seconds.append(time.perf_counter() - t0)
    inner = [max(1, min(100000, math.ceil(CPU_SAMPLE_SECONDS / max(t, 1e-9)))) for t in first_seconds]
    samples: list[list[float]] = [[] for _ in fns]
    start = time.perf_counter()
    for r in range(max(1, rounds)):
        for k in range(len(fns)):
            i = (r + k) % len(fns)
            fn, count = fns[i], inner[i]
            t0 = time.perf_counter()
            for _ in range(count):
                fn()
            samples[i].append((time.perf_counter() - t0) / count)
        if r + 1 >= MIN_ROUNDS and time.perf_counter() - start > budget * len(fns):
            break
    return samples


def merge_copies(recs: list[dict], names: list[str]) -> list[dict]:
    """The records of the copy variants ``names`` as one ``copy`` record: the fastest
    variant's, with every variant's time in ``copy_seconds`` and the winner in ``roof``."""
    copies = [r for r in recs if r["impl"] in names]
    if len(copies) < 2:
        return recs
    timed = [r for r in copies if r.get("seconds")]
    best = min(timed, key=lambda r: r["seconds"]) if timed else copies[0]
    merged = dict(best, impl="copy", roof=best.get("variant"),
                  copy_seconds={r.get("variant"): r.get("seconds") for r in copies})
    merged.pop("variant", None)
    out = []
    for r in recs:
        if r["impl"] not in names:
            out.append(r)
        elif r is copies[0]:
            out.append(merged)
    return out


def _set_ratios(recs: list[dict]) -> None:
    copy = next((r for r in recs if r["impl"] == "copy" and r.get("seconds")), None)
    for r in recs:
        if copy is not None and r.get("seconds"):
            r["ratio_to_copy"] = copy["seconds"] / r["seconds"]


def _label(impl: Implementation, case: SizeCase) -> str:
    return f"{impl.name} {case.dtype} 2^{case.log2n}"


# ---------------------------------------------------------------------------
# Host arrays.

def measure_host(impls: list[Implementation], case: SizeCase, rng: np.random.Generator, bar: Progress,
                 skipped: list[dict]) -> list[dict]:
    """Records of every implementation on host arrays of ``case`` (NumPy; the
    strategies on ``cpu`` wrap them as torch tensors for Triton's interpreter),
    timed in interleaved rounds (:func:`time_interleaved`), best of the rounds."""
    low, high = case.data_bounds()
    small = rng.integers(low, high, size=case.n, dtype=np.int8)
    x = small.astype(case.dtype)
    expected = expected_result(small, case)
    recs, timed = [], []
    for impl in impls:
        label = _label(impl, case)
        bar.update(label)
        out = np.empty_like(x)
        out[...] = 0  # touch the pages before timing
        try:
            fns = impl.build([x], [out])
        except NotApplicable as exc:
            skipped.append({"impl": impl.name, "dtype": case.dtype, "n": case.n, "reason": str(exc)})
            continue
        rec = _record(impl.name, case, **({"variant": impl.variant} if impl.variant else {}))
        try:
            result = fns[0]()
            if impl.is_copy:
                ok = np.array_equal(np.asarray(result), x)
                why = "" if ok else "the copy differs from its source"
            else:
                ok, why = verify_host(result, expected)
            rec.update(strategy_plan(impl, case, "cpu"))
            if not ok:
                rec.update(status="FAILED", error=why)
            else:
                rec["verified"] = True
                timed.append((rec, fns[0]))
        except Exception as exc:  # noqa: BLE001 - reported in the record
            rec.update(status="error", error=short_error(exc), verified=False, seconds=None)
        recs.append(rec)
    bar.update(f"{case.dtype} 2^{case.log2n}: timing {len(timed)} implementations")
    try:
        samples = time_interleaved([fn for _, fn in timed], case.repeats, CPU_MEASURE_BUDGET)
    except Exception as exc:  # noqa: BLE001 - a call that failed only when repeated
        samples = []
        for rec, _ in timed:
            rec.update(status="error", error=short_error(exc), verified=False)
    for (rec, _), seconds in zip(timed, samples):
        rec.update(seconds=statistics.median(seconds), seconds_min=min(seconds), seconds_median=statistics.median(seconds),
                   samples=len(seconds))
    recs = merge_copies(recs, [i.name for i in impls if i.is_copy])
    for rec in recs:
        _fill_rates(rec, case.n, itemsize_of(case.dtype))
    _set_ratios(recs)
    return recs


# ---------------------------------------------------------------------------
# CUDA tensors.

def _rotating_buffers(case: SizeCase, l2_cache_bytes: int | None) -> int:
    """Input/output pairs to rotate among, so that from 2^22 on each timed call
    reads from device memory rather than from the L2 cache (4x L2 in all, <= 16)."""
    if case.log2n < ROTATE_FROM_LOG2:
        return 1
    nbytes = case.n * itemsize_of(case.dtype)
    l2 = l2_cache_bytes or 60 * 2**20
    return max(1, min(16, math.ceil(4 * l2 / nbytes)))


def _time_on_device(impl: Implementation, fns: list, case: SizeCase, t_first: float,
                    per_call_calls: int) -> dict:
    """Timing fields of a verified implementation on CUDA."""
    import torch

    slow = None
    if t_first > SLOW_CALL_SECONDS:  # compiling, or a peer that takes seconds
        t0 = time.perf_counter()
        fns[0]()
        torch.cuda.synchronize()
        slow = time.perf_counter() - t0
    if slow is not None and slow > SLOW_CALL_SECONDS:
        # Seconds per call (torch.cumsum along dim 0 of a tall array): one
        # timed call is enough to place it, and repeats would take minutes.
        return {"seconds": slow, "seconds_min": slow, "seconds_median": slow, "samples": 1,
                "timing": "one wall-clock call"}
    for f in fns[1:]:  # warm-up of every buffer
        f()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    fns[0]()
    host_seconds = time.perf_counter() - t0
    torch.cuda.synchronize()
    if impl.timing == "wall":
        samples = time_wall(fns, case.repeats)
    else:
        samples = time_cuda_events(fns, case.repeats, host_seconds)
    fields = {"seconds": statistics.median(samples), "seconds_min": min(samples),
              "seconds_median": statistics.median(samples), "samples": len(samples)}
    if case.log2n <= PER_CALL_UP_TO_LOG2:
        if impl.timing == "wall":
            fields["per_call_seconds"] = per_call_wall(fns, per_call_calls)
        else:
            fields["per_call_seconds"] = per_call_cuda_events(fns, per_call_calls)
    return fields


def measure_cuda(impls: list[Implementation], case: SizeCase, rng: np.random.Generator, bar: Progress,
                 skipped: list[dict], *, l2_cache_bytes: int | None, per_call_calls: int) -> list[dict]:
    """Records of every implementation on torch CUDA tensors of ``case``; a
    size that does not fit the free device memory is skipped whole."""
    import torch

    n = case.n
    itemsize = itemsize_of(case.dtype)
    nbytes = n * itemsize
    k = _rotating_buffers(case, l2_cache_bytes)
    # Memory: k inputs + k outputs + the float64/int reference + one peer
    # result or temporary + the int8 seed data, with some slack.
    ref_bytes = n * (8 if kind_of(case.dtype) == "f" else itemsize)
    need = 2 * k * nbytes + ref_bytes + 2 * nbytes + n + 512 * 2**20
    gc.collect()
    torch.cuda.empty_cache()
    free, _total = torch.cuda.mem_get_info()
    if need > 0.9 * free:
        for impl in impls:
            skipped.append({"impl": impl.name, "dtype": case.dtype, "n": n,
                            "reason": f"needs ~{need / 2**30:.1f} GiB, {free / 2**30:.1f} GiB free"})
        bar.update(f"{case.dtype} 2^{case.log2n} (no room)")
        return []

    gen = torch.Generator(device="cuda")
    gen.manual_seed(int(rng.integers(0, 2**62)))
    low, high = case.data_bounds()
    small_dev = torch.randint(low, high, (n,), dtype=torch.int8, device="cuda", generator=gen)
    small = small_dev.cpu().numpy()
    x0 = small_dev.to(getattr(torch, case.dtype))
    del small_dev
    ins = [x0] + [x0.clone() for _ in range(k - 1)]
    expected = expected_result(small, case)
    ref_dev = torch.from_numpy(expected.reference).to("cuda")
    tolerance, relative = expected.tolerance, expected.relative
    del expected, small  # the host reference can be GiBs

    recs = []
    for impl in impls:
        label = _label(impl, case)
        bar.update(label)
        outs = [torch.zeros_like(x0) for _ in range(k)]
        rec = _record(impl.name, case, buffers=k)
        fns = None
        try:
            try:
                fns = impl.build(ins, outs)
                t_first = time.perf_counter()
                result = fns[0]()
                torch.cuda.synchronize()
                t_first = time.perf_counter() - t_first
            except NotApplicable:
                raise
            except Exception as exc:  # noqa: BLE001
                if not impl.optional:
                    raise
                raise NotApplicable(f"call failed: {short_error(exc)}") from exc
            if impl.is_copy:
                ok = bool(torch.equal(result, x0))
                why = "" if ok else "the copy differs from its source"
            else:
                ok, why = verify_device(result, ref_dev, case.dtype, tolerance, relative)
            del result
            rec.update(strategy_plan(impl, case, "cuda"))
            if not ok:
                rec.update(status="FAILED", error=why)
            else:
                rec["verified"] = True
                rec.update(_time_on_device(impl, fns, case, t_first, per_call_calls))
        except NotApplicable as exc:
            skipped.append({"impl": impl.name, "dtype": case.dtype, "n": n, "reason": str(exc)})
            rec = None
        except Exception as exc:  # noqa: BLE001 - reported in the record
            rec.update(status="error", error=short_error(exc), verified=False, seconds=None)
            try:
                torch.cuda.synchronize()
            except Exception:  # noqa: BLE001
                pass
        fns = None
        del outs
        if rec is not None:
            _fill_rates(rec, n, itemsize)
            recs.append(rec)
    del ins, x0, ref_dev
    gc.collect()
    torch.cuda.empty_cache()
    _set_ratios(recs)
    return recs
