"""Benchmarks of the primitives built on the scan, against their roofs and peers.

    python benchmarks/primitives.py --case compact --device cuda --out DIR
    python benchmarks/primitives.py --case partition --device cpu --out DIR

Each case writes ``DIR/<case>-<device>.json`` (one row per measurement) and
``DIR/<case>-<device>.md`` (the table).  GPU times are CUDA events around the
call, the median of ``--repeats`` (>= 20) after warm-up; the roof is a
device-to-device copy moving the same bytes (read + write), timed in the same
process, so ``ratio`` 1.00 is copy speed.  CPU times are wall-clock medians.

Cases:

* ``compact``: ``prefixscan.compact`` (one pass: read x and the mask, write the
  kept elements) at keep fractions 1%, 50%, 99%, int32, float32 and int64 at 2^27,
  against ``x[mask]`` and CUB's select (cuda.compute, planned, with the predicate
  ``x > 0``; the data are drawn so that the mask is ``x > 0``: CUB reads x only); its roof
  moves n * (itemsize + 1) + kept * itemsize bytes.  Also the fixed-size form
  (``size=n``, no host synchronization), n = 2^16 per call, and with ``--sweep`` the
  kernel's tiles.
* ``partition``: ``prefixscan.partition`` against ``torch.cat((x[m], x[~m]))`` and CUB's
  three-way partition (cuda.compute, planned; NumPy: ``np.concatenate((x[m], x[~m]))``);
  roof n * (2 * itemsize + 1) bytes.
* ``segmented`` (cuda): ``prefixscan.segmented_scan`` sums, int32 and float32 at
  2^27, segment lengths 1, 32, 1000, 10^6 and a random mix (log-uniform 1 to
  10^5), given by offsets, flags and keys; roof: a copy of x, y and the segment
  description; peer: the torch idiom (cumsum, then each segment's base
  subtracted, expanded per segment by ``repeat_interleave``).  Also n = 2^16 per
  call, and with ``--sweep`` the kernel's tiles (``SegmentedTile``).

CUB's peers (``benchmarks/peers/cub_compute.py``) need the ``cuda-cccl`` wheel; without
it their rows carry the import error.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import numpy as np

import prefixscan as ps
from prefixscan.timing import median_cuda_seconds, median_host_seconds

sys.path.insert(0, str(Path(__file__).parent / "peers"))  # cub_compute, the CUB peers

FRACTIONS = (0.01, 0.5, 0.99)


# ---------------------------------------------------------------------------
# Timing.

def gpu_time(fn, repeats: int) -> float:
    """Median seconds of ``fn()`` by CUDA events, after three warm-up calls."""
    return median_cuda_seconds(fn, repeats)


def cpu_time(fn, repeats: int) -> float:
    """Median wall seconds of ``fn()`` after one warm-up call."""
    return median_host_seconds(fn, repeats)


def copy_roof(nbytes_moved: int, repeats: int) -> float:
    """Seconds of a device copy moving ``nbytes_moved`` bytes (half read, half written)."""
    import torch

    half = max(nbytes_moved // 2, 1)
    src = torch.empty(half, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    return gpu_time(lambda: dst.copy_(src), repeats)


def row(case, device, dtype, n, fraction, impl, seconds, roof=None, peer=None, **extra):
    r = dict(case=case, device=device, dtype=dtype, n=n, fraction=fraction, impl=impl, seconds=seconds,
             elements_per_s=n / seconds if seconds else None)
    if roof is not None:
        r["roof_seconds"] = roof
        r["ratio_to_roof"] = roof / seconds if seconds else None
    if peer is not None and seconds:
        r["speedup_vs_peer"] = peer / seconds
    r.update(extra)
    return r


# ---------------------------------------------------------------------------
# GPU cases.

def _gpu_data(dtype: str, n: int, fraction: float):
    """Random x of ``dtype`` about ``fraction`` of which is positive, and the mask ``x > 0``:
    the selection CUB's predicate ``x > 0`` makes too (one compiled predicate per dtype)."""
    import math

    import torch

    gen = torch.Generator(device="cuda").manual_seed(1)
    if dtype.startswith("float"):
        shift = math.sqrt(2.0) * torch.erfinv(torch.tensor(2.0 * fraction - 1.0, dtype=torch.float64)).item()
        x = (torch.randn(n, device="cuda", generator=gen, dtype=torch.float64) + shift).to(getattr(torch, dtype))
    else:
        x = torch.randint(-(1 << 30), 1 << 30, (n,), device="cuda", generator=gen, dtype=getattr(torch, dtype))
        x = x + int((fraction - 0.5) * 2 * (1 << 30))
    return x, x > 0


