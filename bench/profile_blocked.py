"""One case of the one-look-back kernel (blocked.orders_kernel) launched twice, for a
profiler: the first launch compiles, the second is the one to profile
(``ncu --launch-skip 1 --launch-count 1 -k regex:orders_kernel``).

    python bench/profile_blocked.py --dtype int32 --order 8 [--tuple-size 1] [--rows 64 --warps 4]
"""

from __future__ import annotations

import argparse
import sys

sys.path.insert(0, ".")


def main() -> int:
    import torch

    from prefixscan.backends.triton import launch

    parser = argparse.ArgumentParser()
    parser.add_argument("--dtype", choices=("int32", "int64"), required=True)
    parser.add_argument("--order", type=int, default=1)
    parser.add_argument("--tuple-size", type=int, default=1)
    parser.add_argument("--rows", type=int)
    parser.add_argument("--warps", type=int, default=4)
    parser.add_argument("--log2n", type=int, default=27)
    args = parser.parse_args()
    dtype = getattr(torch, args.dtype)
    n = 1 << args.log2n
    x = torch.randint(-99, 99, (n,), device="cuda", dtype=dtype)
    y = torch.empty_like(x)
    tile = (args.rows, args.warps) if args.rows else None
    stream = torch.cuda.current_stream().cuda_stream
    for _ in range(2):
        launch._launch_blocked(x, y, dtype, n, args.order, args.tuple_size, torch, stream, False, tile=tile)
    torch.cuda.synchronize()
    return 0


if __name__ == "__main__":
    sys.exit(main())
