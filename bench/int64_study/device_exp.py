#!/usr/bin/env python
"""int64/float64 scan study: time the kernel variants against a d2d copy on one GPU.

Needs only torch + triton; imports the variant files (k0_lib.py, k1_full.py,
k2_prefetch.py) from this script's own directory, so it runs from any working
directory.  Optionally also times the installed library (prefixscan.scan) when it
can be imported (from sys.path or from a parent directory holding prefixscan/).

    python device_exp.py --json results.json          # on the GPU (~45-70 s, see below)
    python device_exp.py --n-small                      # interpreter end-to-end test (CPU)

Per dtype (int64 and float64 at n = 2^27, int32 at 2^28 as the control) it times
dst.copy_(x) of the same bytes (before and after the dtype's group), torch.cumsum,
and each variant/config: CUDA events around each call, warm-up calls first, median
of --repeats (default 15).  Every variant's output (of its last timed call; the
output buffer is poisoned before its first call) is checked: integers bitwise
against torch.cumsum, floats by max|y - ref| / max|ref|.  Prints a table of the
ratio copy_time / scan_time and writes all numbers as JSON (--json).

Time on an H100: 20 cases, 19 kernel compilations at ~1.5-4.5 s each (48 s for the
16 variant kernels with a cold cache on a 2-core build box; most of the run), plus
~3 s of timing and checks per dtype group: about 60-80 s; --budget (default 110 s)
skips whatever is left once exceeded (marked "skipped" in the table and JSON).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

# (dtype, variant, config).  Blocks are elements per tile.  status: k1/k2 protocol
# (0 = flag + value with release/acquire as in the library, 1 = packed 64-bit word
# for 32-bit values, 2 = packed 128-bit [tag, value] word).  "lib" = prefixscan.scan
# with its own tuned table; k0_lib = the library kernel, replicated, at a given config.
COMBOS = [
    # int64, n = 2^27
    ("int64", "lib", dict()),                                      # library, its table: 4096 x 8 warps
    ("int64", "k0_lib", dict(block=4096, warps=8)),                # replica of it (same SASS as the library)
    ("int64", "k0_lib", dict(block=8192, warps=4)),
    ("int64", "k1_full", dict(block=8192, warps=4, status=0)),     # full tiles only (library status protocol)
    ("int64", "k1_full", dict(block=4096, warps=4, status=0)),
    ("int64", "k1_full", dict(block=8192, warps=4, status=2)),     # + packed 128-bit status
    ("int64", "k1_full", dict(block=4096, warps=4, status=2)),
    ("int64", "k2_prefetch", dict(block=4096, warps=4, status=2)),  # + persistent, next tile prefetched
    ("int64", "k2_prefetch", dict(block=2048, warps=4, status=2)),
    # float64, n = 2^27
    ("float64", "lib", dict()),                                    # library, its table: 8192 x 4 warps
    ("float64", "k1_full", dict(block=8192, warps=4, status=0)),
    ("float64", "k1_full", dict(block=8192, warps=4, status=2)),
    ("float64", "k1_full", dict(block=4096, warps=4, status=2)),
    ("float64", "k1_full", dict(block=8192, warps=8, status=2)),
    ("float64", "k2_prefetch", dict(block=4096, warps=4, status=2)),
    ("float64", "k2_prefetch", dict(block=2048, warps=4, status=2)),
    # int32 control, n = 2^28
    ("int32", "lib", dict()),                                      # library, its table: 16384 x 4 warps
    ("int32", "k0_lib", dict(block=16384, warps=4)),
    ("int32", "k1_full", dict(block=16384, warps=4, status=1)),
    ("int32", "k2_prefetch", dict(block=4096, warps=4, status=1)),
]
N = {"int64": 1 << 27, "float64": 1 << 27, "int32": 1 << 28}
N_SMALL = {"int64": 1001, "float64": 1001, "int32": 2001}


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--json", default=None, help="write the results here")
    p.add_argument("--n-small", action="store_true",
                   help="interpreter end-to-end test: TRITON_INTERPRET=1, CPU tensors, tiny n and tiles")
    p.add_argument("--repeats", type=int, default=None, help="timed calls per case (default 15; 1 with --n-small)")
    p.add_argument("--warmup", type=int, default=None, help="untimed calls first (default 3; 0 with --n-small)")
    p.add_argument("--only", default=None, help="comma-separated substrings; run only matching case names")
    p.add_argument("--budget", type=float, default=None,
                   help="seconds; cases left after this are skipped (default 110; none with --n-small)")
    return p.parse_args()


ARGS = parse_args()
if ARGS.n_small:
    os.environ["TRITON_INTERPRET"] = "1"

import torch  # noqa: E402

import k0_lib  # noqa: E402
import k1_full  # noqa: E402
import k2_prefetch  # noqa: E402

MODULES = {"k0_lib": k0_lib, "k1_full": k1_full, "k2_prefetch": k2_prefetch}
T0 = time.perf_counter()


def find_library():
    try:
        import prefixscan
        return prefixscan
    except ImportError:
        pass
    d = HERE
    for _ in range(4):
        d = os.path.dirname(d)
        if os.path.isfile(os.path.join(d, "prefixscan", "__init__.py")):
            sys.path.insert(0, d)
            try:
                import prefixscan
                return prefixscan
            except ImportError:
                return None
    return None


def case_name(dtype, variant, cfg):
    parts = [dtype, variant]
    if "block" in cfg:
        parts.append(f"b{cfg['block']}w{cfg['warps']}")
    if "status" in cfg:
        parts.append(f"s{cfg['status']}")
    return "/".join(parts)


class Timer:
    def __init__(self, cuda):
        self.cuda = cuda

    def __call__(self, fn, repeats, warmup):
        for _ in range(warmup):
            fn()
        if self.cuda:
            torch.cuda.synchronize()
            events = []
            for _ in range(repeats):
                s = torch.cuda.Event(enable_timing=True)
                e = torch.cuda.Event(enable_timing=True)
                s.record()
                fn()
                e.record()
                events.append((s, e))
            torch.cuda.synchronize()
            ms = [s.elapsed_time(e) for s, e in events]
        else:
            ms = []
            for _ in range(repeats):
                t = time.perf_counter()
                fn()
                ms.append((time.perf_counter() - t) * 1e3)
        return statistics.median(ms), min(ms), ms


def make_data(dtype_name, n, device):
    g = torch.Generator(device=device if device != "cpu" else "cpu").manual_seed(12345)
    if dtype_name == "int64":
        x = torch.randint(-(1 << 62), 1 << 62, (n,), dtype=torch.int64, device=device, generator=g)
    elif dtype_name == "int32":
        x = torch.randint(-(1 << 31), (1 << 31) - 1, (n,), dtype=torch.int32, device=device, generator=g)
        if device == "cpu":  # the interpreter sums int32 in NumPy and rejects overflow: keep sums small
            x = torch.randint(-(1 << 20), 1 << 20, (n,), dtype=torch.int32, device=device, generator=g)
    else:
        x = torch.randn(n, dtype=torch.float64, device=device, generator=g)
    return x


def check(y, ref, dtype_name):
    if dtype_name in ("int64", "int32"):
        bad = int((y != ref).sum())
        return bad == 0, float(bad)
    err = float((y - ref).abs().max() / ref.abs().max().clamp_min(1e-300))
    return err < 1e-8, err


def main():
    small = ARGS.n_small
    cuda = torch.cuda.is_available() and not small
    if not small and not cuda:
        sys.exit("no CUDA device: use --n-small for the interpreter test")
    device = "cuda" if cuda else "cpu"
    repeats = ARGS.repeats if ARGS.repeats is not None else (1 if small else 15)
    warmup = ARGS.warmup if ARGS.warmup is not None else (0 if small else 3)
    budget = ARGS.budget if ARGS.budget is not None else (float("inf") if small else 110.0)
    timer = Timer(cuda)
    ps = find_library()
    info = {"device": torch.cuda.get_device_name(0) if cuda else "cpu (TRITON_INTERPRET=1)",
            "torch": torch.__version__, "triton": __import__("triton").__version__,
            "prefixscan": getattr(ps, "__version__", None) if ps else None,
            "sms": torch.cuda.get_device_properties(0).multi_processor_count if cuda else None,
            "n_small": small, "repeats": repeats, "warmup": warmup, "started": time.strftime("%Y-%m-%dT%H:%M:%S")}
    print(json.dumps(info), flush=True)
    only = [s for s in ARGS.only.split(",")] if ARGS.only else None
    results = []
    for dtype_name in ("int64", "float64", "int32"):
        combos = [c for c in COMBOS if c[0] == dtype_name]
        if only:
            combos = [c for c in combos if any(s in case_name(*c) for s in only)]
        if not combos:
            continue
        n = N_SMALL[dtype_name] if small else N[dtype_name]
        x = make_data(dtype_name, n, device)
        tdt = x.dtype
        ref = torch.cumsum(x, 0, dtype=tdt)
        y = torch.empty_like(x)
        dst = torch.empty_like(x)
        nbytes = 2 * x.numel() * x.element_size()
        copy1 = timer(lambda: dst.copy_(x), repeats, warmup)
        ok_dst = torch.equal(dst, x)
        cs = timer(lambda: torch.cumsum(x, 0, dtype=tdt, out=y), repeats, warmup)
        group = []
        for _, variant, cfg in combos:
            name = case_name(dtype_name, variant, cfg)
            rec = dict(name=name, dtype=dtype_name, n=n, variant=variant, **cfg)
            if time.perf_counter() - T0 > budget:
                rec["skipped"] = "time budget"
                group.append(rec)
                print(f"{name:36s} skipped (budget)", flush=True)
                continue
            try:
                if variant == "lib":
                    if ps is None:
                        rec["skipped"] = "prefixscan not importable"
                        group.append(rec)
                        print(f"{name:36s} skipped (prefixscan not importable)", flush=True)
                        continue
                    fn = (lambda: ps.scan(x, out=y, backend="triton"))
                    scanner = None
                else:
                    kw = dict(cfg)
                    if small:  # tiny tiles so that several tiles and the look-back run
                        kw["block"] = max(32, kw["block"] // 64)
                        if variant == "k2_prefetch":
                            kw["grid"] = 3
                    scanner = MODULES[variant].Scanner(n, tdt, device, **kw)
                    rec["block_run"] = kw["block"]
                    fn = (lambda s=scanner: s(x, y))
                y.fill_(float("nan") if tdt.is_floating_point else -1)  # poison: a skipped store shows
                t = time.perf_counter()
                fn()
                if cuda:
                    torch.cuda.synchronize()
                rec["first_call_s"] = round(time.perf_counter() - t, 3)  # compile + first run
                med, mn, ms = timer(fn, repeats, warmup)
                ok, err = check(y, ref, dtype_name)
                rec.update(median_ms=med, min_ms=mn, all_ms=ms, ok=ok, err=err)
                if scanner is not None:
                    k = scanner.compiled
                    rec["grid"] = scanner.grid
                    rec["occupancy"] = getattr(scanner, "occupancy", None)
                    if k is not None and hasattr(k, "n_regs"):
                        rec["regs"] = k.n_regs
                        rec["spills"] = k.n_spills
                        rec["shared"] = k.metadata.shared
            except Exception as e:  # keep going: one broken case must not cost the run
                rec["error"] = f"{type(e).__name__}: {e}"[:500]
                print(f"{name:36s} ERROR {rec['error']}", flush=True)
            group.append(rec)
            if "median_ms" in rec:
                print(f"{name:36s} {rec['median_ms']:9.3f} ms  ok={rec['ok']} err={rec['err']:.3g}  "
                      f"regs={rec.get('regs')} grid={rec.get('grid')}  first call {rec['first_call_s']} s", flush=True)
        copy2 = timer(lambda: dst.copy_(x), repeats, warmup)
        copy_ms = statistics.median(copy1[2] + copy2[2])
        for rec in group:
            if "median_ms" in rec:
                rec["ratio_to_copy"] = copy_ms / rec["median_ms"]
                rec["GBps"] = nbytes / rec["median_ms"] / 1e6
        results.append(dict(dtype=dtype_name, n=n, bytes_moved=nbytes, copy_ms=copy_ms,
                            copy_ms_before=copy1[0], copy_ms_after=copy2[0], copy_ok=ok_dst,
                            cumsum_ms=cs[0], cumsum_ratio=copy_ms / cs[0], cases=group))
        del x, ref, y, dst
        if cuda:
            torch.cuda.empty_cache()

    print()
    print(f"{'case':36s} {'regs':>4s} {'grid':>6s} {'ms':>9s} {'GB/s':>7s} {'/copy':>6s}  check")
    bad = 0
    for g in results:
        print(f"--- {g['dtype']} n={g['n']}: copy {g['copy_ms']:.3f} ms "
              f"(before {g['copy_ms_before']:.3f}, after {g['copy_ms_after']:.3f}), "
              f"torch.cumsum {g['cumsum_ms']:.3f} ms = {g['cumsum_ratio']:.3f} of copy")
        for r in g["cases"]:
            if "median_ms" in r:
                bad += not r["ok"]
                print(f"{r['name']:36s} {str(r.get('regs', '')):>4s} {str(r.get('grid', '')):>6s} "
                      f"{r['median_ms']:9.3f} {r['GBps']:7.1f} {r['ratio_to_copy']:6.3f}  "
                      f"{'ok' if r['ok'] else 'WRONG'} ({r['err']:.3g})")
            else:
                print(f"{r['name']:36s} {r.get('skipped') or r.get('error')}")
    total = time.perf_counter() - T0
    print(f"\ntotal {total:.1f} s; {bad} wrong results")
    if ARGS.json:
        with open(ARGS.json, "w") as f:
            json.dump(dict(info=info, total_s=total, results=results), f, indent=1)
        print("wrote", ARGS.json)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
