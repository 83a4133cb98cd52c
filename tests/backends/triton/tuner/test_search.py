"""The search (tuner/search.py) on fake timings: the fastest verified candidate,
replacing the default only beyond the measured noise, duels, register caps.

Fakes and fixtures: fakes.py and conftest.py of this folder.
"""

from __future__ import annotations

import collections
import dataclasses
import random
import statistics

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

from prefixscan.backends.triton.tiles import TileConfig  # noqa: E402
from prefixscan.backends.triton.tuner import candidates, keys, search  # noqa: E402

from .fakes import C, searched  # noqa: E402


def test_search_picks_fastest_verified_and_excludes_wrong():
    wrong = C("decoupled_lookback", 2048)
    times = {C("decoupled_lookback", 16384): 1.0, C("decoupled_lookback", 8192, 8): 0.7,
             C("decoupled_lookback", 4096): 0.8, wrong: 0.1}
    r = searched(times, wrong=[wrong])
    assert r.best == C("decoupled_lookback", 8192, 8)
    assert wrong in r.excluded and "wrong result" in r.excluded[wrong]
    assert wrong not in r.samples
    rec = r.to_record()
    assert rec["excluded"][0]["block"] == 2048 and rec["tile"]["block"] == 8192
    assert rec["best_seconds"] == pytest.approx(0.7) and rec["default_seconds"] == pytest.approx(1.0)
    assert [m["seconds"] for m in rec["measured"]] == sorted(m["seconds"] for m in rec["measured"])


def test_search_excludes_a_candidate_that_raises_or_times_nonsense():
    default, bad, nan, zero = (C("decoupled_lookback", b) for b in (16384, 4096, 8192, 2048))

    def verify(c):
        if c == bad:
            raise RuntimeError("compile error")
        return True

    fake = {default: 1.0, nan: float("nan"), zero: 0.0}
    r = search.search([default, bad, nan, zero], fake.__getitem__, verify)
    assert "compile error" in r.excluded[bad] and r.best == default
    assert "nan" in r.excluded[nan] and "0.0" in r.excluded[zero]
    assert set(r.samples) == {default}


def test_search_keeps_default_within_noise():
    base, other = C("decoupled_lookback", 16384), C("decoupled_lookback", 8192)
    assert searched({base: 1.0, other: 0.99}).best == base  # 1% < the 2% floor
    assert searched({base: 1.0, other: 0.90}).best == other
    # the default's rounds spread by 30%, the other's not at all: the noise is the
    # median spread of the finalists (15%), so a 10% gain is not enough
    runs = iter([1.0, 1.0, 1.3, 1.0])  # first pass, then three rounds
    r = search.search([base, other], lambda c: next(runs) if c == base else 0.9, lambda c: True, first_passes=1)
    assert r.noise == pytest.approx(0.15) and r.best == base
    assert r.seconds(base) == 1.0  # the median of the rounds, not the mean


# The rule by which a challenger replaces a default (search.replaces), on its own and
# inside a search: faster in the interleaved rounds by more than their measured spread.

def test_replaces_needs_a_gain_beyond_the_spread_over_enough_rounds():
    base = [1.00, 1.04, 0.97]  # spread 7%
    assert search.measured_noise([base, [0.95, 0.95, 0.95]]) == pytest.approx(0.035)
    noise = search.measured_noise([base, base])  # 7%
    assert not search.replaces([0.95, 0.94, 0.96], base, noise)  # 5% faster: within the spread
    assert search.replaces([0.90, 0.91, 0.89], base, noise)  # 10% faster: beyond it
    assert not search.replaces([0.90, 0.91], base[:2], noise)  # two rounds: a median is a mean
    assert not search.replaces([0.5], [1.0], noise)  # a first pass alone never replaces
    assert search.measured_noise([[1.0, 1.0, 1.0]]) == search.NOISE_FLOOR  # at least the floor
    assert not search.replaces([0.985] * 3, [1.0] * 3, search.NOISE_FLOOR)


@pytest.mark.parametrize("gain, spread, replaced", [(0.05, 0.10, False), (0.15, 0.10, True),
                                                    (0.03, 0.0, True), (0.015, 0.0, False)])
