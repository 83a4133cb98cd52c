"""The one-look-back kernel (``blocked.orders_kernel``) under study knobs, ratio to a copy of
the same bytes at 2^27 (run j): look-back window sizes (entries per step), the window held
by one warp (replicated in the others) or spread over the tile's warps, and register caps.

Every variant's output is compared bitwise with the default launch's (same input), so a
variant that folds wrongly shows as ``equal: false``.  Records are written after each
case, so a run cut by a time limit keeps what it measured.

    python bench/blocked_knobs_study.py --grid windows --json knobs.json   # call 1
    python bench/blocked_knobs_study.py --grid tiles --json knobs.json     # call 2
    python bench/blocked_knobs_study.py --grid stage --json knobs.json     # call 3
    python bench/blocked_knobs_study.py --grid padded --json knobs.json    # call 5
    python bench/blocked_knobs_study.py --grid chunks --json knobs.json    # run k, call 1
    python bench/blocked_knobs_study.py --grid rows --json knobs.json      # run k, call 2
    python bench/blocked_knobs_study.py --grid wide --json knobs.json      # run k, call 3
    python bench/blocked_knobs_study.py --grid defaults --json knobs.json  # run k, call 6
    python bench/blocked_knobs_study.py --grid reader --json knobs.json    # run l, call 1
    python bench/blocked_knobs_study.py --grid long --json knobs.json      # run l, call 2
    python bench/blocked_knobs_study.py --grid caps --json knobs.json      # run l, call 4
    python bench/blocked_knobs_study.py --grid strided --json knobs.json   # run n, call 2
    python bench/blocked_knobs_study.py --grid readers --json knobs.json   # run n, call 2
    python bench/blocked_knobs_study.py --grid wide_n --json knobs.json    # run n, call 4
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys

sys.path.insert(0, ".")

# (dtype, order, tuple size) in the order they are measured.
CASES = (("int32", 5, 1), ("int32", 8, 1), ("int64", 5, 1), ("int64", 8, 1), ("int64", 1, 8), ("int32", 2, 1),
         ("int64", 2, 1), ("int32", 1, 8))


def variants_windows(dtype: str, order: int, tuple_size: int) -> list:
    """Call 1: window entries x warps holding them, then register caps that admit one more
    tile per SM, at the default tile."""
    out = [dict(window=w, window_warps=ww) for w, ww in ((32, 1), (64, 1), (128, 4), (256, 4))]
    if dtype == "int64" and (order >= 5 or tuple_size >= 8):
        caps = (168, 128)
    else:
        caps = (128,) if order >= 5 else ()
    return out + [dict(window=w, window_warps=ww, maxnreg=cap) for cap in caps for w, ww in ((32, 1), (128, 4))]


def variants_tiles(dtype: str, order: int, tuple_size: int) -> list:
    """Call 2: with the window spread over the warps (call 1's winner), rows x warps x
    register caps."""
    wide = dtype == "int64"
    rows = (32, 16) if wide else (64, 32)
    caps = (None, 168, 128) if wide else (None, 128, 96)
    out = [dict(window=64, window_warps=2, tile=(rows[0], 4))]
    for r in rows:
        if r < tuple_size:
            continue
        for warps in (4, 8):
            for cap in caps:
                out.append(dict(window=32 * warps, window_warps=warps, tile=(r, warps), maxnreg=cap))
    return out


def variants_stage(dtype: str, order: int, tuple_size: int) -> list:
    """Call 3: the tile staged in shared memory and read from there again for the output
    (x holds no registers across the look-back), under register caps, against call 2's best
    unstaged knobs (window spread over 4 warps, cap 128 for int32, 168 for int64).  Call 3
    ran with a ``stage`` switch (commit 3ba1ea6's parent); the kernel is now always staged,
    so this grid measures caps only."""
    wide = dtype == "int64"
    base = dict(window=128, window_warps=4, tile=(32 if wide else max(64, tuple_size), 4))
    out = [dict(base, maxnreg=168 if wide else 128)]
    for cap in ((None, 168, 128, 96) if wide else (None, 128, 96, 80)):
        out.append(dict(base, maxnreg=cap))
    return out


def variants_padded(dtype: str, order: int, tuple_size: int) -> list:
    """Call 5: tuple sizes that are not powers of two (padded columns) under register caps."""
    return [dict(window=128, window_warps=4, maxnreg=cap) for cap in (None, 168, 128, 96)]


def variants_chunks(dtype: str, order: int, tuple_size: int) -> list:
    """Run k, call 1: seeds entering a row's first element only, padded tuples' addresses
    not held across the look-back, rows scanned in chunks: register caps, the tile-local
    ceiling (``lookback=False``: wrong results, ``equal`` false), and rows twice as long
    in 2 or 4 chunks."""
    wide = dtype == "int64"
    base = dict(window=128, window_warps=4)
    out = [dict(base, maxnreg=cap) for cap in (None, 168, 128, 96)]
    out.append(dict(base, maxnreg=168 if wide and order >= 8 else 128, lookback=False))
    if tuple_size == 1:
        rows = 64 if wide else 128
        out += [dict(base, tile=(rows, 4), chunks=c, maxnreg=cap) for c in (2, 4) for cap in (None, 128)]
    return out


def variants_rows(dtype: str, order: int, tuple_size: int) -> list:
    """Run k, call 2: the launch's defaults (``window=None``), then rows of the other
    length, whole or in 2 chunks, and caps for tuples."""
    wide = dtype == "int64"
    base = dict(window=128, window_warps=4)
    out = [dict(window=None)]
    if tuple_size == 1 or order > 1:
        rows = 32 if wide else 64
        for r in (rows, 2 * rows):
            out += [dict(base, tile=(max(r, tuple_size), 4), chunks=c) for c in (1, 2)]
    else:
        out += [dict(base, maxnreg=cap) for cap in (None, 128, 96)]
    return out


def variants_wide(dtype: str, order: int, tuple_size: int) -> list:
    """Run k, call 3: entries of padded tuples without their padding columns (int32 tuple
    size 5: 5 words instead of 8, int64 10 instead of 16); the defaults against look-back
    windows of 64 entries over 2 warps and 32 in one, for the wide entries."""
    out = [dict(window=None)]
    cap = launch_cap(dtype, order, tuple_size)
    return out + [dict(window=w, window_warps=ww, maxnreg=cap) for w, ww in ((64, 2), (32, 1))]


def variants_defaults(dtype: str, order: int, tuple_size: int) -> list:
    """Run k, call 6: the launch's defaults only (entries published one word per lane)."""
    return [dict(window=None)]


def variants_reader(dtype: str, order: int, tuple_size: int) -> list:
    """Run l, call 1: look-back entries read as 16-byte vectors and one reduction per fold
    decision and per window fold (the defaults); then register caps that admit one tile
    more per SM, and rows twice as long (half the tiles) for tuples."""
    wide = dtype == "int64"
    out = [dict(window=None)]
    base = dict(window=128, window_warps=4)
    if wide and order >= 5:
        out += [dict(base, maxnreg=168)]
    if order == 1:
        rows = 64 if wide else 128
        out += [dict(base, tile=(rows, 4), chunks=2, maxnreg=launch_cap(dtype, order, tuple_size))]
    return out


def variants_long(dtype: str, order: int, tuple_size: int) -> list:
    """Run l, call 2: int64 tuples in rows of 64 (two chunks) against the defaults; int32
    orders 2 and 8 defaults again (call 1 read them 0.01-0.03 below run k's bench)."""
    out = [dict(window=None)]
    if dtype == "int64" and order == 1:
        out.append(dict(window=128, window_warps=4, tile=(64, 4), chunks=2))
    return out


def variants_caps(dtype: str, order: int, tuple_size: int) -> list:
    """Run l, call 4: the new defaults (int64 tuples of 8 columns in rows of 64) against
    register caps that admit a third tile per SM (long padded rows hold 228-232)."""
    return [dict(window=None)] + [dict(window=128, window_warps=4, maxnreg=cap) for cap in (168, 128)]


def variants_strided(dtype: str, order: int, tuple_size: int) -> list:
    """Run n, call 2: order-1 tuple sizes that are not powers of two in flat tiles (the
    defaults) against rows half and twice as long, no register cap, the padded tiles of
    runs j-m (``strided=False``, their rows, caps and reader), and the tile-local ceiling."""
    wide = dtype == "int64"
    base = dict(window=128, window_warps=4)
    rows = 32 if wide else 64
    out = [dict(window=None)]
    out += [dict(base, tile=(r, 4), maxnreg=168) for r in (rows // 2, rows * 2)]
    out += [dict(base, maxnreg=None)]
    out += [dict(base, strided=False, tile=(2 * rows if wide else rows, 4), maxnreg=None if wide else 128,
                 vectors=wide)]
    out += [dict(base, maxnreg=168, lookback=False)]
    return out


def variants_readers(dtype: str, order: int, tuple_size: int) -> list:
    """Run n, call 2: the look-back's readers: entries' words as vectors (the defaults) or
    one at a time.  (Call 2 also summed the orders one reduction each, never faster; that
    switch is gone.)"""
    base = dict(window=128, window_warps=4, maxnreg=launch_cap(dtype, order, tuple_size))
    return [dict(window=None), dict(base, vectors=False)]


def variants_wide_n(dtype: str, order: int, tuple_size: int) -> list:
    """Run n, call 4: 16-word entries after the partial-tile fix (int64 order 8 168 registers,
    was 236): the defaults against short rows (more tiles per SM), windows of 64 and 256
    entries, and the tile-local ceiling."""
    base = dict(window=128, window_warps=4, maxnreg=launch_cap(dtype, order, tuple_size))
    return [dict(window=None), dict(base, tile=(32, 4), chunks=1), dict(base, window=64),
            dict(base, window=256), dict(base, lookback=False)]


def launch_cap(dtype: str, order: int, tuple_size: int):
    from prefixscan.backends.triton import launch

    return launch.blocked_register_cap(8 if dtype == "int64" else 4, order, tuple_size)


CASE_KEYS = ("dtype", "order", "tuple_size")
GRIDS = {"windows": variants_windows, "tiles": variants_tiles, "stage": variants_stage, "padded": variants_padded,
         "chunks": variants_chunks, "rows": variants_rows, "wide": variants_wide,
         "defaults": variants_defaults, "reader": variants_reader,
         "long": variants_long, "caps": variants_caps,
         "strided": variants_strided, "readers": variants_readers, "wide_n": variants_wide_n}
CASES_BY_GRID = {"stage": CASES + (("int64", 1, 2), ("int64", 1, 4), ("int32", 1, 4), ("int32", 1, 16),
                                   ("int32", 3, 1), ("int64", 3, 1), ("int32", 2, 2), ("int64", 2, 2)),
                 "padded": (("int32", 1, 5), ("int64", 1, 5), ("int32", 1, 3), ("int64", 1, 3), ("int32", 1, 7),
                            ("int32", 2, 5), ("int32", 1, 12)),
                 "chunks": (("int32", 8, 1), ("int64", 8, 1), ("int64", 5, 1), ("int32", 5, 1), ("int32", 1, 5),
                            ("int64", 1, 5), ("int32", 1, 3), ("int32", 2, 5), ("int64", 1, 8), ("int32", 2, 1),
                            ("int64", 2, 1)),
                 "rows": (("int32", 3, 1), ("int32", 5, 1), ("int32", 8, 1), ("int64", 3, 1), ("int64", 5, 1),
                          ("int64", 8, 1), ("int32", 1, 2), ("int32", 1, 4), ("int32", 1, 8), ("int32", 1, 16),
                          ("int64", 1, 2), ("int64", 1, 4), ("int32", 2, 2), ("int64", 2, 2), ("int32", 5, 2),
                          ("int32", 2, 1), ("int64", 2, 1)),
                 "wide": (("int32", 1, 5), ("int64", 1, 5), ("int32", 1, 3), ("int32", 1, 7), ("int64", 1, 3),
                          ("int64", 8, 1), ("int64", 1, 8), ("int32", 1, 16), ("int64", 5, 1), ("int32", 8, 1)),
                 "defaults": (("int64", 8, 1), ("int64", 1, 5), ("int64", 1, 8), ("int32", 1, 5), ("int32", 1, 16),
                              ("int64", 5, 1), ("int32", 8, 1), ("int32", 5, 1), ("int64", 2, 1), ("int32", 2, 1),
                              ("int64", 1, 2), ("int32", 1, 8), ("int64", 3, 1), ("int64", 1, 3)),
                 "reader": (("int64", 8, 1), ("int64", 1, 8), ("int64", 1, 5), ("int32", 1, 5), ("int32", 8, 1),
                            ("int64", 5, 1), ("int32", 1, 16), ("int32", 5, 1), ("int64", 2, 1), ("int32", 2, 1),
                            ("int64", 1, 4), ("int32", 1, 8), ("int64", 1, 2)),
                 "long": (("int64", 1, 8), ("int64", 1, 5), ("int64", 1, 3), ("int64", 1, 7), ("int64", 1, 4),
                          ("int32", 8, 1), ("int32", 2, 1), ("int64", 8, 1)),
                 "caps": (("int64", 1, 5), ("int64", 1, 7), ("int64", 1, 8)),
                 "strided": (("int32", 1, 5), ("int64", 1, 5), ("int32", 1, 3), ("int64", 1, 3), ("int32", 1, 7),
                             ("int64", 1, 7)),
                 "wide_n": (("int64", 8, 1), ("int64", 1, 8), ("int64", 5, 1)),
                 "readers": (("int64", 8, 1), ("int32", 8, 1), ("int64", 5, 1), ("int64", 1, 8), ("int32", 1, 16),
                             ("int32", 5, 1))}


def launch_kernel():
    from prefixscan.backends.triton import blocked

    return blocked.orders_kernel


def main() -> int:
    import torch

    from prefixscan.backends.triton import launch
    from prefixscan.bench import _time_cuda_events

    parser = argparse.ArgumentParser()
    parser.add_argument("--json", required=True)
    parser.add_argument("--n", type=int, default=1 << 27)
    parser.add_argument("--grid", choices=sorted(GRIDS), default="tiles")
    args = parser.parse_args()
    n = args.n
    stream = torch.cuda.current_stream().cuda_stream
    records = []
    inputs = {}

    def save():
        with open(args.json, "w") as f:
            json.dump({"meta": {"gpu": torch.cuda.get_device_name(), "n": n, "grid": args.grid}, "records": records}, f,
                      indent=1)

    for name, order, tuple_size in CASES_BY_GRID.get(args.grid, CASES):
        dtype = getattr(torch, name)
        if name not in inputs:
            x = torch.randint(-99, 99, (n,), device="cuda", dtype=dtype)
            y = torch.empty_like(x)
            copy = statistics.median(_time_cuda_events([lambda: y.copy_(x)], 20, 1e-5))
            inputs[name] = x, y, copy
        x, y, copy = inputs[name]
        launch._launch_blocked(x, y, dtype, n, order, tuple_size, torch, stream, False)
        reference = y.clone()
        if order == 1:  # the defaults against torch: column sums of the (n / s, s) view
            pad = -n % tuple_size
            padded = torch.cat([x, x.new_zeros(pad)]).view(-1, tuple_size).t().contiguous()
            expected = padded.cumsum(1, dtype=dtype).t().reshape(-1)[:n]
            print(f"{name} q{order} s{tuple_size} defaults equal to torch: {bool(torch.equal(reference, expected))}",
                  flush=True)
            records.append(dict(dtype=name, order=order, tuple_size=tuple_size,
                                defaults_equal_torch=bool(torch.equal(reference, expected))))
            del padded, expected
        for knobs in GRIDS[args.grid](name, order, tuple_size):
            fn = lambda: launch._launch_blocked(x, y, dtype, n, order, tuple_size, torch, stream, False,  # noqa: E731
                                                **knobs)
            y.fill_(-1)
            try:
                constexprs = fn()[4]
                torch.cuda.synchronize()
            except Exception as exc:  # a compile failure: record it, go on
                records.append(dict(dtype=name, order=order, tuple_size=tuple_size, **knobs,
                                    failed=str(exc).splitlines()[-1:]))
                continue
            equal = bool(torch.equal(y, reference))
            cap = launch_cap(name, order, tuple_size) if knobs.get("window") is None else knobs.get("maxnreg")
            # The variant's own compiled kernel (the last one compiled may be another's).
            compiled = next(c for key, c in reversed(launch._compiled.items())
                            if key[0] is launch_kernel() and key[3] == tuple(constexprs.items()) and key[2] == cap)
            sec = statistics.median(_time_cuda_events([fn], 10, 1e-5))
            rec = dict(dtype=name, order=order, tuple_size=tuple_size, **knobs, equal=equal,
                       regs=getattr(compiled, "n_regs", None), spills=getattr(compiled, "n_spills", None),
                       ratio_to_copy=round(copy / sec, 4))
            records.append(rec)
            print(f"{name} q{order} s{tuple_size}", {k: v for k, v in rec.items() if k not in CASE_KEYS}, flush=True)
            save()
    save()
    return 0


if __name__ == "__main__":
    sys.exit(main())
