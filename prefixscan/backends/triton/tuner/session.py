"""``prefixscan tune`` and ``prefixscan info``: tune every key of a grid of
dtypes, operator classes, layouts and sizes with the full candidate grid, and
describe the tables.

The budget of a whole run is shared out among the keys left, the first key of
each dtype/operator/layout group weighted more (it compiles the kernel
variants that the other sizes reuse).  The table is written after each key,
so an interrupted run keeps what it measured.  Nothing here imports torch or
triton until a run starts.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Mapping, Sequence

from ....monoid import Monoid, accumulator_dtype_name
from .. import unavailable_reason as backend_unavailable_reason
from ..planning import sources, table
from ..planning.keys import BUCKETS, entry_key, size_bucket
from ..planning.registry import STRATEGY_NAMES
from ..planning.shipped import shipped_tables
from . import measure
from .candidates import available_strategies
from .first_use import autotune_enabled, first_use_budget
from .search import MIN_ROUNDS
from .store import store

__all__ = ["tune_all", "check_tune_args", "format_table", "info_lines", "unavailable_reason", "DEFAULT_DTYPES",
           "DEFAULT_SIZES", "OP_CLASSES", "LAYOUTS", "CLI_K", "COMPILE_WEIGHT", "MAX_LOG2"]

DEFAULT_DTYPES = ("int32", "float32", "int64", "float64")
DEFAULT_SIZES = tuple(rep for _, _, rep in BUCKETS)
OP_CLASSES = ("builtin", "user")
LAYOUTS = ("1d", "2d")
CLI_K = 4  # interleaved streams of the 2d layout's representative
#: Interleaved rounds of the finalists and of each duel in a full tune.  Three (first
#: use) let two tunes of the same H100 pick choices 2-4% apart on 3 of 16 keys, where
#: the finalists differed by about the noise; more rounds measure those differences
#: better and cost little next to compiling (docs/design/tuning-method.md).
TUNE_ROUNDS = 9
COMPILE_WEIGHT = 4  # budget share of a key that compiles its variants, against 1 for one that reuses them
MAX_LOG2 = 34  # largest size `prefixscan tune` accepts


def _affine(f, g):
    """Apply f = (a1, b1) first, then g = (a2, b2): h -> a2 (a1 h + b1) + b2."""
    a1, b1 = f
    a2, b2 = g
    return a1 * a2, a2 * b1 + b2


#: The representative of the ``user`` operator class: the affine maps of a
#: first-order linear recurrence on two fields (Blelloch 1990, section 1.4).
USER_MONOID = Monoid(_affine, (1, 0), name="affine")


def unavailable_reason() -> str:
    """Why ``prefixscan tune`` cannot run here ('' when it can)."""
    return backend_unavailable_reason("cuda")


def check_tune_args(dtypes, sizes, ops, layouts, strategies, budget, repeats, *, rounds: int = TUNE_ROUNDS) -> tuple:
    """The arguments of :func:`tune_all`, checked and normalized (lists); a bad
    one raises ValueError naming it."""
    import numpy as np

    def names(value, arg):
        if isinstance(value, str):
            value = [v.strip() for v in value.split(",") if v.strip()]
        try:
            value = list(value)
        except TypeError:
            raise ValueError(f"{arg}: expected a list of names, got {value!r}") from None
        if not value:
            raise ValueError(f"{arg}: empty")
        return value

    dtypes = names(dtypes, "dtypes")
    for d in dtypes:
        try:
            kind = np.dtype(d).kind
        except TypeError:
            kind = None
        if kind not in ("i", "u", "f"):
            raise ValueError(f"dtypes: {d!r} is not an integer or float dtype")
    sizes = names(sizes, "sizes") if isinstance(sizes, str) else list(sizes)
    buckets: dict = {}
    for i, e in enumerate(sizes):
        try:
            if isinstance(e, bool) or int(e) != float(e):
                raise ValueError
            sizes[i] = e = int(e)
        except (TypeError, ValueError):
            raise ValueError(f"sizes: expected log2 sizes such as 16,20,24,26, got {e!r}") from None
        if not 1 <= e <= MAX_LOG2:
            raise ValueError(f"sizes: log2 size {e} is out of range 1..{MAX_LOG2}")
        bucket = size_bucket(1 << e)
        other = buckets.setdefault(bucket, e)
        if other != e:
            raise ValueError(f"sizes: 2^{other} and 2^{e} fall in the same size bucket ({bucket}); "
                             "give one size per bucket")
    if not sizes:
        raise ValueError("sizes: empty")
    ops, layouts = names(ops, "ops"), names(layouts, "layouts")
    strategies = None if strategies is None else names(strategies, "strategies")
    for arg, values, allowed in (("ops", ops, OP_CLASSES), ("layouts", layouts, LAYOUTS),
                                 ("strategies", strategies or (), STRATEGY_NAMES)):
        unknown = [v for v in values if v not in allowed]
        if unknown:
            raise ValueError(f"{arg}: unknown {', '.join(map(repr, unknown))}; choose from {', '.join(allowed)}")
    if budget is not None and not (isinstance(budget, (int, float)) and budget > 0):
        raise ValueError(f"budget: expected seconds > 0 or None, got {budget!r}")
    if isinstance(repeats, bool) or not isinstance(repeats, int) or repeats < 1:
        raise ValueError(f"repeats: expected an integer >= 1, got {repeats!r}")
    if isinstance(rounds, bool) or not isinstance(rounds, int) or rounds < MIN_ROUNDS:
        raise ValueError(f"rounds: expected an integer >= {MIN_ROUNDS}, got {rounds!r}")
    return dtypes, sizes, ops, layouts, strategies


def _jobs(torch, dtypes, sizes, ops, layouts) -> list[tuple]:
    """(key, accs, monoid, K, n, budget weight) per key, largest size of each group first."""
    jobs, seen = [], set()
    for dtype in dtypes:
        acc = getattr(torch, accumulator_dtype_name(dtype))
        for opc in ops:
            accs = [acc] if opc == "builtin" else [acc, acc]
            monoid = None if opc == "builtin" else USER_MONOID
            for layout in layouts:
                K = 1 if layout == "1d" else CLI_K
                # The first key of a group compiles every kernel variant; the
                # other sizes reuse them and only measure.
                first = True
                for e in sorted(sizes, reverse=True):
                    n = 1 << e
                    key = entry_key(sum(a.itemsize for a in accs), acc.is_floating_point, opc, K, n)
                    if key not in seen:
                        seen.add(key)
                        jobs.append((key, accs, monoid, K, n, COMPILE_WEIGHT if first else 1))
                        first = False
    return jobs


def tune_all(*, device: str = "cuda", dtypes: Sequence[str] = DEFAULT_DTYPES,
             sizes: Sequence[int] = DEFAULT_SIZES, ops: Sequence[str] = OP_CLASSES,
             layouts: Sequence[str] = LAYOUTS, strategies: Sequence[str] | None = None,
             budget: float | None = None, repeats: int = 15, rounds: int = TUNE_ROUNDS, stream=None) -> dict:
    """Tune every key of ``dtypes`` x operator classes ``ops`` x ``layouts`` x
    ``sizes`` (log2, one per size bucket) on ``device`` with the full candidate
    grid, and write the table after each key (so an interrupted run keeps what
    it measured).  ``budget``: seconds for the whole run, shared out among the
    keys left, the first key of each dtype/operator/layout group weighted
    :data:`COMPILE_WEIGHT` times the others (it compiles the kernel variants
    that the other sizes reuse).  Returns ``{"gpu", "version", "path", "entries", "failed",
    "strategies", "seconds"}``; progress goes to ``stream`` (stderr)."""
    dtypes, sizes, ops, layouts, strategies = check_tune_args(dtypes, sizes, ops, layouts, strategies,
                                                              budget, repeats, rounds=rounds)
    import torch

    stream = stream if stream is not None else sys.stderr
    dev = torch.device(device)
    if dev.type != "cuda":
        raise ValueError(f"device: tuning needs a CUDA device, got {device!r}")
    if dev.index is None:
        dev = torch.device(dev.type, torch.cuda.current_device())
    tbl = table.table_for(table.gpu_name(dev))
    properties = table.gpu_properties(dev)
    jobs = _jobs(torch, dtypes, sizes, ops, layouts)
    entries, failed = {}, {}
    start = time.monotonic()
    for i, (key, accs, monoid, K, n, weight) in enumerate(jobs):
        share = None
        if budget is not None:
            left = max(0.0, budget - (time.monotonic() - start))
            share = left * weight / sum(job[-1] for job in jobs[i:])
        t0 = time.monotonic()
        print(f"[{i + 1}/{len(jobs)}] {key} (n = 2^{n.bit_length() - 1})", file=stream, flush=True)
        try:
            result = measure.tune_workload(dev, accs, monoid, K, n, strategies=strategies, budget=share,
                                           repeats=repeats, rounds=rounds)
        except Exception as exc:  # noqa: BLE001 - reported, the run goes on
            failed[key] = f"{type(exc).__name__}: {exc}"[:300]
            print(f"    FAILED {failed[key]}", file=stream, flush=True)
            continue
        record = result.to_record(n=n, K=K, source="prefixscan tune", budget=share,
                                  rounds=rounds)
        store(tbl, key, record, properties=properties)
        entries[key] = record
        for c, why in result.excluded.items():
            print(f"    excluded {c.label}: {why}", file=stream, flush=True)
        best, base = result.seconds(result.best), result.seconds(result.default)
        print(f"    {result.best.label}: {best * 1e6:.1f} us, default {base * 1e6:.1f} us, noise "
              f"{result.noise:.1%}, {len(result.samples)} measured, {len(result.skipped)} skipped, "
              f"{time.monotonic() - t0:.1f} s", file=stream, flush=True)
    return {"gpu": tbl.gpu, "version": tbl.version, "path": str(tbl.path), "entries": entries,
            "failed": failed, "strategies": available_strategies(strategies or STRATEGY_NAMES),
            "seconds": time.monotonic() - start}


def format_table(entries: Mapping[str, dict]) -> str:
    """The tuned entries as a text table."""
    rows = [("key", "strategy", "block", "warps", "window", "tuned us", "default us", "gain",
             "deterministic", "excluded")]
    for key, r in sorted(entries.items()):
        t = r["tile"]
        best, base = r.get("best_seconds"), r.get("default_seconds")
        gain = f"{base / best:.2f}x" if best and base else "-"
        rows.append((key, r["strategy"], str(t["block"]), str(t["num_warps"]), str(t["window"]),
                     f"{best * 1e6:.1f}" if best else "-", f"{base * 1e6:.1f}" if base else "-", gain,
                     str(r.get("deterministic_strategy") or "-"), str(len(r.get("excluded") or ()))))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows)


def info_lines(gpu_names: Sequence[str | table.GpuProperties] | None = None) -> list[str]:
    """What ``prefixscan info`` says about tuning: cache directory, first-use
    tuning, and per GPU which table it uses (user, shipped, closest shipped for
    <GPU>, a user table over one of those, or none; :mod:`..planning.sources`) with the
    files.  ``gpu_names``: names or :class:`..planning.table.GpuProperties` (default: this
    machine's GPUs, with their SM counts and compute capabilities)."""
    d = table.cache_dir()
    source = ("PREFIXSCAN_CACHE_DIR" if os.environ.get("PREFIXSCAN_CACHE_DIR") else
              "XDG_CACHE_HOME" if os.environ.get("XDG_CACHE_HOME") else "default")
    lines = [f"  cache dir: {d} ({source})",
             f"  first-use tuning: {'on' if autotune_enabled() else 'off'} (PREFIXSCAN_AUTOTUNE), "
             f"budget {first_use_budget():g} s (PREFIXSCAN_AUTOTUNE_BUDGET), only on GPUs no shipped table serves"]
    if gpu_names is not None:
        gpus = [g if isinstance(g, table.GpuProperties) else table.GpuProperties(g) for g in gpu_names]
    else:
        gpus = []
        try:
            import torch

            if torch.cuda.is_available():
                gpus = [table.gpu_properties(torch.device("cuda", i)) for i in range(torch.cuda.device_count())]
        except Exception:  # noqa: BLE001 - torch absent or broken: no GPU to describe
            gpus = []
    for i, gpu in enumerate(gpus):
        label, detail = sources.describe(gpu)
        arch = (f" (compute capability {gpu.capability[0]}.{gpu.capability[1]}, {gpu.sm_count} SMs)"
                if gpu.known else "")
        lines.append(f"  cuda:{i} {gpu.name}{arch}: table: {label}")
        lines.extend(f"      {line}" for line in detail)
    if not gpus:
        files = sorted(d.glob("tuning-*.json")) if d.is_dir() else []
        shipped = ", ".join(t.gpu.name for t in shipped_tables()) or "none"
        lines.append(f"  no CUDA device: tables are per GPU; {len(files)} table file(s) in the cache dir; "
                     f"shipped tables: {shipped}")
    return lines
