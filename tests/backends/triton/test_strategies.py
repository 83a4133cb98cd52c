"""Every GPU meta-strategy (``scan(..., strategy=...)``) through the same cases.

Without a GPU the kernels run in Triton's interpreter with 8-element tiles (4
rows x 2 columns in the 2-D layout), so that a few dozen elements already take
several tiles, several persistent rounds (G = 3), several reduce_then_scan
ranges (C = 3) and several scan_then_propagate levels.  On the device machine
the same tests run compiled with the measured tiles and larger sizes.

Outputs are poisoned (NaN or a sentinel) before every call so that an element
a kernel failed to write shows; the reference is the plain-loop one of
prefixscan.testing, independent of the library.  Integer data wrap, so integer
results must be exact; float data are small integers where the operator allows
(sums exact in any order), so float sums must be exact too.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

# First: it skips this module where no Triton backend runs.
from .device import CUDA, DEVICE, DEVICE_MARK, to_device, torch

import prefixscan as ps  # noqa: E402
from prefixscan._environment import interpreter_mode  # noqa: E402
from prefixscan.backends.triton.scan import persistent, strategy_blocks  # noqa: E402
from prefixscan.backends.triton.planning import planner, tiles, traffic  # noqa: E402
from prefixscan.backends.triton.runtime import launch as runtime  # noqa: E402
from prefixscan.backends.triton.planning.policy import routing  # noqa: E402
from prefixscan.backends.triton.planning.registry import STRATEGY_NAMES  # noqa: E402
from prefixscan.testing import (affine, assert_scan_equal, matmul2, poisoned, random_array,  # noqa: E402
                                reference_scan)

pytestmark = DEVICE_MARK

STRATEGIES = STRATEGY_NAMES
SMALL = tiles.TileConfig(block=8, num_warps=1, window=2, max_kb=2)
TILE = SMALL.block if not CUDA else 16384  # the int32 tile on the device

if CUDA:
    SIZES = [0, 1, 2, 31, 8191, 8192, 8193, 65537, 1_000_003, (1 << 22) + 1]
    SCALE = 997  # lengths along the scanned axis are multiplied by this on the GPU
else:
    # 0, 1, primes, 2^k +- 1, tile boundaries (8); 97 = 13 tiles takes three
    # scan_then_propagate levels (13 -> 2 -> 1) and 5 persistent rounds.
    SIZES = [0, 1, 2, 7, 8, 9, 17, 31, 64, 65, 97, 127]
    SCALE = 1


@pytest.fixture(autouse=True)
def small_tiles():
    if CUDA:
        yield
        return
    planner.set_override(SMALL)
    yield
    planner.set_override(None)


def poisoned_out(shape, dtype):
    if dtype == "bfloat16":
        return torch.full(shape, float("nan"), dtype=torch.bfloat16, device=DEVICE)
    return to_device(poisoned(shape, dtype))


def host(t):
    t = t.detach().cpu()
    return (t.float() if t.dtype == torch.bfloat16 else t).numpy()


def check(got, expected, *, rtol=0.0):
    """Exact for integers and exact float data; else the tolerance rule of
    prefixscan.testing with this rtol: |got - expected| <= rtol * (|expected| + 1)."""
    assert_scan_equal(got, expected, rtol=rtol)


def run(x, op, strategy, *, out_dtype, **kw):
    """Scan with poisoned outputs; returns the outputs (tuple for struct monoids)."""
    if isinstance(x, tuple):
        out = tuple(poisoned_out(f.shape if kw.get("axis") is not None else (f.numel(),), out_dtype) for f in x)
    else:
        out = poisoned_out(x.shape if kw.get("axis") is not None else (x.numel(),), out_dtype)
    result = ps.scan(x, op, strategy=strategy, out=out, backend="triton", **kw)
    if isinstance(x, tuple):
        assert all(r is o for r, o in zip(result, out))
    else:
        assert result is out
    return out


DIRECTIONS = list(itertools.product((True, False), (False, True)))  # (inclusive, reverse)


def wrapping_sum_scan(x, inclusive, reverse, init):
    """Integer sums with NumPy (wrapping as C does), for sizes the reference's loops are too slow for."""
    a = x[::-1] if reverse else x
    y = np.cumsum(a, dtype=x.dtype)
    if init is not None:
        y = y + np.asarray(init, dtype=x.dtype)
    if not inclusive:
        y = np.concatenate([np.asarray([0 if init is None else init], dtype=x.dtype), y[:-1]])
    return y[::-1] if reverse else y


