"""The tuned choice timed next to every fixed choice, for the benchmark.

``benchmarks/sweep.py --compare-tuned`` calls :func:`compare_tuned` per case:
the scan as every scan runs it (the tuned table, ``strategy="auto"``) against
the key's default tile, every fixed tile the sweep times and every
other strategy, in interleaved rounds, and reports whether the tuned choice is
at least as fast as the fastest fixed one within the measured noise
(docs/design/tuning-method.md, "Checking it").  torch and the scan path are
imported when a comparison runs.
"""

from __future__ import annotations

import statistics
from typing import Callable, Sequence

from ...._arrays import as_torch
from ...._environment import interpreter_mode
from ..planning import planner
from ..planning.registry import STRATEGY_NAMES
from ..planning.tiles import TileConfig, default_config
from . import first_use
from .candidates import BENCH_TILES, available_strategies
from ..planning.keys import Candidate, tile_dict
from .measure import cuda_event_timer, repeated_scan, scan_request

__all__ = ["compare_tuned", "fixed_choices", "resolved_choice", "format_comparison"]

# Strategies whose tile the planner looks up by name; the others' launchers ask
# for the tile of the tuned auto choice.
_NAMED_TILE = ("decoupled_lookback", "chained")


def resolved_choice(x, op="add", *, axis=None) -> tuple[str, TileConfig]:
    """(strategy, tile) that ``scan(x, op, axis=axis)`` runs with here and now:
    the tuned table's (tuning it on first use), else the defaults."""
    from ..scan import route as scan  # loads triton

    request = scan_request(x, op, axis=axis)
    first_use.ensure_for(request)
    _, M, K = scan._layout(request)
    accs = [scan.torch_dtype("uint8" if d == "bool" else d) for d in request.acc_dtypes]
    device = as_torch(request.fields[0]).device
    interpreter = interpreter_mode()
    strategy = scan.strategy_for(request.config, device, accs, M, K, interpreter)
    tile = planner.choose_config(device, sum(a.itemsize for a in accs), any(a.is_floating_point for a in accs),
                                 M, K, interpreter, accs=accs, monoid=request.config.monoid,
                                 strategy=strategy if strategy in _NAMED_TILE else None)
    return strategy, tile


def fixed_choices(nbytes: int, floating: bool, tiles=None, strategies=None, *, K: int = 1,
                  n: int | None = None) -> list[tuple[str, Candidate]]:
    """The fixed (untuned) choices a comparison times: the decoupled look-back on
    the key's default tile (``n`` elements per lane in ``K`` streams,
    :func:`..planning.tiles.default_config`) and on every (block, warps, window) of
    ``tiles`` (default :data:`.candidates.BENCH_TILES`), and every other
    available strategy of ``strategies`` (default all) on the default tile.
    (label, Candidate)."""
    d = default_config(nbytes, floating, K, n)
    out = {Candidate("decoupled_lookback", d): "default table (no tuning)"}
    for block, warps, window in (BENCH_TILES if tiles is None else tiles):
        c = Candidate("decoupled_lookback", TileConfig(block, warps, window, d.max_kb, d.packed))
        out.setdefault(c, c.label)
    for s in available_strategies(strategies or STRATEGY_NAMES):
        if s != "decoupled_lookback":
            out.setdefault(Candidate(s, d), f"{s} (default tile)")
    return [(label, c) for c, label in out.items()]


