"""Auto-tuning of the GPU scan (issue 5): measure the candidates on this GPU, keep
the fastest one whose result is right, and cache the choice on disk.

What is tuned, per *key*: the tile (elements per tile, warps, look-back window;
:class:`.tiles.TileConfig`) and the meta-strategy (decoupled look-back,
chained, and the strategies of :mod:`.strategies` once their launchers can be
imported).  A key is coarse on purpose: accumulator bytes per element summed
over the fields, floating or not, operator class (``builtin``: a built-in
operator on one field; ``user``: a user monoid or several fields), layout
(``1d``: K == 1; ``2d``: interleaved streams, K > 1) and a size bucket of the
elements per lane, M * K (log2 ranges <= 16, 17..21, 22..25, >= 26).  No call
size and no batch size gets an entry of its own: a new length or a new number
of lanes never retunes.

Why measure instead of deriving the tiles from a model: the papers this
library builds on both found that the best configuration depends on the GPU
and the problem size in ways nobody predicts well.  SAM (Maleki, Yang and
Burtscher, PLDI 2016, seed ``002``) ships an auto-tuner that runs when SAM is
installed and picks the elements per thread for ranges of problem sizes.
Merrill and Grimshaw (seed ``000``, section 4.2) survey data-movement
configurations per GPU with an auto-tuning pass, having measured up to 1.3x
(in-out) and 2.1x (in-only) between configurations they considered
reasonable, and tune their grid size C per GPU the same way.  This module does
the same for the Triton kernels, per GPU name.

Layers, each usable alone:

* keys: :func:`size_bucket`, :func:`op_class`, :func:`entry_key`;
* candidates: :func:`candidate_grid` (every fixed tile ``bench/sweep.py``
  tries is in it, so the tuned choice is measured against each of them);
* the search: :func:`search`, pure logic on an injected ``measure(candidate) ->
  seconds`` and ``verify(candidate) -> bool`` (tested without a GPU): median
  timings, the few fastest re-measured in interleaved rounds, a change from the
  default only when it wins by more than the measured noise;
* the device side: :func:`tune_workload` builds ``measure`` (CUDA events,
  median of repeats, device time) and ``verify`` (against the decoupled
  look-back default on fresh random non-zero data; bitwise for integers);
* the disk cache: :func:`cache_dir`, :func:`cache_path`, :func:`load_table`,
  :func:`save_table` (JSON, one file per GPU name and library version, written
  atomically; a corrupt or foreign file is ignored with a warning);
* the lookup behind :func:`.planner.choose_config` and
  :func:`.planner.tuned_strategy`: :func:`lookup`, which on a GPU tunes a
  missing key once per process, within a few seconds (first use);
* :func:`compare_tuned`: the tuned choice timed next to every fixed choice, for
  the benchmark (``python bench/sweep.py --compare-tuned``).

Environment (read when a GPU's table is first needed; :func:`reset` re-reads):

``PREFIXSCAN_CACHE_DIR``
    directory of the tables (default ``$XDG_CACHE_HOME/prefixscan``, else
    ``~/.cache/prefixscan``).
``PREFIXSCAN_AUTOTUNE=0``
    no tuning on first use (a cached table is still used).
``PREFIXSCAN_AUTOTUNE_BUDGET``
    seconds a first-use tuning may take (default 3; compiling the tile
    variants takes most of it).

Nothing tunes in Triton's interpreter, on CPU tensors, under CUDA graph
capture, while a tile override is set (sweeps), or inside a tuning run (the
tuner's own scans name their strategy and tile, and a guard refuses re-entry).
"""

from __future__ import annotations

import dataclasses
import datetime
import functools
import json
import logging
import math
import os
import re
import statistics
import sys
import tempfile
import threading
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Mapping, Sequence

from ...timing import time_cuda_events
from . import planner
from .registry import DETERMINISTIC_STRATEGIES, STRATEGY_NAMES
from .tiles import TileConfig, default_config

log = logging.getLogger("prefixscan.tune")

FORMAT = "prefixscan-tuning/1"

#: Strategies the tuner tries, in order; those whose launcher cannot be imported are skipped.
STRATEGY_CANDIDATES = STRATEGY_NAMES
#: Strategies that combine tiles in a fixed order: deterministic=True picks among these.
_RUN_BY_LAUNCH = ("decoupled_lookback", "chained")  # launch._launch itself

#: (bucket, largest log2 size in it or None, log2 size it is tuned at)
BUCKETS = (("n<=2^16", 16, 16), ("2^17-2^21", 21, 20), ("2^22-2^25", 25, 24), ("n>=2^26", None, 26))
FIRST_USE_MAX_LOG2 = 24  # first-use tuning scans at most 2^24 elements
DEFAULT_BUDGET = 3.0  # seconds, first use
NOISE_FLOOR = 0.02  # a candidate must beat the default by more than this (and the measured noise)
FINALISTS = 3  # fastest candidates per pool re-measured
ROUNDS = 2  # extra measurements of every finalist
CLI_K = 4  # interleaved streams of the 2d layout's representative
COMPILE_WEIGHT = 4  # budget share of a key that compiles its variants, against 1 for one that reuses them
MAX_LOG2 = 34  # largest size `prefixscan tune` accepts

#: Every fixed (block, warps, window) that ``bench/sweep.py`` times (its CONFIGS):
#: all are candidates, so the tuned choice is measured against each of them.
BENCH_TILES = ((4096, 4, 32), (4096, 8, 32), (8192, 4, 32), (8192, 8, 32), (16384, 4, 32), (16384, 8, 32),
               (8192, 8, 16), (8192, 8, 64), (16384, 16, 32), (32768, 16, 32))
#: Register caps tried on the tuned decoupled look-back tile (:func:`refine_occupancy`),
#: as resident tiles per SM by warps per tile: caps of 128 and 96 registers for 4 warps,
#: 128 and 80 for 8 (tiles.register_cap).
OCCUPANCY_CANDIDATES = {4: (4, 5), 8: (2, 3)}
#: Neighbours outside the sweep: the smallest and largest 4-warp tiles.
EXTRA_TILES = ((2048, 4, 32), (32768, 4, 32))
#: Chained hand-off: one serial hand-off per tile, so larger tiles are the ones worth trying.
CHAINED_TILES = ((16384, 4), (32768, 8))


class TuningCacheWarning(UserWarning):
    """The tuning cache or a first-use tuning failed; scans go on with the defaults."""


class TuningError(RuntimeError):
    """A tuning run could not measure its reference (the default choice)."""


# ---------------------------------------------------------------------------
# Keys.