# ---------------------------------------------------------------------------
# Sizes: every size once, directions and init rotating; two sizes in every combination.

@pytest.mark.parametrize("strategy", STRATEGIES)
def test_sizes(strategy):
    rng = np.random.default_rng(1)
    combos = [(n, DIRECTIONS[i % 4], i % 3 == 1) for i, n in enumerate(SIZES)]
    for n in SIZES[-3:-2]:  # 65 interpreted: every direction, with and without init
        combos += [(n, d, init) for d in DIRECTIONS for init in (False, True) if (n, d, init) not in combos]
    for n, (inclusive, reverse), with_init in combos:
        x = random_array(rng, "int32", n)
        init = int(rng.integers(-50, 50)) if with_init else None
        if n > 100_000:  # the device's large sizes: the plain loops would take minutes
            expected = wrapping_sum_scan(x, inclusive, reverse, init)
        else:
            expected = reference_scan(x, "add", inclusive=inclusive, reverse=reverse, init=init)
        got = run(to_device(x), "add", strategy, out_dtype="int32", inclusive=inclusive, reverse=reverse,
                  init=init)
        check(got, expected)


# ---------------------------------------------------------------------------
# Operators and dtypes.

OP_CASES = [
    ("add", "int8"), ("add", "uint16"), ("add", "int64"), ("add", "float32"), ("add", "float64"),
    ("add", "float16"), ("add", "bfloat16"), ("mul", "int32"), ("mul", "float64"), ("max", "float32"),
    ("min", "int16"), ("max", "uint32"), ("and", "uint8"), ("or", "uint16"), ("xor", "int64"),
    ("max", "bool"), ("or", "bool"), ("logaddexp", "float32"),
]


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_operators_and_dtypes(strategy):
    rng = np.random.default_rng(2)
    n = 29 * SCALE
    for i, (op, dtype) in enumerate(OP_CASES):
        inclusive, reverse = DIRECTIONS[i % 4]
        if dtype == "bfloat16":
            # No NumPy bfloat16: the reference scans the bfloat16 values in float32
            # (the accumulator) and rounds the result to bfloat16 once.
            x32 = random_array(rng, "float32", n, op)
            xt = torch.from_numpy(x32).to(torch.bfloat16).to(DEVICE)
            expected = reference_scan(xt, op, inclusive=inclusive, reverse=reverse)
            got = run(xt, op, strategy, out_dtype="bfloat16", inclusive=inclusive, reverse=reverse)
            check(got, expected, rtol=2 ** -7)
            continue
        x = random_array(rng, dtype, n, op)
        init = None
        if i % 3 == 0 and dtype != "bool":
            init = x[:1].copy()[0]
        expected = reference_scan(x, op, inclusive=inclusive, reverse=reverse, init=init)
        got = run(to_device(x), op, strategy, out_dtype=dtype, inclusive=inclusive, reverse=reverse, init=init)
        exact = op != "mul" and op != "logaddexp" or np.dtype(dtype).kind in "iu"
        rtol = 0.0 if exact else {"float32": 1e-5, "float64": 1e-12}[dtype] * np.sqrt(n)
        check(got, expected, rtol=rtol)


def test_half_precision_accumulates_in_float32():
    """float16 across many tiles: 1024 + 0.25 k is exact in float32 but not in
    float16 (ulp 1 there), so a carry or local scan rounded to float16 on the way
    shows as a wrong element."""
    x = np.full(9 * TILE + 3, 0.25, dtype=np.float16)
    x[0] = 1024
    expected = (1024 + 0.25 * np.arange(x.size, dtype=np.float32)).astype(np.float16)
    for strategy in STRATEGIES:
        check(run(to_device(x), "add", strategy, out_dtype="float16"), expected)


# ---------------------------------------------------------------------------
# Non-commutative operators: the order of every combination shows.

