"""The shipped sums launch exactly what the scan route launches, for every length (on the CPU).

The route (``scan.route.run_scan``: the strategy, ``launch_lookback``'s tile, the cut of
the lane, the status words, window and register cap) runs for real on CPU tensors as if
on an H200 (its shipped table, 132 SMs, compute capability 9.0), its one launch
recorded instead of compiled; the ahead-of-time loader's choice for the same request
(:meth:`prefixscan.backends.triton.aot.Launcher.variant`) is either that launch, a
shipped variant with the same constexprs, warps, register cap and grid, or a refusal
where no shipped variant is that launch.  Nothing is compiled or launched, so this runs
on any machine, with or without a GPU or the interpreter.
"""

from __future__ import annotations

import collections
import contextvars

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

from prefixscan._normalize import build_request, make_config  # noqa: E402
from prefixscan.caches import registered_caches  # noqa: E402
from prefixscan.backends.triton import aot  # noqa: E402
from prefixscan.backends.triton.aot.variants import DATA_DIR, load_spec  # noqa: E402
from prefixscan.backends.triton.engine import state as engine_state  # noqa: E402
from prefixscan.backends.triton.planning import planner, shipped, sources, table  # noqa: E402
from prefixscan.backends.triton.planning.tiles import TileConfig  # noqa: E402
from prefixscan.backends.triton.runtime import launch as runtime  # noqa: E402
from prefixscan.backends.triton.scan import route  # noqa: E402

H200 = "NVIDIA H200"
#: (input dtype, accumulator dtype) of ``prefixscan.cumsum``: int32 sums accumulate in int64.
DTYPES = (("int32", "int64"), ("int32", "int32"), ("int64", "int64"), ("float32", "float32"), ("float64", "float64"))
PRIMES = (2, 3, 5, 1021, 1031, 2053, 4099, 8191, 65521, 65537, 131071, 1_000_003, 16_777_259, 268_435_399)


def lengths() -> list[int]:
    """2^k - 1, 2^k, 2^k + 1 up to 2^28, primes, and a few multiples +-1 of every tile of
    the shipped variants (the single-tile and look-back edges)."""
    out = set(PRIMES)
    for k in range(29):
        out.update({(1 << k) - 1, 1 << k, (1 << k) + 1})
    for block in (1024, 2048, 4096, 8192):
        for m in (1, 2, 3, 4, 31, 32, 33, 1000):
            out.update({m * block - 1, m * block, m * block + 1})
    return sorted(n for n in out if 0 < n <= 1 << 28)


@pytest.fixture
def h200(monkeypatch, tmp_path):
    """CPU tensors planned as on an H200 (its shipped table, no user table); the route's
    launches recorded, not run.  Returns the list of recorded launches."""
    seen = []
    monkeypatch.setenv("PREFIXSCAN_CACHE_DIR", str(tmp_path))  # an empty user table
    monkeypatch.delenv("PREFIXSCAN_SHIPPED_TABLES", raising=False)
    monkeypatch.delenv(aot.ENV, raising=False)
    monkeypatch.setattr(table, "TABLE_DEVICES", ("cuda", "cpu"))
    monkeypatch.setattr(table, "gpu_name", lambda device: H200)
    monkeypatch.setattr(table, "gpu_properties", lambda device: table.GpuProperties(H200, 132, (9, 0)))
    monkeypatch.setattr(route, "interpreter_mode", lambda: False)
    monkeypatch.setattr(runtime, "launch_kernel", seen.append)  # returns None: nothing compiled
    monkeypatch.setattr(engine_state, "_states", {})  # recorded launches must not advance real tile counters
    table.reset()
    shipped.reset()
    sources.reset()
    planner.clear_memo()
    yield seen
    table.reset()
    shipped.reset()
    sources.reset()
    planner.clear_memo()


def _request(x, acc_dtype: str, **config):
    cfg = make_config("add", axis=None, inclusive=True, reverse=False, order=1, tuple_size=1, dtype=acc_dtype,
                      backend="triton", algorithm=None, **config)
    return build_request(cfg, x, None, None)


def _launched(launch) -> tuple:
    """What a launch of scan_1d_kernel compiles and how it runs: (constexprs but the
    monoid's functions, warps, register cap, grid)."""
    constexprs = {k: list(v) for k, v in launch.constexprs.items() if k != "MONOID"}
    return constexprs, launch.num_warps, launch.maxnreg, launch.grid


def _shipped_launches(x_dtype: str, acc_dtype: str) -> list:
    specs = [load_spec(p.stem) for p in sorted(DATA_DIR.glob("*.json"))]
    return [(s["constexprs"], s["num_warps"], s["maxnreg"]) for s in specs
            if (s["x_dtype"], s["acc_dtype"]) == (x_dtype, acc_dtype)]


def _route_and_loader(seen, launcher, x_dtype, acc_dtype, n, **config):
    """(the route's launch, the loader's choice) for a sum of ``n`` elements."""
    x = torch.empty(n, dtype=getattr(torch, x_dtype))  # never read: the launch is recorded
    request = _request(x, acc_dtype, **config)
    seen.clear()
    route.run_scan(request)
    (launch,) = seen
    chosen = launcher.variant(x.device, request.config, x_dtype, getattr(torch, acc_dtype), n)
    return launch, chosen


def test_lengths_cover_every_shipped_variant_and_edge():
    ns = lengths()
    assert len(ns) > 120 and ns[0] == 1 and ns[-1] == 1 << 28 and 268_435_399 in ns
    assert {(1 << 16) + 1, (1 << 21) + 1, (1 << 25) + 1, 2048 * 32 + 1, 4096 * 3 - 1} <= set(ns)


