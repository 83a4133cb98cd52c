"""The search: pick the fastest verified candidate, robustly against noise.

Pure logic on an injected ``measure(candidate) -> seconds`` and ``verify(candidate)
-> bool``, so it is tested without a GPU (:mod:`.measure` supplies the real
ones).  A candidate that computes a wrong result is excluded before it is
timed.  One lucky measurement does not win: the first pass, which times the
candidates one after another (once all are verified, so compiled) and again in
the opposite order, ranking each by the faster of its two times, only selects
the finalists; the finalists' interleaved rounds rank them, and a challenger
replaces a default only by winning a :func:`duel`: fresh rounds of the two
alone, decided on the ratio of their times within each round, with as many
rounds as the decision needs (docs/design/tuning-method.md).  Nothing here
imports torch or triton.
"""

from __future__ import annotations

import dataclasses
import datetime
import math
import statistics
import time
from dataclasses import dataclass
from typing import Callable, Sequence

from ..planning.registry import DETERMINISTIC_STRATEGIES
from .candidates import OCCUPANCY_CANDIDATES
from ..planning.keys import Candidate, tile_dict

__all__ = ["TuningError", "SearchResult", "Duel", "search", "refine_occupancy", "duel", "interleave",
           "paired_ratio", "verdict", "measured_noise", "notch", "NOISE_FLOOR", "WIN_GAIN", "FINALISTS", "ROUNDS",
           "MIN_ROUNDS", "QUARTILE_ROUNDS", "DUEL_MAX_ROUNDS", "DUEL_Z", "NOTCH", "CAPPED_RUNNERS_UP", "FIRST_PASSES"]

#: A duel keeps the base once the challenger's gain is known to be below this
#: (two choices within it count as alike), and the least noise a search reports.
NOISE_FLOOR = 0.02
#: A duel replaces the base once the challenger's gain is known to exceed this.
WIN_GAIN = 0.01
#: The most rounds a duel runs before it keeps the base undecided.
DUEL_MAX_ROUNDS = 63
#: The duel's confidence: its half-width is DUEL_Z standard errors of the median
#: ratio (2.576: 99% two-sided for one look; a duel that adds rounds until it
#: decides looks up to seven times, so its error rates are a few times larger).
DUEL_Z = 2.576
#: Standard error of a median of k values, times sqrt(k), per unit of their
#: interquartile range: sqrt(pi / 2) * sigma, sigma = IQR / 1.349 (normal).
MEDIAN_SE_PER_IQR = math.sqrt(math.pi / 2) / 1.349
FINALISTS = 3  # fastest candidates per pool re-measured
#: Interleaved rounds that rank the finalists, at least three, so that the median
#: of each finalist's rounds is not moved by one outlier (of two it would be the mean).
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


def paired_ratio(challenger, base) -> tuple[float, float]:
    """(median, half-width) of the per-round ratios ``challenger[i] / base[i]``:
    times taken side by side in the same rounds, so that a drift shared by both
    (a slower host for a few seconds, a clock change) cancels in each ratio.
    The half-width, absolute, is :data:`DUEL_Z` standard errors of that median
    estimated from the ratios' quartiles; with fewer than
    :data:`QUARTILE_ROUNDS` ratios, infinite."""
    ratios = [c / b for c, b in zip(challenger, base)]
    if len(ratios) < QUARTILE_ROUNDS:
        return (statistics.median(ratios) if ratios else math.nan), math.inf
    low, m, high = statistics.quantiles(ratios, n=4, method="inclusive")
    return m, DUEL_Z * MEDIAN_SE_PER_IQR * (high - low) / math.sqrt(len(ratios))


def verdict(challenger, base) -> bool | None:
    """The duel's rule on the times of two candidates in the same rounds: True
    (the challenger replaces the base) once its gain, 1 - the median ratio, is
    known to exceed :data:`WIN_GAIN` (the median plus its half-width,
    :func:`paired_ratio`, below 1 - WIN_GAIN); False (the base stays) once it
    is known to be below :data:`NOISE_FLOOR`; None while undecided.
    So a challenger faster by 1% or less rarely replaces the base (simulated
    with normal noise, 5-6% of duels at exactly 1% and under 2% at 0%, after
    the repeated looks of a duel), and one faster by 2% or more does once the
    half-width falls below its gain minus 1%, which within the 63 rounds of
    :data:`DUEL_MAX_ROUNDS` takes a small spread of the ratios (a gain of 2%
    replaced in 77% of simulated duels at an interquartile range of 3%, 54% at
    4%; the H200 measured 2-4%); in between either may happen."""
    m, h = paired_ratio(challenger, base)
    if m + h < 1 - WIN_GAIN:
        return True
    if m - h > 1 - NOISE_FLOOR:
        return False
    return None


