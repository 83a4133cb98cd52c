"""Where does a scan's time go when called from Python?  (Run on the device.)

Times torch.cumsum, prefixscan.scan (planned replay), a seeded scan, the backend
alone (checked request reused, no replay) and the bare compiled-kernel launch, each
back to back (throughput: host time hidden behind queued kernels) and one call at a
time, synchronised at both ends (latency: host time in full, as a caller that waits
for each result sees it, e.g. around a collective).  Then a cProfile of the planned
call and of the backend's unplanned path.  The differences locate the host overhead
(docs/design/host-path.md).

    python tools/percall_profile.py [--n 1024]     # on a CUDA machine, package installed
"""

from __future__ import annotations

import argparse
import cProfile
import pstats

import numpy as np
import torch

import prefixscan as ps
from prefixscan.backends.triton.runtime import launch as runtime
from prefixscan.timing import per_call_wall, time_wall


def per_call_us(fn, calls):
    """Microseconds per call back to back, and the median of one call at a time
    synchronised at both ends, after 20 warm-up calls."""
    for _ in range(20):
        fn()
    synced = sorted(time_wall([lambda: (fn(), torch.cuda.synchronize())], max(21, calls // 20)))
    return per_call_wall([fn], calls) * 1e6, synced[len(synced) // 2] * 1e6


def stream_us(fn, calls=21):
    """Median microseconds between events recorded on the stream before and after one
    call from an idle GPU: the call's GPU time plus any gap while the host prepares it."""
    times = []
    for _ in range(calls):
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1e3)
    return sorted(times)[len(times) // 2]


def profile(fn, calls, title):
    print(f"\n# cProfile: {title}, {calls} calls")
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(calls):
        fn()
    torch.cuda.synchronize()
    prof.disable()
    pstats.Stats(prof).sort_stats("cumulative").print_stats(25)
    pstats.Stats(prof).sort_stats("tottime").print_stats(20)


def timeline(fn, title):
    """One call of ``fn`` from an idle GPU under torch.profiler: its kernels and copies
    (start and length on the GPU, microseconds from the call's start on the host) and
    the runtime calls that held the host for more than 10 us."""
    from torch.profiler import ProfilerActivity
    from torch.profiler import profile as trace

    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    with trace(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    events = prof.events()
    origin = min(e.time_range.start for e in events)
    print(f"\n# timeline: {title} (us from the call's start)")
    for e in sorted(events, key=lambda e: e.time_range.start):
        on_gpu = e.device_type == torch.autograd.DeviceType.CUDA
        length = e.time_range.end - e.time_range.start
        if on_gpu or (e.name.startswith("cuda") and length > 10):
            print(f"{'GPU ' if on_gpu else 'host'} {e.time_range.start - origin:9.1f} {length:9.1f}  {e.name[:90]}")


def distributed_rows(n: int):
    """prefixscan.distributed.scan on a world of one (NCCL) next to its parts, timed and traced."""
    import os
    import socket

    import torch.distributed as dist

    from prefixscan import distributed as psd
    from prefixscan.primitives.scan.reduction import reduce as reduce_total
    from prefixscan.distributed import collectives

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
    dist.init_process_group("nccl", init_method=f"tcp://127.0.0.1:{port}", rank=0, world_size=1)
    x = torch.randint(-100, 100, (n,), dtype=torch.int32, device="cuda")
    small = x[:1024].clone()  # the same calls where the host time is all there is
    carry = torch.tensor(5, dtype=torch.int32, device="cuda")
    group = collectives.group_of(None, x)
    total = torch.sum(small, dtype=torch.int32)
    over_ranks = ps.make_scan(axis=0, inclusive=False)
    one_row = total.reshape(1)
    host_seed = np.array(3, np.int32)
    rows = {
        "group_of": lambda: collectives.group_of(None, x),
        "all_gather_tensors(one int32)": lambda: collectives.all_gather_tensors(group, [total]),
        "carry scan over ranks (1 element, host seed)": lambda: over_ranks(one_row, init=host_seed),
        "distributed.scan(small)": lambda: psd.scan(small),
        "distributed.scan(small, init=3)": lambda: psd.scan(small, init=3),
        "prefixscan.scan(small, init=3)": lambda: ps.scan(small, init=3),
        "prefixscan.scan(x)": lambda: ps.scan(x),
        "distributed.scan(x)": lambda: psd.scan(x),
        "distributed.scan(x, init=3)": lambda: psd.scan(x, init=3),
        "prefixscan.scan(x, init=device carry)": lambda: ps.scan(x, init=carry),
        "torch.sum(x, dtype=int32)": lambda: torch.sum(x, dtype=torch.int32),
        "torch.sum(x)": lambda: torch.sum(x),
        "algorithms.reduction.reduce(x)": lambda: reduce_total(x),
    }
    print(f"n = {n}, world of one: microseconds per call, back to back / one at a time, synchronised")
    for name, fn in rows.items():
        back_to_back, synchronised = per_call_us(fn, 100)
        print(f"{name:40s} {back_to_back:10.1f} {synchronised:10.1f}", flush=True)
    print("carry scan's plans (signature -> replay):", {k: type(v[2]).__name__ for k, v in over_ranks._plans.items()})
    profile(lambda: psd.scan(small, init=3), 200, "distributed.scan(small, init=3): host time alone")
    timeline(lambda: psd.scan(x), "distributed.scan(x)")
    profile(lambda: psd.scan(x), 50, "distributed.scan(x)")
    timeline(lambda: psd.scan(x, init=3), "distributed.scan(x, init=3)")
    timeline(lambda: ps.scan(x, init=carry), "prefixscan.scan(x, init=device carry)")
    dist.destroy_process_group()


def _shipped_rows(s, x, y) -> dict:
    """Where the plan of ``s`` for ``(x, out=y)`` is a shipped kernel's replay: the replay
    alone and its relaunch alone (made by the replay's second launch); a single tile's
    relaunch also as the bare driver call (a look-back's status must be reserved per call)."""
    for _ in range(3):
        s(x, out=y)
    replay = next((p[2] for p in s._plans.values()), None)
    relaunch = getattr(replay, "relaunch", None)
    print(f"plan's replay: {type(replay).__name__}; its relaunch: {type(relaunch).__name__}")
    if not relaunch or not hasattr(relaunch, "packing"):  # (Triton's compiled replay: timed as run_scan's launch)
        return {}
    rows = {"shipped replay(x, y)": lambda: replay(x, y),
            "shipped relaunch(x, y)": lambda: relaunch(x, y)}
    if relaunch.state is None:
        mine = relaunch._thread()
        setattr(mine.fields, relaunch.x_field, x.data_ptr())
        setattr(mine.fields, relaunch.y_field, y.data_ptr())
        rows["cuLaunchKernel (ctypes) alone"] = lambda: relaunch.drv.raw_launch(*relaunch.launch, mine.params, None)
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=1024)
    parser.add_argument("--dtype", default="int32", help="the input's dtype (torch's name)")
    parser.add_argument("--distributed", action="store_true",
                        help="prefixscan.distributed.scan on a world of one (NCCL): times and a GPU timeline")
    args = parser.parse_args(argv)
    if args.distributed:
        distributed_rows(args.n)
        return
    calls = 2000 if args.n <= 1 << 20 else 200
    x = torch.randint(-100, 100, (args.n,), dtype=getattr(torch, args.dtype), device="cuda")
    y = torch.empty_like(x)
    s = ps.make_scan()
    request, backend = s.plan(x, out=y)
    rows = {
        "torch.empty_like": lambda: torch.empty_like(x),
        "y.copy_(x)": lambda: y.copy_(x),
        "torch.cumsum(x, 0)": lambda: torch.cumsum(x, 0),
        "prefixscan.scan(x)": lambda: ps.scan(x),
        "prefixscan.scan(x, out=y)": lambda: ps.scan(x, out=y),
        "torch.cumsum(x, 0, out=y)": lambda: torch.cumsum(x, 0, out=y),
        "prefixscan.cumsum(x)": lambda: ps.cumsum(x),
        "Scan object s(x, out=y)": lambda: s(x, out=y),
        "prefixscan.scan(x, init=3)": lambda: ps.scan(x, init=3),
        "backend.run_scan(request)": lambda: backend.run_scan(request),
    }
    if args.n <= 4096:
        # A recorded launch replays its look-back's tile counter unchanged, which only a
        # single-tile scan (no look-back) survives: larger ones would index past their tiles.
        with runtime.recording() as launches:
            backend.run_scan(request)
        launch = launches[0]
        rows["runtime.launch_kernel (launch only)"] = lambda: runtime.launch_kernel(launch)
    rows.update(_shipped_rows(s, x, y))
    print(f"n = {args.n}, {args.dtype}: microseconds per call, back to back / one at a time, synchronised")
    for name, fn in rows.items():
        back_to_back, synchronised = per_call_us(fn, calls)
        print(f"{name:36s} {back_to_back:10.1f} {synchronised:10.1f}", flush=True)
    print("\nstream time from an idle GPU (us):", {name: round(stream_us(rows[name]), 1) for name in
          ("y.copy_(x)", "prefixscan.scan(x)", "prefixscan.scan(x, init=3)", "backend.run_scan(request)")})
    profile(lambda: ps.scan(x, out=y), calls, "prefixscan.scan(x, out=y)")
    profile(lambda: backend.run_scan(request), calls, "backend.run_scan(request), the unplanned path")
    profile(lambda: (ps.scan(x, init=3), torch.cuda.synchronize()), calls // 4,
            "prefixscan.scan(x, init=3), each call synchronised")


if __name__ == "__main__":
    main()
