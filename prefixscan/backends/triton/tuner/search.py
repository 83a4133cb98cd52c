"""The search: pick the fastest verified candidate, robustly against noise.

Pure logic on an injected ``measure(candidate) -> seconds`` and ``verify(candidate)
-> bool``, so it is tested without a GPU (:mod:`.measure` supplies the real
ones).  A candidate that computes a wrong result is excluded before it is
timed.  One lucky measurement does not win: the first pass, which times the
candidates one after another (once all are verified, so compiled) and again in
the opposite order, ranking each by the faster of its two times, only selects
the finalists; the choice is made on the finalists' interleaved rounds, by the
rule of :func:`replaces` (docs/design/tuning-method.md).  Nothing here imports
torch or triton.
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

__all__ = ["TuningError", "SearchResult", "search", "refine_occupancy", "replaces", "measured_noise",
           "notch", "NOISE_FLOOR", "FINALISTS", "ROUNDS", "MIN_ROUNDS", "QUARTILE_ROUNDS", "NOTCH",
           "CAPPED_RUNNERS_UP", "FIRST_PASSES"]

NOISE_FLOOR = 0.02  # a candidate must beat the default by more than this (and the measured noise)
FINALISTS = 3  # fastest candidates per pool re-measured
#: Interleaved rounds that decide: three, so that the median of each finalist's
#: rounds is not moved by one outlier (of two it would be the mean).
MIN_ROUNDS = 3
ROUNDS = 3  # interleaved rounds of every finalist, by default
#: From this many rounds on, the noise is measured by the quartiles of the
#: rounds, not their range (:func:`measured_noise`).
QUARTILE_ROUNDS = 5
#: Half-width of a box plot's notch around a median of k values, in units of
#: IQR / sqrt(k) (McGill, Tukey & Larsen, "Variations of box plots", 1978).
NOTCH = 1.57
#: Passes over all candidates that select the finalists, each candidate ranked
#: by its fastest pass.  Why two: on the H200, tunes in a cold process timed the
#: float64 2048x4 tile at n = 2^16 once at 11.2-12.6 us where warm ones took
#: 8.2-9.3 us (noise of that key 16-22% against 2%), so it missed the finalists
#: and a tile whose calls took 7.5-9.6% longer (head-to-head) was kept.
FIRST_PASSES = 2
#: Uncapped look-back tiles besides the chosen one that :func:`refine_occupancy`
#: tries under register caps.
CAPPED_RUNNERS_UP = 2


def replaces(challenger, base, noise: float) -> bool:
    """The rule by which a measured challenger replaces a base choice (a default
    tile, the default strategy, an uncapped tile): ``challenger`` and ``base`` are
    their times (seconds) in the same interleaved rounds.  Both must have been
    measured in at least :data:`MIN_ROUNDS` rounds, and the challenger's median
    must be lower than the base's by more than ``noise``:

        median(challenger) < median(base) * (1 - noise)

    where ``noise`` is :func:`measured_noise` of the search (at least
    :data:`NOISE_FLOOR`).  So a challenger faster by less than the uncertainty
    the rounds measured keeps the base, and so does one never re-measured."""
    if len(challenger) < MIN_ROUNDS or len(base) < MIN_ROUNDS:
        return False
    return statistics.median(challenger) < statistics.median(base) * (1 - noise)


def duel(challenger: Candidate, base: Candidate, timed: Callable[[Candidate], float | None], rounds: int,
         noise: float) -> tuple[bool, dict]:
    """(whether ``challenger`` replaces ``base`` by :func:`replaces`, their fresh
    times): the two alone, measured in ``rounds`` fresh rounds of alternating
    order.  Why fresh: the fastest of many candidates is likely the luckiest, so
    the measurements that selected it overstate its lead.  Simulated with twelve
    equally fast candidates, +-6% noise and 5% outliers of +40%, deciding on the
    selecting rounds replaced the default in 44 searches of 400, a duel in 7; a
    truly 15% faster one was still chosen in 354 of 400.  ``timed(c)`` measures
    once (None: failed; a failed base loses, a failed challenger does not win)."""
    fresh: dict = {challenger: [], base: []}
    for r in range(rounds):
        for c in ((challenger, base) if r % 2 else (base, challenger)):
            t = timed(c)
            if t is None:
                return c == base, fresh
            fresh[c].append(t)
    return replaces(fresh[challenger], fresh[base], noise), fresh


def measured_noise(rounds, noise_floor: float = NOISE_FLOOR) -> float:
    """The relative noise of a search, the margin :func:`replaces` asks for: the
    median over the finalists of each one's spread, at least ``noise_floor``.
    ``rounds``: one list of times per finalist.

    A finalist's spread, over its k round times: with fewer than
    :data:`QUARTILE_ROUNDS`, the relative range (max - min) / median (three
    rounds: first-use tuning).  With more, the range would take in every outlier
    and grow with k: on the H100, 9-round tunes of keys of 8-22 us measured
    28-37% where one outlying call per finalist fell in the rounds, and a challenger
    30% faster in the same rounds (15.1 against 21.8 us) kept the default.  So
    from :data:`QUARTILE_ROUNDS` rounds on, the spread is the uncertainty of the
    medians that :func:`replaces` compares, by the box-plot notch rule: a median
    of k times is known to +-NOTCH * IQR / sqrt(k), the interquartile range
    (inclusive quartiles) ignoring the fastest and the slowest quarter of the
    rounds, and two medians whose notches do not overlap differ at about 95%
    confidence.  So the spread is 2 * NOTCH * IQR / sqrt(k) / median, about the
    relative IQR at 9 rounds.  Simulated with twelve candidates, +-6% noise and
    5% outliers of +40% (5 seeds of 400 searches): with 9 rounds, equally fast
    candidates replaced the default in 12 of 2000 searches and a truly 15% faster
    one was chosen in 1905; with 3 rounds (the range) 34 and 1629; the range of
    9 rounds 0 and 1000 (the gain hidden by outliers); one notch instead of two
    107 and 1888."""
    spreads = [_spread(r) for r in rounds if len(r) > 1]
    return max(noise_floor, statistics.median(spreads)) if spreads else noise_floor


def _spread(times) -> float:
    """One finalist's relative spread (:func:`measured_noise`)."""
    if len(times) < QUARTILE_ROUNDS:
        return (max(times) - min(times)) / statistics.median(times)
    return 2 * notch(times)


