"""Scale-out benchmark: prefixscan on dask arrays against ``dask.array.cumsum``, a Zarr
array larger than the workers' memory, and the local cost of ``prefixscan.distributed``.

    python benchmarks/scaleout.py --out DIR                 # dask: 2^28 int64 and float64, 1..8 workers
    python benchmarks/scaleout.py --out DIR --zarr          # + Zarr -> Zarr, 2^31 int64 (16 GiB), 4 x 2 GiB workers
    python benchmarks/scaleout.py --out DIR --torch-local   # distributed scan's local cost (cuda when present)
    python benchmarks/scaleout.py --out DIR --quick         # small sizes: a sanity run

dask (a ``LocalCluster`` of worker processes, one thread each, per worker count): the input
is generated on the workers and persisted; each implementation scans it along axis 0 on the
same chunks and its result is persisted (``prefixscan.cumsum``, and ``dask.array.cumsum``
with ``method="sequential"`` and ``"blelloch"``); the time is the best of ``--repeats`` (each
repeat renames the input so nothing is reused).  Results are compared with prefixscan's:
bitwise for integers; for floats, the largest difference relative to the running sum of
``|x|`` (association orders differ).

Zarr: the source is written on the cluster once (``--zarr-dir`` keeps it), then each
implementation's cumsum goes from ``da.from_zarr`` to ``to_zarr`` with prefixscan's delta
filter, the workers' memory sampled (peak over their baseline, in chunks); an implementation
that fails or runs past ``--zarr-timeout`` is reported as such.  The results are compared
with prefixscan's on the cluster, chunk by chunk.

torch-local: one process, a process group of world size 1 (NCCL on cuda, gloo on cpu);
``prefixscan.distributed.scan`` (its two local passes, a reduction and a seeded scan, plus
the collective) against ``prefixscan.scan`` of the same tensor, and the two local steps
timed apart; the target is at most 1.5x (three passes over the data against two).
``linear_recurrence`` likewise, without and with ``init``; a world of one runs the
single-process recurrence of its slice (no lane maps, no collective), so these rows time
that path: the ranks of a larger world (a one-read reduction of the slice, then the
recurrence from its incoming state: 5/3 of the traffic) are timed by ``scaling.py``.

Writes ``scaleout.json`` and ``scaleout.md`` under ``--out``.
"""

from __future__ import annotations

import argparse
import json
import platform
import runpy
import socket
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

import prefixscan as ps

ROOT = Path(__file__).resolve().parents[1]
IMPLEMENTATIONS = ("prefixscan", "dask sequential", "dask blelloch")


def _power(text: str) -> int:
    base, _, exponent = text.partition("**")
    return int(base) ** int(exponent) if exponent else int(base)


# ---------------------------------------------------------------------------
# dask

def _cumsum(name: str, x):
    import dask.array as da

    if name == "prefixscan":
        return ps.cumsum(x, axis=0)
    # axis=0: with axis=None, dask's blelloch flattens and rechunks to chunks of npartitions elements
    return da.cumsum(x, axis=0, method=name.split()[1])


def _renamed(x, token: str):
    """The same chunks under new keys, so that a repeat recomputes (an identity task, fused)."""
    return x.map_blocks(lambda block: block, dtype=x.dtype, token=token)


def _input(elements: int, chunk: int, dtype: str):
    import dask.array as da

    rng = da.random.default_rng(0)
    if np.dtype(dtype).kind == "f":
        return rng.standard_normal(size=elements, chunks=chunk, dtype=dtype)
    return rng.integers(-1000, 1000, size=elements, chunks=chunk, dtype=dtype)


def _agreement(x, y, ref) -> dict:
    """How far y is from prefixscan's result: bitwise for integers, else relative to cumsum |x|."""
    import dask.array as da

    if np.dtype(x.dtype).kind != "f":
        return {"equal": bool(da.all(y == ref).compute())}
    scale = ps.cumsum(abs(x), axis=0) + 1
    return {"max_relative_difference": float(da.max(abs(y - ref) / scale).compute())}