def first_nonzero(a, b):
    return ps.where(a != 0, a, b)


FIRST_NONZERO = ps.Monoid(first_nonzero, 0, name="first_nonzero")
MATMUL2 = ps.Monoid(matmul2, (1, 0, 0, 1), name="matmul2")


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_non_commutative(strategy):
    rng = np.random.default_rng(3)
    n = 29 * SCALE
    for i, (inclusive, reverse) in enumerate(DIRECTIONS):
        # Affine maps v -> a v + b (2 fields, int64, wrapping), with an init.
        a = rng.integers(-3, 4, n).astype(np.int64)
        a[a == 0] = 1
        b = rng.integers(-9, 10, n).astype(np.int64)
        init = (np.int64(2), np.int64(-1)) if i % 2 == 0 else None
        expected = reference_scan((a, b), affine, identity=(1, 0), inclusive=inclusive, reverse=reverse, init=init)
        got = run((to_device(a), to_device(b)), ps.AFFINE, strategy, out_dtype="int64", inclusive=inclusive,
                  reverse=reverse, init=init)
        for g, e in zip(got, expected):
            check(g, e)
        # 2x2 integer matrices (4 fields, int32, wrapping).
        m = tuple(rng.integers(-2, 3, n).astype(np.int32) for _ in range(4))
        expected = reference_scan(m, matmul2, identity=(1, 0, 0, 1), inclusive=inclusive, reverse=reverse)
        got = run(tuple(to_device(f) for f in m), MATMUL2, strategy, out_dtype="int32", inclusive=inclusive,
                  reverse=reverse)
        for g, e in zip(got, expected):
            check(g, e)
        # First non-zero (one field, idempotent): a wrong order picks another value.
        x = random_array(rng, "int32", n)
        x[rng.random(n) < 0.8] = 0
        expected = reference_scan(x, lambda p, q: p if p != 0 else q, identity=0, inclusive=inclusive, reverse=reverse)
        got = run(to_device(x), FIRST_NONZERO, strategy, out_dtype="int32", inclusive=inclusive, reverse=reverse)
        check(got, expected)


# ---------------------------------------------------------------------------
# Axes, tuple_size, per-lane init, order.

LAYOUTS = [  # shape (axis length first multiplied by SCALE on the GPU), axis, tuple_size
    ((19, 3), 0, 1),  # K = 3: two column blocks of 2, one partial
    ((3, 30), 1, 1),  # three lanes of 30
    ((2, 13, 3), 1, 1),  # lanes and columns
    ((66,), None, 3),  # interleaved streams
    ((4, 26), -1, 2),
    ((23, 4), 0, 1),  # K == KB x 2
]


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_layouts(strategy):
    rng = np.random.default_rng(4)
    for i, (shape, axis, tuple_size) in enumerate(LAYOUTS):
        if CUDA:
            ax = 0 if axis is None else axis % len(shape)
            shape = tuple(d * SCALE if j == ax else d for j, d in enumerate(shape))
        inclusive, reverse = DIRECTIONS[i % 4]
        x = random_array(rng, "int32", shape)
        if axis is None:
            init = rng.integers(-9, 9, tuple_size).astype(np.int32) if tuple_size > 1 else None
        else:
            lanes = shape[:axis % len(shape)] + shape[axis % len(shape) + 1:]
            init = rng.integers(-9, 9, lanes + ((tuple_size,) if tuple_size > 1 else ())).astype(np.int32)
        expected = reference_scan(x, "add", axis=axis, tuple_size=tuple_size, inclusive=inclusive,
                                       reverse=reverse, init=init)
        got = run(to_device(x), "add", strategy, out_dtype="int32", axis=axis, tuple_size=tuple_size,
                  inclusive=inclusive, reverse=reverse, init=None if init is None else to_device(init))
        check(got, expected.reshape(-1) if axis is None else expected)
    # A non-commutative struct monoid along a non-last axis.
    a = rng.integers(-3, 4, (21 * SCALE, 3)).astype(np.int64)
    b = rng.integers(-9, 10, (21 * SCALE, 3)).astype(np.int64)
    expected = reference_scan((a, b), affine, identity=(1, 0), axis=0, reverse=True)
    got = run((to_device(a), to_device(b)), ps.AFFINE, strategy, out_dtype="int64", axis=0, reverse=True)
    for g, e in zip(got, expected):
        check(g, e)


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_order(strategy):
    rng = np.random.default_rng(5)
    x = random_array(rng, "int64", (2, 27 * SCALE))
    init = rng.integers(-5, 5, 2)
    for order, reverse in ((2, False), (3, True)):
        expected = reference_scan(x, "add", axis=1, init=init, order=order, reverse=reverse)
        got = run(to_device(x), "add", strategy, out_dtype="int64", axis=1, init=to_device(init), order=order,
                  reverse=reverse)
        check(got, expected)