def compare_tuned(x, op="add", *, axis=None, out=None, tiles=None, strategies=None,
                  timer: Callable[[Callable[[], object]], float] | None = None, rounds: int = 5,
                  repeats: int = 15, check: Callable[[object], bool] | None = None,
                  noise_floor: float = 0.0) -> dict:
    """Time ``scan(x, op, axis=axis, out=out)`` as every scan runs it (the tuned
    table, strategy "auto") next to each fixed choice of :func:`fixed_choices`
    (its tile forced, its strategy named), so the benchmark can show that the
    tuned choice is at least as fast as every fixed one, within the noise.

    Each choice runs once first (compiles; a missing table key is tuned then,
    as on first use) and, with ``check(result) -> bool``, is verified.  Then
    ``rounds`` rounds each time every choice once with ``timer(fn) -> seconds``
    (default: CUDA events, median of ``repeats``), the order rotated every round
    so that drift spreads evenly.  Per choice: the median over rounds and the
    relative range (max - min) / median; the noise is the median of those
    ranges (at least ``noise_floor``).  ``ok``: the tuned median is at most the
    fastest verified fixed median times (1 + noise).
    """
    import torch

    from ..scan import route as scan  # loads triton

    if isinstance(rounds, bool) or not isinstance(rounds, int) or rounds < 1:
        raise ValueError(f"rounds: expected an integer >= 1, got {rounds!r}")
    first = x[0] if isinstance(x, tuple) else x
    if not torch.is_tensor(first):
        raise TypeError(f"x: expected a torch tensor (or a tuple of them), got {type(first).__name__}")
    if timer is None:
        timer = cuda_event_timer(repeats)
    strategy, tile = resolved_choice(x, op, axis=axis)
    request = scan_request(x, op, axis=axis)
    accs = [getattr(torch, "uint8" if d == "bool" else d) for d in request.acc_dtypes]
    nbytes, floating = sum(a.itemsize for a in accs), any(a.is_floating_point for a in accs)
    _, M, K = scan._layout(request)
    choices = [("tuned", None)] + fixed_choices(nbytes, floating, tiles, strategies, K=K, n=M * K)
    sync = torch.cuda.synchronize if first.is_cuda else (lambda: None)
    # One request per choice, checked once; the tuned one names no strategy.
    requests = {c: scan_request(x, op, axis=axis, out=out, strategy=c.strategy if c else "auto")
                for _, c in choices}

    def forced(c):
        """c's tile forced (None: the tuned choice, nothing forced).  Set around the
        timer, as benchmarks/sweep.py does, not per call."""
        return planner.override(c.tile if c is not None else None)

    def once(c):
        results = scan.run_scan(requests[c])
        return tuple(results) if requests[c].struct else results[0]

    rows = []
    for label, c in choices:
        row = {"label": label, "strategy": c.strategy if c else strategy,
               **tile_dict(c.tile if c else tile), "fixed": c is not None, "samples": [],
               "verified": None, "error": None}
        try:
            with forced(c):
                result = once(c)
            sync()
            if check is not None:
                row["verified"] = bool(check(result))
            del result
        except Exception as exc:  # noqa: BLE001 - reported in the row
            row["error"] = f"{type(exc).__name__}: {exc}"[:300]
        rows.append((row, c))
    live = [(row, c) for row, c in rows if row["error"] is None]
    for r in range(rounds):
        if not live:
            break
        k = r % len(live)
        for row, c in live[k:] + live[:k]:
            try:
                with forced(c):
                    row["samples"].append(float(timer(repeated_scan(scan.run_scan, requests[c], x, out))))
            except Exception as exc:  # noqa: BLE001 - reported in the row
                row["error"] = f"{type(exc).__name__}: {exc}"[:300]
        live = [(row, c) for row, c in live if row["error"] is None]
    spreads = []
    for row, _ in rows:
        s = row["samples"]
        row["seconds"] = statistics.median(s) if s and row["error"] is None else None
        row["spread"] = (max(s) - min(s)) / row["seconds"] if row["seconds"] else None
        if row["spread"] is not None:
            spreads.append(row["spread"])
    noise = max(noise_floor, statistics.median(spreads)) if spreads else noise_floor
    tuned = rows[0][0]
    fixed = [row for row, _ in rows[1:] if row["seconds"] is not None and row["verified"] is not False]
    best = min(fixed, key=lambda r: r["seconds"]) if fixed else None
    ratio = (best["seconds"] / tuned["seconds"]) if best and tuned["seconds"] else None
    ok = bool(ratio is not None and tuned["verified"] is not False
              and tuned["seconds"] <= best["seconds"] * (1 + noise))
    shape = tuple(first.shape)
    return {"shape": shape, "dtype": str(first.dtype).replace("torch.", ""), "axis": axis,
            "op": getattr(op, "name", op), "tuned": {"strategy": strategy, **tile_dict(tile)},
            "tuned_seconds": tuned["seconds"], "best_fixed": best["label"] if best else None,
            "best_fixed_seconds": best["seconds"] if best else None,
            "best_fixed_over_tuned": ratio, "noise": noise, "ok": ok, "rounds": rounds,
            "choices": [row for row, _ in rows]}


def format_comparison(records: Sequence[dict]) -> str:
    """Comparison records (:func:`compare_tuned`, with a "case" name) as text:
    per case the tuned choice, the fastest fixed one, and every choice."""
    lines = []
    for rec in records:
        t = rec["tuned"]
        ratio = rec["best_fixed_over_tuned"]
        lines.append(f"{rec.get('case', rec['shape'])}: tuned = {t['strategy']} b={t['block']} w={t['num_warps']} "
                     f"win={t['window']}; best fixed = {rec['best_fixed']}; best fixed / tuned = "
                     + (f"{ratio:.3f}" if ratio else "-") + f" (noise {rec['noise']:.1%}) "
                     + ("OK" if rec["ok"] else "SLOWER THAN A FIXED CHOICE"))
        for row in rec["choices"]:
            sec = row["seconds"]
            state = row["error"] or ("" if row["verified"] in (None, True) else "WRONG RESULT")
            lines.append(f"    {row['label']:44s} " + (f"{sec * 1e6:10.1f} us  spread {row['spread']:6.1%}"
                                                        if sec else f"{'-':>10s}") + (f"  {state}" if state else ""))
    return "\n".join(lines)