def bench_dask(args, log) -> list[dict]:
    from dask.distributed import Client, LocalCluster, wait
    from dask.utils import parse_bytes

    example = runpy.run_path(str(ROOT / "examples" / "zarr_dask.py"), run_name="zarr_dask")
    rows = []
    for dtype in args.dtypes.split(","):
        for workers in [int(w) for w in args.workers.split(",")]:
            # The workers hold the input, the kept reference result and the result being
            # timed.  Past dask's spill threshold (60% of a worker's limit) every graph
            # spills to disk: a 1 GiB float64 scan on one worker of 3 GiB ran 2.4x slower
            # than on one of 12 GiB, and its ratio to dask.array.cumsum fell from
            # 1.63x-2.19x to 1.26x-1.45x.
            held = 3 * args.elements * np.dtype(dtype).itemsize
            memory_bound = held > 0.6 * workers * parse_bytes(args.memory_limit)
            if memory_bound:
                log(f"warning: {workers} worker(s) of {args.memory_limit} hold {held / 2**30:.1f} GiB of arrays: "
                    "past the spill threshold, times include spilling (raise --memory-limit)")
            with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None,
                              memory_limit=args.memory_limit) as cluster, Client(cluster) as client:
                client.run(example["_warm_up"])
                x = _input(args.elements, args.chunk, dtype).persist()
                wait(x)
                reference = None
                for name in IMPLEMENTATIONS:
                    wait(_cumsum(name, _renamed(x, f"warm-{name}")).persist())  # code paths warm, untimed, done
                    times = []
                    for r in range(args.repeats):
                        y = _cumsum(name, _renamed(x, f"{name}-{r}"))
                        start = time.perf_counter()
                        y = y.persist()
                        wait(y)
                        times.append(time.perf_counter() - start)
                        if r == 0 and name == "prefixscan":
                            reference = y
                        elif r == 0:
                            agreement = _agreement(x, y, reference)
                        del y
                    row = {"dtype": dtype, "elements": args.elements, "chunk": args.chunk, "workers": workers,
                           "implementation": name, "seconds": min(times), "median_seconds": statistics.median(times),
                           "elements_per_s": args.elements / min(times), "memory_bound": memory_bound}
                    if name != "prefixscan":
                        row.update(agreement)
                    rows.append(row)
                    log(f"dask {dtype} workers={workers} {name}: {min(times):.3f} s {row.get('equal', '')}"
                        f"{row.get('max_relative_difference', '')}")
                del reference
    return rows


# ---------------------------------------------------------------------------
# Zarr larger than the workers' memory