# ---------------------------------------------------------------------------
# The raking in-tile scan (a tile-config knob) under every strategy.

@pytest.mark.parametrize("rake", [2, 4])
@pytest.mark.parametrize("strategy", STRATEGIES)
def test_raking(strategy, rake, launches):
    base = planner.choose_config(torch.device(DEVICE), 4, False, 1 << 20, 1, interpreter_mode())
    planner.set_override(tiles.TileConfig(base.block, base.num_warps, base.window, base.max_kb, base.packed,
                                          raking=rake))
    try:
        rng = np.random.default_rng(6)
        for n, (inclusive, reverse) in zip((9 * SCALE, 33 * SCALE), DIRECTIONS[1:3]):
            x = random_array(rng, "int32", n)
            expected = reference_scan(x, "add", inclusive=inclusive, reverse=reverse, init=7)
            check(run(to_device(x), "add", strategy, out_dtype="int32", inclusive=inclusive, reverse=reverse,
                      init=7), expected)
        x = random_array(rng, "int32", (19 * SCALE, 3))  # 2-D tiles
        expected = reference_scan(x, "max", axis=0, inclusive=False)
        check(run(to_device(x), "max", strategy, out_dtype="int32", axis=0, inclusive=False), expected)
        a = rng.integers(-3, 4, 30 * SCALE).astype(np.int64)  # non-commutative, backwards
        b = rng.integers(-9, 10, 30 * SCALE).astype(np.int64)
        expected = reference_scan((a, b), affine, identity=(1, 0), reverse=True)
        for g, e in zip(run((to_device(a), to_device(b)), ps.AFFINE, strategy, out_dtype="int64", reverse=True),
                        expected):
            check(g, e)
        # Every kernel that scans tiles ran the raking variant (rows capped at
        # the tile: 2 in the 2-row tiles of scan_then_propagate's last level).
        rakes = {k[4] for k in launches if k[0] not in ("stp_add_kernel", "rts_carry_kernel", "rts_reduce_kernel")}
        assert max(rakes) == rake and min(rakes) >= 2, rakes
    finally:
        planner.set_override(SMALL if not CUDA else None)


# ---------------------------------------------------------------------------
# Which kernels each strategy runs.

def _protocol(constexprs) -> tuple:
    """(WORDS, WINDOW, CHAINED) of an engine launch; Nones for the other kernels."""
    return constexprs.get("PROTOCOL", (None, None, constexprs.get("CHAINED")))


def _tile(constexprs) -> tuple:
    """The scan kernels' TILE (BLOCK or ROWS, RAKE, ...); the others' RAKE second."""
    tile = constexprs.get("TILE")
    return tile if isinstance(tile, tuple) else (None, constexprs.get("RAKE"))


class _Summaries:
    """Recorded launches (runtime.recording) as (kernel name, grid, CHAINED, SEED, RAKE)."""

    def __init__(self, launches):
        self.launches = launches

    def _rows(self):
        return [(l.kernel.fn.__name__, l.grid, _protocol(l.constexprs)[2], l.constexprs.get("SEED"),
                 _tile(l.constexprs)[1]) for l in self.launches]

    def clear(self):
        self.launches.clear()

    def __iter__(self):
        return iter(self._rows())

    def __len__(self):
        return len(self.launches)

    def __repr__(self):
        return repr(self._rows())


@pytest.fixture
def launches():
    with runtime.recording() as seen:
        yield _Summaries(seen)