@dataclass(frozen=True)
class Duel:
    """What a :func:`duel` decided, and on what: the median per-round ratio
    challenger / base, its half-width (:func:`paired_ratio`) and the rounds run."""
    replaced: bool
    ratio: float
    half_width: float
    rounds: int

    def __bool__(self) -> bool:
        return self.replaced

    def to_record(self, challenger: Candidate, base: Candidate) -> dict:
        def number(v):
            return v if math.isfinite(v) else None

        return dict(challenger=challenger.label, base=base.label, replaced=self.replaced,
                    ratio=number(self.ratio), half_width=number(self.half_width), rounds=self.rounds)


def interleave(first: Candidate, second: Candidate, timed: Callable[[Candidate], float | None],
               rounds: int, times: dict) -> Candidate | None:
    """Add ``rounds`` rounds of the two alone to ``times`` (candidate -> list of
    seconds), each round timing both back to back, the order alternating from
    one round to the next (``second`` first in even rounds).  Returns the
    candidate whose measurement failed (``timed`` returned None), else None."""
    for _ in range(rounds):
        r = len(times[first])
        for c in ((first, second) if r % 2 else (second, first)):
            t = timed(c)
            if t is None:
                return c
            times[c].append(t)
    return None


def duel(challenger: Candidate, base: Candidate, timed: Callable[[Candidate], float | None], rounds: int,
         max_rounds: int = DUEL_MAX_ROUNDS) -> Duel:
    """Whether ``challenger`` replaces ``base``: the two alone, measured in fresh
    rounds (at least ``rounds`` and :data:`QUARTILE_ROUNDS`), then as many more
    as :func:`verdict` needs, up to ``max_rounds``; still undecided there, the
    base stays.  ``timed(c)`` measures once (None: failed; a failed base
    loses, a failed challenger does not win).

    Why fresh rounds: the fastest of many candidates is likely the luckiest, so
    the measurements that selected it overstate its lead.  Why ratios within a
    round: on the H200 at n <= 2^20 the time a waiting caller sees (the host's
    share of the score) drifted by up to 40% over seconds, alike for two tiles
    timed side by side, so tunes reported spreads of up to 46% for those keys
    where the ratios of two tiles in the same rounds spread by 2-4%
    (interquartile range); tunes that compared medians under the first spread
    kept a tile 4-6% slower in one run of two.  Why a variable number of
    rounds: a fixed number either decides ties on noise or misses small gains
    (docs/design/tuning-method.md)."""
    batch = max(rounds, QUARTILE_ROUNDS)
    times: dict = {challenger: [], base: []}
    while True:
        failed = interleave(challenger, base, timed, min(batch, max_rounds - len(times[base])), times)
        if failed is not None:
            return Duel(failed == base, math.nan, math.inf, len(times[base]))
        decided = verdict(times[challenger], times[base])
        if decided is not None or len(times[base]) >= max_rounds:
            m, h = paired_ratio(times[challenger], times[base])
            return Duel(bool(decided), m, h, len(times[base]))


def measured_noise(rounds, noise_floor: float = NOISE_FLOOR) -> float:
    """The relative spread of a search's rounds, reported with its result (the
    tune log, the table's records): the median over the finalists of each
    one's spread, at least ``noise_floor``.  ``rounds``: one list of times per
    finalist.  A finalist's spread over k rounds: with fewer than
    :data:`QUARTILE_ROUNDS`, the relative range (max - min) / median; from
    there on, the uncertainty of its median by the box-plot notch, 2 * NOTCH *
    IQR / sqrt(k) / median, which one outlying round does not move (9-round
    tunes on the H100 had measured ranges of 28-37% from one slow call per
    finalist).  It does not decide: each finalist's times also carry the drift
    that all candidates share, which the per-round ratios of a :func:`duel`
    cancel."""
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