def test_search_replaces_the_default_only_beyond_the_measured_spread(gain, spread, replaced):
    """Both candidates' times swing by +-spread/2 from one round to the next, alike (as a
    drift of the GPU clock would): the challenger replaces the default only when its
    gain exceeds the spread of the rounds (or the 2% floor)."""
    base, other = C("decoupled_lookback", 16384), C("decoupled_lookback", 8192)
    count = collections.Counter()

    def measure(c):
        count[c] += 1
        wobble = spread / 2 * (1 if count[c] % 2 else -1)
        return (1.0 if c == base else 1.0 - gain) * (1 + wobble)

    r = search.search([base, other], measure, lambda c: True, first_passes=1)
    assert (r.best == other) is replaced
    assert r.noise == pytest.approx(max(search.NOISE_FLOOR, spread), rel=0.2)
    # first pass, rounds, and a duel of as many rounds when the rounds favour the challenger
    assert count[base] == count[other] == 1 + search.ROUNDS * (2 if replaced else 1)
    assert search.ROUNDS >= search.MIN_ROUNDS


def test_search_decides_on_the_rounds_not_the_first_pass():
    """The first passes time candidates one after another: a challenger fast there but
    not in the rounds keeps the default, and a default slow there but not in the rounds
    is not replaced."""
    base, other = C("decoupled_lookback", 16384), C("decoupled_lookback", 8192)
    runs = {base: iter([1.5, 1.6, 1.0, 1.0, 1.0]), other: iter([0.5, 0.6, 0.99, 0.99, 0.99])}
    r = search.search([base, other], lambda c: next(runs[c]), lambda c: True)
    assert r.best == base and r.seconds(other) == pytest.approx(0.99)
    fewer = search.search([base, other], {base: 1.0, other: 0.5}.__getitem__, lambda c: True, rounds=2)
    assert fewer.best == base  # fewer rounds than MIN_ROUNDS: the default stays


def test_a_challenger_lucky_in_the_rounds_loses_the_duel():
    """The fastest of many is likely the luckiest: its lead must hold in fresh rounds of
    the two alone (a duel) before it replaces the default."""
    base, other = C("decoupled_lookback", 16384), C("decoupled_lookback", 8192)
    calls = collections.Counter()

    def measure(c):
        calls[c] += 1
        return 1.0 if c == base or calls[c] > 1 + search.ROUNDS else 0.9  # fast until the duel

    r = search.search([base, other], measure, lambda c: True, first_passes=1)
    assert r.best == base and r.duels == {(other, base): False}
    assert calls[other] == calls[base] == 1 + 2 * search.ROUNDS
    assert r.to_record()["duels"] == [dict(challenger=other.label, base=base.label, replaced=False)]
    steady = search.search([base, other], {base: 1.0, other: 0.9}.__getitem__, lambda c: True)
    assert steady.best == other and steady.duels == {(other, base): True}


def test_search_remeasures_the_top_few_and_a_lucky_one_loses():
    base, lucky = C("decoupled_lookback", 16384), C("decoupled_lookback", 4096)
    slow = [C("decoupled_lookback", b, 8) for b in (2048, 4096, 8192, 32768)]
    runs = {lucky: iter([0.5, 1.0, 1.01, 0.99])}  # fast once, then as slow as the default
    calls = []

    def measure(c):
        calls.append(c)
        return next(runs[c]) if c in runs else (1.0 if c == base else 2.0 + slow.index(c))

    r = search.search([base, lucky] + slow, measure, lambda c: True, finalists=3, rounds=3, first_passes=1)
    assert r.best == base
    assert r.samples[lucky] == [0.5, 1.0, 1.01, 0.99] and calls.count(base) == 4
    # finalists: the 3 fastest on their first measurement (the default among them); the rest once
    assert calls.count(slow[0]) == 4 and all(calls.count(c) == 1 for c in slow[1:])
    assert set(r.finalists) == {base, lucky, slow[0]}
    # interleaved: each round runs the finalists in the opposite order of the one before
    tail = calls[-9:]
    assert tail[:3] == tail[3:6][::-1] == tail[6:]


