"""Tile-configuration sweep for the Triton scan on the device.

For each headline case, times a device-to-device copy of the same bytes, torch.cumsum
and prefixscan under several (block, warps, window) choices, in one process, with
CUDA events (median of repeats after warm-up).  Every prefixscan result is checked
against torch.cumsum (bitwise for integers).  Writes JSON; prints a table.

    python benchmarks/sweep.py --json out.json [--quick]

With ``--compare-tuned`` it times instead, per case, the tuned choice (what
``scan`` runs by default: the table of ``prefixscan tune``, tuned on first use
where a key is missing) next to every fixed choice of CONFIGS, the hand-measured
default table and every other strategy, in interleaved rounds
(``prefixscan.tuning.compare_tuned``), and says per case
whether the tuned choice is at least as fast as the fastest fixed one within the
noise of the rounds.  Exit status 1 when it is not, somewhere.

    python benchmarks/sweep.py --compare-tuned --json compare.json [--rounds 5]

Run on a CUDA machine from the repository root, with the package installed
(``pip install -e '.[gpu]'``).  docs/tuning.md says how the tuner measures.
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
import time

import torch

import prefixscan as ps
from prefixscan import tuning
from prefixscan.timing import median_cuda_seconds


def event_median(fn, repeats=15, warmup=3):
    return median_cuda_seconds(fn, repeats, warmup)


def per_call(fn, calls=200):
    """Per-call time from Python, all host overhead included (small sizes)."""
    for _ in range(20):
        fn()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) / calls


def make_input(dtype, shape):
    if dtype.is_floating_point:
        return torch.randn(shape, device="cuda", dtype=dtype)
    return torch.randint(-1000, 1000, shape, device="cuda", dtype=dtype)


def check(result, x, axis):
    ref = torch.cumsum(x, dim=axis, dtype=x.dtype)
    if x.dtype.is_floating_point:
        scale = ref.abs().max().clamp(min=1)
        return bool(((result - ref).abs().max() / scale) < 1e-3)
    return bool(torch.equal(result, ref))


CASES = [  # name, dtype, shape, axis
    ("int32 2^28", torch.int32, (1 << 28,), 0),
    ("float32 2^28", torch.float32, (1 << 28,), 0),
    ("int64 2^27", torch.int64, (1 << 27,), 0),
    ("float64 2^27", torch.float64, (1 << 27,), 0),
    ("int32 2^20", torch.int32, (1 << 20,), 0),
    ("int32 (2^26,4) axis0", torch.int32, (1 << 26, 4), 0),
    ("int32 2^10", torch.int32, (1 << 10,), 0),
]

CONFIGS = [(b, w, win) for b in (4096, 8192, 16384) for w in (4, 8) for win in (32,)] + [
    (8192, 8, 16), (8192, 8, 64), (16384, 16, 32), (32768, 16, 32)]


def variant_records():
    """The default tile table on scans other than the forward sum: reverse,
    exclusive, deterministic (chained) and the affine struct monoid, against copy."""
    n = 1 << 27
    x = make_input(torch.float32, (n,))
    y = torch.empty_like(x)
    t_copy = event_median(lambda: y.copy_(x))
    a = torch.rand(n, device="cuda") * 0.5 + 0.5
    out = []
    variants = {
        "float32 2^27 reverse": lambda: ps.scan(x, reverse=True, out=y),
        "float32 2^27 exclusive": lambda: ps.scan(x, inclusive=False, out=y),
        "float32 2^27 deterministic": lambda: ps.scan(x, deterministic=True, out=y),
        # two fields in, two out: twice the bytes of the copy
        "affine float32 2^27 (linear recurrence)": lambda: ps.scan((a, x), ps.AFFINE),
    }
    for name, fn in variants.items():
        try:
            t = event_median(fn, repeats=10)
        except Exception as exc:  # noqa: BLE001 - recorded, the run goes on
            print(f"  {name}: FAILED {exc!r}"[:300], flush=True)
            continue
        copies = 2 if name.startswith("affine") else 1
        ratio = copies * t_copy / t
        out.append({"case": name, "n": n, "scan_s": t, "copy_s": t_copy, "ratio_to_copy": ratio})
        print(f"VARIANT {name:42s} {t * 1e6:9.1f} us  ratio to copy of the same bytes {ratio:5.3f}", flush=True)
    ref = torch.cumsum(x.double(), 0)
    got = ps.scan(x, deterministic=True)
    print("VARIANT deterministic max rel err", float(((got.double() - ref).abs().max() / ref.abs().max())),
          "repeatable", bool(torch.equal(got, ps.scan(x, deterministic=True))), flush=True)
    return out


def reference_check(x, axis):
    """check() against one reference computed up front (torch.cumsum along axis 0
    of a (2^26, 4) array takes seconds: it runs along the last axis of a copy)."""
    moved = x.movedim(axis, -1).contiguous()
    ref = torch.cumsum(moved, dim=-1, dtype=x.dtype).movedim(-1, axis)
    del moved
    if x.dtype.is_floating_point:
        scale = ref.abs().max().clamp(min=1)
        return lambda result: bool(((result - ref).abs().max() / scale) < 1e-3)
    return lambda result: bool(torch.equal(result, ref))


def compare_tuned(args, meta) -> int:
    records = []
    for name, dtype, shape, axis in CASES:
        x = make_input(dtype, shape)
        y = torch.empty_like(x)
        small = x.numel() <= (1 << 20)
        rec = tuning.compare_tuned(x, axis=axis, out=y, tiles=CONFIGS, timer=per_call if small else event_median,
                                   rounds=args.rounds, check=reference_check(x, axis))
        rec.update(case=name, timing="per_call (host included)" if small else "events (device time)")
        records.append(rec)
        print(tuning.format_comparison([rec]), flush=True)
        del x, y
        torch.cuda.empty_cache()
    ok = sum(r["ok"] for r in records)
    print(f"COMPARE tuned at least as fast as every fixed choice within the noise: {ok} of {len(records)} cases",
          flush=True)
    for r in records:
        ratio = r["best_fixed_over_tuned"]
        print(f"COMPARE {r['case']:22s} best fixed / tuned {ratio if ratio is None else round(ratio, 3)!s:>6s}  "
              f"noise {r['noise']:.1%}  {'OK' if r['ok'] else 'SLOWER'}  (tuned: {r['tuned']['strategy']} "
              f"b={r['tuned']['block']} w={r['tuned']['num_warps']} win={r['tuned']['window']}; best fixed: "
              f"{r['best_fixed']})", flush=True)
    with open(args.json, "w") as f:
        json.dump({"meta": meta, "comparisons": records}, f, indent=1)
    return 0 if ok == len(records) else 1


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument("--json", required=True)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--compare-tuned", action="store_true",
                        help="time the tuned choice against every fixed choice instead of sweeping")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds of --compare-tuned (default 5)")
    args = parser.parse_args(argv)
    if args.rounds < 1:
        parser.error("--rounds must be >= 1")
    configs = CONFIGS[:4] if args.quick else CONFIGS
    records = []
    meta = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(), "gpu": torch.cuda.get_device_name(),
            "torch": torch.__version__, "triton": __import__("triton").__version__, "prefixscan": ps.__version__}
    print(meta, flush=True)
    if args.compare_tuned:
        return compare_tuned(args, meta)
    for name, dtype, shape, axis in CASES:
        x = make_input(dtype, shape)
        y = torch.empty_like(x)
        small = x.numel() <= (1 << 20)
        timer = per_call if small else event_median
        t_copy = timer(lambda: y.copy_(x))
        if len(shape) > 1:  # torch.cumsum along dim 0 takes seconds here: time it once
            t_torch = event_median(lambda: torch.cumsum(x, dim=axis, dtype=x.dtype), repeats=1, warmup=0)
        else:
            t_torch = timer(lambda: torch.cumsum(x, dim=axis, dtype=x.dtype))
        row = {"case": name, "n": x.numel(), "dtype": str(dtype), "copy_s": t_copy, "torch_cumsum_s": t_torch,
               "timing": "per_call" if small else "events"}
        best = None
        for block, warps, window in configs:
            try:
                with tuning.override(tuning.TileConfig(block, warps, window)):
                    out = ps.scan(x, axis=axis)
                    ok = check(out, x, axis)
                    t = timer(lambda: ps.scan(x, axis=axis, out=y))
            except Exception as exc:  # noqa: BLE001 - recorded, sweep goes on
                print(f"  {name} {block}/{warps}/{window}: FAILED {exc!r}"[:300], flush=True)
                continue
            rec = dict(row, block=block, warps=warps, window=window, scan_s=t, verified=ok,
                       ratio_to_copy=t_copy / t, vs_torch=t_torch / t)
            records.append(rec)
            print(f"  {name:22s} b={block:5d} w={warps:2d} win={window:2d}  scan {t*1e6:9.1f} us  copy "
                  f"{t_copy*1e6:9.1f} us  ratio {t_copy/t:5.3f}  torch {t_torch*1e6:9.1f} us  ok={ok}", flush=True)
            if ok and (best is None or t < best["scan_s"]):
                best = rec
        # default table choice too
        out = ps.scan(x, axis=axis)
        t = timer(lambda: ps.scan(x, axis=axis, out=y))
        records.append(dict(row, block=None, warps=None, window=None, scan_s=t, verified=check(out, x, axis),
                            ratio_to_copy=t_copy / t, vs_torch=t_torch / t))
        if best:
            print(f"BEST {name}: b={best['block']} w={best['warps']} win={best['window']} ratio "
                  f"{best['ratio_to_copy']:.3f} (default {t_copy/t:.3f}); torch.cumsum ratio {t_copy/t_torch:.3f}",
                  flush=True)
        del x, y
        torch.cuda.empty_cache()
    records += variant_records()
    with open(args.json, "w") as f:
        json.dump({"meta": meta, "records": records}, f, indent=1)


if __name__ == "__main__":
    sys.exit(main())
