"""How scans read the tuned table (planning/planner.py, planning/sources.py): tiles and
strategies per key, what a launch gets, the tile override, the memo.

Fakes and fixtures: fakes.py and conftest.py of this folder.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

import prefixscan as ps  # noqa: E402
import prefixscan.tuning as tuning  # noqa: E402
from prefixscan._environment import interpreter_mode  # noqa: E402
from prefixscan.backends.triton.planning import keys, planner, registry, sources, table, tiles  # noqa: E402
from prefixscan.backends.triton.planning.policy import routing  # noqa: E402
from prefixscan.backends.triton.planning.tiles import TileConfig, default_config  # noqa: E402
from prefixscan.backends.triton.scan import route as scan_path  # noqa: E402
from prefixscan.backends.triton.scan.route import strategy_for  # noqa: E402

from .fakes import D4, D20, DEV, KEY_20, C, forget, scan_config, searched, two_tile_result, write_table  # noqa: E402


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


def test_strategy_for_uses_the_table_explicit_wins(fake_gpu, monkeypatch):
    monkeypatch.setenv("PREFIXSCAN_AUTOTUNE", "0")
    r = searched({C("decoupled_lookback", 16384): 1.0, C("persistent", 16384): 0.5,
                  C("reduce_then_scan", 8192): 0.8, C("chained", 16384): 2.0},
                 deterministic_default=C("chained", 16384))
    write_table({KEY_20: r})
    accs = [torch.int32]
    M = 1 << 20
    assert strategy_for(scan_config(), DEV, accs, M, 1, False) == "persistent"
    assert strategy_for(scan_config(deterministic=True), DEV, accs, M, 1, False) == "persistent"
    assert strategy_for(scan_config(strategy="decoupled_lookback"), DEV, accs, M, 1, False) == "decoupled_lookback"
    assert strategy_for(scan_config(strategy="chained", deterministic=True), DEV, accs, M, 1, False) == "chained"
    assert planner.choose_config(DEV, 4, False, M, 1, False, strategy="reduce_then_scan") == C("x", 8192).tile
    # outside the table's keys, in the interpreter, or under an override: the fixed defaults
    assert strategy_for(scan_config(), DEV, accs, 1 << 10, 1, False) == "decoupled_lookback"
    assert strategy_for(scan_config(deterministic=True), DEV, accs, 1 << 10, 1, False) == "chained"
    assert strategy_for(scan_config(), DEV, accs, M, 1, True) == "decoupled_lookback"
    with planner.override(D4):
        assert strategy_for(scan_config(), DEV, accs, M, 1, False) == "decoupled_lookback"


def test_a_strategy_this_version_lacks_falls_back(fake_gpu, monkeypatch):
    """A table entry naming a strategy outside the registry (written by another
    version) is skipped with a warning: the scan gets the defaults."""
    monkeypatch.setenv("PREFIXSCAN_AUTOTUNE", "0")
    r = searched({C("decoupled_lookback", 16384): 1.0, C("persistent", 16384): 0.5,
                  C("reduce_then_scan", 8192): 0.8, C("chained", 16384): 2.0},
                 deterministic_default=C("chained", 16384))
    write_table({KEY_20: dict(r.to_record(), strategy="warp_shuffle_2030")})
    with pytest.warns(table.TuningCacheWarning, match="warp_shuffle_2030"):
        assert strategy_for(scan_config(), DEV, [torch.int32], 1 << 20, 1, False) == "decoupled_lookback"
    assert not registry.strategy_available("warp_shuffle_2030")
    assert strategy_for(scan_config(deterministic=True), DEV, [torch.int32], 1 << 20, 1, False) == "chained"


def test_deterministic_never_gets_a_look_back_strategy(fake_gpu, monkeypatch):
    monkeypatch.setenv("PREFIXSCAN_AUTOTUNE", "0")
    r = searched({C("decoupled_lookback", 16384): 1.0, C("chained", 16384): 2.0}, wrong=[C("chained", 16384)],
                 deterministic_default=C("chained", 16384))
    assert r.best_deterministic is None  # the only deterministic candidate was wrong
    write_table({KEY_20: r})
    assert strategy_for(scan_config(deterministic=True), DEV, [torch.int32], 1 << 20, 1, False) == "chained"
    assert planner.choose_config(DEV, 4, False, 1 << 20, 1, False, strategy="chained") == D20
    assert not registry.runnable("decoupled_lookback", True) and registry.runnable("persistent", True)
    assert registry.runnable("chained", True) and registry.runnable("chained", False)


@pytest.mark.interpreter
@pytest.mark.skipif(not interpreter_mode(), reason="needs Triton's interpreter")
def test_launch_passes_scan_details_to_choose_config(monkeypatch):
    seen = []
    real = planner.choose_config

    def spy(*args, **kwargs):
        seen.append(kwargs)
        return real(*args, **kwargs)

    # launch_lookback asks planner.lookback_config, which asks choose_config.
    monkeypatch.setattr(planner, "choose_config", spy)
    x = torch.arange(1, 100, dtype=torch.int32)
    assert torch.equal(ps.scan(x, backend="triton"), torch.cumsum(x, 0, dtype=torch.int32))
    ps.scan(x.float(), backend="triton", deterministic=True)
    ps.scan((torch.ones(99), x.float()), ps.AFFINE, backend="triton")
    assert seen[0]["strategy"] == "decoupled_lookback" and list(seen[0]["accs"]) == [torch.int32]
    assert seen[0]["monoid"] is ps.BUILTIN_OPS["add"]
    assert seen[1]["strategy"] == "chained"
    assert seen[2]["monoid"] is ps.AFFINE and list(seen[2]["accs"]) == [torch.float32, torch.float32]


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
