"""Order 2 of a 1-D sum with one look-back against one look-back per order, on the device.

Orders ran at 0.70 / 0.43 / 0.31 of copy for q = 2 / 5 / 8 (int32, H200, run e)
with a look-back per order in sequence; tile-local, the same arithmetic runs at
0.98 / 0.94 / 0.63 (bench/tile_study.py, run f), so int32 orders lose to the
look-backs.  ``kernels._order2_1d`` publishes the tile's (order 1, order 2) sums
at once and folds them with the binomial shift: one look-back, one more in-tile
scan.  This runs ``prefixscan bench --order 2`` cases (verified against the
reference) with ``launch.ORDER2_ONE_LOOKBACK`` on and off, in one process
(bench/switch_compare.py).

    python bench/order2_study.py --json order2.json
"""

from __future__ import annotations

import argparse
import sys

from switch_compare import compare  # noqa: E402  (bench/ is the script's directory)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--json", required=True)
    parser.add_argument("--dtypes", default="int32,int64,float32,float64")
    parser.add_argument("--log2n", type=int, default=27)
    args = parser.parse_args()
    # Every dtype on the single look-back (int64 too, which the dispatch keeps off it).
    compare([("one look-back", dict(ORDER2_ONE_LOOKBACK=True, ORDER2_INT64=True)),
             ("one per order", dict(ORDER2_ONE_LOOKBACK=False))],
            [dict(sizes=[args.log2n], dtypes=args.dtypes.split(","), order=2)], args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