def notch(times) -> float:
    """The relative half-width of the box-plot notch around the median of
    ``times`` (at least :data:`QUARTILE_ROUNDS` of them): NOTCH * IQR / sqrt(k) /
    median, the inclusive quartiles."""
    low, _, high = statistics.quantiles(times, n=4, method="inclusive")
    return NOTCH * (high - low) / math.sqrt(len(times)) / statistics.median(times)


def _rounds(samples: list) -> list:
    """The interleaved-round times of a candidate's samples (the first is its first pass)."""
    return samples[1:]


def _decisive(samples: list) -> float:
    """The time a candidate is ranked by: the median of its rounds, else its one first-pass time."""
    return statistics.median(_rounds(samples) or samples)


class TuningError(RuntimeError):
    """A tuning run could not measure its reference (the default choice)."""


@dataclass
class SearchResult:
    default: Candidate
    best: Candidate
    best_deterministic: Candidate | None
    tiles: dict  # strategy -> TileConfig chosen for it
    samples: dict  # Candidate -> [seconds, ...]: the first pass, then the rounds (finalists only)
    finalists: list  # the candidates re-measured
    excluded: dict  # Candidate -> why
    skipped: list  # candidates left out by the time budget
    noise: float  # relative
    elapsed: float
    duels: dict = dataclasses.field(default_factory=dict)  # (challenger, base) -> replaced it
    #: choices that won their duel but not the default under the larger noise of a
    #: later search (:func:`refine_occupancy`)
    unconfirmed: list = dataclasses.field(default_factory=list)

    @property
    def times(self) -> dict:
        """Candidate -> the time it is ranked by: the median of its interleaved
        rounds (a finalist), else its one first-pass time."""
        return {c: _decisive(s) for c, s in self.samples.items()}

    def seconds(self, c: Candidate | None) -> float | None:
        s = self.samples.get(c) if c is not None else None
        return _decisive(s) if s else None

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
            "duels": [dict(challenger=c.label, base=b.label, replaced=won) for (c, b), won in self.duels.items()],
            "unconfirmed": [c.label for c in self.unconfirmed],
            "skipped": len(self.skipped), "complete": not self.skipped,
            "seconds_spent": self.elapsed,
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        }
        rec.update(extra)
        return rec


