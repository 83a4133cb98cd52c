"""Repeat scans on the GPU and compare every run bitwise with the reference.

Races in a look-back show as results that change from run to run, so each case
runs ``--repeats`` times with fresh poison in the output and is compared with the
integer result of NumPy (the first failing run is reported with its count of
wrong elements).  The cases are the layouts that once failed (the chained 2-D
scan of a (56829, 3) array along axis 0 with an init) and the large 1-D and 2-D
decoupled look-back scans (32- and 64-bit status), under every strategy
(docs/design/status-words.md says why a race shows this way).

    python tools/race_check.py --repeats 30 --json race.json   # on a CUDA machine, package installed
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np

import prefixscan as ps
from prefixscan.backends.triton.registry import STRATEGY_NAMES as STRATEGIES


def cases(rng):
    """(name, input, axis, init, tuple_size, reverse, inclusive, order)."""
    x = rng.integers(-1000, 1000, (56829, 3), dtype=np.int32)
    yield "(56829,3) axis0 init", x, 0, rng.integers(-9, 9, 3).astype(np.int32), 1, False, True, 1
    x = rng.integers(-1000, 1000, (1 << 22) + 7, dtype=np.int32)
    yield "2^22+7 1-D exclusive", x, -1, None, 1, False, False, 1
    x = rng.integers(-1000, 1000, ((1 << 20) + 3, 4), dtype=np.int32)
    yield "(2^20+3,4) axis0 reverse", x, 0, None, 1, True, True, 1
    x = rng.integers(-1000, 1000, 5 * ((1 << 20) + 3), dtype=np.int32)
    yield "5*(2^20+3) tuple 5", x, -1, None, 5, False, True, 1
    # 64-bit values: two tagged status words per entry
    x = rng.integers(-(1 << 40), 1 << 40, (1 << 22) + 9, dtype=np.int64)
    yield "int64 2^22+9 1-D", x, -1, None, 1, False, True, 1
    x = rng.integers(-(1 << 40), 1 << 40, ((1 << 19) + 5, 3), dtype=np.int64)
    yield "int64 (2^19+5,3) axis0 init", x, 0, rng.integers(-9, 9, 3).astype(np.int64), 1, False, True, 1
    x = rng.integers(-1000, 1000, 2 * ((1 << 21) + 1), dtype=np.int32)  # masked columns (the columns kernel)
    yield "2*(2^21+1) tuple 2 exclusive", x, -1, None, 2, False, False, 1
    # order 2 of a sum: one look-back over (order 1, order 2) entries
    x = rng.integers(-1000, 1000, (1 << 22) + 5, dtype=np.int32)
    yield "order 2 2^22+5 exclusive", x, -1, None, 1, False, False, 2
    yield "order 2 2^22+5 reverse init", x, -1, np.int32(-3), 1, True, True, 2
    # the orders kernel (binomial carry, docs/design/orders.md) with its widest entries
    # (16 words; "5*(2^20+3) tuple 5" above runs its flat tiles)
    x = rng.integers(-(1 << 40), 1 << 40, (1 << 22) + 5, dtype=np.int64)
    yield "int64 order 8 2^22+5", x, -1, None, 1, False, True, 8
    x = rng.integers(-(1 << 40), 1 << 40, 8 * ((1 << 19) + 3), dtype=np.int64)
    yield "int64 8*(2^19+3) tuple 8", x, -1, None, 8, False, True, 1


def reference(x, axis, init, tuple_size, reverse, inclusive, order):
    return ps.scan(x, axis=axis, init=init, tuple_size=tuple_size, reverse=reverse, inclusive=inclusive,
                   order=order, backend="cpu")


def main() -> int:
    import torch

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--json", default=None)
    parser.add_argument("--only", default=None, help="run the cases whose name contains this")
    args = parser.parse_args()
    rng = np.random.default_rng(7)
    report, bad = [], 0
    for name, x, axis, init, s, reverse, inclusive, order in cases(rng):
        if args.only and args.only not in name:
            continue
        expected = reference(x, axis, init, s, reverse, inclusive, order)
        xd = torch.from_numpy(x).cuda()
        initd = None if init is None else torch.as_tensor(init).cuda()
        out = torch.empty_like(xd)
        for strategy in STRATEGIES:
            t = time.time()
            wrong_runs, first = 0, None
            for run in range(args.repeats):
                out.fill_(-0x5A5A5A5A)  # poison: unwritten elements show
                ps.scan(xd, axis=axis, init=initd, tuple_size=s, reverse=reverse, inclusive=inclusive, order=order,
                        out=out, backend="triton", strategy=strategy)
                wrong = int((out.cpu().numpy() != expected).sum())
                if wrong:
                    wrong_runs += 1
                    first = first or {"run": run, "wrong_elements": wrong}
            bad += wrong_runs
            rec = {"case": name, "strategy": strategy, "repeats": args.repeats, "wrong_runs": wrong_runs,
                   "first_failure": first, "seconds": round(time.time() - t, 2)}
            report.append(rec)
            print(f"{name:28s} {strategy:20s} wrong runs {wrong_runs}/{args.repeats}"
                  + (f" (first: run {first['run']}, {first['wrong_elements']} elements)" if first else ""),
                  flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(), "records": report}, f, indent=1)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
