"""Register caps (resident tiles per SM) of the look-back kernels, on the device.

Compiled offline (bench/occupancy_report.py), ptxas gives the float64 1-D tile
168 registers where int64's gets 128 (3 tiles of 4 warps per SM instead of 4),
the order-2 tile 168, the masked-columns K = 3 tile 196 and the 2-D int64 tile
250 (2 tiles).  A tile keeps its registers while its look-back waits on L2, so
fewer resident tiles leave fewer loads in flight.  Prediction: float64 rises to
int64's 0.90 of copy with 4 tiles per SM (no spills at 128 registers); the
others gain where the cap does not spill.  Each case runs ``prefixscan bench``
(verified against the reference) under its tuned tile (run e's H200 table)
with ``TileConfig.occupancy`` set to each value, in one process.

    python bench/occupancy_study.py --json occupancy.json [--only float64]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys

sys.path.insert(0, ".")
from prefixscan.backends.triton import tuning  # noqa: E402
from prefixscan.backends.triton.tuning import TileConfig  # noqa: E402
from prefixscan.bench import run_benchmark  # noqa: E402

# (label, run_benchmark arguments, tuned tile of run e's table, occupancies; 0 = uncapped)
CASES = [
    ("float64", dict(sizes=[27], dtypes=["float64"]), TileConfig(4096, 4, 32), (0, 4, 5)),
    ("int64", dict(sizes=[27], dtypes=["int64"]), TileConfig(4096, 4, 32), (0, 5)),
    ("int32", dict(sizes=[28], dtypes=["int32"]), TileConfig(8192, 4, 32), (0, 5, 6)),
    ("float32", dict(sizes=[28], dtypes=["float32"]), TileConfig(8192, 4, 32), (0, 5)),
    ("order 2", dict(sizes=[27], dtypes=["int32", "float32"], order=2), TileConfig(8192, 4, 32), (0, 4, 5)),
    ("order 5", dict(sizes=[27], dtypes=["int32"], order=5), TileConfig(8192, 4, 32), (0, 5)),
    ("order 5", dict(sizes=[27], dtypes=["int64"], order=5), TileConfig(4096, 4, 32), (0, 5)),
    ("tuple 2", dict(sizes=[27], dtypes=["int32"], tuple_size=2), TileConfig(4096, 4, 32), (0, 6, 8)),
    ("tuple 3", dict(sizes=[27], dtypes=["int32"], tuple_size=3), TileConfig(4096, 4, 32), (0, 3, 4)),
    ("axis 0 (2^26, 4)", dict(sizes=[28], dtypes=["int32"], tuple_size=4), TileConfig(4096, 4, 32), (0, 5, 6)),
    ("tuple 8", dict(sizes=[27], dtypes=["int32"], tuple_size=8), TileConfig(4096, 4, 32), (0, 5, 6)),
    ("int64 tuple 4", dict(sizes=[27], dtypes=["int64"], tuple_size=4), TileConfig(8192, 4, 32), (0, 3, 4)),
    ("int64 tuple 4 b=4096", dict(sizes=[27], dtypes=["int64"], tuple_size=4), TileConfig(4096, 4, 32), (0, 4)),
]


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--json", required=True)
    parser.add_argument("--only", default=None, help="substring of the case labels")
    args = parser.parse_args()
    records, meta = [], None
    for label, bench_args, tile, occupancies in CASES:
        if args.only and args.only not in label:
            continue
        for occupancy in occupancies:
            config = dataclasses.replace(tile, occupancy=occupancy)
            tuning.set_override(config)
            try:
                result = run_benchmark(device="cuda", impls=["prefixscan"], progress=False, **bench_args)
            finally:
                tuning.set_override(None)
            meta = result["metadata"]
            for rec in result["records"]:
                if rec["impl"] != "prefixscan":
                    continue
                rec = dict(rec, case=label, occupancy=occupancy, register_cap=tuning.register_cap(config),
                           tile=dataclasses.asdict(config))
                records.append(rec)
                print(f"{label:22s} {rec['dtype']:8s} occupancy {occupancy} (cap {rec['register_cap']})  "
                      f"{rec['ratio_to_copy'] or 0:5.3f} of copy  {rec['status']}", flush=True)
    with open(args.json, "w") as f:
        json.dump({"metadata": meta, "records": records}, f, indent=1, default=str)
    return 0


if __name__ == "__main__":
    sys.exit(main())