def search(candidates: Sequence[Candidate], measure: Callable[[Candidate], float],
           verify: Callable[[Candidate], bool], *, default: Candidate | None = None,
           deterministic_default: Candidate | None = None, noise_floor: float = NOISE_FLOOR,
           finalists: int = FINALISTS, rounds: int = ROUNDS, first_passes: int = FIRST_PASSES,
           budget: float | None = None, clock: Callable[[], float] = time.monotonic) -> SearchResult:
    """Measure ``candidates`` and pick the fastest verified one.

    ``measure(c)`` returns seconds per call of candidate ``c`` (itself a median
    of repeats on the device); ``verify(c)`` whether ``c`` computes the same
    result as ``default`` (the first candidate if None), which is the reference
    and is measured first.  A candidate that fails or raises in ``verify`` or
    ``measure`` is excluded with the reason.  With ``budget`` seconds,
    candidates not verified in time are skipped (the first passes over the
    verified ones, the rounds and the duels run whatever the budget).

    One measurement can be lucky, so the choice is made among *finalists*,
    re-measured ``rounds`` more times in interleaved order (alternating
    direction, so that a drift of the GPU clock hits all alike): the
    ``finalists`` fastest of the auto pool (every strategy) and of the
    deterministic pool, every strategy's fastest tile and its default tile, and
    the two defaults.  A finalist's score is the median of its rounds (the
    first pass only selects finalists); the noise is :func:`measured_noise` of
    the rounds.  A strategy keeps its default tile, and the auto
    (deterministic) choice stays ``default`` (``deterministic_default``),
    unless the fastest challenger :func:`replaces` it twice: in the rounds, and
    in a :func:`duel` of ``rounds`` fresh rounds of the two alone -- faster by
    more than the noise each time, over at least :data:`MIN_ROUNDS` rounds (with
    fewer, every default stays).  So the result is never slower than a default
    within the noise, and does not flip between runs on noise alone.  Finalists
    and duels always run, whatever the budget.
    """
    if finalists < 1:
        raise ValueError(f"finalists must be >= 1, got {finalists!r}")
    if first_passes < 1:
        raise ValueError(f"first_passes must be >= 1, got {first_passes!r}")
    if rounds < 0:
        raise ValueError(f"rounds must be >= 0, got {rounds!r}")
    if not candidates and default is None:
        raise ValueError("candidates: nothing to search")
    start = clock()
    default = default if default is not None else candidates[0]
    samples: dict = {}
    excluded: dict = {}
    skipped: list = []

    def timed(c) -> float | None:
        """Measure ``c`` once and keep the time (None: it failed and is excluded)."""
        try:
            t = float(measure(c))
            if not (t > 0 and math.isfinite(t)):
                raise ValueError(f"measured {t!r} seconds")
        except Exception as exc:  # noqa: BLE001 - reported, the search goes on
            if c == default:
                raise TuningError(f"the default {default.label} failed: {type(exc).__name__}: {exc}") from exc
            excluded[c] = f"timing raised {type(exc).__name__}: {exc}"[:300]
            samples.pop(c, None)
            return None
        samples.setdefault(c, []).append(t)
        return t

    verified = []
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
        verified.append(c)
    # The first pass starts once every candidate is verified, so compiled: a
    # time taken right after a compilation follows seconds of an idle GPU.  On
    # the H200 a tune in a cold process (this key compiling: 15.6 s, against
    # 0.8 s warm) timed the 2048x4 float64 tile at n = 2^16 at 11.2 us on its
    # first pass, against 8.2 us warm, left it out of the finalists and kept a
    # tile whose calls took 9.6% longer in a later head-to-head.
    # Each further first pass runs in the opposite order, and the fastest of a
    # candidate's first-pass times ranks it: one slow outlier no longer leaves a
    # fast candidate out of the finalists (:data:`FIRST_PASSES`).
    first_pass = [default, *verified]
    for sweep in range(first_passes):
        for c in (first_pass if sweep % 2 == 0 else first_pass[::-1]):
            if sweep == 0:
                timed(c)
            elif c in samples and timed(c) is not None:
                samples[c][:2] = [min(samples[c][:2])]

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

    score = {c: _decisive(s) for c, s in samples.items()}
    noise = measured_noise([_rounds(samples[c]) for c in final], noise_floor)

    duels: dict = {}

    def pick(pool, base):
        """The fastest of ``pool``; ``base`` unless the fastest replaces it in the
        rounds and then in a duel."""
        pool = [c for c in pool if c in samples]
        if not pool:
            return base if base in samples else None
        best = min(pool, key=score.get)
        if base in samples and best != base:
            if (best, base) not in duels:
                duels[(best, base)] = (replaces(_rounds(samples[best]), _rounds(samples[base]), noise)
                                       and duel(best, base, timed, rounds, noise)[0])
            if not duels[(best, base)]:
                return base if base in samples else best  # a base that failed in the duel is out
        return best

    tiles = {}
    for s in strategies:
        best = pick([c for c in final if c.strategy == s], Candidate(s, default.tile))
        if best is not None:
            tiles[s] = best.tile
    best = pick([Candidate(s, t) for s, t in tiles.items()], default) or default
    own = tiles.get(default.strategy)
    if best == default and own is not None and own != default.tile:
        # The default strategy's own tile won its duel against the default; the
        # auto choice falls back to it when another strategy, faster in the
        # rounds, lost its duel, so the entry's tile and its strategy's agree.
        best = Candidate(default.strategy, own)
    best_det = pick([Candidate(s, t) for s, t in tiles.items() if s in DETERMINISTIC_STRATEGIES],
                    deterministic_default)
    return SearchResult(default, best, best_det, tiles, samples, final, excluded, skipped, noise,
                        clock() - start, duels)


