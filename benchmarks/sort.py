"""Benchmarks of the sort family (sort, argsort, unique, run_length_encode) against
their peers, in one process.

    python benchmarks/sort.py --device cuda --out DIR
    python benchmarks/sort.py --device cpu --out DIR [--repeats 5]

Writes ``DIR/sort-<device>.json`` (one row per measurement, with the versions and
the machine's load) and ``DIR/sort-<device>.md`` (the table).  Every prefixscan
result is checked against its peer's before it is timed.

GPU (CUDA events, the median of ``--repeats`` calls after three warm-up calls; the
roof is a device copy of the keys, read once and written once, timed in the same
process):

* keys: int32 2^28, int64 2^27, float32 2^28 (``prefixscan.sort``); keys with int32
  values (2^28); ``argsort`` of int32 and float32 2^28 (int64 indices); peers CUB's
  radix sort through cuda.compute (``benchmarks/peers/cub_compute.py``: keys, keys
  with the values, keys with int64 indices for argsort) and ``torch.sort``
  (``stable=True`` for argsort);
* ``argsort`` of 2^24 keys below 8 with ``key_bits=3`` (expert ids) against a stable
  ``torch.sort`` and CUB's full-width sort of the keys with int64 indices;
* rows: (65536, 4096) float32 along the last axis against ``torch.sort(dim=-1)``;
* ``unique`` (sorted) and ``run_length_encode`` of 2^27 int32 against
  ``torch.unique`` and ``torch.unique_consecutive(return_counts=True)``, and the runs'
  kernel (``run_fields``) under a few other tiles.

CPU (wall-clock medians of ``--repeats`` calls after one warm-up call): ``argsort``
of 2^24 int32 and float32 keys against ``numpy.argsort(kind="stable")``, ``sort``
against ``numpy.sort(kind="stable")``, int64 keys, float32 keys with int32 values,
``key_bits=3``, rows of (4096, 4096) float32, ``unique`` against ``numpy.unique`` and
``run_length_encode`` against NumPy's idiom (the run heads by ``flatnonzero`` of the
changes, the counts by ``diff``).  On a shared machine, take the medians as what
they are: the load average before and after is in the JSON.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from pathlib import Path

import numpy as np

import prefixscan as ps
from prefixscan.timing import median_cuda_seconds, median_host_seconds

sys.path.insert(0, str(Path(__file__).parent / "peers"))  # cub_compute, the CUB peers


def cpu_time(fn, repeats: int) -> float:
    """Median wall seconds of ``fn()`` after one warm-up call."""
    return median_host_seconds(fn, repeats)


def gpu_time(fn, repeats: int) -> float:
    return median_cuda_seconds(fn, repeats)


def row(case: str, dtype: str, n: int, impl: str, seconds, roof=None, peer=None, **extra) -> dict:
    r = dict(case=case, dtype=dtype, n=n, impl=impl, seconds=seconds,
             keys_per_s=n / seconds if seconds else None)
    if roof is not None and seconds:
        r["ratio_to_roof"] = roof / seconds
    if peer is not None and seconds:
        r["speedup_vs_peer"] = peer / seconds
    r.update(extra)
    return r


# ---------------------------------------------------------------------------
# GPU.

def _cub(keys, values=None):
    """``run()`` of CUB's radix sort (cuda.compute, planned), or the error that kept it from running."""
    try:
        import cub_compute  # benchmarks/peers/, on the path above

        return cub_compute.radix_sort(keys, values), None
    except Exception as exc:  # noqa: BLE001 - a peer that cannot run is reported, not fatal
        return None, f"{type(exc).__name__}: {exc}"[:300]


def _gpu_keys(dtype: str, n: int, gen):
    import torch

    if dtype.startswith("float"):
        return torch.randn(n, device="cuda", generator=gen, dtype=getattr(torch, dtype))
    info = torch.iinfo(getattr(torch, dtype))
    return torch.randint(info.min, info.max, (n,), device="cuda", generator=gen, dtype=getattr(torch, dtype))


def _copy_roof(x, repeats: int) -> float:
    import torch

    y = torch.empty_like(x)
    return gpu_time(lambda: y.copy_(x), repeats)