def size_bucket(n: int) -> str:
    """The size bucket of ``n`` elements per lane (a log2 range, never n itself)."""
    return _bucket_of_log2(max(int(n) - 1, 0).bit_length())  # n <= 2^e


def _bucket_of_log2(e: int) -> str:
    for name, top, _ in BUCKETS:
        if top is None or e <= top:
            return name
    raise AssertionError("unreachable")


def bucket_size(bucket: str) -> int:
    """The size (elements) a bucket is tuned at."""
    for name, _, rep in BUCKETS:
        if name == bucket:
            return 1 << rep
    raise ValueError(f"bucket: unknown size bucket {bucket!r}; choose from {', '.join(b for b, _, _ in BUCKETS)}")


def op_class(monoid=None, fields: int = 1) -> str:
    """``builtin`` for a built-in operator on one field, else ``user``."""
    builtin = monoid is None or bool(getattr(monoid, "builtin", False))
    return "builtin" if builtin and fields == 1 else "user"


def layout_class(K: int) -> str:
    return "1d" if K == 1 else "2d"


def entry_key(nbytes: int, floating: bool, opclass: str, K: int, n: int) -> str:
    """Table key: accumulator bytes (summed over fields), int/float, operator
    class, layout class and the size bucket of ``n`` elements per lane."""
    return f"{nbytes}B-{'float' if floating else 'int'}-{opclass}-{layout_class(K)}-{size_bucket(n)}"


# ---------------------------------------------------------------------------
# Candidates and table entries.

@dataclass(frozen=True)
class Candidate:
    strategy: str
    tile: TileConfig

    @property
    def label(self) -> str:
        t = self.tile
        return (f"{self.strategy} b={t.block} w={t.num_warps} win={t.window}" + (f" rake={t.raking}" if t.raking else "")
                + (f" occ={t.occupancy}" if t.occupancy else ""))


def _tile_dict(t: TileConfig) -> dict:
    return {"block": t.block, "num_warps": t.num_warps, "window": t.window, "max_kb": t.max_kb,
            "packed": t.packed, "raking": t.raking, "occupancy": t.occupancy}


def _tile_from(d) -> TileConfig:
    if not isinstance(d, dict):
        raise ValueError("tile is not an object")
    ints = {}
    for name in ("block", "num_warps", "window", "max_kb"):
        v = d.get(name, 32 if name == "max_kb" else None)
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ValueError(f"tile {name}={v!r}")
        ints[name] = v
    if ints["num_warps"] not in (1, 2, 4, 8, 16, 32) or ints["block"] & (ints["block"] - 1):
        raise ValueError(f"tile {d!r}")
    packed = d.get("packed")
    if packed not in (None, True, False):
        raise ValueError(f"tile packed={packed!r}")
    raking = d.get("raking", 0)  # absent in tables written before the raking knob
    if isinstance(raking, bool) or not isinstance(raking, int) or raking < 0 or raking & (raking - 1):
        raise ValueError(f"tile raking={raking!r}")
    occupancy = d.get("occupancy", 0)  # absent in tables written before the register cap
    if isinstance(occupancy, bool) or not isinstance(occupancy, int) or not 0 <= occupancy <= 64:
        raise ValueError(f"tile occupancy={occupancy!r}")
    return TileConfig(ints["block"], ints["num_warps"], ints["window"], ints["max_kb"], packed, raking, occupancy)


@dataclass(frozen=True)
class Entry:
    """One tuned key: the choice for ``strategy="auto"`` scans, for deterministic
    scans, and the best tile of every strategy measured."""

    strategy: str
    tile: TileConfig
    deterministic_strategy: str | None
    tiles: Mapping[str, TileConfig]
    record: dict = field(compare=False, repr=False)

    def tile_for(self, strategy: str | None) -> TileConfig | None:
        """The tile to run ``strategy`` with (None: the auto choice's)."""
        if strategy is None:
            return self.tile
        return self.tiles.get(strategy)

    @classmethod
    def from_record(cls, record) -> "Entry":
        if not isinstance(record, dict):
            raise ValueError("entry is not an object")
        strategy = record.get("strategy")
        if strategy not in STRATEGY_CANDIDATES:
            raise ValueError(f"strategy {strategy!r}")
        det = record.get("deterministic_strategy")
        if det is not None and det not in DETERMINISTIC_STRATEGIES:
            raise ValueError(f"deterministic_strategy {det!r}")
        raw = record.get("tiles") or {}
        if not isinstance(raw, dict):
            raise ValueError("tiles is not an object")
        tiles = {s: _tile_from(t) for s, t in raw.items() if s in STRATEGY_CANDIDATES}
        tile = _tile_from(record.get("tile"))
        tiles.setdefault(strategy, tile)
        return cls(strategy, tile, det, tiles, record)


@dataclass
class SearchResult:
    default: Candidate
    best: Candidate
    best_deterministic: Candidate | None
    tiles: dict  # strategy -> TileConfig chosen for it
    samples: dict  # Candidate -> [seconds, ...]: one per measurement (finalists: 1 + rounds)
    finalists: list  # the candidates re-measured
    excluded: dict  # Candidate -> why
    skipped: list  # candidates left out by the time budget
    noise: float  # relative
    elapsed: float

    @property
    def times(self) -> dict:
        """Candidate -> median of its measurements."""
        return {c: statistics.median(s) for c, s in self.samples.items()}

    def seconds(self, c: Candidate | None) -> float | None:
        s = self.samples.get(c) if c is not None else None
        return statistics.median(s) if s else None

    def to_record(self, **extra) -> dict:
        times = self.times
        rec = {
            "strategy": self.best.strategy, "tile": _tile_dict(self.best.tile),
            "deterministic_strategy": self.best_deterministic.strategy if self.best_deterministic else None,
            "tiles": {s: _tile_dict(t) for s, t in self.tiles.items()},
            "default_seconds": self.seconds(self.default), "best_seconds": self.seconds(self.best),
            "deterministic_seconds": self.seconds(self.best_deterministic),
            "noise": self.noise,
            "measured": [dict(strategy=c.strategy, seconds=t, samples=len(self.samples[c]), **_tile_dict(c.tile))
                         for c, t in sorted(times.items(), key=lambda kv: kv[1])],
            "excluded": [dict(strategy=c.strategy, reason=r, **_tile_dict(c.tile)) for c, r in self.excluded.items()],
            "skipped": len(self.skipped), "complete": not self.skipped,
            "seconds_spent": self.elapsed,
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        }
        rec.update(extra)
        return rec


