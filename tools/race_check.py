"""Repeat scans on the GPU and compare every run bitwise with the reference.

Races in a look-back show as results that change from run to run, so each case
runs ``--repeats`` times with fresh poison in the output and is compared with the
integer result of NumPy (the first failing run is reported with its count of
wrong elements).  The cases are the layouts that once failed (the chained 2-D
scan of a (56829, 3) array along axis 0 with an init) and the large 1-D and 2-D
decoupled look-back scans (32- and 64-bit status), under every strategy
(docs/design/status-words.md says why a race shows this way).  ``--primitives``
checks the engine's other primitives the same way instead: compaction, partition,
run_length_encode (compaction's runs mode), the segmented scan by offsets, flags and
keys, and the linear recurrence's look-back, each against torch's own result.

    python tools/race_check.py --repeats 30 --json race.json   # on a CUDA machine, package installed
    python tools/race_check.py --primitives --repeats 10
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np

import prefixscan as ps
from prefixscan.backends.triton.planning.registry import STRATEGY_NAMES as STRATEGIES


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


def primitive_cases(torch):
    """(name, run, expected): the engine's primitives at sizes of many tiles, int32 values."""
    gen = torch.Generator(device="cuda").manual_seed(3)
    n = (1 << 24) + 11
    x = torch.randint(-1000, 1000, (n,), device="cuda", generator=gen, dtype=torch.int32)
    for fraction in (0.01, 0.5, 0.99):
        mask = torch.rand(n, device="cuda", generator=gen) < fraction
        yield f"compact {fraction}", (lambda m=mask: ps.compact(x, m)), x[mask]
        yield f"partition {fraction}", (lambda m=mask: ps.partition(x, m)[0]), torch.cat((x[mask], x[~mask]))
    runs = torch.repeat_interleave(x[: n // 4], torch.randint(1, 8, (n // 4,), device="cuda", generator=gen))
    yield "run_length_encode runs 1-7", (lambda: torch.cat([r.to(torch.int64) for r in ps.run_length_encode(runs)])), \
        torch.cat([r.to(torch.int64) for r in torch.unique_consecutive(runs, return_counts=True)])
    for length in (1, 37, 4099):
        starts = torch.arange(0, n, length, device="cuda", dtype=torch.int64)
        lengths = torch.diff(starts, append=torch.tensor([n], device="cuda"))
        c = torch.cumsum(x, 0, dtype=torch.int32)
        expected = c - torch.repeat_interleave((c - x)[starts], lengths, output_size=n)
        heads = torch.zeros(n, dtype=torch.bool, device="cuda")
        heads[starts] = True
        keys = torch.cumsum(heads, 0, dtype=torch.int32)
        yield f"segmented offsets {length}", (lambda s=starts: ps.segmented_scan(x, offsets=s)), expected
        yield f"segmented flags {length}", (lambda h=heads: ps.segmented_scan(x, flags=h)), expected
        yield f"segmented keys {length}", (lambda k=keys: ps.segmented_scan(x, keys=k)), expected
    a = (torch.rand((4, 1 << 21), device="cuda", generator=gen) < 0.9).double()  # exact in float64: 0/1 decays
    b = torch.randint(-5, 5, (4, 1 << 21), device="cuda", generator=gen).double()
    yield "recurrence look-back (4, 2^21)", (lambda: ps.linear_recurrence(a, b)), \
        ps.linear_recurrence(a.cpu().numpy(), b.cpu().numpy())


def check_primitives(torch, repeats: int) -> tuple[list, int]:
    report, bad = [], 0
    for name, run, expected in primitive_cases(torch):
        expected = torch.as_tensor(expected).cuda()
        wrong_runs = 0
        for _ in range(repeats):
            torch.cuda.empty_cache()  # fresh allocations each run
            try:
                got = run()
                same = got.shape == expected.shape and torch.equal(got, expected)
            except Exception as exc:  # noqa: BLE001 - reported as a wrong run, the other cases go on
                print(f"{name}: {type(exc).__name__}: {exc}"[:300], flush=True)
                same = False
            wrong_runs += not same
        bad += wrong_runs
        report.append({"case": name, "repeats": repeats, "wrong_runs": wrong_runs})
        print(f"{name:34s} wrong runs {wrong_runs}/{repeats}", flush=True)
    return report, bad


def reference(x, axis, init, tuple_size, reverse, inclusive, order):
    return ps.scan(x, axis=axis, init=init, tuple_size=tuple_size, reverse=reverse, inclusive=inclusive,
                   order=order, backend="cpu")


def main() -> int:
    import torch

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--json", default=None)
    parser.add_argument("--only", default=None, help="run the cases whose name contains this")
    parser.add_argument("--primitives", action="store_true", help="the engine's primitives instead of the scans")
    args = parser.parse_args()
    rng = np.random.default_rng(7)
    report, bad = [], 0
    if args.primitives:
        report, bad = check_primitives(torch, args.repeats)
    for name, x, axis, init, s, reverse, inclusive, order in ([] if args.primitives else cases(rng)):
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