@pytest.mark.skipif(CUDA, reason="the sequence below is for the interpreter's tiles and grids")
def test_kernels_per_strategy(launches):
    x = np.arange(97, dtype=np.int32)  # 13 tiles of 8: 13 -> 2 -> 1 for scan_then_propagate
    expected = {
        "decoupled_lookback": [("scan_1d_kernel", 13, False, None)],
        "chained": [("scan_1d_kernel", 13, True, None)],
        "scan_then_propagate": [("stp_local_kernel", 13, None, False), ("stp_local_kernel", 2, None, False),
                                ("stp_local_kernel", 1, None, True), ("stp_add_kernel", 2, None, None),
                                ("stp_add_kernel", 13, None, None)],
        "reduce_then_scan": [("rts_reduce_kernel", 3, None, None), ("rts_carry_kernel", 1, None, None),
                             ("rts_scan_kernel", 3, None, None)],
        "persistent": [("persistent_kernel", 3, None, None)] * 5,  # one launch per round of 3 chunks
    }
    for strategy, kernels in expected.items():
        launches.clear()
        check(run(to_device(x), "add", strategy, out_dtype="int32"), np.cumsum(x, dtype=np.int32))
        assert [k[:4] for k in launches] == kernels, strategy
    # One tile: one launch, whatever the strategy.
    for strategy in STRATEGIES:
        launches.clear()
        check(run(to_device(x[:5]), "add", strategy, out_dtype="int32"), np.cumsum(x[:5], dtype=np.int32))
        assert len(launches) == 1, (strategy, launches)
    assert strategy_blocks.last_plan["scan_then_propagate"]["levels"] == 1
    # The default and deterministic=True keep the look-back kernels.
    launches.clear()
    ps.scan(to_device(x), backend="triton")
    ps.scan(to_device(x), backend="triton", deterministic=True)
    assert [k[2] for k in launches] == [False, True]


@pytest.mark.skipif(CUDA, reason="interpreter grids")
def test_single_program_grids(launches):
    """G = 1 (persistent): one launch runs every round in the kernel's loop, as on a
    GPU; C = 1 (reduce_then_scan): one range holds every group."""
    rng = np.random.default_rng(7)
    x = random_array(rng, "int32", (3, 29))
    expected = reference_scan(x, "add", axis=1, init=np.array([1, 2, 3], np.int32), reverse=True)
    for strategy in ("persistent", "reduce_then_scan"):
        launches.clear()
        with routing(interpreter_blocks=1):
            got = run(to_device(x), "add", strategy, out_dtype="int32", axis=1,
                      init=to_device(np.array([1, 2, 3], np.int32)), reverse=True)
        check(got, expected)
        assert {k[1] for k in launches} == {1}
    assert [k[0] for k in launches] == ["rts_reduce_kernel", "rts_carry_kernel", "rts_scan_kernel"]
    assert strategy_blocks.last_plan["persistent"] == dict(grid=1, tile=8, tiles=12, launches=1, slots=4)


# ---------------------------------------------------------------------------
# The persistent ring: reuse across calls, tag wrap, the spin guard.

