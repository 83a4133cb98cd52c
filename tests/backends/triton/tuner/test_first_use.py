"""First-use tuning at the backend's entry (tuner/first_use.py): once per key,
cached, guarded, postponed under graph capture or a forced tile.

Fakes and fixtures: fakes.py and conftest.py of this folder.
"""

from __future__ import annotations

import json

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

import prefixscan as ps  # noqa: E402
from prefixscan._environment import interpreter_mode  # noqa: E402
from prefixscan.backends.triton.planning import planner, tiles  # noqa: E402
from prefixscan.backends.triton.scan.route import strategy_for  # noqa: E402
from prefixscan.backends.triton.planning.tiles import TileConfig, default_config  # noqa: E402
from prefixscan.backends.triton.tuner import first_use, measure, search  # noqa: E402
from prefixscan.backends.triton.planning import keys, sources, table  # noqa: E402

from .fakes import D20, DEV, GPU, first_use_tile, forget, scan_config, two_tile_result  # noqa: E402


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
    assert calls[-1]["n"] == 1 << 26 and calls[-1]["rounds"] == first_use.ROUNDS == search.MIN_ROUNDS
    assert calls[-1]["duel_rounds"] == first_use.DUEL_ROUNDS < search.DUEL_MAX_ROUNDS  # first use stays short


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
    assert strategy_for(scan_config(), DEV, [torch.int32], 1 << 20, 1, False) == "decoupled_lookback"
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


def test_first_use_budget_env_must_be_a_number(monkeypatch):
    for bad in ("soon", "-1", "nan"):
        monkeypatch.setenv("PREFIXSCAN_AUTOTUNE_BUDGET", bad)
        with pytest.warns(table.TuningCacheWarning, match="PREFIXSCAN_AUTOTUNE_BUDGET"):
            assert first_use.first_use_budget() == first_use.DEFAULT_BUDGET
    monkeypatch.setenv("PREFIXSCAN_AUTOTUNE_BUDGET", "0.25")
    assert first_use.first_use_budget() == 0.25


@pytest.mark.interpreter
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


def test_first_use_settles_each_length_class_once(monkeypatch):
    """A new length of a length class whose key is settled costs a set lookup: the key
    (and so the tuning) is asked once per (dtypes, operator class, streams, (M * K - 1)
    .bit_length()), and again only for an answer that was not final or after a table change."""
    from types import SimpleNamespace

    from prefixscan.monoid import BUILTIN_OPS

    asked, final = [], [True]

    def resolve(device, nbytes, floating, opclass, K, n, **kw):
        asked.append((nbytes, floating, opclass, K, n))
        return None, final[0]

    monkeypatch.setattr(first_use, "resolve", resolve)
    monkeypatch.setattr(first_use, "table_device", lambda device: True)
    monkeypatch.setattr(first_use, "interpreter_mode", lambda: False)
    first_use.reset()

    def ensure(shape, axis=None, acc="int32", tuple_size=1):
        x = torch.zeros(shape, dtype=torch.int32)
        lane = x.numel() if axis is None else shape[axis]
        request = SimpleNamespace(
            device="cuda", config=SimpleNamespace(monoid=BUILTIN_OPS["add"], tuple_size=tuple_size),
            fields=[SimpleNamespace(obj=x, library="torch")], acc_dtypes=(acc,), shape=shape, axis=axis,
            lane_len=lane)
        before = len(asked)
        first_use.ensure_for(request)
        return len(asked) - before

    assert ensure((1500,)) == 1
    assert ensure((1025,)) == ensure((2048,)) == ensure((3, 1500), axis=1) == 0  # class 11, one lane or three
    assert ensure((2049,)) == 1 and asked[-1][-1] == 2049  # class 12
    assert ensure((1500, 4), axis=0) == 1 and asked[-1][-2:] == (4, 6000)  # four streams: a key of its own
    assert ensure((1500,), acc="float32") == 1  # another accumulator
    final[0] = False  # postponed (another thread tunes, a capture): asked again
    assert ensure((100_000,)) == ensure((100_001,)) == 1
    final[0] = True
    assert ensure((100_002,)) == 1 and ensure((100_003,)) == 0
    table.changed()  # a table stored or forgotten: every class is asked again
    assert ensure((1500,)) == 1
    first_use.reset()
