"""Masked columns on 1-D tiles against the 2-D kernel for small K, on the device.

Tuple sizes 2 / 5 / 8 ran at 0.66 / 0.18 / 0.55 of copy (int32, H200, run e) in
the 2-D kernel, whose [ROWS, KB] tiles scan each strided column with a warp
shuffle scan per row (and cannot load 20-byte rows of tuple size 5 as vectors).
``kernels.scan_cols_kernel`` reads the lane as contiguous 1-D tiles and scans
each column as the tile with the other columns masked to the identity.  This runs
``prefixscan bench`` cases (verified against the reference) with
``launch.COLUMNS_MAX`` at 32 (for every item size) and at 1 (the 2-D kernel), in one
process (bench/switch_compare.py);
the tuple size 4 case at 2^28 is the (2^26, 4) array along axis 0.

    python bench/columns_study.py --json columns.json
"""

from __future__ import annotations

import argparse
import sys

from switch_compare import compare  # noqa: E402  (bench/ is the script's directory)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--json", required=True)
    parser.add_argument("--tuple-sizes", default="2,3,4,5,7,8")
    parser.add_argument("--dtypes", default="int32,int64")
    parser.add_argument("--log2n", type=int, default=27)
    args = parser.parse_args()
    cases = [dict(sizes=[args.log2n], dtypes=args.dtypes.split(","), tuple_size=int(s))
             for s in args.tuple_sizes.split(",")]
    cases.append(dict(sizes=[28], dtypes=["int32"], tuple_size=4))  # (2^26, 4) along axis 0: the same layout
    compare([("columns", dict(COLUMNS_MAX=32, COLUMNS_ITEMSIZES=(1, 2, 4, 8))), ("2-D", dict(COLUMNS_MAX=1))],
            cases, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