def bench_zarr(args, log) -> list[dict]:
    import dask.array as da
    from dask.distributed import Client, LocalCluster

    from prefixscan.codecs.zarr3 import Delta

    example = runpy.run_path(str(ROOT / "examples" / "zarr_dask.py"), run_name="zarr_dask")
    work = Path(args.zarr_dir or tempfile.mkdtemp(prefix="prefixscan-scaleout-"))
    work.mkdir(parents=True, exist_ok=True)
    src = work / "steps.zarr"
    rows = []
    with LocalCluster(n_workers=args.zarr_workers, threads_per_worker=1, processes=True, dashboard_address=None,
                      memory_limit=args.zarr_memory_limit) as cluster, Client(cluster) as client:
        if not (src / "zarr.json").exists():
            start = time.perf_counter()
            example["make_source"](client, src, args.zarr_elements, args.zarr_chunk)
            log(f"zarr source: {args.zarr_elements} int64 in {time.perf_counter() - start:.1f} s")
        baseline = client.run(example["_warm_up"])
        for name in IMPLEMENTATIONS:
            dst = work / f"{name.replace(' ', '-')}.zarr"
            client.run(example["_start_sampling"])
            start = time.perf_counter()
            row = {"implementation": name, "elements": args.zarr_elements, "chunk": args.zarr_chunk,
                   "workers": args.zarr_workers, "memory_limit": args.zarr_memory_limit,
                   "data_bytes": args.zarr_elements * 8}
            try:
                result = _cumsum(name, da.from_zarr(str(src)))
                stored = da.to_zarr(result, str(dst), mode="w", compute=False, filters=[Delta(order=1, tuple_size=1)])
                client.compute(stored).result(timeout=args.zarr_timeout)
                row["seconds"] = time.perf_counter() - start
                row["elements_per_s"] = args.zarr_elements / row["seconds"]
            except Exception as exc:  # noqa: BLE001 - a peer that fails is a result
                row["failed"] = f"{type(exc).__name__}: {str(exc)[:200]}"
                client.restart()
                baseline = client.run(example["_warm_up"])
                client.run(example["_start_sampling"])
            peaks = client.run(example["_stop_sampling"])
            row["peak_over_baseline_in_chunks"] = max(max(0, peaks[w] - baseline.get(w, 0)) for w in peaks) / (
                args.zarr_chunk * 8)
            if name != "prefixscan" and "failed" not in row:
                mine = da.from_zarr(str(work / "prefixscan.zarr"))
                row["equal"] = bool(da.all(da.from_zarr(str(dst)) == mine).compute())
            rows.append(row)
            log(f"zarr {name}: {row.get('seconds', row.get('failed'))} peak "
                f"{row['peak_over_baseline_in_chunks']:.1f} chunks")
    return rows


# ---------------------------------------------------------------------------
# The local cost of prefixscan.distributed

def _timer(device):
    import torch

    def measure(fn, repeats: int) -> float:
        fn()
        samples = []
        for _ in range(repeats):
            if device.type == "cuda":
                torch.cuda.synchronize()
            start = time.perf_counter()
            fn()
            if device.type == "cuda":
                torch.cuda.synchronize()
            samples.append(time.perf_counter() - start)
        return statistics.median(samples)

    return measure