def candidate_grid(strategies: Sequence[str], nbytes: int, floating: bool, n: int,
                   quick: bool = False) -> list[Candidate]:
    """A small grid of tiles per strategy, most promising first.

    Every strategy's default tile comes first, then the default's neighbours
    for the decoupled look-back (block x2 and /2, the other warp count).  That
    is all in ``quick`` mode (first use).  Otherwise also: the decoupled
    look-back on every tile of :data:`BENCH_TILES` (the fixed choices of
    ``bench/sweep.py``) and :data:`EXTRA_TILES`, and on its default tile with the
    raking in-tile scan (rows of the elements one thread holds, Merrill &
    Grimshaw's SRTS; :func:`.kernels._raking_scan`); chained on
    :data:`CHAINED_TILES`; every other strategy on its default's block x2 and
    /2.  Blocks that hold all ``n`` elements in one tile run alike (the
    single-tile path): one of them is kept.
    """
    d = default_config(nbytes, floating)
    out: list[Candidate] = []

    def add(strategy, block, warps, window):
        c = Candidate(strategy, TileConfig(block, warps, window, d.max_kb, d.packed))
        if block >= 64 and c not in out:
            out.append(c)

    for s in strategies:
        add(s, d.block, d.num_warps, d.window)
    other = 8 if d.num_warps == 4 else 4
    if "decoupled_lookback" in strategies:
        for block, warps in ((d.block * 2, d.num_warps), (d.block // 2, d.num_warps), (d.block, other)):
            add("decoupled_lookback", block, warps, d.window)
    if not quick:
        for s in strategies:
            if s == "decoupled_lookback":
                for block, warps, window in BENCH_TILES + EXTRA_TILES:
                    add(s, block, warps, window)
                per_thread = d.block // (32 * d.num_warps)
                if per_thread >= 2:
                    c = Candidate(s, TileConfig(d.block, d.num_warps, d.window, d.max_kb, d.packed, per_thread))
                    if c not in out:
                        out.append(c)
            elif s == "chained":
                for block, warps in CHAINED_TILES:
                    add(s, block, warps, d.window)
            else:
                for block in (d.block * 2, d.block // 2):
                    add(s, block, d.num_warps, d.window)
    kept, single = [], set()
    for c in out:  # defaults come first, so they are the ones kept
        if c.tile.block >= n:
            sig = (c.strategy, c.tile.num_warps, c.tile.window)
            if sig in single:
                continue
            single.add(sig)
        kept.append(c)
    return kept


@functools.lru_cache(maxsize=None)
def _strategy_launchers() -> frozenset:
    """Names in :data:`.strategies.LAUNCHERS`, empty while that module does not exist."""
    try:
        from . import strategies
    except Exception:  # noqa: BLE001 - absent or broken: its strategies are skipped
        return frozenset()
    return frozenset(getattr(strategies, "LAUNCHERS", None) or ())


def strategy_available(name: str) -> bool:
    return name in _RUN_BY_LAUNCH or name in _strategy_launchers()


def available_strategies(names: Sequence[str] = STRATEGY_CANDIDATES) -> list[str]:
    """The strategies of ``names`` that can run here, in order."""
    return [s for s in names if strategy_available(s)]


def runnable(name: str | None, deterministic: bool) -> bool:
    """Whether a table's choice ``name`` may run a scan (auto or deterministic)."""
    if not name or not strategy_available(name):
        return False
    return name in DETERMINISTIC_STRATEGIES if deterministic else True


# ---------------------------------------------------------------------------
# The search.

def search(candidates: Sequence[Candidate], measure: Callable[[Candidate], float],
           verify: Callable[[Candidate], bool], *, default: Candidate | None = None,
           deterministic_default: Candidate | None = None, noise_floor: float = NOISE_FLOOR,
           finalists: int = FINALISTS, rounds: int = ROUNDS, budget: float | None = None,
           clock: Callable[[], float] = time.monotonic) -> SearchResult:
    """Measure ``candidates`` and pick the fastest verified one.

    ``measure(c)`` returns seconds per call of candidate ``c`` (itself a median
    of repeats on the device); ``verify(c)`` whether ``c`` computes the same
    result as ``default`` (the first candidate if None), which is the reference
    and is measured first.  A candidate that fails or raises in ``verify`` or
    ``measure`` is excluded with the reason.  With ``budget`` seconds,
    candidates not started in time are skipped.

    One measurement can be lucky, so the choice is made among *finalists*,
    re-measured ``rounds`` more times in interleaved order (alternating
    direction, so that a drift of the GPU clock hits all alike): the
    ``finalists`` fastest of the auto pool (every strategy) and of the
    deterministic pool, every strategy's fastest tile and its default tile, and
    the two defaults.  Scores are medians over a candidate's measurements; the
    noise is the median relative range (max - min) / median over the
    finalists, at least ``noise_floor``.  A strategy keeps its default tile,
    and the auto (deterministic) choice stays ``default``
    (``deterministic_default``), unless the challenger's score is lower by more
    than the noise: the result is never slower than a default within the
    noise, and does not flip between runs on noise alone.  Finalists always run,
    whatever the budget.
    """
    if finalists < 1:
        raise ValueError(f"finalists must be >= 1, got {finalists!r}")
    if rounds < 0:
        raise ValueError(f"rounds must be >= 0, got {rounds!r}")
    if not candidates and default is None:
        raise ValueError("candidates: nothing to search")
    start = clock()
    default = default if default is not None else candidates[0]
    samples: dict = {}
    excluded: dict = {}
    skipped: list = []

    def timed(c) -> bool:
        try:
            t = float(measure(c))
            if not (t > 0 and math.isfinite(t)):
                raise ValueError(f"measured {t!r} seconds")
        except Exception as exc:  # noqa: BLE001 - reported, the search goes on
            if c == default:
                raise TuningError(f"the default {default.label} failed: {type(exc).__name__}: {exc}") from exc
            excluded[c] = f"timing raised {type(exc).__name__}: {exc}"[:300]
            samples.pop(c, None)
            return False
        samples.setdefault(c, []).append(t)
        return True

    timed(default)
    for c in dict.fromkeys(candidates):
        if c == default:
            continue
        if budget is not None and clock() - start >= budget:
            skipped.append(c)
            continue
        try:
            ok = verify(c)
        except Exception as exc:  # noqa: BLE001 - reported, the search goes on
            excluded[c] = f"raised {type(exc).__name__}: {exc}"[:300]
            continue
        if not ok:
            excluded[c] = "wrong result (differs from the decoupled look-back default)"
            continue
        timed(c)

    first = {c: s[0] for c, s in samples.items()}
    by_first = sorted(first, key=first.get)
    strategies = list(dict.fromkeys(c.strategy for c in first))
    final = [default]
    if deterministic_default in first:
        final.append(deterministic_default)
    for s in strategies:
        own = [c for c in by_first if c.strategy == s]
        final += [Candidate(s, default.tile)] if Candidate(s, default.tile) in first else []
        final.append(own[0])
    final += by_first[:finalists]
    final += [c for c in by_first if c.strategy in DETERMINISTIC_STRATEGIES][:finalists]
    final = list(dict.fromkeys(final))
    for r in range(rounds):
        for c in (final if r % 2 else reversed(final)):
            if c in samples:
                timed(c)
    final = [c for c in final if c in samples]

    score = {c: statistics.median(s) for c, s in samples.items()}
    spreads = [(max(samples[c]) - min(samples[c])) / score[c] for c in final if len(samples[c]) > 1]
    noise = max(noise_floor, statistics.median(spreads)) if spreads else noise_floor

    def pick(pool, base):
        """The fastest of ``pool``; ``base`` unless that is faster by more than the noise."""
        pool = [c for c in pool if c in score]
        if not pool:
            return base if base in score else None
        best = min(pool, key=score.get)
        if base in score and best != base and score[best] >= score[base] * (1 - noise):
            return base
        return best

    tiles = {}
    for s in strategies:
        best = pick([c for c in final if c.strategy == s], Candidate(s, default.tile))
        if best is not None:
            tiles[s] = best.tile
    best = pick([Candidate(s, t) for s, t in tiles.items()], default) or default
    best_det = pick([Candidate(s, t) for s, t in tiles.items() if s in DETERMINISTIC_STRATEGIES],
                    deterministic_default)
    return SearchResult(default, best, best_det, tiles, samples, final, excluded, skipped, noise,
                        clock() - start)


def refine_occupancy(result: SearchResult, measure: Callable[[Candidate], float],
                     verify: Callable[[Candidate], bool], *, rounds: int = ROUNDS,
                     noise_floor: float = NOISE_FLOOR) -> SearchResult:
    """``result`` with its decoupled look-back tile and the fastest other one tried
    under the register caps of :data:`OCCUPANCY_CANDIDATES` (a second :func:`search`
    whose default is the chosen uncapped tile, so a cap is kept only when faster
    beyond the noise); the auto choice becomes the capped tile when it was the
    uncapped one, or when the capped one beats it beyond the noise.

    Why a second stage: ptxas sizes registers per kernel, and whether one more
    resident tile per SM pays depends on what it spills for it (H100, run g: the
    float64 tile from 3 to 4 tiles 0.95 -> 0.99 of copy with no spill; int64 from 4
    to 5, 57 spilled words, 0.99 -> 0.86), so it is measured on the tile that won."""
    tile = result.tiles.get("decoupled_lookback")
    if tile is None or tile.occupancy:
        return result
    base = Candidate("decoupled_lookback", tile)
    # The chosen tile and the fastest other uncapped one: a smaller tile may win
    # once capped (H100, run g: float64 4096-element tiles at 4 per SM, 0.99 of copy).
    others = {c: statistics.median(s) for c, s in result.samples.items()
              if c.strategy == base.strategy and not c.tile.occupancy and c != base}
    tiles = [tile] + ([min(others, key=others.get).tile] if others else [])
    capped = [Candidate(base.strategy, dataclasses.replace(t, occupancy=k))
              for t in tiles for k in OCCUPANCY_CANDIDATES.get(t.num_warps, ())]
    if not capped:
        return result
    pool = [base, *(Candidate(base.strategy, t) for t in tiles[1:]), *capped]
    sub = search(pool, measure, verify, default=base, rounds=rounds, noise_floor=noise_floor, finalists=len(pool))
    chosen = sub.best
    samples = dict(result.samples)
    for c, s in sub.samples.items():
        samples[c] = samples.get(c, []) + s
    score = {c: statistics.median(s) for c, s in samples.items()}
    noise = max(result.noise, sub.noise)
    best = result.best
    if best == base or (chosen != base and score[chosen] < score[best] * (1 - noise)):
        best = chosen
    return dataclasses.replace(
        result, best=best, tiles=dict(result.tiles, decoupled_lookback=chosen.tile), samples=samples,
        finalists=list(dict.fromkeys(result.finalists + sub.finalists)),
        excluded={**result.excluded, **sub.excluded}, noise=noise, elapsed=result.elapsed + sub.elapsed)


# ---------------------------------------------------------------------------
# The device side: measure and verify real scans.

def _random_field(torch, dtype, shape, opname: str, gen, device):
    """Fresh random non-zero data for one field."""
    def sign():
        return torch.randint(0, 2, shape, generator=gen, device=device) * 2 - 1

    if dtype.is_floating_point:
        u = torch.rand(shape, generator=gen, device=device, dtype=torch.float64)
        if opname == "mul":
            x = 0.9 + 0.2 * u
        elif opname == "logaddexp":
            x = torch.randn(shape, generator=gen, device=device, dtype=torch.float64) * 3
        elif opname == "user":
            x = (0.5 + 0.5 * u) * sign()  # |x| in [0.5, 1): products and affine maps stay bounded
        else:
            x = (u + 1e-3) * sign()
        return x.to(dtype)
    x = torch.randint(1, 64, shape, generator=gen, device=device, dtype=torch.int64)
    if opname == "mul":
        x = x * 2 + 1  # odd: products wrap but never reach 0
    if dtype.is_signed:
        x = x * sign()
    return x.to(dtype)


def _poison(torch, t):
    if t.dtype.is_floating_point:
        t.fill_(float("nan"))
    else:
        t.view(torch.uint8).fill_(0xA5)


def _same(torch, a, ref) -> bool:
    """Bitwise for integers; floats: NaN and infinities in the same places, the
    rest within 1e-3 (4-byte) or 1e-9 (8-byte) of the largest |ref|."""
    if not ref.dtype.is_floating_point:
        return bool(torch.equal(a.reshape(-1).view(torch.uint8), ref.reshape(-1).view(torch.uint8)))
    a64, r64 = a.double(), ref.double()
    if not torch.equal(torch.isnan(a64), torch.isnan(r64)):
        return False
    inf = torch.isinf(r64)
    if not torch.equal(a64[inf], r64[inf]):
        return False
    fin = torch.isfinite(r64)
    if not bool(fin.any()):
        return True
    diff = (a64[fin] - r64[fin]).abs().max()
    scale = r64[fin].abs().max().clamp(min=1.0)
    rtol = 1e-3 if ref.element_size() <= 4 else 1e-9
    return bool(torch.isfinite(diff)) and bool(diff <= rtol * scale)


_tuning = threading.local()


class _TuningGuard:
    """Marks this thread as tuning: lookups made meanwhile never tune."""

    def __enter__(self):
        self.previous = getattr(_tuning, "active", False)
        _tuning.active = True

    def __exit__(self, *exc):
        _tuning.active = self.previous


def in_tuning() -> bool:
    return getattr(_tuning, "active", False)


def _cuda_event_timer(repeats: int) -> Callable[[Callable[[], object]], float]:
    """Seconds per call of ``fn``, the mean of what two kinds of caller see: device
    time (median of ``repeats`` CUDA-event pairs queued behind a GPU sleep, see
    :func:`prefixscan.timing.time_cuda_events`; callers that queue work) and the
    larger of that and the wall time per call over back-to-back calls (callers that
    wait, paying the host's work per call).  Device time alone once made the tuner
    pick, for small scans, a strategy 1 us faster on the GPU and 60 us slower per
    call; wall time alone ties every tile of a host-bound size (run d, calls 3-4)."""
    import torch

    def timer(fn):
        fn()
        fn()  # warm-up: compile, allocate, plan
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        fn()
        host = time.perf_counter() - t0
        torch.cuda.synchronize()
        device = statistics.median(time_cuda_events([fn], repeats, host))
        calls = max(3, min(50, int(2e-3 / max(device, 1e-6))))  # about 2 ms of calls
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
        waited = max(device, (time.perf_counter() - t0) / calls)
        return (device + waited) / 2

    return timer


def tune_workload(device, accs, monoid=None, K: int = 1, n: int = 1 << 20, *, strategies=None,
                  quick: bool = False, budget: float | None = None, repeats: int = 15,
                  rounds: int = ROUNDS, timer: Callable[[Callable[[], object]], float] | None = None
                  ) -> SearchResult:
    """Tune one key on ``device`` with a representative scan: ``accs`` (torch
    dtypes, one per field) under ``monoid`` (None: add), ``n`` elements per
    field laid out as (n,) (K == 1) or (n // K, K) scanned along axis 0.

    Every candidate runs through ``prefixscan.scan`` with its strategy named and
    its tile forced (:func:`.planner.set_override`), on fresh random non-zero
    data; its output (poisoned first) is compared with the decoupled look-back
    default's, which for a sum is first checked against ``torch.cumsum``.
    ``timer(fn) -> seconds`` defaults to CUDA events (:func:`_cuda_event_timer`,
    median of ``repeats``); a CPU device (the interpreter) needs one.
    """
    import contextlib

    import torch

    import prefixscan as ps

    names = available_strategies(strategies or STRATEGY_CANDIDATES)
    nbytes = sum(a.itemsize for a in accs)
    floating = any(a.is_floating_point for a in accs)
    candidates = candidate_grid(names, nbytes, floating, n, quick=quick)
    default = Candidate("decoupled_lookback", default_config(nbytes, floating))  # the reference, always run
    det_default = Candidate("chained", default.tile) if "chained" in names else None
    op = monoid if monoid is not None else "add"
    builtin = monoid is None or getattr(monoid, "builtin", False)
    opname = getattr(monoid, "name", "add") if builtin else "user"
    shape = (n,) if K == 1 else (max(1, n // K), K)
    axis = None if K == 1 else 0
    previous = planner._override
    device = torch.device(device)
    cuda = device.type == "cuda"
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    if timer is None:
        timer = _cuda_event_timer(repeats)

    with _TuningGuard(), (torch.cuda.device(device) if cuda else contextlib.nullcontext()):
        gen = torch.Generator(device=device)
        gen.manual_seed(int.from_bytes(os.urandom(8), "little") >> 1)  # fresh data every run
        xs = tuple(_random_field(torch, dt, shape, opname, gen, device) for dt in accs)
        outs = tuple(torch.empty(shape, dtype=dt, device=device) for dt in accs)
        x = xs[0] if len(xs) == 1 else xs

        def forced(c, fn):
            """fn() with c's tile forced (set around the timer, not inside every call)."""
            planner.set_override(c.tile)
            try:
                return fn()
            finally:
                planner.set_override(previous)

        def scan(c, dst):
            return ps.scan(x, op, axis=axis, strategy=c.strategy, backend="triton",
                           out=dst[0] if len(dst) == 1 else dst)

        def run(c, dst):
            return forced(c, lambda: scan(c, dst))

        run(default, outs)
        ref = tuple(o.clone() for o in outs)
        if opname == "add" and len(xs) == 1:
            # The reference must itself be right, or every correct candidate would be excluded.
            # (torch.cumsum along axis 0 of a narrow 2-D array takes seconds: scan the transpose.)
            expected = torch.cumsum(xs[0].t().contiguous(), dim=-1, dtype=accs[0]).t()
            if not _same(torch, ref[0], expected):
                raise TuningError(f"the default {default.label} differs from torch.cumsum on "
                                  f"{tuple(shape)} {accs[0]}")
            del expected
        got = tuple(torch.empty_like(r) for r in ref)

        def verify(c):
            for g in got:
                _poison(torch, g)
            run(c, got)
            sync()
            return all(_same(torch, g, r) for g, r in zip(got, ref))

        def measure(c):
            return forced(c, lambda: timer(lambda: scan(c, outs)))

        result = search(candidates, measure, verify, default=default, deterministic_default=det_default,
                        budget=budget, rounds=rounds)
        if quick:
            return result
        return refine_occupancy(result, measure, verify, rounds=rounds)


# ---------------------------------------------------------------------------
# The disk cache.

def cache_dir() -> Path:
    """``$PREFIXSCAN_CACHE_DIR``, else ``$XDG_CACHE_HOME/prefixscan``, else ``~/.cache/prefixscan``."""
    d = os.environ.get("PREFIXSCAN_CACHE_DIR")
    if d:
        return Path(d).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    if xdg:
        return Path(xdg).expanduser() / "prefixscan"
    return Path.home() / ".cache" / "prefixscan"


def library_version() -> str:
    try:
        import prefixscan

        v = getattr(prefixscan, "__version__", None)
    except Exception:  # noqa: BLE001
        v = None
    if not v:
        try:
            from importlib.metadata import version

            v = version("prefixscan")
        except Exception:  # noqa: BLE001
            v = "unknown"
    return str(v)


def _sanitize(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9+-]*\.\.+[^A-Za-z0-9+-]*|[^A-Za-z0-9.+-]+", "_", str(text)).strip("._") or "unknown"


def cache_path(gpu: str, version: str | None = None, directory: Path | None = None) -> Path:
    """The table file of GPU ``gpu`` for library ``version``."""
    version = version or library_version()
    return Path(directory or cache_dir()) / f"tuning-{_sanitize(gpu)}-{_sanitize(version)}.json"


def _read_records(path: Path, gpu: str, version: str) -> tuple[dict, str | None]:
    """(records, problem): the raw entries of a table file and, when it cannot be
    used, why (None: fine or absent)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}, None
    except (OSError, UnicodeDecodeError) as exc:
        return {}, f"unreadable ({exc})"
    try:
        data = json.loads(text)
    except ValueError as exc:
        return {}, f"corrupt JSON ({exc})"
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        return {}, "not a prefixscan tuning table"
    if data.get("gpu") != gpu or data.get("version") != version:
        return {}, (f"written for GPU {data.get('gpu')!r} and prefixscan {data.get('version')!r}, "
                    f"not {gpu!r} and {version!r}")
    entries = data.get("entries")
    if not isinstance(entries, dict):
        return {}, "no entries object"
    return entries, None


def load_table(path: Path, gpu: str, version: str | None = None) -> dict:
    """The entries of a table file as ``{key: Entry}``; a missing file gives {},
    an unusable file or entry is skipped with a :class:`TuningCacheWarning`."""
    version = version or library_version()
    records, problem = _read_records(path, gpu, version)
    if problem:
        warnings.warn(f"prefixscan: ignoring tuning cache {path}: {problem}", TuningCacheWarning, stacklevel=2)
        return {}
    out, bad = {}, []
    for key, rec in records.items():
        try:
            out[key] = Entry.from_record(rec)
        except (TypeError, ValueError, KeyError) as exc:
            bad.append(f"{key}: {exc}")
    if bad:
        warnings.warn(f"prefixscan: ignoring {len(bad)} bad entr{'y' if len(bad) == 1 else 'ies'} of tuning "
                      f"cache {path} ({'; '.join(bad[:3])})", TuningCacheWarning, stacklevel=2)
    return out


def save_table(path: Path, gpu: str, entries: Mapping, version: str | None = None, merge: bool = True) -> Path:
    """Write ``entries`` ({key: Entry or record}) atomically (a temporary file in
    the same directory, then ``os.replace``), merged into the usable entries
    already in the file unless ``merge`` is false."""
    version = version or library_version()
    path = Path(path)
    records = dict(_read_records(path, gpu, version)[0]) if merge else {}
    records.update({k: (e.record if isinstance(e, Entry) else e) for k, e in entries.items()})
    versions = {m: getattr(sys.modules[m], "__version__", "?") for m in ("torch", "triton") if m in sys.modules}
    data = {"format": FORMAT, "gpu": gpu, "version": version, "versions": versions,
            "written": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "entries": records}
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(data, fh, indent=1, sort_keys=True)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return path


def clear_cache(directory: Path | None = None) -> list[Path]:
    """Delete every table file in the cache directory; returns the paths removed."""
    d = Path(directory or cache_dir())
    removed = []
    for p in sorted(d.glob("tuning-*.json")) if d.is_dir() else []:
        try:
            p.unlink()
            removed.append(p)
        except FileNotFoundError:
            pass
    reset()
    return removed


# ---------------------------------------------------------------------------
# The in-process table and the lookup.

@dataclass
class _Table:
    gpu: str
    version: str
    path: Path
    entries: dict


_tables: dict = {}  # (gpu, cache env) -> _Table, each file read once per process
_attempted: set = set()  # (path, key) tuned on first use already (or tried)
_gpu_names: dict = {}
_tune_lock = threading.Lock()  # one tuning at a time per process


def reset() -> None:
    """Forget the tables read, the lookups memoized and the first-use attempts,
    so that the environment and the files are read again (tests, ``--clear``)."""
    _tables.clear()
    _attempted.clear()
    _gpu_names.clear()
    planner.clear_memo()
    getattr(_strategy_launchers, "cache_clear", lambda: None)()


def gpu_name(device) -> str:
    index = getattr(device, "index", None)
    name = _gpu_names.get(index)
    if name is None:
        import torch

        name = _gpu_names[index] = torch.cuda.get_device_name(index if index is not None else
                                                             torch.cuda.current_device())
    return name


def table_for(gpu: str) -> _Table:
    env = (os.environ.get("PREFIXSCAN_CACHE_DIR"), os.environ.get("XDG_CACHE_HOME"))
    table = _tables.get((gpu, env))
    if table is None:
        version = library_version()
        path = cache_path(gpu, version)
        table = _tables[(gpu, env)] = _Table(gpu, version, path, load_table(path, gpu, version))
    return table


def store(table: _Table, key: str, record: dict) -> Entry:
    """Add a tuned entry to the in-process table and write the file (a failed
    write warns; the entry still serves this process)."""
    entry = Entry.from_record(record)
    table.entries[key] = entry
    planner.clear_memo()
    try:
        save_table(table.path, table.gpu, {key: entry}, table.version)
    except OSError as exc:
        warnings.warn(f"prefixscan: could not write tuning cache {table.path}: {exc}", TuningCacheWarning,
                      stacklevel=2)
    return entry


def autotune_enabled() -> bool:
    """First-use tuning is on unless ``PREFIXSCAN_AUTOTUNE`` is 0/false/no/off."""
    return os.environ.get("PREFIXSCAN_AUTOTUNE", "1").strip().lower() not in ("0", "false", "no", "off")


def first_use_budget() -> float:
    """``PREFIXSCAN_AUTOTUNE_BUDGET`` seconds (default 3); a value that is not a
    number >= 0 warns and gives the default."""
    raw = os.environ.get("PREFIXSCAN_AUTOTUNE_BUDGET")
    if raw is None or not raw.strip():
        return DEFAULT_BUDGET
    try:
        value = float(raw)
        if not (value >= 0 and math.isfinite(value)):
            raise ValueError
    except ValueError:
        warnings.warn(f"prefixscan: PREFIXSCAN_AUTOTUNE_BUDGET={raw!r} is not a number of seconds >= 0; "
                      f"using {DEFAULT_BUDGET:g}", TuningCacheWarning, stacklevel=2)
        return DEFAULT_BUDGET
    return value


def _capturing() -> bool:
    try:
        import torch

        return bool(torch.cuda.is_current_stream_capturing())
    except Exception:  # noqa: BLE001 - no CUDA build: nothing is captured
        return False


_TORCH_DTYPES = {(1, False): "int8", (2, False): "int16", (4, False): "int32", (8, False): "int64",
                 (4, True): "float32", (8, True): "float64"}


def lookup(device, nbytes: int, floating: bool, opclass: str, K: int, n: int, *, accs=None, monoid=None,
           tune: bool = True) -> Entry | None:
    """The tuned entry for a scan on ``device``, or None (then the defaults run).

    A CUDA device's table is read once per process.  A missing key is tuned
    once per process (:func:`tune_workload`, quick grid, at most 2^24 elements,
    :func:`first_use_budget` seconds) unless ``tune`` is false, first-use
    tuning is off (``PREFIXSCAN_AUTOTUNE=0``), this thread is tuning already,
    another thread holds the tuner, or the stream is being captured.
    """
    return resolve(device, nbytes, floating, opclass, K, n, accs=accs, monoid=monoid, tune=tune)[0]


def resolve(device, nbytes: int, floating: bool, opclass: str, K: int, n: int, *, accs=None, monoid=None,
            tune: bool = True) -> tuple[Entry | None, bool]:
    """:func:`lookup`, and whether its answer holds for the rest of the process
    (False while a tuning elsewhere or a graph capture only postponed it), so
    that :mod:`.tuning` may memoize it."""
    if not planner.table_device(device):
        return None, True
    table = table_for(gpu_name(device))
    key = entry_key(nbytes, floating, opclass, K, n)
    entry = table.entries.get(key)
    if entry is not None or not tune or not autotune_enabled():
        return entry, True
    if in_tuning():
        return None, False
    mark = (table.path, key)
    if mark in _attempted:
        return table.entries.get(key), True
    if _capturing() or not _tune_lock.acquire(blocking=False):
        return None, False
    try:
        if mark in _attempted:
            return table.entries.get(key), True
        _attempted.add(mark)
        if accs is None:
            import torch

            name = _TORCH_DTYPES.get((nbytes, floating))
            if name is None:
                return None, True
            accs = [getattr(torch, name)]
        size = min(bucket_size(size_bucket(n)), 1 << FIRST_USE_MAX_LOG2)
        budget = first_use_budget()
        t0 = time.monotonic()
        try:
            result = tune_workload(device, list(accs), monoid, K, size, quick=True, budget=budget, repeats=7,
                                   rounds=1)
        except Exception as exc:  # noqa: BLE001 - a scan must not fail because tuning did
            warnings.warn(f"prefixscan: first-use tuning of {key} on {table.gpu} failed "
                          f"({type(exc).__name__}: {exc}); the default choice runs", TuningCacheWarning,
                          stacklevel=2)
            return None, True
        entry = store(table, key, result.to_record(n=size, K=K, source="first-use", budget=budget))
        log.info("tuned %s on %s in %.1f s: %s (cached in %s)", key, table.gpu, time.monotonic() - t0,
                 Candidate(entry.strategy, entry.tile).label, table.path)
        return entry, True
    finally:
        _tune_lock.release()


# ---------------------------------------------------------------------------
# `prefixscan tune` and `prefixscan info`.

DEFAULT_DTYPES = ("int32", "float32", "int64", "float64")
DEFAULT_SIZES = tuple(rep for _, _, rep in BUCKETS)
OP_CLASSES = ("builtin", "user")
LAYOUTS = ("1d", "2d")


def unavailable_reason() -> str:
    """Why ``prefixscan tune`` cannot run here ('' when it can)."""
    from . import unavailable_reason as backend_reason

    return backend_reason("cuda")


def check_tune_args(dtypes, sizes, ops, layouts, strategies, budget, repeats) -> tuple:
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
                                 ("strategies", strategies or (), STRATEGY_CANDIDATES)):
        unknown = [v for v in values if v not in allowed]
        if unknown:
            raise ValueError(f"{arg}: unknown {', '.join(map(repr, unknown))}; choose from {', '.join(allowed)}")
    if budget is not None and not (isinstance(budget, (int, float)) and budget > 0):
        raise ValueError(f"budget: expected seconds > 0 or None, got {budget!r}")
    if isinstance(repeats, bool) or not isinstance(repeats, int) or repeats < 1:
        raise ValueError(f"repeats: expected an integer >= 1, got {repeats!r}")
    return dtypes, sizes, ops, layouts, strategies


def tune_all(*, device: str = "cuda", dtypes: Sequence[str] = DEFAULT_DTYPES,
             sizes: Sequence[int] = DEFAULT_SIZES, ops: Sequence[str] = OP_CLASSES,
             layouts: Sequence[str] = LAYOUTS, strategies: Sequence[str] | None = None,
             budget: float | None = None, repeats: int = 15, stream=None) -> dict:
    """Tune every key of ``dtypes`` x operator classes ``ops`` x ``layouts`` x
    ``sizes`` (log2, one per size bucket) on ``device`` with the full candidate
    grid, and write the table after each key (so an interrupted run keeps what
    it measured).  ``budget``: seconds for the whole run, shared out among the
    keys left, the first key of each dtype/operator/layout group weighted
    :data:`COMPILE_WEIGHT` times the others (it compiles the kernel variants
    that the other sizes reuse).  Returns ``{"gpu", "version", "path", "entries", "failed",
    "strategies", "seconds"}``; progress goes to ``stream`` (stderr)."""
    dtypes, sizes, ops, layouts, strategies = check_tune_args(dtypes, sizes, ops, layouts, strategies,
                                                              budget, repeats)
    import torch

    import prefixscan as ps

    from ...monoid import accumulator_dtype_name

    stream = stream if stream is not None else sys.stderr
    dev = torch.device(device)
    if dev.type != "cuda":
        raise ValueError(f"device: tuning needs a CUDA device, got {device!r}")
    if dev.index is None:
        dev = torch.device(dev.type, torch.cuda.current_device())
    table = table_for(gpu_name(dev))
    jobs, seen = [], set()
    for dtype in dtypes:
        acc = getattr(torch, accumulator_dtype_name(dtype))
        for opc in ops:
            accs = [acc] if opc == "builtin" else [acc, acc]
            monoid = None if opc == "builtin" else ps.AFFINE
            for layout in layouts:
                K = 1 if layout == "1d" else CLI_K
                # The first key of a group compiles every kernel variant; the
                # other sizes reuse them and only measure (budget weights below).
                first = True
                for e in sorted(sizes, reverse=True):
                    n = 1 << e
                    key = entry_key(sum(a.itemsize for a in accs), acc.is_floating_point, opc, K, n)
                    if key not in seen:
                        seen.add(key)
                        jobs.append((key, accs, monoid, K, n, COMPILE_WEIGHT if first else 1))
                        first = False
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
            result = tune_workload(dev, accs, monoid, K, n, strategies=strategies, budget=share, repeats=repeats)
        except Exception as exc:  # noqa: BLE001 - reported, the run goes on
            failed[key] = f"{type(exc).__name__}: {exc}"[:300]
            print(f"    FAILED {failed[key]}", file=stream, flush=True)
            continue
        record = result.to_record(n=n, K=K, source="prefixscan tune", budget=share)
        store(table, key, record)
        entries[key] = record
        for c, why in result.excluded.items():
            print(f"    excluded {c.label}: {why}", file=stream, flush=True)
        best, base = result.seconds(result.best), result.seconds(result.default)
        print(f"    {result.best.label}: {best * 1e6:.1f} us, default {base * 1e6:.1f} us, noise "
              f"{result.noise:.1%}, {len(result.samples)} measured, {len(result.skipped)} skipped, "
              f"{time.monotonic() - t0:.1f} s", file=stream, flush=True)
    return {"gpu": table.gpu, "version": table.version, "path": str(table.path), "entries": entries,
            "failed": failed, "strategies": available_strategies(strategies or STRATEGY_CANDIDATES),
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


def info_lines(gpu_names: Sequence[str] | None = None) -> list[str]:
    """What ``prefixscan info`` says about tuning: cache directory, each GPU's
    table file and whether it holds tuned entries."""
    d = cache_dir()
    source = ("PREFIXSCAN_CACHE_DIR" if os.environ.get("PREFIXSCAN_CACHE_DIR") else
              "XDG_CACHE_HOME" if os.environ.get("XDG_CACHE_HOME") else "default")
    lines = [f"  cache dir: {d} ({source})",
             f"  first-use tuning: {'on' if autotune_enabled() else 'off'} (PREFIXSCAN_AUTOTUNE), "
             f"budget {first_use_budget():g} s (PREFIXSCAN_AUTOTUNE_BUDGET)"]
    if gpu_names is None:
        gpu_names = []
        try:
            import torch

            if torch.cuda.is_available():
                gpu_names = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
        except Exception:  # noqa: BLE001
            gpu_names = []
    version = library_version()
    for i, name in enumerate(gpu_names):
        path = cache_path(name, version)
        records, problem = _read_records(path, name, version)
        if problem:
            state = f"unusable, ignored: {problem}"
        elif records:
            state = f"tuned table present, {len(records)} entries"
        else:
            state = "no tuned table (first use tunes; or run prefixscan tune)"
        lines.append(f"  cuda:{i} {name}: {path} ({state})")
    if not gpu_names:
        files = sorted(d.glob("tuning-*.json")) if d.is_dir() else []
        lines.append(f"  no CUDA device: tables are per GPU; {len(files)} table file(s) in the cache dir")
    return lines


# ---------------------------------------------------------------------------
# The tuned choice against every fixed choice (for the benchmark).

def resolved_choice(x, op="add", *, axis=None) -> tuple[str, TileConfig]:
    """(strategy, tile) that ``scan(x, op, axis=axis)`` runs with here and now:
    the tuned table's (tuning it on first use), else the defaults."""
    import prefixscan as ps

    from ..._arrays import as_torch
    from ...dispatch import interpreter_mode
    from . import scan as scan_path

    request, _ = ps.make_scan(op, axis=axis, backend="triton").plan(x)
    _, M, K = scan_path._layout(request)
    accs = [scan_path.torch_dtype("uint8" if d == "bool" else d) for d in request.acc_dtypes]
    device = as_torch(request.fields[0]).device
    interpreter = interpreter_mode()
    strategy = scan_path.strategy_for(request.config, device, accs, M, K, interpreter)
    tile = planner.choose_config(device, sum(a.itemsize for a in accs), any(a.is_floating_point for a in accs),
                                M, K, interpreter, accs=accs, monoid=request.config.monoid,
                                strategy=strategy if strategy in _RUN_BY_LAUNCH else None)
    return strategy, tile


def fixed_choices(nbytes: int, floating: bool, tiles=None, strategies=None) -> list[tuple[str, Candidate]]:
    """The fixed (untuned) choices a comparison times: the decoupled look-back on
    the hand-measured default tile and on every (block, warps, window) of
    ``tiles`` (default :data:`BENCH_TILES`), and every other available strategy
    of ``strategies`` (default all) on the default tile.  (label, Candidate)."""
    d = default_config(nbytes, floating)
    out = {Candidate("decoupled_lookback", d): "default table (no tuning)"}
    for block, warps, window in (BENCH_TILES if tiles is None else tiles):
        c = Candidate("decoupled_lookback", TileConfig(block, warps, window, d.max_kb, d.packed))
        out.setdefault(c, c.label)
    for s in available_strategies(strategies or STRATEGY_CANDIDATES):
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

    import prefixscan as ps

    if isinstance(rounds, bool) or not isinstance(rounds, int) or rounds < 1:
        raise ValueError(f"rounds: expected an integer >= 1, got {rounds!r}")
    first = x[0] if isinstance(x, tuple) else x
    if not torch.is_tensor(first):
        raise TypeError(f"x: expected a torch tensor (or a tuple of them), got {type(first).__name__}")
    if timer is None:
        timer = _cuda_event_timer(repeats)
    strategy, tile = resolved_choice(x, op, axis=axis)
    request, _ = ps.make_scan(op, axis=axis, backend="triton").plan(x)
    accs = [getattr(torch, "uint8" if d == "bool" else d) for d in request.acc_dtypes]
    nbytes, floating = sum(a.itemsize for a in accs), any(a.is_floating_point for a in accs)
    choices = [("tuned", None)] + fixed_choices(nbytes, floating, tiles, strategies)
    previous = planner._override
    sync = torch.cuda.synchronize if first.is_cuda else (lambda: None)

    def forced(c, fn):
        """fn() with c's tile forced (None: the tuned choice, nothing forced).  The
        override is set around the timer, as bench/sweep.py does, not per call."""
        planner.set_override(c.tile if c is not None else None)
        try:
            return fn()
        finally:
            planner.set_override(previous)

    def runner(c):  # backend named so that CPU tensors run in the interpreter too
        if c is None:
            return lambda: ps.scan(x, op, axis=axis, out=out, backend="triton")
        return lambda: ps.scan(x, op, axis=axis, out=out, backend="triton", strategy=c.strategy)

    rows = []
    for label, c in choices:
        row = {"label": label, "strategy": c.strategy if c else strategy,
               **_tile_dict(c.tile if c else tile), "fixed": c is not None, "samples": [],
               "verified": None, "error": None}
        try:
            result = forced(c, runner(c))
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
                row["samples"].append(float(forced(c, lambda: timer(runner(c)))))
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
    ok = bool(ratio is not None and tuned["verified"] is not False and tuned["seconds"] <= best["seconds"] * (1 + noise))
    shape = tuple(first.shape)
    return {"shape": shape, "dtype": str(first.dtype).replace("torch.", ""), "axis": axis,
            "op": getattr(op, "name", op), "tuned": {"strategy": strategy, **_tile_dict(tile)},
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