def _occ(c, occupancy):
    return keys.Candidate(c.strategy, TileConfig(c.tile.block, c.tile.num_warps, c.tile.window, c.tile.max_kb,
                                               c.tile.packed, occupancy=occupancy))


@pytest.mark.parametrize("warps", [4, 8])
def test_refine_occupancy_keeps_a_cap_only_when_it_is_faster(warps):
    """The tuned decoupled look-back tile is re-measured under each register cap of
    OCCUPANCY_CANDIDATES; a cap that wins beyond the noise replaces the tile and the
    auto choice, one within the noise or wrong does not."""
    base, other = C("decoupled_lookback", 4096, warps), C("decoupled_lookback", 16384)
    low, high = (_occ(base, k) for k in candidates.OCCUPANCY_CANDIDATES[warps])
    times = {other: 1.0, base: 0.8, low: 0.6, high: 0.5}
    first = searched({other: 1.0, base: 0.8})
    r = search.refine_occupancy(first, times.__getitem__, lambda c: c != high)
    assert high in r.excluded and r.best == low and r.tiles["decoupled_lookback"] == low.tile
    assert r.to_record()["tile"]["occupancy"] == low.tile.occupancy
    assert r.samples[base][0] == 0.8 and len(r.samples[base]) > 1  # the uncapped tile measured again
    times.update({low: 0.79, high: 0.79})  # within the 2% floor: no cap
    r = search.refine_occupancy(first, times.__getitem__, lambda c: True)
    assert r.best == base and r.tiles["decoupled_lookback"] == base.tile
    # the runner-up's caps are tried too (its uncapped time 1.0 lost to 0.8)
    runner_up = _occ(other, candidates.OCCUPANCY_CANDIDATES[4][0])
    times[runner_up] = 0.7
    r = search.refine_occupancy(first, times.__getitem__, lambda c: True)
    assert r.best == runner_up and r.tiles["decoupled_lookback"] == runner_up.tile


def test_refine_occupancy_tries_the_caps_of_the_third_fastest_tile_too():
    """A tile ranked third uncapped can win once capped: its caps are measured."""
    base, second, third = (C("decoupled_lookback", b) for b in (8192, 16384, 4096))
    times = {base: 0.80, second: 0.85, third: 0.86}
    capped_third = _occ(third, candidates.OCCUPANCY_CANDIDATES[4][1])
    r = search.refine_occupancy(searched(dict(times)), {**times, capped_third: 0.6}.get, lambda c: True)
    assert r.best == capped_third and capped_third in r.samples
    assert search.CAPPED_RUNNERS_UP == 2


def test_a_choice_not_beyond_the_noise_measured_later_keeps_the_default():
    """The first search's duel lets a challenger 10% faster replace the default
    under its small noise; the register-cap search then measures a 30% spread:
    10% is no longer beyond the noise, so the default is kept."""
    default, chained = C("decoupled_lookback", 8192), C("chained", 32768)
    first = searched({default: 1.0, chained: 0.9})
    assert first.best == chained and first.noise == search.NOISE_FLOOR
    calls = collections.Counter()

    def flaring(c):  # the caps' rounds alternate between two levels 30% apart
        calls[c] += 1
        return {default: 1.0, chained: 0.9}.get(c, 1.2) * (1.3 if calls[c] % 2 else 1.0)

    r = search.refine_occupancy(first, flaring, lambda c: True)
    assert r.noise > 0.2 and r.best == default
    quiet = search.refine_occupancy(first, {default: 1.0, chained: 0.9}.get, lambda c: True)
    assert quiet.best == chained  # a steady 10% gain under a steady noise stays