def _with_cub(rows: list, case: str, dtype: str, n: int, ours: float, roof: float, keys, values, repeats: int,
              label: str) -> None:
    """CUB's row after ours (the last row), and ours over CUB on ours."""
    run, error = _cub(keys, values)
    cub = gpu_time(run, repeats) if run else None
    rows[-1]["speedup_vs_cub"] = cub / ours if cub else None
    rows.append(row(case, dtype, n, label, cub, roof, error=error))


def gpu_keys(args, gen) -> list:
    import torch

    rows, r = [], args.repeats
    for dtype, log_n in (("int32", 28), ("int64", 27), ("float32", 28)):
        n = 1 << log_n
        x = _gpu_keys(dtype, n, gen)
        roof = _copy_roof(x, r)
        peer = torch.sort(x)
        assert torch.equal(ps.sort(x), peer.values), dtype
        del peer
        torch.cuda.empty_cache()
        peer = gpu_time(lambda: torch.sort(x), r)
        rows.append(row("keys", dtype, n, "torch.sort (keys and indices)", peer, roof))
        ours = gpu_time(lambda: ps.sort(x), r)
        rows.append(row("keys", dtype, n, "prefixscan.sort", ours, roof, peer))
        _with_cub(rows, "keys", dtype, n, ours, roof, x, None, r, "CUB radix sort (cuda.compute)")
        if dtype == "int64":
            del x
            continue
        if dtype == "int32":
            v = torch.randint(0, 1 << 30, (n,), device="cuda", generator=gen, dtype=torch.int32)
            keys, moved = ps.sort(x, values=v)
            order = torch.sort(x, stable=True).indices
            assert torch.equal(moved, v[order]), "values"
            del keys, moved, order
            ours = gpu_time(lambda: ps.sort(x, values=v), r)
            rows.append(row("keys + int32 values", dtype, n, "prefixscan.sort(values=)", ours, roof))
            _with_cub(rows, "keys + int32 values", dtype, n, ours, roof, x, v, r, "CUB radix sort (cuda.compute)")
            del v
        assert torch.equal(ps.argsort(x), torch.sort(x, stable=True).indices), dtype
        peer = gpu_time(lambda: torch.sort(x, stable=True), r)
        rows.append(row("argsort", dtype, n, "torch.sort(stable=True)", peer, roof))
        ours = gpu_time(lambda: ps.argsort(x), r)
        rows.append(row("argsort", dtype, n, "prefixscan.argsort", ours, roof, peer))
        index = torch.arange(n, device="cuda", dtype=torch.int64)
        _with_cub(rows, "argsort", dtype, n, ours, roof, x, index, r, "CUB radix sort, int64 indices (cuda.compute)")
        del index
        del x
        torch.cuda.empty_cache()
    return rows


def gpu_keys32(args, gen) -> list:
    """int32 keys, 2^28: prefixscan.sort against CUB only (a tile sweep's probe)."""
    import torch

    r, n = args.repeats, 1 << 28
    x = _gpu_keys("int32", n, gen)
    roof = _copy_roof(x, r)
    assert torch.equal(ps.sort(x), torch.sort(x).values)
    ours = gpu_time(lambda: ps.sort(x), r)
    rows = [row("keys", "int32", n, "prefixscan.sort", ours, roof)]
    _with_cub(rows, "keys", "int32", n, ours, roof, x, None, r, "CUB radix sort (cuda.compute)")
    return rows


def gpu_experts(args, gen) -> list:
    import torch

    rows, r, n = [], args.repeats, 1 << 24
    x = torch.randint(0, 8, (n,), device="cuda", generator=gen, dtype=torch.int32)
    roof = _copy_roof(x, r)
    assert torch.equal(ps.argsort(x, key_bits=3), torch.sort(x, stable=True).indices)
    peer = gpu_time(lambda: torch.sort(x, stable=True), r)
    rows.append(row("argsort, keys < 8", "int32", n, "torch.sort(stable=True)", peer, roof))
    ours = gpu_time(lambda: ps.argsort(x, key_bits=3), r)
    rows.append(row("argsort, keys < 8", "int32", n, "prefixscan.argsort(key_bits=3)", ours, roof, peer))
    index = torch.arange(n, device="cuda", dtype=torch.int64)
    _with_cub(rows, "argsort, keys < 8", "int32", n, ours, roof, x, index, r, "CUB radix sort, all 32 bits")
    return rows


