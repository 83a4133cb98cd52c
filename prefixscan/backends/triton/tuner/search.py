"""The search: pick the fastest verified candidate, robustly against noise.

Pure logic on an injected ``measure(candidate) -> seconds`` and ``verify(candidate)
-> bool``, so it is tested without a GPU (:mod:`.measure` supplies the real
ones).  A candidate that computes a wrong result is excluded before it is
timed; one lucky measurement does not win, because the few fastest are
re-measured in interleaved rounds and a default is replaced only by a
challenger faster by more than the measured noise (docs/design/tuning-method.md).
Nothing here imports torch or triton.
"""

from __future__ import annotations

import dataclasses
import datetime
import math
import statistics
import time
from dataclasses import dataclass
from typing import Callable, Sequence

from ..registry import DETERMINISTIC_STRATEGIES
from .candidates import OCCUPANCY_CANDIDATES
from .keys import Candidate, tile_dict

__all__ = ["TuningError", "SearchResult", "search", "refine_occupancy", "NOISE_FLOOR", "FINALISTS", "ROUNDS"]

NOISE_FLOOR = 0.02  # a candidate must beat the default by more than this (and the measured noise)
FINALISTS = 3  # fastest candidates per pool re-measured
ROUNDS = 2  # extra measurements of every finalist


class TuningError(RuntimeError):
    """A tuning run could not measure its reference (the default choice)."""


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
        """The result as a table file's JSON record (``extra`` added: size, source, ...)."""
        times = self.times
        rec = {
            "strategy": self.best.strategy, "tile": tile_dict(self.best.tile),
            "deterministic_strategy": self.best_deterministic.strategy if self.best_deterministic else None,
            "tiles": {s: tile_dict(t) for s, t in self.tiles.items()},
            "default_seconds": self.seconds(self.default), "best_seconds": self.seconds(self.best),
            "deterministic_seconds": self.seconds(self.best_deterministic),
            "noise": self.noise,
            "measured": [dict(strategy=c.strategy, seconds=t, samples=len(self.samples[c]), **tile_dict(c.tile))
                         for c, t in sorted(times.items(), key=lambda kv: kv[1])],
            "excluded": [dict(strategy=c.strategy, reason=r, **tile_dict(c.tile)) for c, r in self.excluded.items()],
            "skipped": len(self.skipped), "complete": not self.skipped,
            "seconds_spent": self.elapsed,
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        }
        rec.update(extra)
        return rec


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
    under the register caps of :data:`.candidates.OCCUPANCY_CANDIDATES` (a second
    :func:`search` whose default is the chosen uncapped tile, so a cap is kept only
    when faster beyond the noise); the auto choice becomes the capped tile when it
    was the uncapped one, or when the capped one beats it beyond the noise.

    Why a second stage: ptxas sizes registers per kernel, and whether one more
    resident tile per SM pays depends on what it spills for it.  On the H100 at
    2^27 the float64 tile went from 3 to 4 tiles per SM at 0.95 -> 0.99 of copy
    with no spill, while 2-D int64 tiles capped to 3 or 4 per SM spilled 83-184
    stores and fell from 0.85 to 0.60 / 0.42 (docs/design/lookback.md), so the cap
    is measured on the tile that won."""
    tile = result.tiles.get("decoupled_lookback")
    if tile is None or tile.occupancy:
        return result
    base = Candidate("decoupled_lookback", tile)
    # The chosen tile and the fastest other uncapped one: a smaller tile may win
    # once capped (H100, float64: 4096-element tiles at 4 per SM reached 0.99 of
    # copy where the uncapped winner had 8192 elements, docs/design/tuning-method.md).
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