def test_a_cap_not_beyond_the_first_search_noise_leaves_tile_and_look_back_tile_alike():
    """The first search measured a noise of 16% (its rounds are not shown here); the
    cap search is quiet and its capped tile wins there by 6%.  Under the larger noise
    the cap does not count: the entry keeps the default as its tile and as its
    look-back tile, and its record says so (a table once held the capped tile for
    strategy="decoupled_lookback" while the auto choice had been reverted)."""
    default, other = C("decoupled_lookback", 8192, 8), C("decoupled_lookback", 16384, 8)
    uncapped = C("decoupled_lookback", 4096, 8)
    capped = _occ(uncapped, 2)
    times = {default: 1.0, other: 1.05, uncapped: 1.04, capped: 0.94}
    first = dataclasses.replace(searched({default: 1.0, other: 1.05, uncapped: 1.04}), noise=0.16)
    assert first.best == default
    r = search.refine_occupancy(first, lambda c: times.get(c, 1.1), lambda c: True)
    assert r.duels[(capped, default)] is True and r.unconfirmed == [capped]  # won its duel, not the noise
    assert r.to_record()["unconfirmed"] == [capped.label]
    assert r.best == default and r.tiles["decoupled_lookback"] == default.tile
    assert r.to_record()["tile"] == r.to_record()["tiles"]["decoupled_lookback"]
    quiet = search.refine_occupancy(dataclasses.replace(first, noise=0.02), lambda c: times.get(c, 1.1),
                                    lambda c: True)
    assert quiet.best == capped and quiet.tiles["decoupled_lookback"] == capped.tile


def test_a_cap_is_confirmed_in_the_rounds_it_shared_with_the_default():
    """The first search picks tile T over the default D (0.93 against 1.0); during
    the cap search everything runs 12% slower, and T capped wins there (0.88).  Its
    gain over D counts in the rounds where both ran, not against D's earlier,
    faster rounds."""
    d, t = C("decoupled_lookback", 16384), C("decoupled_lookback", 8192)
    t_capped = _occ(t, candidates.OCCUPANCY_CANDIDATES[4][0])
    true = {d: 1.0, t: 0.93, t_capped: 0.88}
    slow = [1.0]
    first = search.search([d, t], lambda c: true[c] * slow[0], lambda c: True, rounds=9)
    assert first.best == t
    slow[0] = 1.12
    r = search.refine_occupancy(first, lambda c: true.get(c, 1.2) * slow[0], lambda c: True, rounds=9)
    assert r.best == t_capped and r.tiles["decoupled_lookback"] == t_capped.tile


def test_a_look_back_tile_that_won_its_duel_stays_the_auto_choice_when_another_strategy_loses_its_own():
    """T beats the default D in its duel; chained, faster still in the rounds, loses
    its duel to D: the auto choice is T, so the entry's tile and its look-back tile
    agree (the auto choice was D, with T for strategy="decoupled_lookback" alone)."""
    d, t, chained = C("decoupled_lookback", 16384), C("decoupled_lookback", 8192), C("chained", 16384)
    calls = collections.Counter()

    def measure(c):
        calls[c] += 1
        if c == chained:  # fast in the first passes and rounds, slow in its duel
            return 0.7 if calls[c] <= 2 + search.ROUNDS else 1.0
        return {d: 1.0, t: 0.9}[c]

    r = search.search([d, t, chained], measure, lambda c: True)
    assert r.duels[(t, d)] is True and r.duels[(chained, d)] is False
    assert r.best == t and r.tiles["decoupled_lookback"] == t.tile
    assert r.to_record()["tile"] == r.to_record()["tiles"]["decoupled_lookback"]


def test_a_default_that_fails_in_the_cap_search_stops_the_key():
    """The default is the reference the cap search confirms against: where it fails
    there, the key fails (as where it fails in the first search), rather than a cap
    passing unchecked."""
    d, t = C("decoupled_lookback", 16384), C("decoupled_lookback", 8192)
    first = dataclasses.replace(searched({d: 1.0, t: 0.9}), noise=0.16)
    assert first.best == t
    capped = _occ(t, candidates.OCCUPANCY_CANDIDATES[4][0])
    times = {d: 1.0, t: 0.9, capped: 0.85}
    with pytest.raises(search.TuningError, match="register-cap search"):
        search.refine_occupancy(first, lambda c: times.get(c, 1.2), lambda c: c != d)


