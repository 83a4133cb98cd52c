"""Hot instructions of an Nsight Compute source page (``ncu -i REP --page source --csv
--print-source sass``): every instruction above a share of the warp-state samples, and
every branch, barrier, atomic and strong load (to find the loops), with the running share
of samples, executions and the top three stall reasons.  Run i, call 1 read the look-back
loop this way: executions of its strong loads over the kernel's warps are its steps per tile.

    python bench/ncu_hot.py prof.source-sass.csv [--share 0.01]
"""

from __future__ import annotations

import argparse
import csv
import sys

MARKERS = ("ATOM", "BAR.SYNC", "BRA", "LDG.E.64.STRONG", "LDG.E.STRONG", "EXIT", "RED", "MEMBAR")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("csv")
    parser.add_argument("--share", type=float, default=0.01)
    args = parser.parse_args()
    with open(args.csv, newline="") as f:
        rows = list(csv.reader(f))
    header, data = rows[1], rows[2:]
    at = {name: i for i, name in enumerate(header)}
    stalls = [h for h in header if h.startswith("stall_") and "Not Issued" not in h]
    samples = "Warp Stall Sampling (All Samples)"
    total = sum(int(r[at[samples]] or 0) for r in data)
    print(f"total samples {total}, instructions {len(data)}")
    running = 0
    for k, r in enumerate(data):
        s = int(r[at[samples]] or 0)
        running += s
        sass = r[at["Source"]].strip()
        if s > total * args.share or any(m in sass for m in MARKERS):
            top = sorted(((int(r[at[h]] or 0), h[6:]) for h in stalls), reverse=True)[:3]
            print(f"{k:5d} {100 * running / total:5.1f}% {s:6d} executed={r[at['Instructions Executed']]:>9} "
                  f"{sass[:60]:60s} {top}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