def _compaction_variants(itemsize: int) -> list:
    """Tiles of the sweep: 32 and 64 bytes of values per thread's row, 4 and 8 warps,
    the store form chosen by the tile's count or always through the warp-contiguous
    layout."""
    from prefixscan.primitives.compaction.triton import CompactionTile

    out = []
    for block, warps in ((8192, 4), (4096, 4), (8192, 8)):
        for row_bytes in (32, 64):
            out.append(CompactionTile(block, warps, rows=row_bytes // itemsize))
    out.append(CompactionTile(8192, 4, rows=32 // itemsize, store="dense"))
    return out


def _cub(kind: str, x, repeats: int):
    """Seconds of CUB's select or three-way partition (cuda.compute, planned) of ``x > 0``
    (the mask of :func:`_gpu_data`), or the error that kept it from running."""
    try:
        import cub_compute  # benchmarks/peers/, on the path above
    except ImportError as exc:
        return None, f"{type(exc).__name__}: {exc}"
    try:
        run = cub_compute.select(x, 0)[0] if kind == "compact" else cub_compute.partition(x, 0)
        return gpu_time(run, repeats), None
    except Exception as exc:  # noqa: BLE001 - a peer that cannot run is reported, not fatal
        return None, f"{type(exc).__name__}: {exc}"[:300]


def gpu_compact(args) -> list:
    import torch

    from prefixscan.primitives.compaction import triton as compaction

    rows = []
    n = args.n
    sweep_repeats = max(5, args.repeats // 3)
    for dtype in ("int32", "float32", "int64"):
        for fraction in FRACTIONS:
            x, mask = _gpu_data(dtype, n, fraction)
            s = x.element_size()
            kept = int(mask.sum())
            roof = copy_roof(n * (s + 1) + kept * s, args.repeats)
            peer = gpu_time(lambda: x[mask], args.repeats)
            rows.append(row("compact", "cuda", dtype, n, fraction, "x[mask]", peer, roof))
            cub, error = _cub("compact", x, args.repeats)
            rows.append(row("compact", "cuda", dtype, n, fraction, "CUB select (cuda.compute, x > 0)", cub, roof,
                            error=error))
            got = ps.compact(x, mask)
            assert torch.equal(got, x[mask]), (dtype, fraction)
            t = gpu_time(lambda: ps.compact(x, mask), args.repeats)
            rows.append(row("compact", "cuda", dtype, n, fraction, "prefixscan.compact", t, roof, peer,
                            speedup_vs_cub=cub / t if cub else None))
            t = gpu_time(lambda: ps.compact(x, mask, size=n), args.repeats)
            rows.append(row("compact", "cuda", dtype, n, fraction, "prefixscan.compact(size=n)", t, roof, peer,
                            speedup_vs_cub=cub / t if cub else None))
            if args.sweep and dtype == "int32":
                for tile in _compaction_variants(s):
                    (got,), _ = compaction.compact_fields([x], mask, size=None, tile=tile)
                    assert torch.equal(got, x[mask]), tile
                    t = gpu_time(lambda: compaction.compact_fields([x], mask, size=None, tile=tile), sweep_repeats)
                    rows.append(row("compact", "cuda", dtype, n, fraction, f"kernel {tile}", t, roof, peer))
            del x, mask
    for dtype in ("float32", "int64"):  # small calls: the host path
        for fraction in (0.5,):
            x, mask = _gpu_data(dtype, 1 << 16, fraction)
            peer = gpu_time(lambda: x[mask], args.repeats * 5)
            rows.append(row("compact", "cuda", dtype, 1 << 16, fraction, "x[mask]", peer))
            t = gpu_time(lambda: ps.compact(x, mask), args.repeats * 5)
            rows.append(row("compact", "cuda", dtype, 1 << 16, fraction, "prefixscan.compact", t, None, peer))
            t = gpu_time(lambda: ps.compact(x, mask, size=1 << 16), args.repeats * 5)
            rows.append(row("compact", "cuda", dtype, 1 << 16, fraction, "prefixscan.compact(size=n)", t, None, peer))
    return rows


def _partition_variants(itemsize: int) -> list:
    """Partition's sweep: every element is written (through the warp-contiguous layout)."""
    from prefixscan.primitives.compaction.triton import CompactionTile

    return [CompactionTile(block, warps, rows=row_bytes // itemsize)
            for block, warps in ((8192, 4), (4096, 4), (8192, 8)) for row_bytes in (16, 32)]


def gpu_partition(args) -> list:
    import torch

    from prefixscan.primitives.compaction import triton as compaction

    rows = []
    n = args.n
    for dtype in ("int32", "float32", "int64"):
        for fraction in FRACTIONS:
            x, mask = _gpu_data(dtype, n, fraction)
            s = x.element_size()
            roof = copy_roof(n * (2 * s + 1), args.repeats)
            peer = gpu_time(lambda: torch.cat((x[mask], x[~mask])), args.repeats)
            rows.append(row("partition", "cuda", dtype, n, fraction, "torch.cat((x[m], x[~m]))", peer, roof))
            cub, error = _cub("partition", x, args.repeats)
            rows.append(row("partition", "cuda", dtype, n, fraction, "CUB three-way partition (cuda.compute, x > 0)",
                            cub, roof, error=error))
            values, count = ps.partition(x, mask)
            assert torch.equal(values, torch.cat((x[mask], x[~mask]))), (dtype, fraction)
            t = gpu_time(lambda: ps.partition(x, mask), args.repeats)
            rows.append(row("partition", "cuda", dtype, n, fraction, "prefixscan.partition", t, roof, peer,
                            speedup_vs_cub=cub / t if cub else None))
            if args.sweep and dtype == "int32" and fraction == 0.5:
                for tile in _partition_variants(s):
                    (got,), _ = compaction.partition_fields([x], mask, tile=tile)
                    assert torch.equal(got, values), tile
                    t = gpu_time(lambda: compaction.partition_fields([x], mask, tile=tile), max(5, args.repeats // 3))
                    rows.append(row("partition", "cuda", dtype, n, fraction, f"kernel {tile}", t, roof, peer))
            del x, mask
    for dtype in ("float32",):
        x, mask = _gpu_data(dtype, 1 << 16, 0.5)
        peer = gpu_time(lambda: torch.cat((x[mask], x[~mask])), args.repeats * 5)
        rows.append(row("partition", "cuda", dtype, 1 << 16, 0.5, "torch.cat((x[m], x[~m]))", peer))
        t = gpu_time(lambda: ps.partition(x, mask), args.repeats * 5)
        rows.append(row("partition", "cuda", dtype, 1 << 16, 0.5, "prefixscan.partition", t, None, peer))
    return rows


# ---------------------------------------------------------------------------
# CPU cases.

def _cpu_data(dtype: str, n: int, fraction: float):
    rng = np.random.default_rng(1)
    x = rng.standard_normal(n).astype(dtype) if dtype.startswith("float") else \
        rng.integers(-(1 << 30), 1 << 30, n).astype(dtype)
    return x, rng.random(n) < fraction


def cpu_compact(args) -> list:
    from prefixscan.primitives.compaction import compiled as compaction

    rows = []
    for dtype in ("float32", "int64"):
        for fraction in FRACTIONS:
            x, mask = _cpu_data(dtype, args.n, fraction)
            assert np.array_equal(ps.compact(x, mask), x[mask])
            peer = cpu_time(lambda: x[mask], args.repeats)
            rows.append(row("compact", "cpu", dtype, args.n, fraction, "x[mask]", peer))
            t = cpu_time(lambda: ps.compact(x, mask), args.repeats)
            rows.append(row("compact", "cpu", dtype, args.n, fraction, "prefixscan.compact", t, None, peer))
            t = cpu_time(lambda: compaction.compact([x], mask, threads=1), args.repeats)
            rows.append(row("compact", "cpu", dtype, args.n, fraction, "compiled pass, 1 thread", t, None, peer))
    return rows


def cpu_partition(args) -> list:
    from prefixscan.primitives.compaction import compiled as compaction

    rows = []
    for dtype in ("float32", "int64"):
        for fraction in FRACTIONS:
            x, mask = _cpu_data(dtype, args.n, fraction)
            assert np.array_equal(ps.partition(x, mask)[0], np.concatenate((x[mask], x[~mask])))
            peer = cpu_time(lambda: np.concatenate((x[mask], x[~mask])), args.repeats)
            rows.append(row("partition", "cpu", dtype, args.n, fraction, "np.concatenate((x[m], x[~m]))", peer))
            t = cpu_time(lambda: ps.partition(x, mask), args.repeats)
            rows.append(row("partition", "cpu", dtype, args.n, fraction, "prefixscan.partition", t, None, peer))
            t = cpu_time(lambda: compaction.partition([x], mask, threads=1), args.repeats)
            rows.append(row("partition", "cpu", dtype, args.n, fraction, "compiled pass, 1 thread", t, None, peer))
    return rows


# ---------------------------------------------------------------------------
# Segmented scans (GPU).

SEGMENT_LENGTHS = (1, 32, 1000, 10 ** 6, "mix")


def _segment_starts(n: int, length, seed: int = 1):
    """int64 start offsets (CUDA) of segments of ``length`` elements, or a log-uniform mix."""
    import torch

    if length == "mix":
        rng = np.random.default_rng(seed)
        lengths = np.exp(rng.uniform(0, np.log(1e5), n // 10 + 10)).astype(np.int64) + 1
        starts = np.concatenate([[0], np.cumsum(lengths)])
        return torch.from_numpy(starts[starts < n]).cuda()
    return torch.arange(0, n, length, dtype=torch.int64, device="cuda")


def _descriptions(n: int, starts):
    """{kind: (tensor, bytes read)} of one segmentation."""
    import torch

    heads = torch.zeros(n, dtype=torch.bool, device="cuda")
    heads[starts] = True
    keys = torch.cumsum(heads, 0, dtype=torch.int32)
    return {"offsets": (starts, starts.numel() * 8), "flags": (heads, n), "keys": (keys, 4 * n)}


def _torch_idiom(x, starts, lengths, n: int):
    """Segmented sums the torch way: a cumsum, minus each segment's base expanded per element."""
    import torch

    c = torch.cumsum(x, 0, dtype=x.dtype)
    return c - torch.repeat_interleave((c - x)[starts], lengths, output_size=n)


def gpu_segmented(args) -> list:
    import torch

    rows = []
    n = args.n
    for dtype in ("int32", "float32"):
        x, _ = _gpu_data(dtype, n, 0.5)
        s = x.element_size()
        for length in SEGMENT_LENGTHS:
            starts = _segment_starts(n, length)
            lengths = torch.diff(starts, append=torch.tensor([n], device="cuda"))
            peer = gpu_time(lambda: _torch_idiom(x, starts, lengths, n), args.repeats)
            expected = _torch_idiom(x, starts, lengths, n) if dtype == "int32" else None
            label = f"segments {length}"
            rows.append(row("segmented", "cuda", dtype, n, None, "torch cumsum - base", peer, None, segments=label))
            for kind, (given, nbytes) in _descriptions(n, starts).items():
                roof = copy_roof(2 * n * s + nbytes, args.repeats)
                got = ps.segmented_scan(x, **{kind: given})
                if expected is not None:
                    assert torch.equal(got, expected), (dtype, length, kind)
                t = gpu_time(lambda: ps.segmented_scan(x, **{kind: given}), args.repeats)
                rows.append(row("segmented", "cuda", dtype, n, None, f"prefixscan {kind}", t, roof, peer,
                                segments=label))
            del starts, lengths
        del x
    # Tiles (prefixscan.primitives.segmented.triton.SegmentedTile), int32, checked against
    # the torch idiom: elements per thread at 4 warps, and fixed tiles.
    from prefixscan.primitives.segmented.triton import SegmentedTile, forced_tile

    if args.sweep:
        x, _ = _gpu_data("int32", n, 0.5)
        tiles = [SegmentedTile(elements_per_thread=e) for e in (8, 32)]
        tiles += [SegmentedTile(block, warps) for block, warps in ((2048, 8), (4096, 8), (1024, 4))]
        for kind in ("offsets", "flags", "keys"):
            for length in (32, 1000):
                starts = _segment_starts(n, length)
                lengths = torch.diff(starts, append=torch.tensor([n], device="cuda"))
                expected = _torch_idiom(x, starts, lengths, n)
                given, nbytes = _descriptions(n, starts)[kind]
                roof = copy_roof(2 * n * 4 + nbytes, args.repeats)
                for tile in tiles:
                    with forced_tile(tile):
                        assert torch.equal(ps.segmented_scan(x, **{kind: given}), expected), (kind, length, str(tile))
                        t = gpu_time(lambda: ps.segmented_scan(x, **{kind: given}), args.repeats)
                    rows.append(row("segmented", "cuda", "int32", n, None, f"prefixscan {kind} {tile}", t, roof,
                                    segments=f"segments {length}"))
                del starts, lengths, expected
        del x
    m = 1 << 16  # per call
    for dtype in ("int32", "float32"):
        x, _ = _gpu_data(dtype, m, 0.5)
        for length in (32, "mix"):
            starts = _segment_starts(m, length)
            lengths = torch.diff(starts, append=torch.tensor([m], device="cuda"))
            peer = gpu_time(lambda: _torch_idiom(x, starts, lengths, m), args.repeats * 5)
            rows.append(row("segmented", "cuda", dtype, m, None, "torch cumsum - base", peer,
                            segments=f"segments {length}"))
            t = gpu_time(lambda: ps.segmented_scan(x, offsets=starts), args.repeats * 5)
            rows.append(row("segmented", "cuda", dtype, m, None, "prefixscan offsets", t, None, peer,
                            segments=f"segments {length}"))
            heads = _descriptions(m, starts)["flags"][0]
            t = gpu_time(lambda: ps.segmented_scan(x, flags=heads), args.repeats * 5)
            rows.append(row("segmented", "cuda", dtype, m, None, "prefixscan flags", t, None, peer,
                            segments=f"segments {length}"))
    return rows


#: case -> device -> function(args) -> rows
CASES = {
    "compact": {"cuda": gpu_compact, "cpu": cpu_compact},
    "partition": {"cuda": gpu_partition, "cpu": cpu_partition},
    "segmented": {"cuda": gpu_segmented},
}
#: Default sizes per device.
DEFAULT_N = {"cuda": 1 << 27, "cpu": 10 ** 7}


def markdown(rows: list) -> str:
    lines = ["| case | dtype | n | kept | impl | time (ms) | ratio to roof | vs peer |",
             "|---|---|---:|---:|---|---:|---:|---:|"]
    for r in rows:
        ratio = f"{r['ratio_to_roof']:.2f}" if r.get("ratio_to_roof") is not None else ""
        peer = f"{r['speedup_vs_peer']:.2f}x" if "speedup_vs_peer" in r else ""
        kept = f"{r['fraction']:.0%}" if r.get("fraction") is not None else r.get("segments", "")
        lines.append(f"| {r['case']} | {r['dtype']} | {r['n']} | {kept} | {r['impl']} | "
                     f"{'-' if r['seconds'] is None else format(r['seconds'] * 1e3, '.3f')} | {ratio} | {peer} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--case", required=True, choices=sorted(CASES))
    parser.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    parser.add_argument("--n", type=int, default=None, help="elements (default: 2^27 on cuda, 10^7 on cpu)")
    parser.add_argument("--repeats", type=int, default=None, help="timed calls (default: 30 on cuda, 7 on cpu)")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--sweep", action="store_true", help="also time the kernels' tile variants")
    args = parser.parse_args(argv)
    args.n = args.n or DEFAULT_N[args.device]
    args.repeats = args.repeats or (30 if args.device == "cuda" else 7)
    meta = dict(case=args.case, device=args.device, n=args.n, repeats=args.repeats, cpu_count=os.cpu_count())
    if args.device == "cuda":
        import torch

        meta["gpu"] = torch.cuda.get_device_name()
    rows = CASES[args.case][args.device](args)
    args.out.mkdir(parents=True, exist_ok=True)
    stem = args.out / f"{args.case}-{args.device}"
    stem.with_suffix(".json").write_text(json.dumps(dict(meta=meta, rows=rows), indent=1))
    table = markdown(rows)
    stem.with_suffix(".md").write_text(f"# {args.case} on {meta.get('gpu', 'cpu')}\n\n{table}")
    print(table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