def test_refine_occupancy_leaves_another_strategy_unless_the_cap_beats_it():
    look, chained = C("decoupled_lookback", 4096), C("chained", 16384)
    first = searched({look: 1.0, chained: 0.7})
    assert first.best == chained
    times = {look: 1.0, chained: 0.7, _occ(look, 4): 0.9, _occ(look, 5): 0.95}
    r = search.refine_occupancy(first, times.__getitem__, lambda c: True)
    assert r.best == chained and r.tiles["decoupled_lookback"].occupancy == 4  # still the look-back's tile
    times[_occ(look, 5)] = 0.5
    assert search.refine_occupancy(first, times.__getitem__, lambda c: True).best == _occ(look, 5)
    capped = searched({_occ(look, 4): 1.0})  # already capped (a table entry): left alone
    assert search.refine_occupancy(capped, times.__getitem__, lambda c: True) is capped


@pytest.mark.parametrize("seed", range(40))
def test_search_under_noise_never_picks_a_slower_tile_and_finds_a_clear_gain(seed):
    """Fake timings.  (a) The default truly fastest, the others up to 15% slower,
    measured with +-6% noise and 5% of 40% outliers: the choice is never more than 3%
    slower than the default.  (b) One candidate 15% faster than the default, the others
    slower, with +-3% noise (about the spread the tunes measured at 2^22 and above):
    the choice is within that noise of the truly fastest."""
    import random

    rnd = random.Random(seed)
    blocks = [1024, 2048, 4096, 8192, 16384, 32768]
    cands = [C("decoupled_lookback", b, w) for b in blocks for w in (4, 8)]
    default = C("decoupled_lookback", 16384, 4)

    def noisy(true, spread, outliers):
        def measure(c):
            t = true[c] * rnd.uniform(1 - spread, 1 + spread)
            return t * 1.4 if rnd.random() < outliers else t
        return measure

    true = {c: rnd.uniform(1.0, 1.15) for c in cands}
    true[default] = 1.0
    r = search.search(cands, noisy(true, 0.06, 0.05), lambda c: True, default=default)
    assert true[r.best] <= 1.03, (r.best, true[r.best])

    true = {c: rnd.uniform(1.0, 1.6) for c in cands}
    true[default] = 1.2
    fastest = rnd.choice([c for c in cands if c != default])
    true[fastest] = 1.2 * 0.85
    r = search.search(cands, noisy(true, 0.03, 0.0), lambda c: True, default=default)
    assert true[r.best] <= min(true.values()) * 1.06, (r.best, true[r.best], true[fastest])


# Many rounds (a full tune runs 9): the noise is the uncertainty of the medians by the
# quartiles of the rounds, not their range, which takes in every outlier and grows
# with the number of rounds.

def test_measured_noise_uses_the_quartiles_from_five_rounds():
    steady = [0.96, 0.97, 0.98, 0.99, 1.00, 1.01, 1.02, 1.03, 1.04]  # quartiles 0.98 and 1.02
    notches = 2 * 1.57 * 0.04 / 3  # two notches of median +- 1.57 * IQR / sqrt(9)
    assert search.measured_noise([steady]) == pytest.approx(notches)
    # up to two outlying calls of nine do not move it (the range would be 44% and 49%)
    assert search.measured_noise([steady[:-1] + [1.4]]) == pytest.approx(notches)
    assert search.measured_noise([steady[:-2] + [1.4, 1.45]]) == pytest.approx(notches)
    assert search.measured_noise([[1.0] * 8 + [1.4]]) == search.NOISE_FLOOR
    # more rounds of the same spread: the medians are known better, the margin narrows
    assert search.measured_noise([steady * 2]) == pytest.approx(2 * 1.57 * 0.04 / 18 ** 0.5)
    # fewer than QUARTILE_ROUNDS rounds (first-use tuning runs 3): the range, as before
    assert search.QUARTILE_ROUNDS == 5
    assert search.measured_noise([[1.0, 1.3, 1.0, 1.0]]) == pytest.approx(0.3)
    assert search.measured_noise([[1.0, 1.3, 1.0]]) == pytest.approx(0.3)


# Simulated searches: twelve candidates, +-6% noise and 5% outliers of +40% (the duel's
# simulation, search.duel), decided with 9 rounds or with 3 (first-use tuning).
SIMULATED = [C("decoupled_lookback", b, w) for b in (1024, 2048, 4096, 8192, 16384, 32768) for w in (4, 8)]
SIMULATED_DEFAULT = C("decoupled_lookback", 16384, 4)


