"""Masked columns on 1-D tiles against the 2-D kernel for small K, on the device.

Tuple sizes 2 / 5 / 8 ran at 0.66 / 0.18 / 0.55 of copy (int32, H200, run e) in
the 2-D kernel, whose [ROWS, KB] tiles scan each strided column with a warp
shuffle scan per row (and cannot load 20-byte rows of tuple size 5 as vectors).
``kernels.scan_cols_kernel`` reads the lane as contiguous 1-D tiles and scans
each column as the tile with the other columns masked to the identity.  This runs
``prefixscan bench`` cases (verified against the reference) with
``launch.COLUMNS_MAX`` at 32 (for every item size) and at 1 (the 2-D kernel), in one process;
the tuple size 4 case at 2^28 is the (2^26, 4) array along axis 0.

    python bench/columns_study.py --json columns.json
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
    parser.add_argument("--tuple-sizes", default="2,3,4,5,7,8")
    parser.add_argument("--dtypes", default="int32,int64")
    parser.add_argument("--log2n", type=int, default=27)
    args = parser.parse_args()
    default = launch.COLUMNS_MAX, launch.COLUMNS_ITEMSIZES
    records = []
    meta = None
    cases = [(int(s), args.log2n, args.dtypes.split(",")) for s in args.tuple_sizes.split(",")]
    cases.append((4, 28, ["int32"]))  # (2^26, 4) along axis 0: the same (B, M, K) layout
    for s, log2n, dtypes in cases:
        for columns_max in (32, 1):  # every case on columns, then every case on the 2-D kernel
            launch.COLUMNS_MAX, launch.COLUMNS_ITEMSIZES = columns_max, (1, 2, 4, 8)
            tuning.generation += 1  # planned replays re-plan (they would keep the kernel of the first call)
            result = run_benchmark(device="cuda", sizes=[log2n], dtypes=dtypes, tuple_size=s,
                                   impls=["prefixscan"], progress=False)
            meta = result["metadata"]
            for rec in result["records"]:
                if rec["impl"] != "prefixscan":
                    continue
                rec = dict(rec, kernel="columns" if s <= columns_max else "2-D")
                records.append(rec)
                print(f"tuple {s} 2^{log2n} {rec['dtype']:6s} {rec['kernel']:8s} {rec['ratio_to_copy'] or 0:5.2f} of copy "
                      f"{rec['status']}", flush=True)
    launch.COLUMNS_MAX, launch.COLUMNS_ITEMSIZES = default
    with open(args.json, "w") as f:
        json.dump({"metadata": meta, "records": records}, f, indent=1, default=str)
    return 0


if __name__ == "__main__":
    sys.exit(main())
