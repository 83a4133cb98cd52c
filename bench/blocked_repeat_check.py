"""Repeat blocked.orders_kernel on one input and compare each result with a NumPy oracle:
which tiles are wrong, and whether the same ones every time (run l, call 2: a wide-entry
case, int32 order 8 tuple size 17, failed once in call 1's GPU tests).

    python bench/blocked_repeat_check.py [--head bench/_blocked_head.py] [--repeats 8]

``--head`` runs another copy of the kernel module instead (the committed one, to tell a
new bug from an old one).
"""

from __future__ import annotations

import argparse
import importlib.util
import sys

import numpy as np

sys.path.insert(0, ".")


def expected(x: np.ndarray, order: int, tuple_size: int) -> np.ndarray:
    out = x.copy()
    for _ in range(order):
        for c in range(tuple_size):
            out[c::tuple_size] = np.cumsum(out[c::tuple_size], dtype=x.dtype)
    return out


def main() -> int:
    import torch

    import prefixscan as ps
    import prefixscan.backends.triton as package
    from prefixscan.backends.triton import launch

    parser = argparse.ArgumentParser()
    parser.add_argument("--head")
    parser.add_argument("--repeats", type=int, default=8)
    args = parser.parse_args()
    if args.head:
        spec = importlib.util.spec_from_file_location("prefixscan.backends.triton.blocked", args.head)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        sys.modules["prefixscan.backends.triton.blocked"] = module
        package.blocked = module
    launch.BLOCKED_ORDERS = "always"
    rng = np.random.default_rng(5)
    bad = 0
    for order, tuple_size, dtype in ((8, 17, "int32"), (8, 32, "int32"), (5, 17, "int32"), (8, 17, "int64"),
                                     (8, 5, "int32"), (8, 1, "int64"), (1, 8, "int64")):
        tile = launch.blocked_block(np.dtype(dtype).itemsize, tuple_size, False, order=order)[0]
        n = 1031 * tile - 3 * tuple_size
        info = np.iinfo(dtype)
        x = rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)
        want = expected(x, order, tuple_size)
        xd = torch.from_numpy(x).cuda()
        for rep in range(args.repeats):
            out = torch.full((n,), -77, dtype=getattr(torch, dtype), device="cuda")
            ps.scan(xd, order=order, tuple_size=tuple_size, out=out, backend="triton")
            wrong = np.nonzero(out.cpu().numpy() != want)[0]
            if len(wrong):
                bad += 1
                tiles = np.unique(wrong // tile)
                print(f"q{order} s{tuple_size} {dtype} repeat {rep}: {len(wrong)} wrong in tiles {tiles[:12]}, "
                      f"first at {wrong[:4]}", flush=True)
        print(f"q{order} s{tuple_size} {dtype}: {args.repeats} repeats done", flush=True)
    print("bad runs:", bad)
    return 0


if __name__ == "__main__":
    sys.exit(main())