def _simulated_choice(true, rnd, rounds):
    def measure(c):
        t = true[c] * rnd.uniform(0.94, 1.06)
        return t * 1.4 if rnd.random() < 0.05 else t

    return search.search(SIMULATED, measure, lambda c: True, default=SIMULATED_DEFAULT, rounds=rounds).best


def _replacements_and_finds(rounds, seed, searches=400):
    """(searches of equally fast candidates that replaced the default, searches that
    chose the one candidate truly 15% faster than the others)."""
    rnd = random.Random(seed)
    equal = dict.fromkeys(SIMULATED, 1.0)
    replaced = sum(_simulated_choice(equal, rnd, rounds) != SIMULATED_DEFAULT for _ in range(searches))
    found = 0
    for _ in range(searches):
        fast = rnd.choice([c for c in SIMULATED if c != SIMULATED_DEFAULT])
        found += _simulated_choice({**equal, fast: 0.85}, rnd, rounds) == fast
    return replaced, found


def test_nine_rounds_replace_no_more_often_on_noise_and_find_a_clear_gain():
    """Measured with this seed: 9 rounds replaced the default 3 times in 400 searches
    of equally fast candidates and found the 15% faster one in 377; 3 rounds 10 and
    313 (the range of 9 rounds: 0 and 194, the gain hidden by the outliers)."""
    replaced_9, found_9 = _replacements_and_finds(9, seed=1)
    replaced_3, found_3 = _replacements_and_finds(3, seed=1)
    assert replaced_9 <= replaced_3 and replaced_9 <= 8  # at most 2%
    assert found_9 >= 360 and found_9 > found_3


def test_one_outlier_per_finalist_does_not_hide_a_thirty_percent_gain():
    """As measured on the H100 at 2^16 (8-byte integers, 2-D): chained 4096x4 at 15.1 us
    against the default's 21.8 us in the same 9 rounds, and one +40% call among each
    finalist's rounds, which made the range-based noise about 30%, so the gain did not
    count.  Each finalist's outlier falls in a different round, and again in the duel."""
    default, fast = C("decoupled_lookback", 4096), C("chained", 4096)
    others = [C("decoupled_lookback", b) for b in (2048, 8192, 16384)]
    true = {default: 21.8e-6, fast: 15.1e-6, **dict.fromkeys(others, 22.0e-6)}
    offset = {c: i for i, c in enumerate(true)}
    calls = collections.Counter()

    def measure(c):
        calls[c] += 1
        wobble = 1 + 0.01 * ((3 * calls[c] + offset[c]) % 5 - 2)  # within +-2%
        spike = 1.4 if (calls[c] - 2 - offset[c]) % 9 == 0 else 1.0  # once in 9 calls, never the first
        return true[c] * wobble * spike

    r = search.search(list(true), measure, lambda c: True, rounds=9)
    rounds = [r.samples[c][1:10] for c in r.finalists]
    assert all(max(x) > 1.3 * statistics.median(x) for x in rounds)  # one outlier each
    assert statistics.median((max(x) - min(x)) / statistics.median(x) for x in rounds) > 0.3
    assert r.noise < 0.1 and r.best == fast and r.duels[(fast, default)] is True


def test_two_searches_of_the_same_candidates_choose_alike():
    """Two independent searches (9 rounds) of candidates whose true times differ by
    0-3% choose candidates within 2% of each other: measured 198 of 200 with this seed
    (5 seeds: 197-199).  A rule that never replaces would agree always, so in the
    second half one candidate is also truly 15% faster than the default: both found
    it, or agreed otherwise, in 190 of 200 (5 seeds: 184-193; the range of 9 rounds,
    which misses the gain in about half the searches: 145-163; 3 rounds: 163-169)."""
    for gain, least in ((0.0, 190), (0.15, 175)):
        rnd = random.Random(3)
        alike = 0
        for trial in range(200):
            true = {c: rnd.uniform(1.0, 1.03) for c in SIMULATED}
            if gain and trial % 2:
                faster = rnd.choice([c for c in SIMULATED if c != SIMULATED_DEFAULT])
                true[faster] = true[SIMULATED_DEFAULT] * (1 - gain)
            first, second = (_simulated_choice(true, rnd, 9) for _ in range(2))
            alike += abs(true[first] / true[second] - 1) <= 0.02
        assert alike >= least, (gain, alike)


