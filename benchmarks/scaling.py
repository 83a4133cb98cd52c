"""Weak and strong scaling of ``prefixscan.distributed`` over several processes, one
per GPU with NCCL (gloo on the CPU: a functional run, not a measurement).

    python benchmarks/scaling.py --out DIR                    # every GPU of the machine, worlds 1, 2, 4, ...
    python benchmarks/scaling.py --out DIR --worlds 2,8       # chosen world sizes
    python benchmarks/scaling.py --out DIR --device cpu --quick --worlds 2,3   # gloo, small: a sanity run

Each world size runs in fresh processes (``torch.multiprocessing.spawn``), one rank per
device, the sequence split in rank order:

* weak scaling: 2^28 int32 and 2^27 int64 elements per rank, ``distributed.scan``
  against the same rank's ``prefixscan.scan`` of its own piece (no collective): the
  efficiency is their ratio (the target is >= 0.85: the distributed sum runs at 0.85 x
  the single-GPU rate x the number of GPUs); the sequence-parallel recurrence forward +
  backward on a ``(8, 1024, 4096)`` float32 time slice per rank (time axis 1), against
  the single-GPU autograd of the same slice (target >= 0.8);
* strong scaling: one 2^30 int32 sequence split over the ranks: the time per call and
  the speed-up over the world of one;
* the collective alone: an ``all_gather`` of one int64 per rank, its share of a call.

Times are the slowest rank's median over ``--repeats`` calls (a barrier and a device
synchronisation around each).  Every scan is checked once before timing: each rank's
first and last elements against the carry of the ranks before it (sums of the pieces
all-gathered in int64, wrapped to the element type), bitwise.  Writes ``scaling.json``
and ``scaling.md`` under ``--out``.  NVLink multicast stays off (NCCL_NVLS_ENABLE=0).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import socket
import statistics
import time
from pathlib import Path

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

import prefixscan as ps
from prefixscan import distributed as psd


def _timed(fn, repeats: int, device: torch.device) -> float:
    """The slowest rank's median seconds per call of ``fn`` (one warm-up call first)."""
    fn()
    samples = []
    for _ in range(repeats):
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        dist.barrier()
        start = time.perf_counter()
        fn()
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        samples.append(time.perf_counter() - start)
    median = torch.tensor([statistics.median(samples)], dtype=torch.float64, device=device)
    dist.all_reduce(median, op=dist.ReduceOp.MAX)
    return float(median)


def _check_scan(x: torch.Tensor, y: torch.Tensor) -> bool:
    """This rank's first and last results against the carry of the ranks before it."""
    totals = [torch.zeros(1, dtype=torch.int64, device=x.device) for _ in range(dist.get_world_size())]
    dist.all_gather(totals, x.sum(dtype=torch.int64).reshape(1))
    carry = int(sum(int(t) for t in totals[:dist.get_rank()]))
    bits = 8 * x.element_size()

    def wrapped(v: int) -> int:
        v &= (1 << bits) - 1
        return v - (1 << bits) if v >= 1 << (bits - 1) else v

    ok = int(y[0]) == wrapped(carry + int(x[0])) and int(y[-1]) == wrapped(carry + int(totals[dist.get_rank()]))
    flag = torch.tensor([1 if ok else 0], device=x.device)
    dist.all_reduce(flag, op=dist.ReduceOp.MIN)
    return bool(flag)