def gpu_rows(args, gen) -> list:
    import torch

    rows, r = [], args.repeats
    x = torch.randn((65536, 4096), device="cuda", generator=gen)
    roof = _copy_roof(x, r)
    assert torch.equal(ps.sort(x), torch.sort(x, dim=-1).values)
    peer = gpu_time(lambda: torch.sort(x, dim=-1), r)
    rows.append(row("rows (65536, 4096), axis -1", "float32", x.numel(), "torch.sort(dim=-1)", peer, roof))
    rows.append(row("rows (65536, 4096), axis -1", "float32", x.numel(), "prefixscan.sort",
                    gpu_time(lambda: ps.sort(x), r), roof, peer))
    rows.append(row("rows (65536, 4096), axis -1", "float32", x.numel(), "prefixscan.argsort",
                    gpu_time(lambda: ps.argsort(x), r), roof, peer))
    return rows


def gpu_grouping(args, gen) -> list:
    import torch

    from prefixscan.primitives.compaction import triton as compaction

    rows, r, n = [], args.repeats, 1 << 27
    x = torch.randint(0, 1 << 24, (n,), device="cuda", generator=gen, dtype=torch.int32)
    roof = _copy_roof(x, r)
    assert torch.equal(ps.unique(x), torch.unique(x))
    peer = gpu_time(lambda: torch.unique(x), r)
    rows.append(row("unique", "int32", n, "torch.unique", peer, roof))
    rows.append(row("unique", "int32", n, "prefixscan.unique", gpu_time(lambda: ps.unique(x), r), roof, peer))
    peer = gpu_time(lambda: torch.unique(x, return_counts=True), r)
    rows.append(row("unique, counts", "int32", n, "torch.unique(return_counts=True)", peer, roof))
    rows.append(row("unique, counts", "int32", n, "prefixscan.unique(return_counts=True)",
                    gpu_time(lambda: ps.unique(x, return_counts=True), r), roof, peer))
    del x
    lengths = torch.randint(1, 8, (n // 4 + 16,), device="cuda", generator=gen)
    x = torch.repeat_interleave(torch.randint(0, 1 << 20, lengths.shape, device="cuda", generator=gen,
                                              dtype=torch.int32), lengths)[:n].contiguous()
    for g, e in zip(ps.run_length_encode(x), torch.unique_consecutive(x, return_counts=True)):
        assert torch.equal(g, e), "run_length_encode"
    peer = gpu_time(lambda: torch.unique_consecutive(x, return_counts=True), r)
    rows.append(row("run_length_encode, runs 1-7", "int32", n, "torch.unique_consecutive(return_counts=True)", peer,
                    roof))
    rows.append(row("run_length_encode, runs 1-7", "int32", n, "prefixscan.run_length_encode",
                    gpu_time(lambda: ps.run_length_encode(x), r), roof, peer))
    expected = ps.run_length_encode(x)
    for tile in _runs_variants():  # the runs' kernel under other tiles (the default's row is above)
        (values,), counts = compaction.run_fields([x], equal_nan=False, lengths=True, tile=tile)
        assert torch.equal(values, expected[0]) and torch.equal(counts, expected[1]), tile
        t = gpu_time(lambda: compaction.run_fields([x], equal_nan=False, lengths=True, tile=tile), r)
        rows.append(row("run_length_encode, runs 1-7", "int32", n, f"kernel {tile}", t, roof, peer))
    return rows


def _runs_variants() -> list:
    """Tiles of the runs' selection besides the default (2048 on 4 warps, rows of 16):
    8 and 16 elements a thread, the store form forced."""
    from prefixscan.primitives.compaction.triton import CompactionTile

    return [CompactionTile(1024, 4, rows=16), CompactionTile(4096, 8, rows=16), CompactionTile(4096, 4, rows=16),
            CompactionTile(2048, 4, rows=8), CompactionTile(2048, 4, rows=16, store="dense")]


# ---------------------------------------------------------------------------
# CPU.

def _cpu_keys(rng, dtype: str, n: int) -> np.ndarray:
    if dtype.startswith("float"):
        return rng.standard_normal(n).astype(dtype)
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)


def _pair(rows, case, dtype, n, ours_label, ours, peer_label, peer, repeats, check) -> None:
    """Time the peer, then ours (after ``check``), and record both."""
    check()
    t_peer = cpu_time(peer, repeats)
    rows.append(row(case, dtype, n, peer_label, t_peer))
    rows.append(row(case, dtype, n, ours_label, cpu_time(ours, repeats), None, t_peer))


def cpu_cases(args) -> list:
    rng = np.random.default_rng(1)
    rows, r, n = [], args.repeats, args.n
    for dtype in ("int32", "float32"):
        x = _cpu_keys(rng, dtype, n)
        _pair(rows, "argsort", dtype, n, "prefixscan.argsort", lambda: ps.argsort(x),
              'numpy.argsort(kind="stable")', lambda: np.argsort(x, kind="stable"), r,
              lambda: np.testing.assert_array_equal(ps.argsort(x), np.argsort(x, kind="stable")))
        _pair(rows, "keys", dtype, n, "prefixscan.sort", lambda: ps.sort(x), 'numpy.sort(kind="stable")',
              lambda: np.sort(x, kind="stable"), r, lambda: np.testing.assert_array_equal(ps.sort(x), np.sort(x)))
    x = _cpu_keys(rng, "int64", n)
    _pair(rows, "argsort", "int64", n, "prefixscan.argsort", lambda: ps.argsort(x), 'numpy.argsort(kind="stable")',
          lambda: np.argsort(x, kind="stable"), r,
          lambda: np.testing.assert_array_equal(ps.argsort(x), np.argsort(x, kind="stable")))
    x = _cpu_keys(rng, "float32", n)
    v = rng.integers(0, 1 << 30, n).astype(np.int32)

    def numpy_pairs():
        p = np.argsort(x, kind="stable")
        return x[p], v[p]

    _pair(rows, "keys + int32 values", "float32", n, "prefixscan.sort(values=)", lambda: ps.sort(x, values=v),
          "numpy.argsort, then both taken", numpy_pairs, r,
          lambda: np.testing.assert_array_equal(ps.sort(x, values=v)[1], numpy_pairs()[1]))
    x = rng.integers(0, 8, n).astype(np.int32)
    _pair(rows, "argsort, keys < 8", "int32", n, "prefixscan.argsort(key_bits=3)", lambda: ps.argsort(x, key_bits=3),
          'numpy.argsort(kind="stable")', lambda: np.argsort(x, kind="stable"), r,
          lambda: np.testing.assert_array_equal(ps.argsort(x, key_bits=3), np.argsort(x, kind="stable")))
    x = rng.standard_normal((4096, 4096)).astype(np.float32)
    _pair(rows, "rows (4096, 4096), axis -1", "float32", x.size, "prefixscan.sort", lambda: ps.sort(x),
          'numpy.sort(axis=-1, kind="stable")', lambda: np.sort(x, axis=-1, kind="stable"), r,
          lambda: np.testing.assert_array_equal(ps.sort(x), np.sort(x, axis=-1)))
    m = n // 4
    x = rng.integers(0, 1 << 20, m).astype(np.int32)
    _pair(rows, "unique", "int32", m, "prefixscan.unique", lambda: ps.unique(x), "numpy.unique",
          lambda: np.unique(x), r, lambda: np.testing.assert_array_equal(ps.unique(x), np.unique(x)))
    x = np.repeat(rng.integers(0, 1 << 20, m // 4).astype(np.int32), rng.integers(1, 8, m // 4))

    def numpy_runs():
        starts = np.flatnonzero(np.concatenate(([True], x[1:] != x[:-1])))
        return x[starts], np.diff(starts, append=x.size)

    _pair(rows, "run_length_encode, runs 1-7", "int32", x.size, "prefixscan.run_length_encode",
          lambda: ps.run_length_encode(x), "NumPy: flatnonzero of the changes, diff", numpy_runs, r,
          lambda: [np.testing.assert_array_equal(a, b) for a, b in zip(ps.run_length_encode(x), numpy_runs())])
    return rows


# ---------------------------------------------------------------------------

def markdown(rows: list) -> str:
    lines = ["| case | dtype | n | impl | time (ms) | keys/s | ratio to roof | vs peer | vs CUB |",
             "|---|---|---:|---|---:|---:|---:|---:|---:|"]
    for r in rows:
        t = "-" if r["seconds"] is None else f"{r['seconds'] * 1e3:.3f}"
        rate = f"{r['keys_per_s'] / 1e9:.3f} G" if r.get("keys_per_s") else ""
        roof = f"{r['ratio_to_roof']:.2f}" if r.get("ratio_to_roof") is not None else ""
        peer = f"{r['speedup_vs_peer']:.2f}x" if r.get("speedup_vs_peer") is not None else ""
        cub = f"{r['speedup_vs_cub']:.2f}x" if r.get("speedup_vs_cub") is not None else ""
        lines.append(f"| {r['case']} | {r['dtype']} | {r['n']} | {r['impl']} | {t} | {rate} | {roof} | {peer} "
                     f"| {cub} |")
    return "\n".join(lines) + "\n"


def versions() -> dict:
    out = {"prefixscan": ps.__version__, "numpy": np.__version__, "python": sys.version.split()[0]}
    for name in ("numba", "torch", "triton"):
        try:
            out[name] = __import__(name).__version__
        except ImportError:
            out[name] = None
    return out


GPU_GROUPS = {"keys": gpu_keys, "keys32": gpu_keys32, "experts": gpu_experts, "rows": gpu_rows,
              "grouping": gpu_grouping}


def parse_tile(text: str):
    """``--tile block=1024,num_warps=8,window=16,rank=columns``: a SortTile (the GPU tile's
    values where not given)."""
    import dataclasses

    from prefixscan.primitives.sort.triton import GPU_TILE

    fields = {f.name: f.type for f in dataclasses.fields(GPU_TILE)}
    given = {}
    for part in filter(None, text.split(",")):
        name, _, value = part.partition("=")
        if name not in fields or not value:
            raise ValueError(f"--tile: expected NAME=VALUE with NAME one of {', '.join(fields)}, got {part!r}")
        given[name] = value if name == "rank" else int(value)
    return dataclasses.replace(GPU_TILE, **given)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--repeats", type=int, default=None, help="timed calls (default: 20 on cuda, 5 on cpu)")
    parser.add_argument("--n", type=int, default=1 << 24, help="CPU keys (default 2^24)")
    parser.add_argument("--cases", default="keys,experts,rows,grouping",
                        help=f"GPU case groups, comma-separated, of {', '.join(GPU_GROUPS)} (default: all but keys32)")
    parser.add_argument("--tile", default=None,
                        help="the GPU sort's tile, e.g. block=1024,num_warps=8,window=4,rank=columns")
    args = parser.parse_args(argv)
    try:
        tile = parse_tile(args.tile) if args.tile else None
    except ValueError as exc:
        parser.error(str(exc))
    groups = args.cases.split(",")
    unknown = sorted(set(groups) - set(GPU_GROUPS))
    if unknown:
        parser.error(f"--cases: unknown {', '.join(unknown)}; choose from {', '.join(GPU_GROUPS)}")
    args.repeats = args.repeats or (20 if args.device == "cuda" else 5)
    meta = dict(device=args.device, repeats=args.repeats, cpu_count=os.cpu_count(), versions=versions(),
                load_before=os.getloadavg(), command=" ".join(["python", "benchmarks/sort.py"] + sys.argv[1:]))
    args.out.mkdir(parents=True, exist_ok=True)
    stem = args.out / f"sort-{args.device}{'-' + args.tile.replace('=', '').replace(',', '-') if args.tile else ''}"
    rows: list = []

    def write() -> str:  # after each group: a call cut short keeps what it measured
        meta["load_after"] = os.getloadavg()
        stem.with_suffix(".json").write_text(json.dumps(dict(meta=meta, rows=rows), indent=1))
        table = markdown(rows)
        stem.with_suffix(".md").write_text(f"# sort on {meta.get('gpu', 'cpu')}\n\n{table}")
        return table

    if args.device == "cuda":
        import torch

        from prefixscan.primitives.sort.triton import GPU_TILE, forced_tile

        meta["gpu"] = torch.cuda.get_device_name()
        meta["tile"] = str(tile or GPU_TILE)
        gen = torch.Generator(device="cuda").manual_seed(1)
        with forced_tile(tile) if tile else contextlib.nullcontext():
            for group in groups:
                rows += GPU_GROUPS[group](args, gen)
                table = write()
    else:
        rows = cpu_cases(args)
        table = write()
    print(table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