def bench_torch_local(args, log) -> list[dict]:
    import torch
    import torch.distributed as dist

    from prefixscan import distributed as psd
    from prefixscan.primitives.scan.pieces import PiecewiseScan, piece_totals, scan_piece
    from prefixscan.primitives.scan.reduction import reduce_request
    from prefixscan._normalize import build_request, make_config

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    dist.init_process_group("nccl" if device.type == "cuda" else "gloo", init_method=f"tcp://127.0.0.1:{port}",
                            rank=0, world_size=1)
    measure = _timer(device)
    sizes = [_power(s) for s in args.torch_sizes.split(",")]
    cases = [("add", "float32", {}), ("add", "int32", {}), ("max", "float32", {}),
             ("add", "int32", {"order": 2}), ("add", "float32", {"tuple_size": 4})]
    rows = []
    try:
        for n in sizes:
            for op, dtype, extra in cases:
                x = torch.randint(-100, 100, (n,), device=device).to(getattr(torch, dtype))
                single = measure(lambda: ps.scan(x, op, **extra), args.repeats)
                # With init, the one rank does what a middle rank does: reduce, gather, combine the
                # totals into its carry, seeded scan (without, the first rank's: no carry to add).
                distributed = measure(lambda: psd.scan(x, op, init=3, **extra), args.repeats)
                first = measure(lambda: psd.scan(x, op, **extra), args.repeats)
                config = make_config(op, axis=0, inclusive=True, reverse=False, dtype=None, backend=None,
                                     algorithm=None, order=extra.get("order", 1), tuple_size=extra.get("tuple_size", 1))
                request = build_request(config, x, None, None)
                plan = PiecewiseScan.from_request(request, 0)
                if plan.rounds == 1 and plan.config.tuple_size == 1:  # totals and carries stay on the device
                    carry = tuple(t[..., None] for t in reduce_request(request))
                    reduce_s = measure(lambda: reduce_request(request), args.repeats)
                else:  # host totals
                    carry = piece_totals(plan, (x,), offset=0)
                    reduce_s = measure(lambda: piece_totals(plan, (x,), offset=0), args.repeats)
                scan_s = measure(lambda: scan_piece(plan, (x,), offset=0, carries=[carry] * plan.rounds),
                                 args.repeats)
                rows.append({"case": f"scan {op} {dtype} {extra or ''}".strip(), "elements": n,
                             "device": str(device), "single_s": single, "distributed_s": distributed,
                             "ratio": distributed / single, "first_rank_s": first,
                             "local_reduce_s": reduce_s, "local_seeded_scan_s": scan_s})
                log(f"torch-local scan {op} {dtype} {extra} n={n}: {distributed / single:.2f}x, first rank "
                    f"{first / single:.2f}x (reduce {reduce_s / single:.2f}, seeded scan {scan_s / single:.2f})")
            lanes = 64
            a = torch.rand((lanes, n // lanes), device=device) * 0.5 + 0.5
            b = torch.randn((lanes, n // lanes), device=device)
            init = torch.ones(lanes, device=device)
            single = measure(lambda: ps.linear_recurrence(a, b, init=init), args.repeats)
            with torch.no_grad():
                # A world of one: the single-process recurrence, from zero or from init (the
                # role names are those of a larger world's ranks, which scaling.py times).
                for role, seed in (("first rank", None), ("other ranks", init)):
                    distributed = measure(lambda: psd.linear_recurrence(a, b, init=seed), args.repeats)
                    rows.append({"case": f"linear_recurrence float32 ({lanes}, T), {role}", "elements": n,
                                 "device": str(device), "single_s": single, "distributed_s": distributed,
                                 "ratio": distributed / single})
                    log(f"torch-local linear_recurrence {role} n={n}: {distributed / single:.2f}x")
    finally:
        dist.destroy_process_group()
    return rows


# ---------------------------------------------------------------------------
# Report

def _markdown(report: dict) -> str:
    lines = [f"# Scale-out benchmark ({report['machine']})", ""]
    dask_rows = report.get("dask", [])
    if dask_rows:
        lines += ["## dask: cumsum along axis 0, results persisted", "",
                  "| dtype | workers | implementation | seconds | G elements/s | prefixscan speed-up | agreement |",
                  "|---|---:|---|---:|---:|---:|---|"]
        mine = {(r["dtype"], r["workers"]): r["seconds"] for r in dask_rows if r["implementation"] == "prefixscan"}
        for r in dask_rows:
            agreement = ("" if r["implementation"] == "prefixscan" else
                         ("bitwise equal" if r.get("equal") else "DIFFERENT") if "equal" in r
                         else f"max rel. diff {r['max_relative_difference']:.1e}")
            lines.append(f"| {r['dtype']} | {r['workers']} | {r['implementation']} | {r['seconds']:.3f} | "
                         f"{r['elements_per_s'] / 1e9:.2f} | {r['seconds'] / mine[(r['dtype'], r['workers'])]:.2f}x "
                         f"| {agreement}{' (memory-bound: spilled)' if r.get('memory_bound') else ''} |")
        lines.append("")
    zarr_rows = report.get("zarr", [])
    if zarr_rows:
        r0 = zarr_rows[0]
        lines += [f"## Zarr to Zarr: {r0['elements']} int64 ({r0['data_bytes'] / 2**30:.1f} GiB), chunks of "
                  f"{r0['chunk']}, {r0['workers']} workers of {r0['memory_limit']}", "",
                  "| implementation | seconds | G elements/s | peak per worker (chunks over baseline) | result |",
                  "|---|---:|---:|---:|---|"]
        for r in zarr_rows:
            result = r.get("failed") or ("equal to prefixscan's" if r.get("equal") else
                                         "" if r["implementation"] == "prefixscan" else "DIFFERENT")
            seconds = f"{r['seconds']:.1f}" if "seconds" in r else "-"
            speed = f"{r['elements_per_s'] / 1e9:.2f}" if "seconds" in r else "-"
            lines.append(f"| {r['implementation']} | {seconds} | {speed} | {r['peak_over_baseline_in_chunks']:.1f} "
                         f"| {result} |")
        lines.append("")
    torch_rows = report.get("torch_local", [])
    if torch_rows:
        lines += [f"## prefixscan.distributed, world size 1 on {torch_rows[0]['device']}: local cost", "",
                  "Distributed: a middle rank's work (seeded: reduce, gather, carry, seeded scan); first "
                  "rank: without init (no carry).  Ratios to the single scan.", "",
                  "| case | elements | single (ms) | distributed (ms) | ratio | first rank | reduce | seeded scan |",
                  "|---|---:|---:|---:|---:|---:|---:|---:|"]
        for r in torch_rows:
            parts = (f"{r['first_rank_s'] / r['single_s']:.2f} | {r['local_reduce_s'] / r['single_s']:.2f} | "
                     f"{r['local_seeded_scan_s'] / r['single_s']:.2f}" if "local_reduce_s" in r else "- | - | -")
            lines.append(f"| {r['case']} | {r['elements']} | {r['single_s'] * 1e3:.3f} | "
                         f"{r['distributed_s'] * 1e3:.3f} | {r['ratio']:.2f} | {parts} |")
        lines.append("")
    return "\n".join(lines)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--quick", action="store_true", help="small sizes, for a sanity run")
    parser.add_argument("--no-dask", action="store_true", help="skip the dask comparison")
    parser.add_argument("--elements", default="2**28")
    parser.add_argument("--chunk", default="2**22")
    parser.add_argument("--dtypes", default="int64,float64")
    parser.add_argument("--workers", default="1,2,4,8")
    parser.add_argument("--memory-limit", default="8GiB", help="per worker (dask section)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--zarr", action="store_true", help="also the Zarr-to-Zarr run larger than the workers' memory")
    parser.add_argument("--zarr-elements", default="2**31")
    parser.add_argument("--zarr-chunk", default="2**22")
    parser.add_argument("--zarr-workers", type=int, default=4)
    parser.add_argument("--zarr-memory-limit", default="2GiB")
    parser.add_argument("--zarr-timeout", type=float, default=300)
    parser.add_argument("--zarr-dir", type=Path, default=None, help="keep the Zarr arrays here (reused)")
    parser.add_argument("--torch-local", action="store_true", help="the local cost of prefixscan.distributed")
    parser.add_argument("--torch-sizes", default=None, help="default 2**20,2**24,2**26,2**28 (cuda), 2**16,2**20,2**22 (cpu)")
    args = parser.parse_args(argv)
    if args.quick:
        args.elements, args.chunk, args.workers, args.repeats = "2**22", "2**18", "1,2", 2
        args.zarr_elements, args.zarr_chunk, args.zarr_workers, args.zarr_memory_limit = "2**22", "2**17", 2, "256MiB"
    args.elements, args.chunk = _power(args.elements), _power(args.chunk)
    args.zarr_elements, args.zarr_chunk = _power(args.zarr_elements), _power(args.zarr_chunk)
    if args.torch_sizes is None:
        import torch

        args.torch_sizes = ("2**20,2**24,2**26,2**28" if torch.cuda.is_available() and not args.quick
                            else "2**16,2**20,2**22")
    args.out.mkdir(parents=True, exist_ok=True)

    def log(message: str) -> None:
        print(message, flush=True)

    report = {"machine": f"{platform.node()}, {platform.processor() or platform.machine()}",
              "prefixscan": ps.__version__, "arguments": {k: str(v) for k, v in vars(args).items()}}
    if not args.no_dask:
        report["dask"] = bench_dask(args, log)
    if args.zarr:
        report["zarr"] = bench_zarr(args, log)
    if args.torch_local:
        report["torch_local"] = bench_torch_local(args, log)
    (args.out / "scaleout.json").write_text(json.dumps(report, indent=2))
    (args.out / "scaleout.md").write_text(_markdown(report))
    print(_markdown(report))


if __name__ == "__main__":
    main()