def test_two_first_passes_keep_a_fast_candidate_among_the_finalists_despite_outliers():
    """A noisy process (as a cold tune on the H200 at n = 2^16 measured: 16-22% noise):
    one call in five 35% slow, the rest within +-3%, one candidate truly 8% faster than
    the others.  Ranked by one first pass it missed the finalists in 87 of 400 searches
    with this seed and was chosen in 237; by the faster of two passes it missed them in
    14 and was chosen in 272."""
    rnd = random.Random(1)

    def trials(passes):
        missed = chosen = 0
        for _ in range(400):
            true = {c: rnd.uniform(1.0, 1.03) for c in SIMULATED}
            true[SIMULATED_DEFAULT] = 1.0
            fast = rnd.choice([c for c in SIMULATED if c != SIMULATED_DEFAULT])
            true[fast] = 0.92

            def measure(c):
                t = true[c] * rnd.uniform(0.97, 1.03)
                return t * 1.35 if rnd.random() < 0.2 else t

            r = search.search(SIMULATED, measure, lambda c: True, default=SIMULATED_DEFAULT, rounds=9,
                              first_passes=passes)
            missed += fast not in r.finalists
            chosen += r.best == fast
        return missed, chosen

    (missed_1, chosen_1), (missed_2, chosen_2) = trials(1), trials(search.FIRST_PASSES)
    assert search.FIRST_PASSES == 2
    assert missed_1 >= 50 and missed_2 <= 20 and chosen_2 > chosen_1 + 20, (missed_1, missed_2, chosen_1, chosen_2)


def test_search_deterministic_choice_and_chained_for_auto():
    times = {C("decoupled_lookback", 16384): 1.0, C("chained", 16384): 0.5, C("chained", 4096): 0.3,
             C("reduce_then_scan", 16384): 0.4, C("persistent", 16384): 0.9}
    r = searched(times, deterministic_default=C("chained", 16384))
    assert r.best == C("chained", 4096)  # chained may win "auto" scans too (launch runs it chained)
    assert r.best_deterministic == C("chained", 4096)
    assert r.tiles["chained"] == C("chained", 4096).tile
    assert r.tiles["reduce_then_scan"] == C("reduce_then_scan", 16384).tile
    r2 = searched({C("decoupled_lookback", 16384): 1.0, C("chained", 16384): 2.0,
                   C("scan_then_propagate", 8192): 1.5}, deterministic_default=C("chained", 16384))
    assert r2.best == C("decoupled_lookback", 16384)
    assert r2.best_deterministic == C("scan_then_propagate", 8192)
    # persistent folds its carries in a fixed order (SAM): deterministic, so it may win both
    r3 = searched({C("decoupled_lookback", 16384): 1.0, C("persistent", 16384): 0.5, C("chained", 16384): 2.0},
                  deterministic_default=C("chained", 16384))
    assert r3.best.strategy == "persistent" and r3.best_deterministic.strategy == "persistent"


def test_search_budget_skips_the_tail():
    now = [0.0]

    def clock():
        now[0] += 1.0
        return now[0]

    cands = [C("decoupled_lookback", b) for b in (16384, 8192, 4096, 2048, 32768)]
    r = search.search(cands, lambda c: 1.0, lambda c: True, budget=2.5, clock=clock)
    assert r.skipped and len(r.samples) + len(r.skipped) == len(cands)
    assert r.to_record()["complete"] is False


def test_search_fails_when_the_default_fails():
    with pytest.raises(search.TuningError, match="default"):
        search.search([C("decoupled_lookback", 16384)], lambda c: 1 / 0, lambda c: True)


@pytest.mark.parametrize("kw, match", [(dict(finalists=0), "finalists"), (dict(rounds=-1), "rounds")])
def test_search_rejects_bad_arguments(kw, match):
    with pytest.raises(ValueError, match=match):
        search.search([C("decoupled_lookback", 16384)], lambda c: 1.0, lambda c: True, **kw)