@pytest.mark.parametrize("x_dtype, acc_dtype", DTYPES)
def test_the_loader_launches_the_routes_variant_for_every_length(h200, x_dtype, acc_dtype):
    launcher = aot.Launcher(get_driver=lambda: None)
    shipped_launches = _shipped_launches(x_dtype, acc_dtype)
    served = set()
    for n in lengths():
        launch, chosen = _route_and_loader(h200, launcher, x_dtype, acc_dtype, n)
        kernel = getattr(launch.kernel, "fn", launch.kernel).__name__
        constexprs, warps, maxnreg, grid = _launched(launch)
        if isinstance(chosen, str):
            # Refused: then no shipped variant is the route's launch (or the route runs another kernel).
            assert kernel != "scan_1d_kernel" or (constexprs, warps, maxnreg) not in shipped_launches, (n, chosen)
            continue
        spec, plan = chosen
        assert kernel == "scan_1d_kernel" == spec["kernel"], n
        assert (spec["constexprs"], spec["num_warps"], spec["maxnreg"], plan.tiles) == \
            (constexprs, warps, maxnreg, grid), n
        assert (spec["x_dtype"], spec["acc_dtype"]) == (x_dtype, acc_dtype)
        served.add(spec["cubin"])
    # Every shipped variant of this dtype serves some length from 2^10 up.
    assert len(served) == len(shipped_launches), (sorted(served), len(shipped_launches))


def test_the_loader_refuses_what_the_route_runs_otherwise(h200):
    launcher = aot.Launcher(get_driver=lambda: None)
    launch, chosen = _route_and_loader(h200, launcher, "int64", "int64", 100_003, strategy="chained")
    assert chosen == "the route runs chained" and launch.constexprs["PROTOCOL"][2] is True
    with planner.override(TileConfig(4096, 4, 32)):
        _, chosen = _route_and_loader(h200, launcher, "int64", "int64", 100_003)
    assert chosen == "a forced tile"


def test_a_table_choosing_another_strategy_is_followed(h200, monkeypatch):
    """Where the table's auto choice is not the decoupled look-back, the route runs that
    strategy and the loader refuses (a user table over the shipped one)."""
    real = planner.tuned_strategy

    def tuned(device, accs, M, K, interpreter, **kw):
        return "chained" if M > 1 << 20 else real(device, accs, M, K, interpreter, **kw)

    monkeypatch.setattr(planner, "tuned_strategy", tuned)
    launcher = aot.Launcher(get_driver=lambda: None)
    launch, chosen = _route_and_loader(h200, launcher, "float32", "float32", (1 << 20) + 1)
    assert chosen == "the route runs chained" and launch.constexprs["PROTOCOL"][2] is True
    launch, chosen = _route_and_loader(h200, launcher, "float32", "float32", 1 << 20)
    assert not isinstance(chosen, str) and chosen[1].tiles == launch.grid


def test_the_tile_comes_from_the_h200_table(h200):
    """The fixture's GPU is served by the H200's own shipped table (not a closest one, not the defaults)."""
    Device = collections.namedtuple("Device", "type index")
    src = sources.sources_for(Device("cpu", None))
    assert src.exact and src.shipped.gpu.sm_count == 132 and src.shipped.gpu.name == H200


def _config():
    return make_config("add", axis=None, inclusive=True, reverse=False, order=1, tuple_size=1, dtype=None,
                       backend="triton", algorithm=None)


def test_choices_remembered_per_length_class_are_the_fresh_ones(h200):
    """A launcher remembers its variant per length class, (n - 1).bit_length(): asked for
    every length in a fresh random order, twice, it answers as a launcher asked once per
    length (nothing remembered), only the number of tiles changing within a class."""
    rng = np.random.default_rng()
    ns = lengths() + [int(v) for v in rng.integers(1, 1 << 28, 200)]
    device, config = torch.device("cpu"), _config()
    for x_dtype, acc_dtype in DTYPES:
        acc = getattr(torch, acc_dtype)
        kept = aot.Launcher(get_driver=lambda: None)
        for n in [int(v) for v in rng.permutation(ns)] * 2:
            fresh = aot.Launcher(get_driver=lambda: None).variant(device, config, x_dtype, acc, n)
            assert kept.variant(device, config, x_dtype, acc, n) == fresh, n
        assert 0 < len(kept.choices) <= 29
        assert {key[-1] for key in kept.choices} <= set(range(29))


def test_choices_are_not_remembered_under_a_forced_tile_and_forgotten_with_a_table(h200):
    device, config = torch.device("cpu"), _config()
    launcher = aot.Launcher(get_driver=lambda: None)
    spec, plan = launcher.variant(device, config, "int32", torch.int64, 100_000)
    assert len(launcher.choices) == 1
    with planner.override(TileConfig(4096, 4, 32)):  # the same class: the forced tile is refused, not remembered
        assert launcher.variant(device, config, "int32", torch.int64, 100_001) == "a forced tile"
    # Forced in another context only: this one remembers at the new generation, that one still refuses.
    other = contextvars.copy_context()
    other.run(planner.set_override, TileConfig(4096, 4, 32))
    assert launcher.variant(device, config, "int32", torch.int64, 100_002)[0] == spec
    assert other.run(launcher.variant, device, config, "int32", torch.int64, 100_003) == "a forced tile"
    generation = launcher.generation
    planner.clear_memo()  # a table stored or forgotten: what was remembered goes
    assert launcher.variant(device, config, "int32", torch.int64, 100_004)[0] == spec
    assert launcher.generation > generation and len(launcher.choices) == 1
    default = aot.default_launcher()
    default.variant(device, config, "int32", torch.int64, 100_000)
    assert default.choices
    assert "prefixscan.backends.triton.aot.choices" in registered_caches()
    aot._clear_choices()  # what prefixscan.caches.clear_caches() calls
    assert not default.choices