def _rank(rank: int, world: int, port: int, args: argparse.Namespace, results: str) -> None:
    os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
    os.environ.setdefault("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1")
    device = torch.device(f"cuda:{rank}") if args.device == "cuda" else torch.device("cpu")
    if device.type == "cuda":
        torch.cuda.set_device(device)
    dist.init_process_group("nccl" if device.type == "cuda" else "gloo", init_method=f"tcp://127.0.0.1:{port}",
                            rank=rank, world_size=world)
    gen = torch.Generator(device=device).manual_seed(1000 + rank)
    rows = []

    def record(**row):
        rows.append(dict(row, world=world, device=str(device.type)))

    try:
        for dtype, n in (("int32", args.weak_int32), ("int64", args.weak_int64)):
            x = torch.randint(-1000, 1000, (n,), device=device, generator=gen).to(getattr(torch, dtype))
            ok = _check_scan(x, psd.scan(x))
            local = _timed(lambda: ps.scan(x), args.repeats, device)
            spread = _timed(lambda: psd.scan(x), args.repeats, device)
            # The piece's reduction alone (torch's sum in the scan's accumulator dtype, the element
            # type, as the distributed scan takes it): a reduce-then-scan cannot beat
            # local / (reduce + local).
            reduce = _timed(lambda: torch.sum(x, dtype=x.dtype), args.repeats, device)
            record(case=f"weak scan add {dtype}", elements_per_rank=n, local_s=local, distributed_s=spread,
                   efficiency=local / spread, reduce_s=reduce, checked=ok,
                   **({"bound": local / (local + reduce)} if world > 1 else {}))  # a world of one does not reduce
            if args.timeline and dtype == "int32" and device.type == "cuda":
                Path(results).with_name(f"timeline-world{world}-rank{rank}.txt").write_text(
                    _timeline(lambda: psd.scan(x), device))
            del x
        x = torch.randint(-1000, 1000, (args.strong // world,), device=device, generator=gen).to(torch.int32)
        ok = _check_scan(x, psd.scan(x))
        record(case="strong scan add int32", elements_total=args.strong,
               distributed_s=_timed(lambda: psd.scan(x), args.repeats, device), checked=ok)
        del x
        shape = args.recurrence_shape
        a = (torch.rand(shape, device=device, generator=gen) * 0.5 + 0.5).requires_grad_()
        b = torch.randn(shape, device=device, generator=gen).requires_grad_()
        g = torch.randn(shape, device=device, generator=gen)

        def forward_backward(fn):
            a.grad = b.grad = None
            fn(a, b).backward(g)

        local = _timed(lambda: forward_backward(lambda a, b: ps.linear_recurrence(a, b, axis=1)), args.repeats,
                       device)
        spread = _timed(lambda: forward_backward(lambda a, b: psd.linear_recurrence(a, b, axis=1)), args.repeats,
                        device)
        record(case="weak linear_recurrence forward+backward float32", shape_per_rank=list(shape), local_s=local,
               distributed_s=spread, efficiency=local / spread)
        if args.timeline and device.type == "cuda":
            Path(results).with_name(f"timeline-recurrence-world{world}-rank{rank}.txt").write_text(
                _timeline(lambda: forward_backward(lambda a, b: psd.linear_recurrence(a, b, axis=1)), device))
        one = torch.zeros(1, dtype=torch.int64, device=device)
        gathered = [torch.zeros_like(one) for _ in range(world)]
        record(case="all_gather of one int64 per rank",
               distributed_s=_timed(lambda: dist.all_gather(gathered, one), args.repeats, device))
    finally:
        if rank == 0:
            Path(results).write_text(json.dumps(rows))
        dist.destroy_process_group()


def _timeline(fn, device: torch.device) -> str:
    """The device's kernels of one call of ``fn`` (the third of three, each after a barrier),
    by torch.profiler: start (us after the first kernel's start), duration (us), name."""
    from torch.profiler import ProfilerActivity, profile, record_function

    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for i in range(3):
            torch.cuda.synchronize(device)
            dist.barrier()
            with record_function(f"call{i}"):
                fn()
            torch.cuda.synchronize(device)
    # The host's ranges of the calls (the profiler also records each annotation on the GPU);
    # autograd's backward runs on its own thread, outside the annotation.
    calls = sorted((e for e in prof.events() if e.name.startswith("call") and e.device_type.name == "CPU"),
                   key=lambda e: e.time_range.start)
    last = calls[-1].time_range
    kernels = sorted((e for e in prof.events() if e.device_type.name == "CUDA" and not e.name.startswith("call")
                      and e.time_range.start >= last.start), key=lambda e: e.time_range.start)
    if not kernels:
        return "no kernels recorded\n"
    t0 = kernels[0].time_range.start
    lines = [f"host, the annotated call (the forward's thread) {last.end - last.start:.1f} us; device from the "
             f"first kernel's start to the last kernel's end {max(k.time_range.end for k in kernels) - t0:.1f} us",
             "start_us duration_us kernel"]
    lines += [f"{k.time_range.start - t0:8.1f} {k.time_range.end - k.time_range.start:8.1f} {k.name[:110]}"
              for k in kernels]
    return "\n".join(lines) + "\n"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _markdown(report: dict) -> str:
    lines = [f"# prefixscan.distributed scaling ({report['machine']}, {report['devices']})", "",
             "| world | case | size | local (ms) | distributed (ms) | efficiency / speed-up | reduce (ms) | "
             "reduce-then-scan bound | checked |",
             "|---:|---|---|---:|---:|---:|---:|---:|---|"]
    strong_one = {r["case"]: r["distributed_s"] for r in report["rows"] if r["world"] == 1 and "strong" in r["case"]}
    for r in report["rows"]:
        size = r.get("elements_per_rank") or r.get("elements_total") or r.get("shape_per_rank") or ""
        local = f"{r['local_s'] * 1e3:.3f}" if "local_s" in r else "-"
        if "efficiency" in r:
            gain = f"{r['efficiency']:.2f}"
        elif r["case"] in strong_one:
            gain = f"{strong_one[r['case']] / r['distributed_s']:.2f}x"
        else:
            gain = "-"
        checked = {True: "bitwise", False: "WRONG"}.get(r.get("checked"), "")
        reduce = f"{r['reduce_s'] * 1e3:.3f}" if "reduce_s" in r else "-"
        bound = f"{r['bound']:.2f}" if "bound" in r else "-"
        lines.append(f"| {r['world']} | {r['case']} | {size} | {local} | {r['distributed_s'] * 1e3:.3f} | {gain} "
                     f"| {reduce} | {bound} | {checked} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--worlds", default=None, help="world sizes (default: 1, 2, 4, ... up to the GPUs present)")
    parser.add_argument("--weak-int32", type=int, default=28, help="log2 of the int32 elements per rank")
    parser.add_argument("--weak-int64", type=int, default=27, help="log2 of the int64 elements per rank")
    parser.add_argument("--strong", type=int, default=30, help="log2 of the int32 elements in all")
    parser.add_argument("--recurrence-shape", default="8,1024,4096", help="(B, T, C) per rank, T split")
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--quick", action="store_true", help="small sizes (a sanity run)")
    parser.add_argument("--timeline", action="store_true",
                        help="write each rank's kernels of one weak int32 scan and one recurrence forward + backward "
                             "(torch.profiler) beside the results")
    args = parser.parse_args(argv)
    if args.quick:
        args.weak_int32, args.weak_int64, args.strong, args.recurrence_shape, args.repeats = 18, 17, 20, "2,64,32", 3
    args.weak_int32, args.weak_int64, args.strong = (1 << v for v in (args.weak_int32, args.weak_int64, args.strong))
    args.recurrence_shape = tuple(int(v) for v in args.recurrence_shape.split(","))
    available = torch.cuda.device_count() if args.device == "cuda" else os.cpu_count()
    worlds = ([int(w) for w in args.worlds.split(",")] if args.worlds
              else [w for w in (1, 2, 4, 8, 16) if w <= available])
    if args.device == "cuda" and max(worlds) > available:
        parser.error(f"--worlds: {max(worlds)} ranks need as many GPUs; {available} present")
    args.out.mkdir(parents=True, exist_ok=True)
    rows = []
    for world in worlds:
        results = args.out / f".world{world}.json"
        mp.spawn(_rank, args=(world, _free_port(), args, str(results)), nprocs=world, join=True)
        rows += json.loads(results.read_text())
        results.unlink()
        print(f"world {world}: done", flush=True)
    devices = (f"{torch.cuda.device_count()} x {torch.cuda.get_device_name(0)}" if args.device == "cuda"
               else "CPU, gloo")
    report = {"machine": platform.node(), "devices": devices, "torch": torch.__version__,
              "nccl": ".".join(map(str, torch.cuda.nccl.version())) if args.device == "cuda" else None,
              "prefixscan": ps.__version__, "arguments": {k: str(v) for k, v in vars(args).items()}, "rows": rows}
    (args.out / "scaling.json").write_text(json.dumps(report, indent=2))
    (args.out / "scaling.md").write_text(_markdown(report))
    print(_markdown(report))


if __name__ == "__main__":
    main()
