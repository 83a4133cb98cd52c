"""The auto-tuner (prefixscan/backends/triton/tuner): keys, the search, the disk
cache, how choose_config and strategy_for read the table, first-use tuning at
the backend's entry, the tile override and ``prefixscan tune``.

No GPU here: the search runs on injected ``measure``/``verify`` fakes, the table
belongs to a fake GPU name written by the test into a temporary cache directory,
and the device-side plumbing runs once end to end in Triton's interpreter.
"""

from __future__ import annotations

import collections
import importlib.util
import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

import prefixscan as ps  # noqa: E402
import prefixscan.tuning as tuning  # noqa: E402
from prefixscan.backends.triton.registry import STRATEGY_NAMES  # noqa: E402
from prefixscan.backends.triton.scan import strategy_for  # noqa: E402
from prefixscan.backends.triton.tuner import (candidates, compare, first_use, keys, measure, search,  # noqa: E402
                                              session, shipped, sources, table)
from prefixscan.backends.triton import lookback, planner, runtime, status, tiles  # noqa: E402
from prefixscan.backends.triton import scan as scan_path  # noqa: E402
from prefixscan.backends.triton.policy import routing  # noqa: E402
from prefixscan.backends.triton.tiles import TileConfig, default_config  # noqa: E402
from prefixscan.cli import main  # noqa: E402
from prefixscan._environment import interpreter_mode  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
GPU = "Fake GPU 9000 (test)"
DEV = collections.namedtuple("FakeDevice", "type index")("cuda", 0)  # what lookup sees of a CUDA device
D4 = default_config(4, False)  # int32 default tile of the largest size bucket
D20 = default_config(4, False, 1, 1 << 20)  # int32 default tile of 1-D scans of 2^17..2^21 elements
H100 = "NVIDIA H100 80GB HBM3"  # GPUs with a shipped table
H200 = "NVIDIA H200"


def forget():
    """A new process as far as tuning goes: tables read again, first-use attempts forgotten."""
    table.reset()
    shipped.reset()
    first_use.reset()


def C(strategy, block, warps=4, window=32, like=D4):
    return keys.Candidate(strategy, TileConfig(block, warps, window, like.max_kb, like.packed))


def searched(times, wrong=(), **kw):
    """search() on a table of fake times; the first candidate is the default."""
    cands = list(times)
    kw.setdefault("default", cands[0])
    return search.search(cands, times.__getitem__, lambda c: c not in wrong, **kw)