def refine_occupancy(result: SearchResult, measure: Callable[[Candidate], float],
                     verify: Callable[[Candidate], bool], *, rounds: int = ROUNDS,
                     noise_floor: float = NOISE_FLOOR) -> SearchResult:
    """``result`` with its decoupled look-back tile and the two fastest other ones
    tried under the register caps of :data:`.candidates.OCCUPANCY_CANDIDATES` (a second
    :func:`search` whose default is the chosen uncapped tile, so a cap is kept only
    when faster beyond the noise); the auto choice becomes the capped tile when it
    was the uncapped one, or when the capped one beats it beyond the noise.

    Why a second stage: ptxas sizes registers per kernel, and whether one more
    resident tile per SM pays depends on what it spills for it.  On the H100 at
    2^27 the float64 tile went from 3 to 4 tiles per SM at 0.95 -> 0.99 of copy
    with no spill, while 2-D int64 tiles capped to 3 or 4 per SM spilled 83-184
    stores and fell from 0.85 to 0.60 / 0.42 (docs/design/lookback.md), so the cap
    is measured on the tile that won, and on the two fastest other uncapped ones:
    on the H200 two tunes of the 4-byte float keys at n <= 2^16 ranked 4096x4
    second in one and third in the other, and only the first tried it capped,
    where in a later head-to-head the other's choice took 4.5% longer.

    The margin asked of the result is the noise of both searches, each choice
    compared with the default in rounds measured together (:func:`_beats`): a
    choice that beat the default by more than one search's noise but not by
    more than the other's keeps the default, in the entry's tile and in its
    look-back tile alike."""
    tile = result.tiles.get("decoupled_lookback")
    if tile is None or tile.occupancy:
        return result
    base = Candidate("decoupled_lookback", tile)
    # The chosen tile and the fastest other uncapped ones: a smaller tile may win
    # once capped (H100, float64: 4096-element tiles at 4 per SM reached 0.99 of
    # copy where the uncapped winner had 8192 elements, docs/design/tuning-method.md).
    others = {c: _decisive(s) for c, s in result.samples.items()
              if c.strategy == base.strategy and not c.tile.occupancy and c != base}
    tiles = [tile] + [c.tile for c in sorted(others, key=others.get)[:CAPPED_RUNNERS_UP]]
    capped = [Candidate(base.strategy, dataclasses.replace(t, occupancy=k))
              for t in tiles for k in OCCUPANCY_CANDIDATES.get(t.num_warps, ())]
    if not capped:
        return result
    # The default joins the pool (when it is a look-back tile, as the tuner's always
    # is), so that the tiles of this search are confirmed against it in rounds
    # measured together (:func:`_beats`).
    anchor = result.default if result.default.strategy == base.strategy else base
    pool = list(dict.fromkeys([base, *(Candidate(base.strategy, t) for t in tiles[1:]), *capped, anchor]))
    sub = search(pool, measure, verify, default=base, rounds=rounds, noise_floor=noise_floor, finalists=len(pool))
    if anchor in sub.excluded:
        raise TuningError(f"the default {anchor.label} failed in the register-cap search: {sub.excluded[anchor]}")
    noise = max(result.noise, sub.noise)
    unconfirmed: list = []
    # The look-back tile, and the auto choice, must still beat the default under
    # the larger noise of the two searches, each in the rounds it shared with the
    # default: the noise can flare during one key (:func:`_beats`).
    chosen = sub.best if _beats(sub.best, anchor, sub.samples, noise, rounds, unconfirmed) else anchor
    samples = {c: list(s) for c, s in result.samples.items()}
    for c, s in sub.samples.items():  # a candidate measured before gains the second search's rounds
        samples[c] = samples[c] + _rounds(s) if c in samples else list(s)
    duels = {**result.duels, **sub.duels}
    best = result.best
    if best.strategy == base.strategy or not _beats(best, result.default, result.samples, noise, rounds,
                                                      unconfirmed):
        best = chosen
    elif chosen not in (base, anchor) and replaces(_rounds(samples[chosen]), _rounds(samples[best]), noise):
        # The capped look-back tile against another strategy's choice, measured in
        # other rounds: a duel decides.

        def timed(c):
            try:
                t = float(measure(c))
            except Exception:  # noqa: BLE001 - the duel's rule: a failed base loses, a failed challenger too
                return None
            if not (t > 0 and math.isfinite(t)):
                return None
            samples[c].append(t)
            return t

        won = duels[(chosen, best)] = duel(chosen, best, timed, rounds, noise)[0]
        best = chosen if won else best
    return dataclasses.replace(
        result, best=best, tiles=dict(result.tiles, decoupled_lookback=chosen.tile), samples=samples,
        finalists=list(dict.fromkeys(result.finalists + sub.finalists)),
        excluded={**result.excluded, **sub.excluded}, noise=noise, elapsed=result.elapsed + sub.elapsed,
        duels=duels, unconfirmed=result.unconfirmed + unconfirmed)


def _beats(c: Candidate, default: Candidate, samples: dict, noise: float, rounds: int, unconfirmed: list) -> bool:
    """Whether ``c`` still :func:`replaces` ``default`` under ``noise`` (the larger
    of two searches' noise) on the interleaved rounds of ``samples`` (one
    search's: the two measured together; its duels left out), ``c`` added to
    ``unconfirmed`` where not.  Why: the noise can flare during one key.  On the
    H200 a tune chose the chained scan over the look-back default (31.1 against
    34.4 us, n = 2^20 int32 2-D) under the first search's noise; the
    register-cap search that followed measured 31%, and a head-to-head later
    timed the default at 23.8 us against 30.8 us, as the other tune had kept it."""
    if c == default:
        return True
    if c not in samples or default not in samples:
        unconfirmed.append(c)
        return False
    if replaces(_rounds(samples[c])[:rounds], _rounds(samples[default])[:rounds], noise):
        return True
    unconfirmed.append(c)
    return False
