"""Order 2 of a 1-D sum with one look-back against one look-back per order, on the device.

Orders ran at 0.70 / 0.43 / 0.31 of copy for q = 2 / 5 / 8 (int32, H200, run e)
with a look-back per order in sequence; tile-local, the same arithmetic runs at
0.98 / 0.94 / 0.63 (bench/tile_study.py, run f), so int32 orders lose to the
look-backs.  ``kernels._order2_1d`` publishes the tile's (order 1, order 2) sums
at once and folds them with the binomial shift: one look-back, one more in-tile
scan.  This runs ``prefixscan bench --order 2`` cases (verified against the
reference) with ``launch.ORDER2_ONE_LOOKBACK`` on and off, in one process.

    python bench/order2_study.py --json order2.json
"""

from __future__ import annotations

import argparse
import json
import sys

sys.path.insert(0, ".")
from prefixscan.backends.triton import launch, tuning  # noqa: E402
from prefixscan.bench import run_benchmark  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--json", required=True)
    parser.add_argument("--dtypes", default="int32,int64,float32,float64")
    parser.add_argument("--log2n", type=int, default=27)
    args = parser.parse_args()
    default = launch.ORDER2_ONE_LOOKBACK
    records = []
    meta = None
    for one in (True, False):
        launch.ORDER2_ONE_LOOKBACK = one
        tuning.generation += 1  # planned replays re-plan (they would keep the kernel of the first call)
        result = run_benchmark(device="cuda", sizes=[args.log2n], dtypes=args.dtypes.split(","), order=2,
                               impls=["prefixscan"], progress=False)
        meta = result["metadata"]
        for rec in result["records"]:
            if rec["impl"] != "prefixscan":
                continue
            rec = dict(rec, look_backs=1 if one else 2)
            records.append(rec)
            print(f"order 2 2^{args.log2n} {rec['dtype']:8s} look-backs {rec['look_backs']} "
                  f"{rec['ratio_to_copy'] or 0:5.2f} of copy {rec['status']}", flush=True)
    launch.ORDER2_ONE_LOOKBACK = default
    with open(args.json, "w") as f:
        json.dump({"metadata": meta, "records": records}, f, indent=1, default=str)
    return 0


if __name__ == "__main__":
    sys.exit(main())
