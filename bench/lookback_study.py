"""Where the one-look-back kernel's time goes (run h, call 3): the full kernel at several
look-back window sizes (status words per step) against the same kernel with every prefix
taken as zero (``LOOKBACK=False``: wrong results, no waiting), as ratios to a copy.

    python bench/lookback_study.py --json lookback.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys

sys.path.insert(0, ".")


def main() -> int:
    import torch

    from prefixscan.backends.triton import launch
    from prefixscan.bench import _time_cuda_events

    parser = argparse.ArgumentParser()
    parser.add_argument("--json", required=True)
    args = parser.parse_args()
    n = 1 << 27
    records = []
    stream = torch.cuda.current_stream().cuda_stream
    for dtype in (torch.int32, torch.int64):
        x = torch.randint(-99, 99, (n,), device="cuda", dtype=dtype)
        y = torch.empty_like(x)
        copy = statistics.median(_time_cuda_events([lambda: y.copy_(x)], 20, 1e-5))
        tiles = ((32, 4), (32, 8), (64, 4), (64, 8)) if dtype == torch.int32 else ((16, 4), (16, 8), (32, 4), (32, 8))
        for order, tuple_size in ((2, 1), (5, 1), (8, 1), (1, 8), (2, 2)):  # run h, call 5
            for tile in tiles:
                words, lookback = 32, True
                fn = lambda: launch._launch_blocked(x, y, dtype, n, order, tuple_size, torch, stream, False,  # noqa
                                                    window=words, lookback=lookback, tile=tile)
                try:
                    fn()
                    torch.cuda.synchronize()
                except Exception as exc:  # a compile failure: record it, go on
                    print(order, tuple_size, words, lookback, "failed:", str(exc).splitlines()[-1:], flush=True)
                    continue
                sec = statistics.median(_time_cuda_events([fn], 10, 1e-5))
                rec = dict(dtype=str(dtype).split(".")[-1], order=order, tuple_size=tuple_size, window=words, tile=tile,
                           lookback=lookback, ratio_to_copy=copy / sec)
                records.append(rec)
                print(rec, flush=True)
    with open(args.json, "w") as f:
        json.dump({"meta": {"gpu": torch.cuda.get_device_name()}, "records": records}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
