"""Where does a small scan's time go when called from Python?  (Run on the device.)

Times back-to-back calls of torch.cumsum, prefixscan.scan, the backend alone
(checked plan reused) and the bare compiled-kernel launch, then prints a
cProfile of prefixscan.scan.  The differences locate the host overhead.

    python bench/percall_profile.py [--n 1024]
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import sys

import torch

sys.path.insert(0, ".")
import prefixscan as ps  # noqa: E402
from prefixscan.backends.triton import launch  # noqa: E402
from sweep import per_call  # noqa: E402  (bench/ is on sys.path when run as a script)


def per_call_us(fn, calls=2000):
    return per_call(fn, calls) * 1e6


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
    captured = []
    real_run = launch._run
    launch._run = lambda *a, **k: (captured.append((a, k)), real_run(*a, **k))[1]
    backend.run_scan(request)
    launch._run = real_run
    a, k = captured[0]
    rows["launch._run (kernel launch only)"] = lambda: real_run(*a, **k)
    for name, fn in rows.items():
        print(f"{name:32s} {per_call_us(fn):8.1f} us", flush=True)
    print(f"launch cache entries: {len(launch._compiled)}")
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