@pytest.fixture
def fake_gpu(monkeypatch, tmp_path):
    """A CUDA device named GPU whose tables live in tmp_path; first-use tuning on."""
    monkeypatch.setenv("PREFIXSCAN_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("PREFIXSCAN_AUTOTUNE", "1")
    monkeypatch.setattr(table, "gpu_name", lambda device: GPU)
    # an architecture no shipped table has: first-use tuning applies
    monkeypatch.setattr(table, "gpu_properties", lambda device: table.GpuProperties(GPU, 16, (1, 0)))
    monkeypatch.setattr(first_use, "_capturing", lambda: False)
    forget()
    yield tmp_path
    forget()
    planner.set_override(None)


def write_table(entries, gpu=GPU, directory=None):
    records = {k: (r.to_record() if isinstance(r, search.SearchResult) else r) for k, r in entries.items()}
    return table.save_table(table.cache_path(gpu, directory=directory), gpu, records)


KEY_20 = keys.entry_key(4, False, "builtin", 1, 1 << 20)  # int32, add, 1-D, 2^17..2^21


# ---------------------------------------------------------------------------
# Cache location, file format, robustness.

def test_cache_dir_precedence(monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("PREFIXSCAN_CACHE_DIR", raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    assert table.cache_dir() == tmp_path / "home" / ".cache" / "prefixscan"
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert table.cache_dir() == tmp_path / "xdg" / "prefixscan"
    monkeypatch.setenv("PREFIXSCAN_CACHE_DIR", str(tmp_path / "mine"))
    assert table.cache_dir() == tmp_path / "mine"


def test_cache_file_named_by_sanitized_gpu_and_version(monkeypatch, tmp_path):
    monkeypatch.setenv("PREFIXSCAN_CACHE_DIR", str(tmp_path))
    p = table.cache_path("NVIDIA H100 80GB HBM3")
    assert p == tmp_path / f"tuning-NVIDIA_H100_80GB_HBM3-{ps.__version__}.json"
    odd = table.cache_path("../evil/GPU: x", "1.0/../2")
    assert odd.parent == tmp_path and "/" not in odd.name and ".." not in odd.name
    assert table.cache_path("A", "0.1.0") != table.cache_path("A", "0.2.0") != table.cache_path("B", "0.2.0")


def test_round_trip_and_merge(tmp_path):
    r1 = searched({C("decoupled_lookback", 16384): 1.0, C("decoupled_lookback", 4096, 8): 0.5})
    path = table.cache_path(GPU, directory=tmp_path)
    table.save_table(path, GPU, {"k1": r1.to_record()})
    table.save_table(path, GPU, {"k2": r1.to_record(source="other")})  # merged, k1 kept
    data = json.loads(path.read_text())
    assert data["format"] == table.FORMAT and data["gpu"] == GPU and data["version"] == ps.__version__
    entries = table.load_table(path, GPU)
    assert set(entries) == {"k1", "k2"}
    assert entries["k1"].strategy == "decoupled_lookback"
    assert entries["k1"].tile == TileConfig(4096, 8, 32, D4.max_kb, D4.packed)
    assert entries["k2"].record["source"] == "other"
    assert [p.name for p in tmp_path.iterdir()] == [path.name]  # no temporary file left


def test_failed_write_keeps_the_old_file(tmp_path, monkeypatch):
    path = table.cache_path(GPU, directory=tmp_path)
    rec = searched({C("decoupled_lookback", 16384): 1.0}).to_record()
    table.save_table(path, GPU, {"k1": rec})
    before = path.read_bytes()

    def boom(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(table.os, "replace", boom)
    with pytest.raises(OSError):
        table.save_table(path, GPU, {"k2": rec})
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == [path.name]


@pytest.mark.parametrize("content, problem", [
    ("{not json", "corrupt"),
    (json.dumps({"format": "something else"}), "not a prefixscan"),
    (json.dumps({"format": table.FORMAT, "gpu": "Other GPU", "version": ps.__version__, "entries": {}}), "Other GPU"),
])
def test_unusable_file_is_ignored_with_a_warning(tmp_path, content, problem):
    path = table.cache_path(GPU, directory=tmp_path)
    path.write_text(content)
    with pytest.warns(table.TuningCacheWarning, match=problem):
        assert table.load_table(path, GPU) == {}


def test_bad_entry_skipped_good_one_kept(tmp_path):
    path = table.cache_path(GPU, directory=tmp_path)
    good = searched({C("decoupled_lookback", 16384): 1.0}).to_record()
    bad_tile = dict(good, tile={"block": 1000, "num_warps": 3, "window": 0})
    not_det = dict(good, deterministic_strategy="decoupled_lookback")  # not a deterministic strategy
    unknown = dict(good, strategy="bogus")
    path.write_text(json.dumps({"format": table.FORMAT, "gpu": GPU, "version": ps.__version__,
                                "entries": {"good": good, "b1": bad_tile, "b2": not_det, "b3": unknown,
                                            "b4": "nonsense"}}))
    with pytest.warns(table.TuningCacheWarning, match="4 bad entries"):
        assert set(table.load_table(path, GPU)) == {"good"}


def test_corrupt_cache_does_not_break_a_lookup(fake_gpu, monkeypatch):
    table.cache_path(GPU).write_text("\x00garbage")
    monkeypatch.setenv("PREFIXSCAN_AUTOTUNE", "0")
    with pytest.warns(table.TuningCacheWarning):
        assert planner.choose_config(DEV, 4, False, 1 << 20, 1, False) == D20
    # read once per process: no second warning
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert planner.choose_config(DEV, 4, False, 1 << 20, 1, False) == D20


# ---------------------------------------------------------------------------
# Keys.

def test_size_buckets():
    assert keys.size_bucket(1) == keys.size_bucket(1 << 16) == "n<=2^16"
    assert keys.size_bucket((1 << 16) + 1) == keys.size_bucket(1 << 21) == "2^17-2^21"
    assert keys.size_bucket((1 << 21) + 1) == keys.size_bucket(1 << 25) == "2^22-2^25"
    assert keys.size_bucket((1 << 25) + 1) == keys.size_bucket(1 << 40) == "n>=2^26"


def test_keys_are_coarse_no_per_size_entries():
    sizes = [s + d for e in range(0, 34) for s in [1 << e] for d in (-1, 0, 1) if s + d > 0]
    found = {keys.entry_key(4, False, "builtin", 1, n) for n in sizes}
    assert len(found) == 4
    assert len({keys.entry_key(8, True, "user", K, 1 << 20) for K in (2, 4, 100, 4096)}) == 1
    assert keys.entry_key(8, True, "user", 1, 1 << 20) != keys.entry_key(8, True, "user", 4, 1 << 20)
    assert keys.entry_key(8, True, "builtin", 1, 8) != keys.entry_key(8, False, "builtin", 1, 8)
    assert keys.entry_key(8, True, "builtin", 1, 8) != keys.entry_key(4, True, "builtin", 1, 8)


def test_operator_class():
    assert keys.op_class(ps.BUILTIN_OPS["add"], 1) == keys.op_class(None, 1) == "builtin"
    assert keys.op_class(ps.BUILTIN_OPS["max"], 2) == "user"  # several fields
    assert keys.op_class(ps.AFFINE, 2) == "user"
    assert keys.op_class(ps.Monoid(lambda a, b: a + b, 0), 1) == "user"


def load_sweep():
    spec = importlib.util.spec_from_file_location("sweep_for_test", ROOT / "benchmarks" / "sweep.py")
    sweep = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(sweep)
    return sweep


@pytest.mark.parametrize("nbytes, floating", [(4, False), (4, True), (8, False), (8, True)])
def test_candidate_grid_is_small_and_covers_the_sweep(nbytes, floating):
    strategies = list(STRATEGY_NAMES)
    d = default_config(nbytes, floating)
    full = candidates.candidate_grid(strategies, nbytes, floating, 1 << 28)
    quick = candidates.candidate_grid(strategies, nbytes, floating, 1 << 24, quick=True)
    assert len(set(full)) == len(full) and len(full) <= 26
    # + 1: the decoupled look-back's default tile with the raking in-tile scan
    assert len(candidates.candidate_grid(["decoupled_lookback", "chained"], nbytes, floating, 1 << 28)) <= 17
    assert any(c.tile.raking for c in full) and not any(c.tile.raking for c in quick)
    assert len(quick) <= 8
    assert full[:len(strategies)] == [keys.Candidate(s, d) for s in strategies]  # baselines first
    tiles = {c.tile for c in full if c.strategy == "decoupled_lookback"}
    for block, warps, window in load_sweep().CONFIGS:
        assert TileConfig(block, warps, window) in tiles, (block, warps, window)
    assert set(load_sweep().CONFIGS) == set(candidates.BENCH_TILES)


def test_sweep_reference_check_along_axis_0():
    sweep = load_sweep()
    x = torch.arange(20, dtype=torch.int64).reshape(5, 4)
    check = sweep.reference_check(x, 0)
    good = torch.cumsum(x, 0)
    assert check(good)
    bad = good.clone()
    bad[3, 2] += 1
    assert not check(bad)
    xf = torch.linspace(-1, 1, 20, dtype=torch.float32).reshape(5, 4)
    assert sweep.reference_check(xf, 0)(torch.cumsum(xf, 0)) and not sweep.reference_check(xf, 0)(xf)


def test_candidate_grid_prunes_single_tile_duplicates():
    grid = candidates.candidate_grid(["decoupled_lookback"], 4, False, 4096)
    single = [(c.tile.num_warps, c.tile.window) for c in grid if c.tile.block >= 4096]
    assert len(single) == len(set(single))
    assert grid[0] == keys.Candidate("decoupled_lookback", default_config(4, False, 1, 4096))
    assert any(c.tile.block < 4096 for c in grid)


# ---------------------------------------------------------------------------
# The search, on fakes.

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
    r = search.search([base, other], lambda c: next(runs) if c == base else 0.9, lambda c: True)
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

    r = search.search([base, other], measure, lambda c: True)
    assert (r.best == other) is replaced
    assert r.noise == pytest.approx(max(search.NOISE_FLOOR, spread), rel=0.2)
    # first pass, rounds, and a duel of as many rounds when the rounds favour the challenger
    assert count[base] == count[other] == 1 + search.ROUNDS * (2 if replaced else 1)
    assert search.ROUNDS >= search.MIN_ROUNDS


def test_search_decides_on_the_rounds_not_the_first_pass():
    """The first pass times candidates one after another, each right after its compile:
    a challenger fast there but not in the rounds keeps the default, and a default slow
    there (cold) but not in the rounds is not replaced."""
    base, other = C("decoupled_lookback", 16384), C("decoupled_lookback", 8192)
    runs = {base: iter([1.5, 1.0, 1.0, 1.0]), other: iter([0.5, 0.99, 0.99, 0.99])}
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

    r = search.search([base, other], measure, lambda c: True)
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

    r = search.search([base, lucky] + slow, measure, lambda c: True, finalists=3, rounds=3)
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


def test_same_is_bitwise_for_integers_and_tolerant_for_floats():
    a = torch.arange(100, dtype=torch.int64)
    b = a.clone()
    b[37] ^= 1 << 40
    assert measure.same_result(torch, a, a.clone()) and not measure.same_result(torch, b, a)
    f = torch.linspace(-5, 5, 101, dtype=torch.float32)
    assert measure.same_result(torch, f * (1 + 1e-6), f)
    g = f.clone()
    g[3] += 0.5
    assert not measure.same_result(torch, g, f)
    g = f.clone()
    g[7] = float("nan")
    assert not measure.same_result(torch, g, f)


# ---------------------------------------------------------------------------
# choose_config and strategy_for consult the table.

def two_tile_result():
    T1 = C("decoupled_lookback", 2048, 8, 16)
    T2 = C("chained", 4096, 8)
    return searched({C("decoupled_lookback", 16384): 1.0, T1: 0.5, C("chained", 16384): 2.0, T2: 1.5},
                    deterministic_default=C("chained", 16384)), T1, T2


def test_choose_config_uses_the_table_by_default(fake_gpu, monkeypatch):
    monkeypatch.setenv("PREFIXSCAN_AUTOTUNE", "0")
    result, T1, T2 = two_tile_result()
    write_table({KEY_20: result})
    assert planner.choose_config(DEV, 4, False, 1 << 20, 1, False) == T1.tile
    assert planner.choose_config(DEV, 4, False, (1 << 17), 1, False) == T1.tile  # same bucket
    assert planner.choose_config(DEV, 4, False, 1 << 20, 1, False, strategy="decoupled_lookback") == T1.tile
    assert planner.choose_config(DEV, 4, False, 1 << 20, 1, False, strategy="chained") == T2.tile
    # other keys: the key's default tile
    assert planner.choose_config(DEV, 4, False, 1 << 10, 1, False) == default_config(4, False, 1, 1 << 10)
    assert planner.choose_config(DEV, 4, False, 1 << 18, 4, False) == default_config(4, False, 4, 1 << 20)
    assert planner.choose_config(DEV, 4, True, 1 << 20, 1, False) == default_config(4, True, 1, 1 << 20)
    assert planner.choose_config(DEV, 4, False, 1 << 20, 1, False, accs=[torch.int32] * 2) == D20
    assert planner.choose_config(DEV, 4, False, 1 << 20, 1, False, strategy="persistent") == D20
    # the interpreter and an override win over the table
    assert planner.choose_config(DEV, 4, False, 1 << 20, 1, True) == tiles.INTERPRETER_TILE
    forced = TileConfig(1024, 2, 8)
    with planner.override(forced):
        assert planner.choose_config(DEV, 4, False, 1 << 20, 1, False) == forced
    assert planner.choose_config(DEV, 4, False, 1 << 20, 1, False) == T1.tile
    # a CPU device never reads the table
    assert planner.choose_config(torch.device("cpu"), 4, False, 1 << 20, 1, False) == D20


def _config(**kw):
    return ps.make_scan("add", **kw).config


def test_strategy_for_uses_the_table_explicit_wins(fake_gpu, monkeypatch):
    monkeypatch.setenv("PREFIXSCAN_AUTOTUNE", "0")
    r = searched({C("decoupled_lookback", 16384): 1.0, C("persistent", 16384): 0.5,
                  C("reduce_then_scan", 8192): 0.8, C("chained", 16384): 2.0},
                 deterministic_default=C("chained", 16384))
    write_table({KEY_20: r})
    accs = [torch.int32]
    M = 1 << 20
    assert strategy_for(_config(), DEV, accs, M, 1, False) == "persistent"
    assert strategy_for(_config(deterministic=True), DEV, accs, M, 1, False) == "persistent"
    assert strategy_for(_config(strategy="decoupled_lookback"), DEV, accs, M, 1, False) == "decoupled_lookback"
    assert strategy_for(_config(strategy="chained", deterministic=True), DEV, accs, M, 1, False) == "chained"
    assert planner.choose_config(DEV, 4, False, M, 1, False, strategy="reduce_then_scan") == C("x", 8192).tile
    # outside the table's keys, in the interpreter, or under an override: the fixed defaults
    assert strategy_for(_config(), DEV, accs, 1 << 10, 1, False) == "decoupled_lookback"
    assert strategy_for(_config(deterministic=True), DEV, accs, 1 << 10, 1, False) == "chained"
    assert strategy_for(_config(), DEV, accs, M, 1, True) == "decoupled_lookback"
    with planner.override(D4):
        assert strategy_for(_config(), DEV, accs, M, 1, False) == "decoupled_lookback"


def test_a_strategy_this_version_lacks_falls_back(fake_gpu, monkeypatch):
    """A table entry naming a strategy outside the registry (written by another
    version) is skipped with a warning: the scan gets the defaults."""
    monkeypatch.setenv("PREFIXSCAN_AUTOTUNE", "0")
    r = searched({C("decoupled_lookback", 16384): 1.0, C("persistent", 16384): 0.5,
                  C("reduce_then_scan", 8192): 0.8, C("chained", 16384): 2.0},
                 deterministic_default=C("chained", 16384))
    write_table({KEY_20: dict(r.to_record(), strategy="warp_shuffle_2030")})
    with pytest.warns(table.TuningCacheWarning, match="warp_shuffle_2030"):
        assert strategy_for(_config(), DEV, [torch.int32], 1 << 20, 1, False) == "decoupled_lookback"
    assert not candidates.strategy_available("warp_shuffle_2030")
    assert strategy_for(_config(deterministic=True), DEV, [torch.int32], 1 << 20, 1, False) == "chained"


def test_deterministic_never_gets_a_look_back_strategy(fake_gpu, monkeypatch):
    monkeypatch.setenv("PREFIXSCAN_AUTOTUNE", "0")
    r = searched({C("decoupled_lookback", 16384): 1.0, C("chained", 16384): 2.0}, wrong=[C("chained", 16384)],
                 deterministic_default=C("chained", 16384))
    assert r.best_deterministic is None  # the only deterministic candidate was wrong
    write_table({KEY_20: r})
    assert strategy_for(_config(deterministic=True), DEV, [torch.int32], 1 << 20, 1, False) == "chained"
    assert planner.choose_config(DEV, 4, False, 1 << 20, 1, False, strategy="chained") == D20
    assert not candidates.runnable("decoupled_lookback", True) and candidates.runnable("persistent", True)
    assert candidates.runnable("chained", True) and candidates.runnable("chained", False)


@pytest.mark.skipif(not interpreter_mode(), reason="needs Triton's interpreter")
def test_launch_passes_scan_details_to_choose_config(monkeypatch):
    seen = []
    real = lookback.choose_config

    def spy(*args, **kwargs):
        seen.append(kwargs)
        return real(*args, **kwargs)

    monkeypatch.setattr(lookback, "choose_config", spy)
    x = torch.arange(1, 100, dtype=torch.int32)
    assert torch.equal(ps.scan(x, backend="triton"), torch.cumsum(x, 0, dtype=torch.int32))
    ps.scan(x.float(), backend="triton", deterministic=True)
    ps.scan((torch.ones(99), x.float()), ps.AFFINE, backend="triton")
    assert seen[0]["strategy"] == "decoupled_lookback" and list(seen[0]["accs"]) == [torch.int32]
    assert seen[0]["monoid"] is ps.BUILTIN_OPS["add"]
    assert seen[1]["strategy"] == "chained"
    assert seen[2]["monoid"] is ps.AFFINE and list(seen[2]["accs"]) == [torch.float32, torch.float32]


# ---------------------------------------------------------------------------
# A scan's launch gets the table's choice.  The launch is faked: the scans run on
# CPU tensors as if on a GPU with a table (no interpreter), and runtime.launch_kernel records
# the kernel, the warps and the constexprs instead of compiling.

@pytest.fixture
def launches(fake_gpu, monkeypatch):
    """Scans of CPU tensors take the GPU path with a table; returns the recorded launches."""
    if not interpreter_mode():
        pytest.skip("CPU tensors reach the Triton backend only with TRITON_INTERPRET=1")
    seen = []

    def record(launch):
        kernel = launch.kernel
        seen.append(dict(kernel=kernel.fn.__name__ if hasattr(kernel, "fn") else str(kernel),
                         num_warps=launch.num_warps, interpreter=launch.interpreter, maxnreg=launch.maxnreg,
                         **launch.constexprs))

    monkeypatch.setenv("PREFIXSCAN_AUTOTUNE", "0")
    monkeypatch.setattr(table, "TABLE_DEVICES", ("cuda", "cpu"))
    monkeypatch.setattr(first_use, "interpreter_mode", lambda: False)
    monkeypatch.setattr(scan_path, "interpreter_mode", lambda: False)
    monkeypatch.setattr(runtime, "launch_kernel", record)
    monkeypatch.setattr(status, "_states", {})  # fake launches must not advance the real tile counters
    planner.clear_memo()
    return seen


def test_scan_launches_with_the_tables_tile(launches):
    result, T1, T2 = two_tile_result()
    write_table({KEY_20: result})
    ps.scan(torch.ones((1 << 17) + 5, dtype=torch.int32), backend="triton")
    ps.scan(torch.ones(1 << 20, dtype=torch.int32), backend="triton")  # another length, same bucket
    ps.scan(torch.ones((3, 70000), dtype=torch.int32), axis=1, backend="triton")  # a batch of lanes
    for launch_ in launches:
        assert (launch_["num_warps"], launch_["BLOCK"], launch_["WINDOW"]) == (8, 2048, 16)
        assert launch_["CHAINED"] is False and launch_["interpreter"] is False
    assert [x["MULTI_LANE"] for x in launches] == [False, False, True]
    launches.clear()
    ps.scan(torch.ones(1 << 17, dtype=torch.int32), backend="triton", deterministic=True)
    assert launches[-1]["CHAINED"] is True and launches[-1]["WINDOW"] == 1
    assert (launches[-1]["num_warps"], launches[-1]["BLOCK"]) == (T2.tile.num_warps, T2.tile.block)
    # no entry for this bucket, or float: the key's default tile
    ps.scan(torch.ones(1 << 23, dtype=torch.int32), backend="triton")
    ps.scan(torch.ones(1 << 20, dtype=torch.float32), backend="triton")
    assert [(x["num_warps"], x["BLOCK"], x["WINDOW"]) for x in launches[-2:]] == [
        (t.num_warps, t.block, t.window) for t in (default_config(4, False, 1, 1 << 23),
                                                   default_config(4, True, 1, 1 << 20))]
    # a forced tile (bench sweeps) wins over the table
    with planner.override(TileConfig(4096, 2, 8)):
        ps.scan(torch.ones(1 << 20, dtype=torch.int32), backend="triton")
    assert (launches[-1]["num_warps"], launches[-1]["BLOCK"], launches[-1]["WINDOW"]) == (2, 4096, 8)
    assert launches[-1]["maxnreg"] is None  # no occupancy: registers are the compiler's choice


@pytest.mark.parametrize("shape, axis, tuple_size, kernel", [
    (((1 << 17) + 3,), -1, 1, "scan_1d_kernel"),
    (((1 << 16) + 1, 5), 0, 1, "scan_2d_kernel"),
    ((3 << 16,), -1, 3, "scan_cols_kernel"),
])
def test_occupancy_caps_the_registers_of_every_look_back_kernel(launches, monkeypatch, shape, axis, tuple_size,
                                                                kernel):
    """A tile's occupancy reaches the launch as maxnreg: 4 tiles of 4 warps per SM
    leave 65536 / (4 * 128) = 128 registers per thread.  The general kernels only
    (integer tuple sums otherwise take blocked.orders_kernel)."""
    with planner.override(TileConfig(4096, 4, 8, occupancy=4)), routing(blocked_orders="never"):
        ps.scan(torch.ones(shape, dtype=torch.int32), axis=axis, tuple_size=tuple_size, backend="triton")
    assert (launches[-1]["kernel"], launches[-1]["maxnreg"]) == (kernel, 128)


@pytest.mark.parametrize("tile, shape, order, tuple_size, cap", [
    ((8192, 4), (1 << 17) + 3, 2, 1, 128),  # order 2 of a sum, one look-back: 4 tiles per SM
    ((8192, 4), (1 << 17) + 3, 5, 1, 96),  # the loop over orders, 4-byte: 5 tiles
    ((4096, 4), 3 << 16, 1, 3, 168),  # masked columns, K = 3: 3 tiles
    ((8192, 4), (1 << 17) + 3, 1, 1, 128),  # the plain kernel: the table's own occupancy
    ((16384, 4), (1 << 17) + 3, 2, 1, None),  # a tile the variants were not measured at
    ((4096, 4), 3 << 16, 1, 2, None),  # columns, K = 2: not measured to gain
])
def test_kernel_variants_get_their_measured_occupancy(launches, monkeypatch, tile, shape, order, tuple_size, cap):
    """The order-2, ordered and masked-columns kernels borrow the plain kernels' tuned
    tile but not its register cap: theirs comes from lookback.VARIANT_OCCUPANCY, for
    the tiles it was measured at (32-bit words of tile data per thread).  The general
    kernels only: integer orders >= 3 otherwise take blocked.orders_kernel."""
    block, warps = tile
    table_tile = TileConfig(block, warps, 16, D4.max_kb, D4.packed, occupancy=4)
    result = searched({C("decoupled_lookback", 16384): 1.0, keys.Candidate("decoupled_lookback", table_tile): 0.5})
    K = tuple_size
    write_table({keys.entry_key(4, False, "builtin", K, 1 << 17): result})
    with routing(blocked_orders="never"):
        ps.scan(torch.ones(shape, dtype=torch.int32), order=order, tuple_size=tuple_size, backend="triton")
    assert launches[-1]["BLOCK"] == block and launches[-1]["maxnreg"] == cap


@pytest.mark.parametrize("occupancy, warps, cap", [(0, 4, None), (4, 4, 128), (3, 4, 168), (5, 4, 96), (6, 4, 80),
                                                   (2, 8, 128), (1, 1, 248), (64, 1, 32), (64, 32, 24)])
def test_register_cap(occupancy, warps, cap):
    """Registers per SM over the resident tiles' threads, down to ptxas's unit of 8,
    within what ptxas accepts (at most 255, and a floor no kernel spills below)."""
    assert tiles.register_cap(TileConfig(4096, warps, 32, occupancy=occupancy)) == cap


def test_occupancy_round_trips_through_the_table(tmp_path):
    tile = TileConfig(8192, 4, 16, occupancy=5)
    assert keys.tile_from(keys.tile_dict(tile)) == tile
    legacy = {k: v for k, v in keys.tile_dict(tile).items() if k != "occupancy"}  # tables written before it
    assert keys.tile_from(legacy) == TileConfig(8192, 4, 16)
    for bad in (-1, 65, True, 2.5):
        with pytest.raises(ValueError, match="occupancy"):
            keys.tile_from(dict(keys.tile_dict(tile), occupancy=bad))


def test_scan_runs_chained_when_the_table_picks_it_for_auto_scans(launches):
    T = C("chained", 8192, 8)
    r = searched({C("decoupled_lookback", 16384): 1.0, C("decoupled_lookback", 4096, 8): 0.8,
                  C("chained", 16384): 0.7, T: 0.5}, deterministic_default=C("chained", 16384))
    assert r.best == T
    write_table({KEY_20: r})
    x = torch.ones(1 << 20, dtype=torch.int32)
    ps.scan(x, backend="triton")
    assert launches[-1]["CHAINED"] is True and (launches[-1]["BLOCK"], launches[-1]["num_warps"]) == (8192, 8)
    ps.scan(x, backend="triton", strategy="decoupled_lookback")  # named: its own best tile
    assert launches[-1]["CHAINED"] is False and (launches[-1]["BLOCK"], launches[-1]["num_warps"]) == (4096, 8)


def test_scan_uses_a_strategy_launcher_the_table_picks(launches, monkeypatch):
    calls = []

    def persistent(job):
        calls.append((job.M, job.K, job.config.strategy,
                      planner.choose_config(job.device, 4, False, job.M, job.K, job.interpreter)))

    monkeypatch.setitem(scan_path.LAUNCHERS, "persistent", persistent)
    r = searched({C("decoupled_lookback", 16384): 1.0, C("persistent", 8192): 0.5})
    write_table({KEY_20: r})
    ps.scan(torch.ones(1 << 20, dtype=torch.int32), backend="triton")
    assert calls == [(1 << 20, 1, "auto", C("persistent", 8192).tile)] and launches == []


def test_memoized_lookup_reads_the_table_once_per_bucket(fake_gpu, monkeypatch):
    monkeypatch.setenv("PREFIXSCAN_AUTOTUNE", "0")
    result, T1, _ = two_tile_result()
    write_table({KEY_20: result})
    calls = []
    real = sources.lookup
    monkeypatch.setattr(sources, "lookup", lambda *a, **k: calls.append(a) or real(*a, **k))
    for n in ((1 << 17) + 1, 1 << 18, (1 << 18) + 7):
        assert planner.choose_config(DEV, 4, False, n, 1, False) == T1.tile
    assert len(calls) == 2  # one per log2 size class inside the bucket: 2^17+1..2^18, 2^18+7
    for n in ((1 << 17) + 1, 1 << 18, (1 << 18) + 7):
        assert planner.tuned_strategy(DEV, [torch.int32], n, 1, False) == "decoupled_lookback"
    assert len(calls) == 4
    forget()  # forgets the memo too: the file is read again
    assert planner.choose_config(DEV, 4, False, 1 << 18, 1, False) == T1.tile
    assert len(calls) == 5


# ---------------------------------------------------------------------------
# First use.

@pytest.fixture
def fake_tuner(monkeypatch):
    """Replaces the device tuning with a fake that records its calls."""
    calls = []
    result, T1, _ = two_tile_result()

    def fake(device, accs, monoid=None, K=1, n=0, **kw):
        calls.append(dict(accs=accs, monoid=monoid, K=K, n=n, **kw))
        return result

    monkeypatch.setattr(measure, "tune_workload", fake)
    return calls, T1


def first_use_tile(nbytes, floating, M, K=1, accs=None):
    """The tile a scan of M x K elements per lane gets: first-use tuning of its key
    (what the backend's entry runs before the scan path), then the planner's lookup."""
    opclass = keys.op_class(None, len(accs) if accs else 1)
    first_use.resolve(DEV, nbytes, floating, opclass, K, M * K, accs=accs)
    return planner.choose_config(DEV, nbytes, floating, M, K, False, accs=accs)


def test_first_use_tunes_once_and_caches(fake_gpu, fake_tuner):
    calls, T1 = fake_tuner
    assert first_use_tile(4, False, 1 << 22, accs=[torch.int32]) == T1.tile
    assert len(calls) == 1
    call = calls[0]
    assert call["n"] == 1 << 24 and call["quick"] and call["budget"] == first_use.DEFAULT_BUDGET
    assert first_use_tile(4, False, 1 << 25, accs=[torch.int32]) == T1.tile  # same bucket
    assert len(calls) == 1
    key = keys.entry_key(4, False, "builtin", 1, 1 << 22)
    data = json.loads(table.cache_path(GPU).read_text())
    assert data["entries"][key]["source"] == "first-use"
    forget()  # a new process reads the file and does not tune again
    assert first_use_tile(4, False, 1 << 23) == T1.tile
    assert len(calls) == 1
    # the largest bucket is tuned at the size it serves, 2^26, never at 2^24
    first_use_tile(4, False, 1 << 30)
    assert calls[-1]["n"] == 1 << 26 and calls[-1]["rounds"] >= search.MIN_ROUNDS


def test_the_planner_only_reads_the_table(fake_gpu, fake_tuner):
    """No tuning below the launch path: the planner answers a missing key with the
    defaults, and forgets that answer once first-use tuning stores the key."""
    calls, T1 = fake_tuner
    assert planner.choose_config(DEV, 4, False, 1 << 20, 1, False) == D20
    assert planner.tuned_strategy(DEV, [torch.int32], 1 << 20, 1, False) == "decoupled_lookback"
    assert calls == []
    generation = planner.generation
    assert first_use_tile(4, False, 1 << 20) == T1.tile and len(calls) == 1
    assert planner.generation > generation  # planned replays of the default tile expire


@pytest.mark.parametrize("value", ["0", "off", "false"])
def test_first_use_disabled_by_env(fake_gpu, fake_tuner, monkeypatch, value):
    calls, _ = fake_tuner
    monkeypatch.setenv("PREFIXSCAN_AUTOTUNE", value)
    assert first_use_tile(4, False, 1 << 20) == D20
    assert strategy_for(_config(), DEV, [torch.int32], 1 << 20, 1, False) == "decoupled_lookback"
    assert calls == [] and not table.cache_path(GPU).exists()


def test_first_use_budget_from_env(fake_gpu, fake_tuner, monkeypatch):
    calls, _ = fake_tuner
    monkeypatch.setenv("PREFIXSCAN_AUTOTUNE_BUDGET", "0.5")
    first_use_tile(8, True, 1 << 20)
    assert calls[0]["budget"] == 0.5 and calls[0]["accs"] == [torch.float64]


def test_first_use_is_guarded_against_recursion(fake_gpu, monkeypatch):
    """First-use requests made while the tuner runs (same key or another) must
    not tune again: they get the defaults."""
    calls = []
    result, _, _ = two_tile_result()

    def reentrant(device, accs, monoid=None, K=1, n=0, **kw):
        calls.append(n)
        assert first_use_tile(4, False, 1 << 20) == D20
        assert first_use_tile(8, False, 1 << 10) == default_config(8, False, 1, 1 << 10)
        return result

    monkeypatch.setattr(measure, "tune_workload", reentrant)
    first_use_tile(4, False, 1 << 20)
    assert calls == [1 << 20]
    with measure.TuningGuard():  # what tune_workload sets around its own scans
        assert measure.in_tuning()
        assert first_use.resolve(DEV, 2, False, "builtin", 1, 1 << 20) == (None, False)  # postponed
        assert first_use_tile(2, False, 1 << 20) == default_config(2, False)
    assert calls == [1 << 20] and not measure.in_tuning()


def test_first_use_failure_warns_and_is_not_retried(fake_gpu, monkeypatch):
    calls = []

    def broken(*args, **kw):
        calls.append(1)
        raise RuntimeError("out of memory")

    monkeypatch.setattr(measure, "tune_workload", broken)
    with pytest.warns(table.TuningCacheWarning, match="out of memory"):
        assert first_use_tile(4, False, 1 << 20) == D20
    assert first_use_tile(4, False, 1 << 20) == D20
    assert calls == [1]


def test_no_first_use_under_graph_capture(fake_gpu, fake_tuner, monkeypatch):
    calls, T1 = fake_tuner
    monkeypatch.setattr(first_use, "_capturing", lambda: True)
    assert first_use_tile(4, False, 1 << 20) == D20
    assert calls == []
    monkeypatch.setattr(first_use, "_capturing", lambda: False)  # postponed, not forgotten
    assert first_use_tile(4, False, 1 << 20) == T1.tile
    assert len(calls) == 1


def test_first_use_through_scans_tunes_once_per_bucket(launches, fake_tuner, monkeypatch):
    """New lengths and batch sizes inside a bucket never retune."""
    calls, T1 = fake_tuner
    monkeypatch.setenv("PREFIXSCAN_AUTOTUNE", "1")
    for shape, axis in (((1 << 17) + 1,), None), (((1 << 20),), None), (((3, 70000)), 1), (((5, 1 << 19)), 1):
        ps.scan(torch.ones(shape, dtype=torch.int32), axis=axis, backend="triton")
    assert len(calls) == 1 and calls[0]["n"] == 1 << 20 and calls[0]["K"] == 1
    assert all((x["BLOCK"], x["num_warps"]) == (T1.tile.block, T1.tile.num_warps) for x in launches)
    ps.scan(torch.ones((1 << 16, 4), dtype=torch.int32), axis=0, backend="triton")  # 2-D layout: its own key
    assert len(calls) == 2 and calls[1]["K"] == 4 and calls[1]["n"] == 1 << 20


def test_no_first_use_while_a_tile_is_forced(launches, fake_tuner, monkeypatch):
    """A study that forces a tile measures that tile: its scans do not tune; the
    key is tuned by the first scan after the override is lifted."""
    calls, T1 = fake_tuner
    monkeypatch.setenv("PREFIXSCAN_AUTOTUNE", "1")
    x = torch.ones(1 << 20, dtype=torch.int32)
    with planner.override(TileConfig(4096, 2, 8)):
        ps.scan(x, backend="triton")
    assert calls == [] and (launches[-1]["BLOCK"], launches[-1]["num_warps"]) == (4096, 2)
    ps.scan(x, backend="triton")
    assert len(calls) == 1 and (launches[-1]["BLOCK"], launches[-1]["num_warps"]) == (T1.tile.block,
                                                                                        T1.tile.num_warps)


def test_override_is_a_context_and_bumps_the_generation():
    import threading

    a, b = TileConfig(4096, 4, 32), TileConfig(8192, 8, 16)
    assert tuning.override is planner.override and not planner.overridden()
    start = planner.generation
    with tuning.override(a):
        assert planner.current_override() == a
        with tuning.override(b):
            assert planner.current_override() == b
            seen = []
            worker = threading.Thread(target=lambda: seen.append(planner.current_override()))
            worker.start()
            worker.join()
            assert seen == [None]  # other threads keep their own (none)
        assert planner.current_override() == a
        with tuning.override(None):  # the table's tile inside a forced block
            assert not planner.overridden()
    assert planner.current_override() is None and planner.generation == start + 6
    planner.set_override(a)  # the non-block form, for sweeps
    try:
        assert planner.overridden() and planner.generation == start + 7
    finally:
        planner.set_override(None)


def test_first_use_budget_env_must_be_a_number(monkeypatch):
    for bad in ("soon", "-1", "nan"):
        monkeypatch.setenv("PREFIXSCAN_AUTOTUNE_BUDGET", bad)
        with pytest.warns(table.TuningCacheWarning, match="PREFIXSCAN_AUTOTUNE_BUDGET"):
            assert first_use.first_use_budget() == first_use.DEFAULT_BUDGET
    monkeypatch.setenv("PREFIXSCAN_AUTOTUNE_BUDGET", "0.25")
    assert first_use.first_use_budget() == 0.25


@pytest.mark.skipif(not interpreter_mode(), reason="needs Triton's interpreter")
def test_interpreter_scans_never_tune_or_read_the_table(fake_gpu, monkeypatch):
    def forbidden(*args, **kw):
        raise AssertionError("tuning path reached")

    monkeypatch.setattr(sources, "lookup", forbidden)
    monkeypatch.setattr(measure, "tune_workload", forbidden)
    x = torch.arange(1, 200, dtype=torch.int64)
    for kw in ({}, {"deterministic": True}):
        assert torch.equal(ps.scan(x, backend="triton", **kw), torch.cumsum(x, 0))
    assert planner.choose_config(DEV, 8, False, 1 << 20, 1, True) == tiles.INTERPRETER_TILE
    assert planner.tuned_strategy(DEV, [torch.int64], 1 << 20, 1, True) == "decoupled_lookback"
    assert list(fake_gpu.iterdir()) == []


# ---------------------------------------------------------------------------
# The device-side plumbing, end to end in the interpreter.

@pytest.mark.skipif(not interpreter_mode(), reason="needs Triton's interpreter")
def test_tune_workload_verifies_real_scans_and_excludes_a_wrong_strategy(monkeypatch):
    """A 'persistent' scan that corrupts one element must be excluded; the real
    candidates pass verification against the decoupled look-back.  The tuner runs
    its candidates through the scan path (scan.run_scan), never prefixscan.scan."""
    from prefixscan.backends.triton import scan as scan_path

    real = scan_path.run_scan

    def corrupting(request, plan=False):
        out = real(request, plan)
        if request.config.strategy == "persistent":
            (out[0] if plan else out)[0].view(-1)[-1] += 1
        return out

    monkeypatch.setattr(scan_path, "run_scan", corrupting)
    monkeypatch.setattr(ps, "scan", lambda *a, **k: pytest.fail("the tuner called prefixscan.scan"))
    fast = {}

    def timer(fn):
        fn()
        return fast.get(planner.current_override(), 1.0)

    r = measure.tune_workload(torch.device("cpu"), [torch.int32], None, 1, 96, quick=True, timer=timer,
                              strategies=["decoupled_lookback", "chained", "persistent"])
    labels = {c.strategy for c in r.times}
    assert {"decoupled_lookback", "chained"} <= labels
    assert [c.strategy for c in r.excluded] == ["persistent"] and "wrong result" in r.excluded[
        keys.Candidate("persistent", default_config(4, False, 1, 96))]
    assert r.best.strategy == "decoupled_lookback" and r.best_deterministic.strategy == "chained"
    assert planner.current_override() is None


@pytest.mark.skipif(not interpreter_mode(), reason="needs Triton's interpreter")
@pytest.mark.parametrize("accs, monoid", [([torch.int64], None), ([torch.float32] * 2, ps.AFFINE)])
def test_tune_workload_on_the_2d_layout(accs, monoid):
    """Interleaved streams scanned along axis 0, a sum (its reference checked
    against torch.cumsum) and the affine monoid on two fields."""
    seen = []

    def timer(fn):
        fn()
        seen.append(planner.current_override())
        default = default_config(sum(a.itemsize for a in accs), accs[0].is_floating_point, 4, 64)
        return 1.0 if planner.current_override() == default else 0.5

    r = measure.tune_workload(torch.device("cpu"), accs, monoid, 4, 64, quick=True, timer=timer,
                              strategies=["decoupled_lookback"], rounds=search.MIN_ROUNDS)
    assert not r.excluded and len(r.samples) >= 2 and r.best != r.default
    # every finalist: a first pass and the rounds; the winner and the default: a duel too
    assert all(len(r.samples[c]) == 1 + search.MIN_ROUNDS * (2 if c in (r.best, r.default) else 1)
               for c in r.finalists)
    assert None not in seen and planner.current_override() is None


# ---------------------------------------------------------------------------
# The tuned choice against every fixed choice (what the benchmark reports).

def test_fixed_choices_are_the_sweep_tiles_and_the_default():
    choices = compare.fixed_choices(4, False, strategies=["decoupled_lookback"])
    assert choices[0] == ("default table (no tuning)", keys.Candidate("decoupled_lookback", D4))
    tiles = {(c.tile.block, c.tile.num_warps, c.tile.window) for _, c in choices}
    assert tiles == set(candidates.BENCH_TILES) | {(D4.block, D4.num_warps, D4.window)}
    assert len(choices) == len(tiles)
    with_chained = compare.fixed_choices(8, True, tiles=[(4096, 4, 32)], strategies=["decoupled_lookback", "chained"])
    assert [label for label, _ in with_chained][-1] == "chained (default tile)"


@pytest.mark.skipif(not interpreter_mode(), reason="needs Triton's interpreter")
def test_compare_tuned_times_every_choice_and_judges_within_noise(monkeypatch):
    x = torch.arange(1, 9, dtype=torch.int32)  # tiny: the interpreter takes ~0.03 s a call
    sweep = [(4096, 4, 32), (8192, 8, 32)]
    d = default_config(4, False, 1, 8)
    fast = {None: 1.0, d: 1.1, TileConfig(4096, 4, 32): 1.2, TileConfig(8192, 8, 32): 1.3}
    seen = []

    def timer(fn):  # the tile in force tells the choice apart (None: the tuned path)
        fn()
        seen.append(planner.current_override())
        return fast[planner.current_override()]

    expected = torch.cumsum(x, 0, dtype=torch.int32)
    rec = compare.compare_tuned(x, tiles=sweep, strategies=["decoupled_lookback"], timer=timer, rounds=3,
                                check=lambda r: torch.equal(r, expected))
    assert rec["ok"] and rec["best_fixed"] == "default table (no tuning)"
    assert rec["best_fixed_over_tuned"] == pytest.approx(1.1) and rec["noise"] == 0
    assert [row["label"] for row in rec["choices"]][0] == "tuned"
    assert all(row["verified"] and len(row["samples"]) == 3 for row in rec["choices"])
    assert rec["tuned"]["strategy"] == "decoupled_lookback" and rec["tuned"]["block"] == tiles.INTERPRETER_TILE.block
    assert len(seen) == 3 * 4 and seen[:4] != seen[4:8]  # every round, in a rotated order
    assert planner.current_override() is None

    fast[TileConfig(8192, 8, 32)] = 0.5  # a fixed choice twice as fast: not ok
    rec = compare.compare_tuned(x, tiles=sweep, strategies=["decoupled_lookback"], timer=timer, rounds=2)
    assert not rec["ok"] and rec["best_fixed"].endswith("b=8192 w=8 win=32")
    assert "SLOWER THAN A FIXED CHOICE" in compare.format_comparison([dict(rec, case="int32 8")])

    # a fixed choice that computes a wrong result never counts as the best
    verdicts = iter([True, True, True, False])  # in the order of rec["choices"]
    rec = compare.compare_tuned(x, tiles=sweep, strategies=["decoupled_lookback"], timer=timer, rounds=2,
                                check=lambda r: next(verdicts))
    assert rec["choices"][3]["verified"] is False and rec["ok"]
    assert "WRONG RESULT" in compare.format_comparison([rec])

    # noise: the tuned choice 5% slower than the best fixed one passes only if the
    # measurements spread by more than that
    fast.update({None: 1.05, TileConfig(8192, 8, 32): 1.0})
    assert not compare.compare_tuned(x, tiles=sweep, strategies=["decoupled_lookback"], timer=timer)["ok"]
    assert compare.compare_tuned(x, tiles=sweep, strategies=["decoupled_lookback"], timer=timer,
                                 noise_floor=0.06)["ok"]


def test_compare_tuned_rejects_bad_arguments():
    with pytest.raises(ValueError, match="rounds"):
        compare.compare_tuned(torch.ones(4), rounds=0)
    with pytest.raises(TypeError, match="x: expected a torch tensor"):
        compare.compare_tuned([1, 2, 3])


# ---------------------------------------------------------------------------
# Command line.

def test_tune_without_gpu_says_what_is_missing(capsys):
    if torch.cuda.is_available():
        pytest.skip("a GPU is present")
    assert main(["tune"]) == 2
    err = capsys.readouterr().err
    assert "prefixscan tune" in err and "CUDA" in err


def test_tune_rejects_two_sizes_in_one_bucket(capsys):
    assert main(["tune", "--sizes", "20,21"]) == 2
    assert "same size bucket" in capsys.readouterr().err
    assert main(["tune", "--strategies", "bogus"]) == 2
    assert "bogus" in capsys.readouterr().err


@pytest.mark.parametrize("argv, message", [
    (["--dtypes", "bool"], "--dtypes: 'bool'"), (["--dtypes", "int32,nonsense"], "--dtypes"),
    (["--sizes", "x"], "--sizes"), (["--sizes", "40"], "--sizes: log2 size 40"),
    (["--layouts", "3d"], "--layouts: unknown '3d'"), (["--ops", "mul"], "--ops"),
    (["--budget", "0"], "--budget"), (["--repeats", "0"], "--repeats"),
])
def test_tune_bad_arguments_name_the_argument(capsys, argv, message):
    assert main(["tune"] + argv) == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize("kw, message", [
    (dict(sizes=[20, 21]), r"sizes: 2\^20 and 2\^21"), (dict(sizes=[2.5]), "sizes"),
    (dict(dtypes=["complex64"]), "dtypes"), (dict(ops="builtin", layouts=[]), "layouts: empty"),
    (dict(strategies=["fastest"]), "strategies"), (dict(repeats=True), "repeats"),
    (dict(budget=-1), "budget"), (dict(device="cpu"), "device"),
])
def test_tune_all_bad_arguments_name_the_argument(kw, message):
    with pytest.raises(ValueError, match=message):
        session.tune_all(**kw)


def test_tune_all_plans_keys_shares_the_budget_and_writes_the_table(fake_gpu, monkeypatch, capsys):
    """tune_all with the device side faked: one job per key (float16 accumulates in
    float32: no key of its own), the compiling key of each group gets a larger
    budget share, a failing key is reported and the others still land on disk."""
    calls = []
    result, T1, _ = two_tile_result()

    def fake(device, accs, monoid=None, K=1, n=0, **kw):
        calls.append(dict(accs=accs, monoid=monoid, K=K, n=n, **kw))
        if accs == [torch.float32] and K == 4 and n == 1 << 16:
            raise RuntimeError("launch failed")
        return result

    monkeypatch.setattr(measure, "tune_workload", fake)
    out = session.tune_all(device="cuda:0", dtypes=["int32", "float16", "float32"], sizes=[16, 20], ops=["builtin"],
                      layouts=["1d", "2d"], budget=100.0, repeats=3)
    assert [(c["accs"], c["K"], c["n"]) for c in calls] == [
        ([torch.int32], 1, 1 << 20), ([torch.int32], 1, 1 << 16), ([torch.int32], 4, 1 << 20),
        ([torch.int32], 4, 1 << 16), ([torch.float32], 1, 1 << 20), ([torch.float32], 1, 1 << 16),
        ([torch.float32], 4, 1 << 20), ([torch.float32], 4, 1 << 16)]
    assert all(c["repeats"] == 3 and c["monoid"] is None for c in calls)
    total_weight = 4 * (session.COMPILE_WEIGHT + 1)
    assert calls[0]["budget"] == pytest.approx(100.0 * session.COMPILE_WEIGHT / total_weight, rel=0.05)
    assert calls[1]["budget"] < calls[0]["budget"] / 2
    bad = keys.entry_key(4, True, "builtin", 4, 1 << 16)
    assert list(out["failed"]) == [bad] and "launch failed" in out["failed"][bad]
    assert len(out["entries"]) == 7 and bad not in out["entries"]
    on_disk = json.loads(table.cache_path(GPU).read_text())["entries"]
    assert set(on_disk) == set(out["entries"]) and on_disk[KEY_20]["source"] == "prefixscan tune"
    assert "[8/8]" in capsys.readouterr().err


def test_tune_command_end_to_end_with_a_fake_device(fake_gpu, monkeypatch, capsys, tmp_path):
    result, T1, _ = two_tile_result()
    monkeypatch.setattr(tuning, "unavailable_reason", lambda: "")
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    monkeypatch.setattr(measure, "tune_workload", lambda *a, **k: result)
    path = tmp_path / "out" / "tune.json"
    assert main(["tune", "--dtypes", "int32", "--sizes", "20", "--ops", "builtin", "--layouts", "1d",
                 "--json", str(path)]) == 0
    out = capsys.readouterr().out
    assert KEY_20 in out and "wrote" in out and GPU in out
    data = json.loads(path.read_text())
    assert list(data["entries"]) == [KEY_20] and data["entries"][KEY_20]["tile"]["block"] == T1.tile.block
    monkeypatch.setenv("PREFIXSCAN_AUTOTUNE", "0")
    forget()  # a new process: scans read what the command wrote
    assert planner.choose_config(DEV, 4, False, 1 << 19, 1, False) == T1.tile


def test_tune_help():
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    out = subprocess.run([sys.executable, "-m", "prefixscan", "tune", "--help"], capture_output=True, text=True,
                         env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    for flag in ("--dtypes", "--sizes", "--budget", "--strategies", "--json", "--clear", "--device"):
        assert flag in out.stdout


def test_tune_clear(fake_gpu, capsys):
    write_table({KEY_20: two_tile_result()[0]})
    write_table({KEY_20: two_tile_result()[0]}, gpu="Another GPU")
    (fake_gpu / "unrelated.txt").write_text("keep")
    assert main(["tune", "--clear"]) == 0
    assert "2 tuning table(s) removed" in capsys.readouterr().out
    assert [p.name for p in fake_gpu.iterdir()] == ["unrelated.txt"]


def test_info_shows_cache_path_and_table_presence(fake_gpu, capsys):
    lines = session.info_lines(gpu_names=[GPU])
    text = "\n".join(lines)
    assert str(fake_gpu) in text and "no tuned table" in text
    write_table({KEY_20: two_tile_result()[0]})
    text = "\n".join(session.info_lines(gpu_names=[GPU]))
    assert str(table.cache_path(GPU)) in text and "tuned table present, 1 entries" in text
    assert main(["info"]) == 0
    out = capsys.readouterr().out
    assert "tuning:" in out and str(fake_gpu) in out


# ---------------------------------------------------------------------------
# Shipped tables: a known GPU uses its own, an unknown one the closest of its
# architecture, the user's table overrides them key by key.

KEY_26 = keys.entry_key(4, False, "builtin", 1, 1 << 26)  # int32, add, 1-D, >= 2^26


@pytest.fixture
def as_gpu(fake_gpu, monkeypatch):
    """as_gpu(name, sm_count, (major, minor)): the fake CUDA device DEV becomes that GPU
    (properties None: asking for them fails the test -- a GPU with a table of its own
    must not need them)."""
    def become(name, sm_count=None, capability=None):
        monkeypatch.setattr(table, "gpu_name", lambda device: name)

        def properties(device):
            assert sm_count is not None, "properties asked for a GPU with a shipped table of its own"
            return table.GpuProperties(name, sm_count, capability)

        monkeypatch.setattr(table, "gpu_properties", properties)
        forget()
        return name

    return become


def shipped_entry(gpu, key):
    return shipped.load_shipped(shipped.shipped_path(gpu)).entries[key]


def test_shipped_tables_load_with_their_architecture_and_provenance():
    forget()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # every entry of a shipped table must load
        found = {t.gpu.name: t for t in shipped.shipped_tables()}
    assert set(found) >= {H100, H200}
    for name, t in found.items():
        raw = json.loads(t.path.read_text())
        assert t.path == shipped.shipped_path(name) and len(t.entries) == len(raw["entries"]) == 32
        assert t.gpu.capability == (9, 0) and t.gpu.sm_count == 132
        assert raw["applies_to"] == shipped.APPLIES_TO == "any prefixscan version"
        p = t.provenance
        for field in ("gpu", "date", "command", "prefixscan", "torch", "triton", "results", "notes"):
            assert p.get(field), (name, field)
        assert p["date"] == "2026-11-22" and p["command"].startswith("prefixscan tune")
        assert any("repeated tunes" in note for note in p["notes"])  # stability not shown yet: said so
        # the same format as a user's table: readable by the version check when the versions match
        assert table.read_records(t.path, name, raw["version"]) == (raw["entries"], None)
    assert found[H200].provenance["notes"] and not any(e.tile.occupancy for e in found[H200].entries.values())


def test_known_gpu_uses_its_shipped_table_and_never_tunes(as_gpu, fake_tuner):
    calls, _ = fake_tuner
    as_gpu(H100)
    expected = shipped_entry(H100, KEY_26)
    assert first_use_tile(4, False, 1 << 27, accs=[torch.int32]) == expected.tile
    assert planner.tuned_strategy(DEV, [torch.int32], 1 << 27, 1, False) == expected.strategy
    assert planner.tuned_strategy(DEV, [torch.int32], 1 << 27, 1, False, deterministic=True) == \
        expected.deterministic_strategy
    # a key the shipped table lacks (a user monoid on two fields): the default, still no tuning
    assert first_use_tile(8, False, 1 << 20, accs=[torch.int32] * 2) == default_config(8, False, 1, 1 << 20)
    assert calls == [] and not table.cache_path(H100).exists()
    src = sources.sources_for(DEV)
    assert src.exact and src.label == "shipped" and src.origin(KEY_26) == "shipped"
    # lazy: only this GPU's file was read
    assert list(shipped._loaded) == [shipped.shipped_path(H100)]


def test_shipped_table_applies_to_any_library_version(as_gpu, fake_tuner, monkeypatch):
    calls, _ = fake_tuner
    monkeypatch.setattr(table, "library_version", lambda: "99.0")
    as_gpu(H200)
    assert first_use_tile(8, True, 1 << 26, accs=[torch.float64]) == \
        shipped_entry(H200, keys.entry_key(8, True, "builtin", 1, 1 << 26)).tile
    assert calls == []
    assert table.cache_path(H200).name.endswith("-99.0.json")  # the user's table stays per version


def test_user_table_overrides_the_shipped_one_entry_by_entry(as_gpu, fake_tuner):
    calls, _ = fake_tuner
    as_gpu(H100)
    result, T1, _ = two_tile_result()
    write_table({KEY_20: result}, gpu=H100)
    forget()
    assert planner.choose_config(DEV, 4, False, 1 << 20, 1, False) == T1.tile  # the user's entry
    assert planner.choose_config(DEV, 4, False, 1 << 27, 1, False) == shipped_entry(H100, KEY_26).tile
    src = sources.sources_for(DEV)
    assert (src.origin(KEY_20), src.origin(KEY_26), src.origin("8B-int-user-1d-n<=2^16")) == (
        "user", "shipped", "default")
    assert src.label == "user over shipped" and calls == []


@pytest.mark.parametrize("name, sm_count, capability, closest", [
    ("NVIDIA H100 PCIe", 114, (9, 0), H100),  # same architecture: the table with the longest common name
    ("NVIDIA H200 NVL", 132, (9, 0), H200),
    ("NVIDIA GH200 480GB", 132, (9, 0), H100),  # a tie on every count: the name decides, alphabetically
])
def test_unknown_gpu_of_a_shipped_architecture_uses_the_closest_table(as_gpu, fake_tuner, name, sm_count,
                                                                      capability, closest):
    calls, _ = fake_tuner
    as_gpu(name, sm_count, capability)
    assert planner.choose_config(DEV, 4, False, 1 << 27, 1, False) == shipped_entry(closest, KEY_26).tile
    assert first_use.resolve(DEV, 4, False, "builtin", 1, 1 << 27)[1] and calls == []
    first_use_tile(8, False, 1 << 20, accs=[torch.int32] * 2)  # a key the table lacks: no tuning either
    assert calls == []
    src = sources.sources_for(DEV)
    assert not src.exact and src.label == f"closest shipped for {closest}"


def _fake_shipped(name, sm_count, capability):
    return shipped.ShippedTable(table.GpuProperties(name, sm_count, capability), Path(f"{name}.json"), {}, {})


def test_closest_ranks_compute_capability_then_sm_count():
    tables = [_fake_shipped(*spec) for spec in (("A", 132, (9, 0)), ("B", 78, (9, 0)), ("C", 128, (8, 9)),
                                                ("D", 132, (9, 2)))]

    def closest(sm_count, capability):
        found = shipped.closest(table.GpuProperties("X", sm_count, capability), tables)
        return found.gpu.name if found else None

    assert closest(80, (9, 0)) == "B"  # same capability: the nearest SM count
    assert closest(132, (9, 0)) == "A"
    assert closest(100, (9, 2)) == "D"  # the same capability first, whatever the SM count
    assert closest(84, (8, 6)) == "C"  # the only one of architecture 8
    assert closest(80, (7, 0)) is None and closest(80, (10, 0)) is None  # no table of that architecture
    assert shipped.closest(table.GpuProperties("X"), tables) is None  # properties unknown


def test_unknown_architecture_falls_back_to_first_use_tuning(as_gpu, fake_tuner):
    calls, T1 = fake_tuner
    as_gpu("NVIDIA A100-SXM4-80GB", 108, (8, 0))
    assert sources.sources_for(DEV).label == "none"
    assert first_use_tile(4, False, 1 << 20) == T1.tile and len(calls) == 1
    assert sources.sources_for(DEV).label == "user"
    data = json.loads(table.cache_path("NVIDIA A100-SXM4-80GB").read_text())
    assert (data["sm_count"], data["compute_capability"]) == (108, [8, 0])  # recorded with the entry


def test_shipped_tables_can_be_turned_off(as_gpu, fake_tuner, monkeypatch):
    calls, T1 = fake_tuner
    monkeypatch.setenv("PREFIXSCAN_SHIPPED_TABLES", "0")
    as_gpu(H100, 132, (9, 0))
    assert first_use_tile(4, False, 1 << 20) == T1.tile and len(calls) == 1
    assert sources.sources_for(DEV).shipped is None


def test_first_use_of_the_largest_bucket_needs_room_on_the_gpu(fake_gpu, fake_tuner, monkeypatch):
    """The >= 2^26 bucket is tuned at 2^26 elements; where that does not fit in free
    memory the key keeps its default, without a warning."""
    calls, _ = fake_tuner
    asked = []
    monkeypatch.setattr(first_use, "_room_for", lambda device, nbytes: asked.append(nbytes) or False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert first_use_tile(8, False, 1 << 27) == default_config(8, False, 1, 1 << 27)
    assert calls == [] and asked == [8 << 26]
    assert keys.bucket_size(keys.size_bucket(1 << 40)) == keys.bucket_size("n>=2^26") == 1 << 26


def test_table_metadata_round_trip(tmp_path):
    """A user's table records the GPU's SM count and compute capability (kept when a
    later write does not know them); a shipped table adds its provenance, and reads
    back the same entries and properties."""
    r = two_tile_result()[0]
    path = table.cache_path(GPU, directory=tmp_path)
    props = table.GpuProperties(GPU, 46, (8, 9))
    table.save_table(path, GPU, {KEY_20: r.to_record()}, properties=props)
    table.save_table(path, GPU, {"k2": r.to_record()})
    data, problem = table.read_file(path, GPU, ps.__version__)
    assert problem is None and set(data["entries"]) == {KEY_20, "k2"}
    assert (data["sm_count"], data["compute_capability"]) == (46, [8, 9])
    out = shipped.make_shipped(path, sm_count=46, capability=(8, 9), directory=tmp_path / "tables",
                               provenance={"date": "2026-01-01", "command": "prefixscan tune"})
    assert out == shipped.shipped_path(GPU, tmp_path / "tables") and oct(out.stat().st_mode & 0o777) == "0o644"
    loaded = shipped.load_shipped(out)
    assert loaded.gpu == props and loaded.provenance["command"] == "prefixscan tune"
    assert loaded.entries == table.load_table(path, GPU) and loaded.data["applies_to"] == shipped.APPLIES_TO
    assert shipped.shipped_for(GPU, lambda: pytest.fail("own table: no properties"), tmp_path / "tables") == (
        loaded, True)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"gpu": GPU, "entries": {KEY_20: {"strategy": "warp_drive"}}}))
    with pytest.raises(ValueError, match="warp_drive"):
        shipped.make_shipped(bad, sm_count=1, capability=(1, 0), provenance={}, directory=tmp_path)


def test_defaults_are_the_best_tiles_across_the_shipped_tables():
    """tiles.py's default per key is what derive_defaults finds in the shipped tables
    (the comment there lists the ratios): after a shipped table changes, both change."""
    forget()
    derived = shipped.derive_defaults(shipped.shipped_tables())
    assert len(derived) == 32
    for (nbytes, floating, layout, bucket), (tile, ratios) in derived.items():
        n = keys.bucket_size(bucket)
        assert default_config(nbytes, floating, 1 if layout == "1d" else 4, n) == tile, (nbytes, floating,
                                                                                         layout, bucket)
        assert set(ratios) == {H100, H200} and min(r for r, _ in ratios.values()) >= 1.0
    # the old per-dtype int64 tile was 1.72x / 1.83x slower than the best at 2^26 (2-D)
    assert max(derived[(8, False, "2d", "n>=2^26")][1][g][0] for g in (H100, H200)) < 1.02


def test_info_says_which_table_each_gpu_uses(fake_gpu):
    def label(gpu):
        return next(line for line in session.info_lines([gpu]) if line.startswith("  cuda:0")).split("table: ")[1]

    assert label(table.GpuProperties(H100, 132, (9, 0))) == "shipped"
    assert label(table.GpuProperties("NVIDIA H100 PCIe", 114, (9, 0))) == f"closest shipped for {H100}"
    assert label(table.GpuProperties("NVIDIA A100-SXM4-80GB", 108, (8, 0))) == "none"
    write_table({KEY_20: two_tile_result()[0]}, gpu=H200)
    text = "\n".join(session.info_lines([table.GpuProperties(H200, 132, (9, 0))]))
    assert "table: user over shipped" in text and "override the shipped ones key by key" in text
    assert "shipped table: NVIDIA_H200.json" in text and "any prefixscan version" in text


def test_loading_the_shipped_table_is_lazy():
    """Importing prefixscan (and its tuning module) reads no table and imports no torch."""
    code = ("import sys, prefixscan, prefixscan.tuning\n"
            "from prefixscan.backends.triton.tuner import shipped\n"
            "assert 'torch' not in sys.modules and 'triton' not in sys.modules, 'imported'\n"
            "assert not shipped._loaded and not shipped._all, 'a table was read'\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