def _relative(samples: dict, c: Candidate, base: Candidate, rounds: int) -> float:
    """``c`` against ``base`` in one search: the median of its per-round ratios to
    the base over the search's ``rounds`` (both finalists), so that a drift
    shared by a round cancels, as in a duel; else the ratio of their
    :func:`_decisive` times.  Duel rounds appended later are left out."""
    if c == base:
        return 1.0
    mine, theirs = _rounds(samples[c])[:rounds], _rounds(samples[base])[:rounds]
    if mine and len(mine) == len(theirs):
        return statistics.median(a / b for a, b in zip(mine, theirs))
    return _decisive(samples[c]) / _decisive(samples[base])


class TuningError(RuntimeError):
    """A tuning run could not measure its reference (the default choice)."""


def _timed_into(measure: Callable[[Candidate], float], default: Candidate, samples: dict, excluded: dict,
                where: str = "") -> Callable[[Candidate], float | None]:
    """``timed(c)``: measure ``c`` once and append the time to ``samples[c]``.  A
    measurement that raises or is not a positive finite time excludes ``c``
    (recorded in ``excluded``, its samples dropped) and returns None, except for
    ``default``, the reference, whose failure raises :class:`TuningError`."""
    def timed(c) -> float | None:
        try:
            t = float(measure(c))
            if not (t > 0 and math.isfinite(t)):
                raise ValueError(f"measured {t!r} seconds")
        except Exception as exc:  # noqa: BLE001 - reported, the search goes on
            if c == default:
                raise TuningError(f"the default {default.label} failed{where}: "
                                  f"{type(exc).__name__}: {exc}") from exc
            excluded[c] = f"timing raised {type(exc).__name__}: {exc}"[:300]
            samples.pop(c, None)
            return None
        samples.setdefault(c, []).append(t)
        return t

    return timed


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
    duels: dict = dataclasses.field(default_factory=dict)  # (challenger, base) -> Duel
    #: choices of the register-cap search that lost the final duel against the
    #: default (:func:`refine_occupancy`)
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
            "duels": [d.to_record(c, b) for (c, b), d in self.duels.items()],
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
           duel_rounds: int = DUEL_MAX_ROUNDS, budget: float | None = None,
           clock: Callable[[], float] = time.monotonic) -> SearchResult:
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
    first pass only selects finalists); the reported noise is
    :func:`measured_noise` of the rounds.  A strategy keeps its default tile,
    and the auto (deterministic) choice stays ``default``
    (``deterministic_default``), unless the finalist fastest against it (the
    median of its per-round ratios to it) wins a :func:`duel` against it (with fewer than :data:`MIN_ROUNDS` rounds, every
    default stays).  So the result is never slower than a default beyond the
    duel's uncertainty, and two runs choose within :data:`NOISE_FLOOR` of each
    other.  Finalists and duels always run, whatever the budget.
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

    timed = _timed_into(measure, default, samples, excluded)

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

    def relative(c, base) -> float:
        """``c``'s score against ``base`` (:func:`_relative`); its own score where
        the base was not measured."""
        return _relative(samples, c, base, rounds) if base in samples else score[c]

    duels: dict = {}

    def pick(pool, base):
        """The fastest of ``pool`` against ``base``; ``base`` unless that one
        wins a duel against it."""
        pool = [c for c in pool if c in samples]
        if not pool:
            return base if base in samples else None
        best = min(pool, key=lambda c: relative(c, base))
        if base in samples and best != base:
            if rounds < MIN_ROUNDS:
                return base
            if (best, base) not in duels:
                duels[(best, base)] = duel(best, base, timed, rounds, duel_rounds)
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
                     noise_floor: float = NOISE_FLOOR, duel_rounds: int = DUEL_MAX_ROUNDS) -> SearchResult:
    """``result`` with its decoupled look-back tile and the two fastest other ones
    tried under the register caps of :data:`.candidates.OCCUPANCY_CANDIDATES` (a second
    :func:`search` whose default is the chosen uncapped tile, so a cap is kept only
    when it wins a duel); the auto choice becomes the capped tile when it was the
    uncapped one, or when the capped one wins a duel against it.

    Why a second stage: ptxas sizes registers per kernel, and whether one more
    resident tile per SM pays depends on what it spills for it.  On the H100 at
    2^27 the float64 tile went from 3 to 4 tiles per SM at 0.95 -> 0.99 of copy
    with no spill, while 2-D int64 tiles capped to 3 or 4 per SM spilled 83-184
    stores and fell from 0.85 to 0.60 / 0.42 (docs/design/lookback.md), so the cap
    is measured on the tile that won, and on the two fastest other uncapped ones:
    on the H200 two tunes of the 4-byte float keys at n <= 2^16 ranked 4096x4
    second in one and third in the other, and only the first tried it capped,
    where in a later head-to-head the other's choice took 4.5% longer.

    The look-back tile this search chooses, where it is not the default, must
    then win a last duel against the default itself (the register-cap search
    compared it with the uncapped tile only); one that loses is recorded as
    unconfirmed, and the uncapped tile stays where it beat the default, else
    the default, in the entry's tile and in its look-back tile alike."""
    tile = result.tiles.get("decoupled_lookback")
    if tile is None or tile.occupancy:
        return result
    base = Candidate("decoupled_lookback", tile)
    # The chosen tile and the fastest other uncapped ones: a smaller tile may win
    # once capped (H100, float64: 4096-element tiles at 4 per SM reached 0.99 of
    # copy where the uncapped winner had 8192 elements, docs/design/tuning-method.md).
    others = {c: _relative(result.samples, c, base, rounds) for c in result.samples
              if c.strategy == base.strategy and not c.tile.occupancy and c != base}
    tiles = [tile] + [c.tile for c in sorted(others, key=others.get)[:CAPPED_RUNNERS_UP]]
    capped = [Candidate(base.strategy, dataclasses.replace(t, occupancy=k))
              for t in tiles for k in OCCUPANCY_CANDIDATES.get(t.num_warps, ())]
    if not capped:
        return result
    # The default joins the pool (when it is a look-back tile, as the tuner's always
    # is): it is the reference the choice is confirmed against, and must still run.
    anchor = result.default if result.default.strategy == base.strategy else base
    pool = list(dict.fromkeys([base, *(Candidate(base.strategy, t) for t in tiles[1:]), *capped, anchor]))
    sub = search(pool, measure, verify, default=base, rounds=rounds, noise_floor=noise_floor, finalists=len(pool),
                 duel_rounds=duel_rounds)
    if anchor in sub.excluded:
        raise TuningError(f"the default {anchor.label} failed in the register-cap search: {sub.excluded[anchor]}")
    samples = {c: list(s) for c, s in result.samples.items()}
    for c, s in sub.samples.items():  # a candidate measured before gains the second search's rounds
        samples[c] = samples[c] + _rounds(s) if c in samples else list(s)
    duels = {**result.duels, **sub.duels}
    excluded = {**result.excluded, **sub.excluded}
    # The last duels measure as the searches do (the duel's rule: a failed base
    # loses, a failed challenger does not win; the default failing stops the key).
    timed = _timed_into(measure, anchor, samples, excluded, " in the last duel")

    def won(challenger, base):
        if (challenger, base) not in duels:
            duels[(challenger, base)] = duel(challenger, base, timed, rounds, duel_rounds)
        return bool(duels[(challenger, base)])

    # The choice, else the uncapped tile, must beat the default itself (the uncapped
    # tile did so in the first search, a duel found in ``duels``).
    unconfirmed: list = []
    chosen = anchor
    for c in dict.fromkeys([sub.best, base]):
        if c == anchor:
            break
        if rounds >= MIN_ROUNDS and won(c, anchor):
            chosen = c
            break
        unconfirmed.append(c)
    best = result.best
    if best.strategy == base.strategy:
        best = chosen
    elif chosen not in (base, anchor) and rounds >= MIN_ROUNDS and won(chosen, best):
        best = chosen  # the capped look-back tile against another strategy's choice
    return dataclasses.replace(
        result, best=best, tiles=dict(result.tiles, decoupled_lookback=chosen.tile), samples=samples,
        finalists=list(dict.fromkeys(result.finalists + sub.finalists)),
        excluded=excluded, noise=max(result.noise, sub.noise),
        elapsed=result.elapsed + sub.elapsed, duels=duels, unconfirmed=result.unconfirmed + unconfirmed)
