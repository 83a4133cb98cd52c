"""Benchmark of ``prefixscan.linear_recurrence`` (h[t] = a[t] h[t-1] + b[t]) against the roof and peers.

    python benchmarks/recurrence.py --device cuda --out DIR     # the GPU cases below
    python benchmarks/recurrence.py --device cuda --out DIR --log-space   # log decays only (below)
    python benchmarks/recurrence.py --device cpu --out DIR      # the compiled CPU loop vs scipy.signal.lfilter

GPU (CUDA events, median of --repeats after warm-up, all in one process):

* forward and forward + backward, float32 and bfloat16: (8, 1024, 4096), (4, 2048, 8192)
  and (1, 64, 65536) in (B, C, T) along T; (8, 1024, 4096) and (8, 4096, 1024) in (B, T, C)
  along T; (1, 64, 2^20) and (1, 1, 2^26) in (B, C, T) along T.
* two timings of every call, ours and the peers': one call per sample (events around the
  call: the host's time before its first launch counts) and queued (calls queued behind a
  GPU sleep: the device's time per call when the host keeps ahead, as in a training loop).
* the roof: a device copy of the same bytes, measured here (both ways: the queued
  timings' roof is the queued copy) (forward: read a and b, write h,
  3 arrays; forward + backward: 3 + 5 arrays); ``roof`` = roof time / time (1.00 = copy speed).
* peers: accelerated-scan's Triton kernel (``accelerated_scan.scalar.scan``, or ``.triton`` in
  older releases; (B, C, T) contiguous input of the same sizes, its only layout), and
  ``torch._higher_order_ops.associative_scan`` compiled by ``torch.compile`` where it runs.
* the tilings of the recurrence kernel (:class:`RecurrencePlan`) on each float32 shape, so the
  default choice can be checked against its alternatives.
* packed sequences: (1, 32768, 1024) float32 along T cut into 9 sequences (``offsets``)
  against the same tensors unpacked, forward and forward + backward.
* ``ps.cumsum`` forward + backward of 2^27 float32 against ``torch.cumsum``.

Log decays (``--log-space``, run alone; writes ``recurrence-cuda-log-space.*``):
``linear_recurrence(g, x, log_space=True)`` with ``g = logsigmoid(...)`` against
flash-linear-attention's HGRN (``fla.ops.hgrn.chunk_hgrn`` and ``fused_recurrent_hgrn``,
which compute ``h = exp(g) h + x`` from the same log gates, in their (B, T, D) layout;
(B, C, T) cases give them the (B, T, C) tensors of the same sizes), forward and forward +
backward, float32 and bfloat16, with the largest difference between the two results;
next to it ours on ``a = exp(g)`` computed beforehand (the linear-space kernel: the cost of
``exp`` in registers) and ours on ``exp(g)`` computed in the call (what a caller without
``log_space`` pays); packed sequences (``offsets``) against ``fused_recurrent_hgrn`` with
``cu_seqlens``.  Roofs as above (3 arrays forward, 8 forward + backward).  Every call,
ours and the peers', timed both ways as above (the ratios queued); ``fused_recurrent_hgrn``
only up to ``RECURRENT_MAX_STEPS`` steps a lane (beyond, a call takes seconds to time).

CPU: 10^7 steps (one lane, and 64 lanes either way round) against ``scipy.signal.lfilter``
with one decay (the only recurrence lfilter has), float64 and float32.

Writes ``recurrence-<device>.json``, ``recurrence-<device>.md`` and ``recurrence-<device>.png``
(time per case, and a ratio panel: roof fraction and speed-up over the peers).
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from pathlib import Path

import numpy as np

import prefixscan as ps
from recurrence_common import _adaptive, _both, _cells, _copy_ms, _cuda_time, _fwd_bwd, _queued_time, _row

GPU_SHAPES = [  # (name, shape, axis)
    ("BCT 8x1024x4096", (8, 1024, 4096), 2),
    ("BCT 4x2048x8192", (4, 2048, 8192), 2),
    ("BCT 1x64x65536", (1, 64, 65536), 2),
    ("BTC 8x1024x4096", (8, 1024, 4096), 1),
    ("BTC 8x4096x1024", (8, 4096, 1024), 1),
    ("BCT 1x64x2^20", (1, 64, 1 << 20), 2),
    ("BCT 1x1x2^26", (1, 1, 1 << 26), 2),
]


def _accelerated_scan():
    for name in ("accelerated_scan.scalar", "accelerated_scan.triton"):
        try:
            module = __import__(name, fromlist=["scan"])
            return module.scan, name
        except Exception as exc:  # noqa: BLE001 - a peer that does not import is reported, not fatal
            error = f"{type(exc).__name__}: {exc}"
    return None, error


#: Lanes longer than this skip the compiled associative_scan (its compile time grows with them).
ASSOCIATIVE_SCAN_MAX_LEN = 1 << 20


def _associative_scan(axis: int, length: int):
    import torch

    if length > ASSOCIATIVE_SCAN_MAX_LEN:
        return None, f"skipped: lanes of {length} steps (above {ASSOCIATIVE_SCAN_MAX_LEN})"
    try:
        from torch._higher_order_ops import associative_scan
    except Exception as exc:  # noqa: BLE001
        return None, f"{type(exc).__name__}: {exc}"

    def combine(x, y):
        return x[0] * y[0], y[0] * x[1] + y[1]

    # Each shape compiled afresh for its sizes: after a second shape torch.compile traces
    # sizes as symbols (and associative_scan then fails to lower), and the closures share one
    # code object, whose recompiles past Dynamo's limit would fall back.
    torch._dynamo.reset()

    @torch.compile(fullgraph=True, dynamic=False)
    def run(a, b):
        return associative_scan(combine, (a, b), axis)[1]

    return run, "torch._higher_order_ops.associative_scan (torch.compile)"


def _inputs(shape, dtype, requires_grad=False):
    import torch

    gen = torch.Generator(device="cuda").manual_seed(0)
    a = (torch.rand(shape, device="cuda", generator=gen) * 0.5 + 0.45).to(dtype)
    b = torch.randn(shape, device="cuda", generator=gen).to(dtype)
    if requires_grad:
        a.requires_grad_()
        b.requires_grad_()
    return a, b


def _bct(shape, axis):
    """The (B, C, T) shape of the same sizes (accelerated-scan's layout)."""
    if axis == 2:
        return shape
    return (shape[0], shape[2], shape[1])


def bench_cuda(repeats: int, plans: bool, forward_only: bool = False) -> list[dict]:
    import torch

    from prefixscan.primitives.recurrence import triton_kernel as R

    records = []
    peer_scan, peer_name = _accelerated_scan()
    print(f"accelerated-scan: {peer_name}", flush=True)
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    for name, shape, axis in GPU_SHAPES:
        n = math.prod(shape)
        copy32, queued32 = _copy_ms(n, 4, repeats), _copy_ms(n, 4, repeats, _queued_time)
        for dtype, itemsize in ((torch.float32, 4),) + ((() if forward_only else ((torch.bfloat16, 2),))):
            copy = copy32 if itemsize == 4 else _copy_ms(n, 2, repeats)
            queued_copy = queued32 if itemsize == 4 else _copy_ms(n, 2, repeats, _queued_time)
            a, b = _inputs(shape, dtype)
            rec = dict(case=name, pass_="forward", dtype=str(dtype).replace("torch.", ""), shape=shape, axis=axis,
                       roof_ms=copy * 1.5, plan=str(R.plan_for(math.prod(shape[:axis]), shape[axis],
                                                               math.prod(shape[axis + 1:]), sms, False)))
            _both(rec, "", lambda: ps.linear_recurrence(a, b, axis=axis), repeats)
            ours = rec["ms"]
            rec["roof"], rec["roof_queued"] = rec["roof_ms"] / ours, queued_copy * 1.5 / rec["queued_ms"]
            if peer_scan is not None:
                pa, pb = _inputs(_bct(shape, axis), dtype)
                _peer(rec, lambda: peer_scan(pa, pb), repeats)
                del pa, pb
            if dtype == torch.float32:
                assoc, note = _associative_scan(axis, shape[axis])
                if assoc is not None:
                    try:
                        rec["associative_scan_ms"], _ = _adaptive(lambda: assoc(a, b), repeats)
                        rec["vs_associative_scan"] = rec["associative_scan_ms"] / ours
                    except Exception as exc:  # noqa: BLE001
                        rec["associative_scan_error"] = f"{type(exc).__name__}: {exc}"[:300]
                else:
                    rec["associative_scan_error"] = note
            records.append(rec)
            print(json.dumps(rec), flush=True)
        if forward_only:
            continue
        # forward + backward, float32 and bfloat16
        for dtype, itemsize in ((torch.float32, 4), (torch.bfloat16, 2)):
            copy = copy32 if itemsize == 4 else _copy_ms(n, 2, repeats)
            queued_copy = queued32 if itemsize == 4 else _copy_ms(n, 2, repeats, _queued_time)
            a, b = _inputs(shape, dtype, requires_grad=True)
            grad = torch.randn(shape, device="cuda").to(dtype)
            rec = dict(case=name, pass_="forward+backward", dtype=str(dtype).replace("torch.", ""), shape=shape,
                       axis=axis, roof_ms=copy * 4.0)  # forward 3 arrays, backward 5: 8 arrays, a copy moves 2
            _both(rec, "", _fwd_bwd(lambda x, y: ps.linear_recurrence(x, y, axis=axis), a, b, grad), repeats)
            ours = rec["ms"]
            rec["roof"], rec["roof_queued"] = rec["roof_ms"] / ours, queued_copy * 4.0 / rec["queued_ms"]
            if peer_scan is not None:
                pa, pb = _inputs(_bct(shape, axis), dtype, requires_grad=True)
                pg = torch.randn(pa.shape, device="cuda").to(dtype)
                _peer(rec, _fwd_bwd(peer_scan, pa, pb, pg), repeats)
                del pa, pb, pg
            if dtype == torch.float32:
                assoc, note = _associative_scan(axis, shape[axis])
                if assoc is not None:
                    try:
                        rec["associative_scan_ms"], _ = _adaptive(_fwd_bwd(assoc, a, b, grad), repeats)
                        rec["vs_associative_scan"] = rec["associative_scan_ms"] / ours
                    except Exception as exc:  # noqa: BLE001
                        rec["associative_scan_error"] = f"{type(exc).__name__}: {exc}"[:300]
            records.append(rec)
            print(json.dumps(rec), flush=True)
        if plans:
            records.extend(_plan_sweep(name, shape, axis, repeats, copy32))
        torch.cuda.empty_cache()
    records.extend(_packed_cases(repeats, forward_only))
    if not forward_only:
        records.append(_cumsum_case(repeats))
    return records


#: Packed sequences: (1, T, C) along T cut into sequences at these fractions of T.
PACKED = ("BTC 1x32768x1024, 9 sequences", (1, 32768, 1024), (0.0, 0.05, 0.12, 0.3, 0.31, 0.5, 0.62, 0.8, 0.93))


def _packed_cases(repeats: int, forward_only: bool) -> list[dict]:
    """Packed sequences (``offsets``) against the same total length unpacked, float32,
    forward and forward + backward, queued device time (and one call per sample); the
    offsets as a device tensor (checked there: one synchronization a call, which the
    queued timing then waits on) and as a list of ints (checked on the host)."""
    import torch

    name, shape, cuts = PACKED
    listed = [int(c * shape[1]) for c in cuts] + [shape[1]]
    offsets = torch.tensor(listed, device="cuda")
    records = []
    for pass_ in ("forward",) + (() if forward_only else ("forward+backward",)):
        grad = pass_ != "forward"
        a, b = _inputs(shape, torch.float32, requires_grad=grad)
        rec = dict(case=name, pass_=pass_, dtype="float32", shape=shape, axis=1, packed=True)
        if grad:
            g = torch.randn(shape, device="cuda")
            packed = _fwd_bwd(lambda x, y: ps.linear_recurrence(x, y, axis=1, offsets=offsets), a, b, g)
            hosted = _fwd_bwd(lambda x, y: ps.linear_recurrence(x, y, axis=1, offsets=listed), a, b, g)
            plain = _fwd_bwd(lambda x, y: ps.linear_recurrence(x, y, axis=1), a, b, g)
        else:
            def packed():
                return ps.linear_recurrence(a, b, axis=1, offsets=offsets)

            def hosted():
                return ps.linear_recurrence(a, b, axis=1, offsets=listed)

            def plain():
                return ps.linear_recurrence(a, b, axis=1)
        _both(rec, "", packed, repeats)
        _both(rec, "listed_", hosted, repeats)
        _both(rec, "unpacked_", plain, repeats)
        rec["vs_unpacked_queued"] = rec["unpacked_queued_ms"] / rec["queued_ms"]
        rec["listed_vs_unpacked_queued"] = rec["unpacked_queued_ms"] / rec["listed_queued_ms"]
        records.append(rec)
        print(json.dumps(rec), flush=True)
    return records


def _peer(rec: dict, fn, repeats: int) -> None:
    """accelerated-scan's times of ``fn`` in ``rec`` both ways, and ours over them (or the error)."""
    try:
        _both(rec, "accelerated_scan_", fn, repeats)
    except Exception as exc:  # noqa: BLE001 - a peer that fails is reported, not fatal
        rec["accelerated_scan_error"] = f"{type(exc).__name__}: {exc}"[:300]
        return
    rec["vs_accelerated_scan"] = rec["accelerated_scan_ms"] / rec["ms"]
    rec["vs_accelerated_scan_queued"] = rec["accelerated_scan_queued_ms"] / rec["queued_ms"]


def _plan_sweep(name, shape, axis, repeats, copy32) -> list[dict]:
    """Every tiling worth trying on this shape, forward float32, by ratio to the roof."""
    import torch

    from prefixscan.primitives.recurrence import triton_kernel as R

    a, b = _inputs(shape, torch.float32)
    q = math.prod(shape[axis + 1:])
    if q > 1:
        candidates = [R.RecurrencePlan(False, bt, bl, w) for bl in (16, 32, 64, 128) for bt, w in
                      ((max(16, 4096 // bl), 4), (max(16, 8192 // bl), 8))]
        candidates += [R.RecurrencePlan(True, max(16, 4096 // bl), bl, 4, max(2, 32 // bl)) for bl in (32, 64)]
        # the walk's chunk loop software-pipelined (cp.async into shared memory)
        candidates += [R.RecurrencePlan(False, 4096 // bl, bl, 4, stages=st) for bl in (32, 64) for st in (2, 3)]
    else:
        candidates = [R.RecurrencePlan(False, bt, max(1, tile // bt), w) for bt in (256, 1024, 2048)
                      for tile, w in ((4096, 4), (8192, 8))]
        candidates += [R.RecurrencePlan(True, bt, 1, w, 16) for bt, w in ((2048, 4), (4096, 8), (8192, 8))]
        candidates += [R.RecurrencePlan(False, bt, 4096 // bt, 4, stages=st) for bt in (1024, 2048) for st in (2, 3)]
    out = []
    for plan in candidates:
        try:
            ms = _cuda_time(lambda: R.linear_recurrence(a, b, None, axis, False, plan=plan), repeats)
            rec = dict(case=name, pass_="plan", dtype="float32", plan=str(plan), ms=ms, roof=copy32 * 1.5 / ms)
        except Exception as exc:  # noqa: BLE001
            rec = dict(case=name, pass_="plan", plan=str(plan), error=f"{type(exc).__name__}: {exc}"[:300])
        out.append(rec)
        print(json.dumps(rec), flush=True)
    return out


def _cumsum_case(repeats: int) -> dict:
    import torch

    x = torch.randn(1 << 27, device="cuda", requires_grad=True)
    grad = torch.randn(1 << 27, device="cuda")

    def run(fn):
        def step():
            x.grad = None
            fn(x).backward(grad)
        return step

    ours = _cuda_time(run(lambda v: ps.cumsum(v)), repeats)
    theirs = _cuda_time(run(lambda v: torch.cumsum(v, 0)), repeats)
    rec = dict(case="cumsum 2^27", pass_="forward+backward", dtype="float32", ms=ours, torch_cumsum_ms=theirs,
               vs_torch_cumsum=theirs / ours)
    print(json.dumps(rec), flush=True)
    return rec


def bench_cpu(repeats: int) -> list[dict]:
    try:
        from scipy.signal import lfilter
    except ImportError:
        lfilter = None
    records = []
    rng = np.random.default_rng(0)
    cases = [("1 x 10^7", (10_000_000,), 0), ("64 x 156250 (time last)", (64, 156_250), 1),
             ("156250 x 64 (time first)", (156_250, 64), 0)]
    for name, shape, axis in cases:
        for dtype in (np.float64, np.float32):
            x = rng.standard_normal(shape).astype(dtype)
            decay = dtype(0.9)
            times = []
            for _ in range(repeats):
                t = time.perf_counter()
                h = ps.linear_recurrence(decay, x, axis=axis)
                times.append(time.perf_counter() - t)
            rec = dict(case=name, dtype=np.dtype(dtype).name, ms=1e3 * statistics.median(times))
            if lfilter is not None:
                times = []
                for _ in range(repeats):
                    t = time.perf_counter()
                    expected = lfilter([1.0], [1.0, -float(decay)], x, axis=axis)
                    times.append(time.perf_counter() - t)
                rec["lfilter_ms"] = 1e3 * statistics.median(times)
                rec["vs_lfilter"] = rec["lfilter_ms"] / rec["ms"]
                rec["max_abs_diff"] = float(np.max(np.abs(h - expected)))
            else:
                rec["lfilter_error"] = "scipy not installed"
            records.append(rec)
            print(json.dumps(rec), flush=True)
    return records


def _markdown(records: list[dict], kind: str, device: str) -> str:
    lines = [f"# linear_recurrence on {device}", ""]
    if kind == "cpu":
        lines += ["| case | dtype | ms | lfilter ms | x lfilter |", "|---|---|---|---|---|"]
        for r in records:
            lines.append(f"| {r['case']} | {r['dtype']} | {r['ms']:.2f} | {r.get('lfilter_ms', float('nan')):.2f} | "
                         f"{r.get('vs_lfilter', float('nan')):.2f} |")
        return "\n".join(lines) + "\n"
    nan = float("nan")
    lines += ["One call per sample (ms, of roof, x accelerated-scan): events around each call, so the host's time "
              "before the first launch counts; queued: calls queued behind a GPU sleep, the device's time per call "
              "when the host keeps ahead (a training loop).", "",
              "| case | pass | dtype | ms | of roof | x accelerated-scan | queued ms | of roof | "
              "x accelerated-scan | x associative_scan | plan |",
              "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in records:
        if r.get("pass_") == "plan" or "vs_torch_cumsum" in r or r.get("packed"):
            continue
        lines.append(f"| {r['case']} | {r['pass_']} | {r['dtype']} | {r['ms']:.3f} | {r['roof']:.2f} | "
                     f"{r.get('vs_accelerated_scan', nan):.2f} | {r.get('queued_ms', nan):.3f} | "
                     f"{r.get('roof_queued', nan):.2f} | {r.get('vs_accelerated_scan_queued', nan):.2f} | "
                     f"{r.get('vs_associative_scan', nan):.1f} | {r.get('plan', '')} |")
    packed = [r for r in records if r.get("packed")]
    if packed:
        lines += ["", "## Packed sequences (offsets) against the same length unpacked", "",
                  "Offsets on the device are checked there (one synchronization a call, which the queued timing "
                  "waits on); a list of offsets is checked on the host.", "",
                  "| case | pass | unpacked queued ms | device offsets queued ms | unpacked / packed | "
                  "listed offsets queued ms | unpacked / packed | ms | listed ms | unpacked ms |",
                  "|---|---|---|---|---|---|---|---|---|---|"]
        for r in packed:
            lines.append(_row([r["case"], r["pass_"]] + _cells(r, (
                "unpacked_queued_ms", "queued_ms", "vs_unpacked_queued", "listed_queued_ms",
                "listed_vs_unpacked_queued", "ms", "listed_ms", "unpacked_ms"))))
    for r in records:
        if "vs_torch_cumsum" in r:
            lines += ["", f"ps.cumsum fwd+bwd 2^27 float32: {r['ms']:.3f} ms, torch.cumsum {r['torch_cumsum_ms']:.3f} ms "
                      f"({r['vs_torch_cumsum']:.2f}x)"]
    plans = [r for r in records if r.get("pass_") == "plan"]
    if plans:
        lines += ["", "## Tilings (forward, float32)", "", "| case | plan | ms | of roof |", "|---|---|---|---|"]
        for r in plans:
            lines.append(f"| {r['case']} | {r['plan']} | {r.get('ms', float('nan')):.3f} | "
                         f"{r.get('roof', float('nan')):.2f} |")
    errors = [r for r in records if any(k.endswith("_error") for k in r)]
    if errors:
        lines += ["", "## Peers that did not run", ""]
        for r in errors:
            for k, v in r.items():
                if k.endswith("_error"):
                    lines.append(f"- {r['case']} {r.get('pass_', '')} {r.get('dtype', '')}: {k}: {v}")
    return "\n".join(lines) + "\n"


def _plot(records: list[dict], device: str, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [r for r in records if r.get("pass_") not in ("plan",) and "vs_torch_cumsum" not in r]
    labels = [f"{r['case']}\n{r.get('pass_', '')} {r['dtype']}" for r in rows]
    x = np.arange(len(rows))
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(max(8, 0.9 * len(rows)), 8), sharex=True,
                                      gridspec_kw={"height_ratios": [3, 2]})
    peer_keys = [("ms", "prefixscan"), ("accelerated_scan_ms", "accelerated-scan"),
                 ("associative_scan_ms", "associative_scan (compiled)"), ("lfilter_ms", "scipy lfilter")]
    present = [(k, n) for k, n in peer_keys if any(k in r for r in rows)]
    width = 0.8 / max(1, len(present))
    for i, (key, name) in enumerate(present):
        top.bar(x + i * width, [r.get(key, np.nan) for r in rows], width, label=name)
    top.set_yscale("log")
    top.set_ylabel("ms (median)")
    top.legend()
    top.set_title(f"prefixscan.linear_recurrence on {device}")
    ratios = [("roof", "of roof (copy)"), ("vs_accelerated_scan", "x accelerated-scan"),
              ("vs_associative_scan", "x associative_scan"), ("vs_lfilter", "x lfilter")]
    ratios = [(k, n) for k, n in ratios if any(k in r for r in rows)]
    width = 0.8 / max(1, len(ratios))
    for i, (key, name) in enumerate(ratios):
        bottom.bar(x + i * width, [r.get(key, np.nan) for r in rows], width, label=name)
    bottom.axhline(1.0, color="black", linewidth=0.8)
    bottom.set_yscale("log")
    bottom.set_ylabel("ratio")
    bottom.legend(fontsize=8)
    bottom.set_xticks(x + 0.4 - width / 2)
    bottom.set_xticklabels(labels, rotation=60, ha="right", fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    parser.add_argument("--out", type=Path, default=Path("."))
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--no-plans", action="store_true", help="skip the sweep of the kernel's tilings")
    parser.add_argument("--forward-only", action="store_true",
                        help="float32 forward passes only (no bfloat16, backward or cumsum case)")
    parser.add_argument("--log-space", action="store_true",
                        help="only the log-decay cases (log_space=True) against flash-linear-attention's HGRN")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    if args.log_space:
        if args.device != "cuda":
            parser.error("--log-space runs on cuda")
        import recurrence_logspace

        recurrence_logspace.run(args.out, max(20, args.repeats))
        return 0
    if args.device == "cuda":
        import torch

        info = dict(device=torch.cuda.get_device_name(0), torch=torch.__version__)
        records = bench_cuda(max(20, args.repeats), plans=not args.no_plans, forward_only=args.forward_only)
    else:
        import platform

        info = dict(device=platform.processor() or platform.machine())
        records = bench_cpu(max(5, args.repeats // 4))
    stem = args.out / f"recurrence-{args.device}"
    stem.with_suffix(".json").write_text(json.dumps(dict(info=info, records=records), indent=1, default=str))
    stem.with_suffix(".md").write_text(_markdown(records, args.device, info["device"]))
    try:
        _plot(records, info["device"], stem.with_suffix(".png"))
    except ImportError as exc:
        print(f"no plot: {exc}", file=sys.stderr)
    print(stem.with_suffix(".md").read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