def test_persistent_ring_reuse_and_wrap():
    rng = np.random.default_rng(8)
    calls = [("int32", 70 * SCALE), ("int64", 33 * SCALE), ("float32", 50 * SCALE), ("int32", 19 * SCALE)]
    for dtype, n in calls + calls:  # packed (<= 32 bits) and split (64-bit) rings, several sizes
        x = random_array(rng, dtype, n)
        check(run(to_device(x), "add", "persistent", out_dtype=dtype), reference_scan(x, "add"))
    device = to_device(np.zeros(1)).device
    ring = persistent._rings[(device, runtime.current_stream(device) if CUDA else 0)]
    first = ring.tag_base
    x = random_array(rng, "int32", 70 * SCALE)
    run(to_device(x), "add", "persistent", out_dtype="int32")
    chunks = strategy_blocks.last_plan["persistent"]["tiles"]  # the tuned tile may differ from TILE on a GPU
    assert chunks == -(-x.size // strategy_blocks.last_plan["persistent"]["tile"])
    assert ring.tag_base == first + chunks  # one tag per chunk, growing across calls
    # Near the end of the 31-bit tags the ring starts over from 1 with zeroed buffers.
    ring.tag_base = persistent._TAG_LIMIT - 3
    check(run(to_device(x), "add", "persistent", out_dtype="int32"), reference_scan(x, "add"))
    assert ring.tag_base == 1 + chunks
    check(run(to_device(x), "add", "persistent", out_dtype="int32"), reference_scan(x, "add"))
    assert persistent.persistent_errors() == 0


@pytest.mark.skipif(CUDA, reason="drops a launch on purpose")
def test_persistent_missing_entry_is_an_error_not_a_hang(monkeypatch):
    """A round whose predecessors never published: the waits give up after the
    spin limit and the launcher raises (on a GPU the error word counts it)."""
    original = runtime.launch_kernel
    calls = []

    def drop_first_round(launch):
        calls.append(launch.grid)
        if len(calls) > 1:
            original(launch)

    monkeypatch.setattr(runtime, "launch_kernel", drop_first_round)
    with pytest.raises(RuntimeError, match="missing"):
        ps.scan(to_device(np.ones(40, np.int32)), strategy="persistent", backend="triton")
    monkeypatch.undo()
    persistent._rings.clear()  # the error word stays set on the dropped ring
    check(run(to_device(np.ones(40, np.int32)), "add", "persistent", out_dtype="int32"),
          np.arange(1, 41, dtype=np.int32))


# ---------------------------------------------------------------------------
# Errors and determinism.

def test_bad_strategy_arguments():
    x = to_device(np.arange(50, dtype=np.int32))
    out = poisoned_out((50,), "int32")
    before = host(out).copy()
    with pytest.raises(ValueError, match="strategy"):
        ps.scan(x, strategy="raking", out=out, backend="triton")
    with pytest.raises(ValueError, match="strategy"):
        ps.scan(x, strategy="decoupled_lookback", deterministic=True, out=out, backend="triton")
    with pytest.raises(ValueError, match="strategy"):
        ps.scan(np.arange(5), strategy="persistent", backend="cpu")
    np.testing.assert_array_equal(host(out), before)  # nothing written on error
    with pytest.raises(ValueError, match="strategy"):
        traffic.traffic_per_element("lookback", 100, 8)


@pytest.mark.parametrize("strategy", ["chained", "reduce_then_scan", "scan_then_propagate", "persistent"])
def test_deterministic_accepts_fixed_order_strategies(strategy):
    """Inexact float sums: bitwise equal from run to run (on the GPU, where timing varies)."""
    rng = np.random.default_rng(9)
    x = random_array(rng, "float32", 77 * SCALE, exact=False)
    first = ps.scan(to_device(x), strategy=strategy, deterministic=True, backend="triton")
    check(first, reference_scan(x, "add"), rtol=1e-5 * np.sqrt(x.size))
    for _ in range(3 if CUDA else 1):
        assert torch.equal(first, ps.scan(to_device(x), strategy=strategy, deterministic=True, backend="triton"))


# ---------------------------------------------------------------------------
# The traffic model.

def test_traffic_per_element():
    n, tile = 1 << 28, 8192
    t = {s: traffic.traffic_per_element(s, n, tile) for s in STRATEGIES}
    assert 4.0 < t["scan_then_propagate"] < 4.01  # 4n + ~4n/tile
    assert 3.0 < t["reduce_then_scan"] < 3.001  # 3n + 4C
    for s in ("decoupled_lookback", "chained", "persistent"):
        assert 2.0 < t[s] < 2.04, (s, t[s])
    assert t["chained"] < t["decoupled_lookback"]
    assert traffic.traffic_per_element("persistent", n, tile, blocks=16) < t["persistent"]
    # Recursion: 3 levels of 8-element tiles over 521 elements.
    # levels of 521, 66 and 9 elements (4m + 2 x totals each), then 2 in one tile
    expected = (4 * 521 + 2 * 66) + (4 * 66 + 2 * 9) + (4 * 9 + 2 * 2) + 2 * 2
    assert traffic.traffic_per_element("scan_then_propagate", 521, 8) == expected / 521
    assert traffic.traffic_per_element("reduce_then_scan", 7, 8) == 2.0  # one tile
    assert traffic.traffic_per_element("persistent", 0, 8) == 0.0
