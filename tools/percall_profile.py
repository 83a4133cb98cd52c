"""Where does a small scan's time go when called from Python?  (Run on the device.)

Times back-to-back calls of torch.cumsum, prefixscan.scan, the backend alone
(checked plan reused) and the bare compiled-kernel launch, then prints a
cProfile of prefixscan.scan.  The differences locate the host overhead
(docs/design/host-path.md).

    python tools/percall_profile.py [--n 1024]     # on a CUDA machine, package installed
"""

from __future__ import annotations

import argparse
import cProfile
import pstats

import torch

import prefixscan as ps
from prefixscan.backends.triton import runtime
from prefixscan.timing import per_call_wall


def per_call_us(fn, calls=2000):
    """Wall microseconds per call, host overhead included, after 20 warm-up calls."""
    for _ in range(20):
        fn()
    return per_call_wall([fn], calls) * 1e6


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=1024)
    args = parser.parse_args(argv)
    x = torch.randint(-100, 100, (args.n,), dtype=torch.int32, device="cuda")
    y = torch.empty_like(x)
    s = ps.make_scan()
    request, backend = s.plan(x, out=y)
    rows = {
        "torch.empty_like": lambda: torch.empty_like(x),
        "y.copy_(x)": lambda: y.copy_(x),
        "torch.cumsum(x, 0)": lambda: torch.cumsum(x, 0),
        "prefixscan.scan(x)": lambda: ps.scan(x),
        "prefixscan.scan(x, out=y)": lambda: ps.scan(x, out=y),
        "Scan object s(x, out=y)": lambda: s(x, out=y),
        "backend.run_scan(request)": lambda: backend.run_scan(request),
    }
    with runtime.recording() as launches:
        backend.run_scan(request)
    launch = launches[0]
    rows["runtime.launch_kernel (launch only)"] = lambda: runtime.launch_kernel(launch)
    for name, fn in rows.items():
        print(f"{name:36s} {per_call_us(fn):8.1f} us", flush=True)
    profile = cProfile.Profile()
    profile.enable()
    for _ in range(2000):
        ps.scan(x, out=y)
    torch.cuda.synchronize()
    profile.disable()
    pstats.Stats(profile).sort_stats("cumulative").print_stats(30)
    pstats.Stats(profile).sort_stats("tottime").print_stats(25)


if __name__ == "__main__":
    main()
