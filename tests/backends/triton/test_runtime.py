"""The launch runtime and planned replay (runtime/launch.py, runtime/replay.py, engine/state.py): integer
widths in the variant key, replay following tile overrides and falling back,
more than 2^31 elements, the backend's memos.

Device, sizes and data: device.py of this folder.
"""

from __future__ import annotations

import numpy as np
import pytest

# First: it skips this module where no Triton backend runs.
from .device import CUDA, DEVICE_MARK, random_data, to_device, torch

import prefixscan as ps  # noqa: E402
from prefixscan.backends.triton.scan import job, lookback, route as scan  # noqa: E402
from prefixscan.backends.triton.runtime import replay, launch as runtime  # noqa: E402
from prefixscan.backends.triton.engine import state as status  # noqa: E402

pytestmark = DEVICE_MARK


@pytest.mark.gpu
@pytest.mark.slow
@pytest.mark.skipif(not CUDA, reason="needs a CUDA device")
def test_a_length_past_int32_after_a_small_one():
    """A kernel variant compiled for a 32-bit length is not relaunched with a 64-bit one
    (compiled.run raised OverflowError: the variant key did not hold the width).  One
    forced tile, so that both scans take the same constexprs."""
    from prefixscan.backends.triton.planning import planner, tiles

    small = torch.randint(0, 3, (100_007,), dtype=torch.int8, device="cuda")  # % 16 == 7, as the large one
    n = (1 << 31) + 7
    x = torch.ones(n, dtype=torch.int8, device="cuda")
    with planner.override(tiles.TileConfig(16384, 4, 32)):
        assert torch.equal(ps.scan(small), torch.cumsum(small, 0, dtype=torch.int64).to(torch.int8))
        got = ps.scan(x)
    assert int(got[-1]) == ((n + 128) % 256) - 128 and int(got[(1 << 31) - 1]) == 0  # wraps like int8


@pytest.mark.gpu
@pytest.mark.slow
@pytest.mark.skipif(not CUDA, reason="needs a CUDA device")
def test_beyond_int32_indexing():
    """More than 2^31 elements: 64-bit offsets everywhere."""
    n = (1 << 31) + 77
    x = torch.randint(0, 3, (n,), dtype=torch.int8, device="cuda")
    got = ps.scan(x, "add")
    expected = torch.cumsum(x.view(torch.uint8), 0, dtype=torch.int64).to(torch.int8)  # wraps like int8
    assert torch.equal(got, expected)
    tail = ps.scan(x, "xor", reverse=True)
    assert int(tail[0]) == int(torch.tensor(np.bitwise_xor.reduce(x.cpu().numpy())))


@pytest.mark.skipif(not CUDA, reason="the replay path exists for compiled kernels only")
def test_replay_follows_a_tile_override():
    """A planned replay must not keep launching its old tile once an override (the
    tuner's, a sweep's) is set or lifted: it is planned again."""
    from prefixscan.backends.triton.planning import planner, tiles

    s = ps.make_scan()
    rng = np.random.default_rng(10)
    n = 300_001
    x = to_device(random_data(rng, "int32", n))
    s(x)
    (_, _, planned), = s._plans.values()
    forced = tiles.TileConfig(block=2048, num_warps=4, window=32)
    planner.set_override(forced)
    try:
        out = torch.full_like(x, -77)
        s(x, out=out)
        np.testing.assert_array_equal(out.cpu().numpy(), np.cumsum(x.cpu().numpy(), dtype=np.int32))
        s(x)
        fast = s._plans[next(k for k in s._plans if k[0][-1] is None and not k[1])][2]
        assert isinstance(fast, replay.FastScan) and fast is not planned and fast.grid == -(-n // 2048)
    finally:
        planner.set_override(None)
    s(x)
    fast = s._plans[next(k for k in s._plans if k[0][-1] is None and not k[1])][2]
    assert fast is not planned and fast.grid == planned.grid  # planned again, with the table's tile


@pytest.mark.skipif(not CUDA, reason="the replay path exists for compiled kernels only")
@pytest.mark.parametrize("n", [1000, 300_001])  # one tile; several (status renewed each call)
def test_seeded_replay(n, monkeypatch):
    """Seeded scans of one signature replay too, each call with its own seed (a host
    scalar, a 0-d array, a device tensor), checked each call; a seed that does not fit
    still raises; lanes along an axis give the same results on whichever path."""
    rng = np.random.default_rng(11)
    s = ps.make_scan()
    s(to_device(random_data(rng, "int64", n)), init=3)
    (key, (_, _, fast)), = s._plans.items()
    assert key[1] and isinstance(fast, replay.FastScan) and fast.seed is not None
    full_runs = []
    real = scan.run_scan
    monkeypatch.setattr(scan, "run_scan", lambda *a, **k: (full_runs.append(1), real(*a, **k))[1])
    for init in (-(1 << 40), np.int64(7), np.array(-2), torch.tensor(123, device="cuda"), 5.0):
        x = to_device(random_data(rng, "int64", n))
        out = torch.full_like(x, -77)
        assert s(x, init=init, out=out) is out
        want = np.cumsum(x.cpu().numpy()) + int(init.item() if hasattr(init, "item") else init)
        np.testing.assert_array_equal(out.cpu().numpy(), want)
        np.testing.assert_array_equal(s(x, init=init).cpu().numpy(), want)
    assert len(full_runs) == 1  # planning the out= signature; every other call replayed
    with pytest.raises(ValueError, match="init"):
        s(to_device(random_data(rng, "int64", n)), init=1 << 64)  # the cached signature: checked anyway
    lanes = ps.make_scan(axis=-1)
    for init in (np.array([5, -6, 7]), torch.tensor([1, 2, 3], device="cuda"), -4):
        x = to_device(random_data(rng, "int32", (3, n // 3)))
        want = np.cumsum(x.cpu().numpy(), axis=-1, dtype=np.int32) + np.asarray(
            init.cpu() if torch.is_tensor(init) else init, dtype=np.int32).reshape(-1, 1)
        np.testing.assert_array_equal(lanes(x, init=init).cpu().numpy(), want)


@pytest.mark.skipif(not CUDA, reason="the replay path exists for compiled kernels only")
def test_single_tile_replay(monkeypatch):
    """Repeated small scans of one signature go straight to the compiled kernel; tensors
    the replay cannot take (strided, in place) take the full path, with the same results.
    Triton's replay: the int64 sums shipped compiled for sm_90 have their own
    (tests/backends/triton/test_aot_gpu.py)."""
    monkeypatch.setenv("PREFIXSCAN_AOT", "0")
    s = ps.make_scan()
    rng = np.random.default_rng(9)
    x1 = to_device(random_data(rng, "int32", 1000))
    s(x1)
    (_, _, fast), = s._plans.values()
    assert isinstance(fast, replay.FastScan)
    full_runs = []
    real = scan.run_scan
    monkeypatch.setattr(scan, "run_scan", lambda *a, **k: (full_runs.append(1), real(*a, **k))[1])
    s(x1, out=torch.empty_like(x1))  # plans the out= signature: one full run
    assert len(full_runs) == 1
    for _ in range(3):
        x = to_device(random_data(rng, "int32", 1000))
        out = torch.full_like(x, -77)
        np.testing.assert_array_equal(s(x).cpu().numpy(), np.cumsum(x.cpu().numpy(), dtype=np.int32))
        s(x, out=out)
        np.testing.assert_array_equal(out.cpu().numpy(), np.cumsum(x.cpu().numpy(), dtype=np.int32))
    assert len(full_runs) == 1
    # A multi-tile signature replays too (status reserved afresh each call).
    big = ps.make_scan()
    xb = to_device(random_data(rng, "int64", 300_001))
    big(xb)
    (_, _, fast_big), = big._plans.values()
    assert isinstance(fast_big, replay.FastScan) and fast_big.replay is not None
    for _ in range(3):
        xb = to_device(random_data(rng, "int64", 300_001))
        np.testing.assert_array_equal(big(xb).cpu().numpy(), np.cumsum(xb.cpu().numpy()))
    assert len(full_runs) == 2  # big's planning run only
    wide = to_device(random_data(rng, "int32", 2000))
    strided = wide[::2]
    np.testing.assert_array_equal(s(strided).cpu().numpy(), np.cumsum(strided.cpu().numpy(), dtype=np.int32))
    assert len(full_runs) == 3


# ---------------------------------------------------------------------------
# Integer widths in the launch runtime's variant key and in the replay: a kernel
# compiled while a length (or tile base) fit in 32 bits must not be relaunched with
# one that does not (compiled.run raised OverflowError: a scan of 2^31 + 7 elements
# after a small one of the same signature).

def test_int_width_follows_triton():
    from triton.runtime.jit import mangle_type

    for value in (0, 1, -1, 16, (1 << 31) - 1, 1 << 31, -(1 << 31), -(1 << 31) - 1, (1 << 31) + 7, 1 << 32,
                  (1 << 63) - 1, -(1 << 63), 1 << 63, (1 << 64) - 1):
        assert runtime.int_width(value) == mangle_type(value), value


def test_launch_key_tells_int_widths_apart():
    """Every integer argument's width is in the key, specialized (M) or not (tile_base);
    values of one width and the same specialization share a variant."""
    x = torch.zeros(64, dtype=torch.int32)

    def key(M, tile_base):
        launch = runtime.Launch("kernel", 4, 4, 0, False, ((x,), (x,), M, 3, tile_base, 1), dict(BLOCK=16), (M,))
        return runtime.launch_key(launch, torch.Tensor)

    assert key(1000 * 16, 5) == key(2000 * 16, 7)  # both i32, both divisible by 16
    assert key(100_007, 5) != key((1 << 31) + 7, 5)  # same divisibility and != 1, another width
    assert key(100_007, 5) != key(100_007, 1 << 31)  # a do_not_specialize argument grown past 32 bits
    assert key(1, 5) != key(17, 5)  # Triton's own specialization (== 1) still counts


def test_integers_inside_tuples_are_in_the_key():
    """Triton specializes the integers of a tuple argument (divisibility by 16, a 1 as a
    constant) even under ``do_not_specialize`` (tools/compile_report.py
    --tuple-specialization shows it): a kernel compiled for a size of 1 inside a tuple
    must not run for another size.  No GPU needed."""
    x = torch.zeros(64, dtype=torch.int32)

    def key(sizes):
        launch = runtime.Launch("kernel", 4, 4, 0, False, ((x,), sizes, 7), dict(BLOCK=16))
        return runtime.launch_key(launch, torch.Tensor)

    assert key((1, 32)) != key((3, 32))  # a 1 is a constant of the compiled code
    assert key((48, 5)) != key((47, 5))  # divisibility by 16
    assert key((3, 17)) == key((5, 33)) and key((16, 2)) == key((32, 3))
    assert key(((1,), 2)) != key(((2,), 2))  # nested tuples too


def test_replay_falls_back_when_the_tile_base_outgrows_32_bits():
    """A planned replay patches the tile base into a kernel compiled for a 32-bit one: once
    the status state's tile counter passes 2^31 it declines (the full path compiles the
    64-bit variant).  A fake compiled kernel on CPU tensors: no GPU needed."""
    import types

    runs = []
    compiled = types.SimpleNamespace(function=None, packed_metadata=None, run=lambda *a: runs.append(a))
    state = status.DeviceState(torch.device("cpu"))
    ident = torch.zeros(1, dtype=torch.int32)
    words = torch.zeros(64, dtype=torch.int64)
    at = 5  # scan_1d_kernel: tile_base at 5, epoch at 6
    assert lookback.scan_1d_kernel.arg_names[at:at + 2] == ["tile_base", "epoch"]
    args = ((None, None, (ident,), (ident,)), (words, words, (words,), (words,)), words, 96, 3, 0, 1, 3, 1)
    renewal = replay.StatusRenewal(state, 3, (torch.int32,), 1, 0, at)
    relaunch = replay.Relaunch(compiled, 3, torch.device("cuda", 0), args, (), renewal)
    fast = replay.FastScan(relaunch, (96,), torch.int32, torch.device("cuda", 0), args[0][2], args[0][3])
    relaunch.torch = types.SimpleNamespace(_C=types.SimpleNamespace(_cuda_getCurrentRawStream=lambda index: 0,
                                                                _cuda_isCurrentStreamCapturing=lambda: False))
    x, out = torch.ones(96, dtype=torch.int32), torch.empty(96, dtype=torch.int32)
    state.tiles_issued = (1 << 31) - 4
    assert fast(x, out) is out and runs[-1][9 + at] == (1 << 31) - 4  # the kernel arguments start at 9
    assert state.tiles_issued == (1 << 31) - 1
    assert fast(x, out) is out and len(runs) == 2  # the last base that fits
    assert fast(x, out) is None and len(runs) == 2  # 2^31 + 2: the full path takes it


def test_seeded_replay_lays_out_each_calls_seed():
    """A seeded plan's replay passes this call's seed, laid out as the kernel reads it,
    where an unseeded one passes the identity it was planned with.  A fake compiled
    kernel on CPU tensors: no GPU needed."""
    import types

    runs = []
    compiled = types.SimpleNamespace(function=None, packed_metadata=None, run=lambda *a: runs.append(a))
    ident = torch.zeros(1, dtype=torch.int64)
    args = ((None, None, (ident,), None), (ident, ident, (ident,), (ident,)), ident, 96, 1, 0, 1, 1, 1)
    seed = job.SeedLayout(torch.int64, (3,), 3, 1, 1, torch.device("cpu"))
    relaunch = replay.Relaunch(compiled, 1, torch.device("cpu", 0), args, (), None)
    fast = replay.FastScan(relaunch, (3, 32), torch.int64, torch.device("cpu", 0), args[0][2], None, seed)
    relaunch.torch = types.SimpleNamespace(_C=types.SimpleNamespace(_cuda_getCurrentRawStream=lambda index: 0))
    x = torch.ones((3, 32), dtype=torch.int64)
    for init in (np.array([5, -7, 1 << 40]), np.int64(-3), torch.tensor([2, 4, 6], dtype=torch.int32)):
        assert fast(x, None, init) is not None
        seeds = runs[-1][9][3]  # the kernel arguments start at 9; the seeds are the fourth field tuple
        want = torch.as_tensor(np.array(np.broadcast_to(np.asarray(init), (3,)))).to(torch.int64).reshape(3, 1)
        assert len(seeds) == 1 and seeds[0].dtype == torch.int64 and torch.equal(seeds[0], want)


def test_backend_memos_are_registered():
    """Every memo of the Triton backend can be emptied through prefixscan.caches."""
    import prefixscan.backends.triton.aot  # noqa: F401 - imported on a GPU scan's first call
    from prefixscan.caches import registered_caches

    names = set(registered_caches())
    for name in ("runtime.launch.compiled", "engine.state.states", "engine.state.identities",
                 "device.combine.functions", "scan.reduce_then_scan.segmented", "scan.strategy_blocks.resident_blocks",
                 "scan.persistent.rings", "scan.persistent.grids", "aot.variants.specs", "aot.variants.triton_version",
                 "aot.capabilities", "aot.choices"):
        assert f"prefixscan.backends.triton.{name}" in names, name


def _not_specialized(kernel) -> set:
    """The names of ``kernel``'s ``do_not_specialize`` arguments (compiled or interpreted)."""
    names = getattr(kernel, "do_not_specialize", None)
    if names is None:  # the interpreter keeps the decorator's arguments
        names = getattr(kernel, "kwargs", {}).get("do_not_specialize")
    return {kernel.arg_names[i] if isinstance(i, int) else i for i in names or ()}


def test_specialized_ints_follow_each_kernel(rng):
    """A launch names as specialized exactly the top-level integer arguments its kernel
    specializes on (those not in its ``do_not_specialize``; the key adds the integers
    inside tuples itself): one more splits the compiled variants by
    a value the kernel does not depend on (the mask count once did, by length), one fewer
    would reuse a kernel compiled for another value.  Every primitive's launches."""
    n = 150
    x = to_device(random_data(rng, "int32", (n,)))
    mask = to_device(rng.random(n) < 0.5)
    with runtime.recording() as launches:
        ps.compact(x, mask, size=40, fill_value=3, backend="triton")
        ps.partition(x, mask, backend="triton")
        ps.segmented_scan(x, offsets=to_device(np.array([0, 17, 90])), backend="triton")
        ps.scan(x, "add", backend="triton")
        ps.scan(to_device(random_data(rng, "int32", (50, 3))), "max", axis=0, backend="triton")
        ps.scan(to_device(random_data(rng, "int32", (40, 5))), "add", axis=0, order=2, backend="triton")
        ps.linear_recurrence(to_device(rng.random((3, 40)).astype(np.float32)),
                             to_device(rng.random((3, 40)).astype(np.float32)), backend="triton")
        ps.delta_encode(x, order=9, backend="triton")
    kernels = set()
    for launch in launches:
        kernel = launch.kernel
        skipped = _not_specialized(kernel)
        expected = tuple(value for name, value in zip(kernel.arg_names, launch.args)
                         if type(value) is int and name not in skipped)
        name = getattr(kernel, "fn", kernel).__name__
        assert tuple(launch.specialized_ints) == expected, name
        kernels.add(name)
    assert {"select_kernel", "fill_tail_kernel", "count_kernel", "segmented_kernel", "scan_1d_kernel",
            "recurrence_kernel", "delta_encode_kernel"} <= kernels, kernels



@pytest.mark.gpu
@pytest.mark.slow
@pytest.mark.skipif(not CUDA, reason="needs a CUDA device")
def test_a_reverse_scan_of_2_to_the_31_elements():
    """A reverse scan of a lane whose length 16 divides takes the aligned variant (the
    length passed as M / 16) below 2^31 elements and not at 2^31, where M / 16 would go
    as a 32-bit argument and M * 16 wrap in the kernel."""
    small = torch.ones(4096, dtype=torch.int8, device="cuda")
    assert torch.equal(ps.scan(small, reverse=True)[-32:].cpu(), torch.arange(32, 0, -1, dtype=torch.int8))
    n = 1 << 31
    x = torch.ones(n, dtype=torch.int8, device="cuda")
    got = ps.scan(x, reverse=True)
    assert [int(got[i]) for i in (n - 1, n - 16, n - 300, 0)] == [1, 16, 300 - 256, 0]  # wraps like int8

def _scan_variants(seen) -> set:
    """The compiled variants (launch keys) of the 1-D scan kernel among ``seen``."""
    return {runtime.launch_key(launch, torch.Tensor) for launch in seen if launch.kernel is lookback.scan_1d_kernel}


def test_a_stream_of_lengths_compiles_few_variants(rng):
    """Forward scans of one lane compile one variant for every multi-tile length and one
    per power of four for single tiles, whatever the lengths' divisibility by 16 (the
    length used to be specialized: twice the variants); reverse scans and several lanes,
    whose addresses depend on the length, keep its divisibility in the variant.  Every
    result checked against NumPy."""
    from prefixscan.backends.triton.planning import planner, tiles

    def run(lengths, rows=1, reverse=False):
        with runtime.recording() as seen, planner.override(tiles.TileConfig(256, 4, 4)):
            for n in lengths:
                x = random_data(rng, "int32", (rows, n))
                got = ps.cumsum(to_device(x), axis=-1, reverse=reverse, backend="triton").cpu().numpy()
                want = np.flip(np.cumsum(np.flip(x, -1), -1), -1) if reverse else np.cumsum(x, -1)
                np.testing.assert_array_equal(got, want)
        return _scan_variants(seen)

    multi = (257, 300, 320, 1000, 1024, 1999)  # 320 and 1024 are multiples of 16
    assert len(run(multi)) == 1
    assert len(run((65, 100, 111, 160, 203, 256))) == 1  # one single tile of 256
    assert len(run((17, 30, 48, 64))) == 1  # of 64
    assert len(run((300, 320), reverse=True)) == 2
    assert len(run((300, 320), rows=3)) == 2
    assert [tiles.single_tile_block(n, 2048) for n in (1, 16, 17, 64, 65, 1024, 1025, 5000)] == \
        [16, 16, 64, 64, 256, 1024, 2048, 2048]


def test_a_replay_writes_only_into_an_out_disjoint_from_x():
    """replay_output: a contiguous, 16-byte aligned out that shares no byte with x, or a
    new tensor; None (the full path, which reads a copy of x) for an out that overlaps x
    (in place, ahead of it, behind it, by one element), one not contiguous or misaligned."""
    buffer = torch.zeros(64, dtype=torch.int64)  # (CPU tensors: the test is about addresses)

    def output(x, out):
        return replay.replay_output(torch, x, out, tuple(x.shape), x.dtype, x.device)

    x = buffer[:16]
    for out, ok in ((buffer[16:32], True), (buffer[32:48], True), (None, True), (x, False), (buffer[2:18], False),
                    (buffer[14:30], False), (buffer[1:17], False), (buffer[17:33], False),
                    (buffer[16:48:2], False)):
        got = output(x, out)
        if not ok:
            assert got is None, out
        elif out is None:
            assert got is not None and got.shape == x.shape and got.data_ptr() != x.data_ptr()
        else:
            assert got is out
    assert output(buffer[2:18], buffer[:16]) is None  # x ahead of out
    assert output(buffer[1:17], buffer[32:48]) is None  # x misaligned
    assert output(buffer[:32:2], buffer[32:48]) is None  # x not contiguous
    narrow = torch.zeros(64, dtype=torch.int32)  # an out of another dtype: its own extent counts
    assert output(narrow[:16], narrow[16:32]) is not None and output(narrow[:16], narrow[12:28]) is None


def test_a_reservation_holds_its_stream_until_its_launch_is_counted():
    """Launches of several threads on one stream: the second reservation waits for the
    first block to end, and gets the tile base past the first launch's tiles (a base
    reserved before an earlier-enqueued launch would leave its tiles waiting forever)."""
    import threading

    device = torch.device("cpu")
    stream = 1 << 40  # a stream of this test's own
    first = status.single_pass(device, stream, 8, 8, (torch.int32,), 1)
    order = []

    def other():
        with status.single_pass(device, stream, 8, 8, (torch.int32,), 1) as reserved:
            order.append(("second", reserved.tile_base))

    worker = threading.Thread(target=other)
    try:
        with first as reserved:
            order.append(("first", reserved.tile_base))
            state = reserved.state
            worker.start()
            worker.join(0.2)
            assert worker.is_alive()  # waiting for this block
            probe = threading.Thread(target=lambda: order.append(("free", state.lock.acquire(blocking=False))))
            probe.start()
            probe.join()
        worker.join(5)
        assert not worker.is_alive()
        assert order == [("first", 0), ("free", False), ("second", 8)]
        with status.single_pass(device, stream, 8, 8, (torch.int32,), 1) as reserved:  # not held after them
            assert reserved.tile_base == 16
    finally:
        status._states.pop((device, stream), None)


@pytest.mark.gpu
@pytest.mark.skipif(not CUDA, reason="needs a CUDA device")
@pytest.mark.parametrize("dtype", ["int16", "int64"])  # Triton's compiled replay, the shipped kernels' relaunch
def test_threads_scanning_on_one_stream(dtype):
    """Four threads on the default stream, planned and seeded multi-tile scans at once:
    each result bit for bit torch's (no hang, no tile base shared between launches)."""
    import threading

    dt = getattr(torch, dtype)
    n = 1_000_003
    xs = [torch.randint(-50, 50, (n,), dtype=dt, device="cuda") for _ in range(4)]
    expect = [torch.cumsum(x, 0, dtype=dt) for x in xs]
    seeded = [torch.cumsum(x, 0, dtype=dt) + 3 for x in xs]
    s = ps.make_scan()
    outs = [torch.empty_like(x) for x in xs]
    s(xs[0], out=outs[0])
    got = [[] for _ in xs]

    def work(i):
        for _ in range(40):
            s(xs[i], out=outs[i])
            got[i].append(ps.scan(xs[i], init=3))

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not any(t.is_alive() for t in threads)
    torch.cuda.synchronize()
    for i in range(4):
        assert torch.equal(outs[i], expect[i]), i
        assert all(torch.equal(g, seeded[i]) for g in got[i]), i


def test_a_reservation_is_released_by_its_count_or_its_cancel():
    """renew holds the state's lock; issued counts the tiles, cancel counts nothing, and
    launch_failed starts the count again, each releasing it (another thread may take it)."""
    import threading

    state = status.DeviceState(torch.device("cpu"))

    def free() -> bool:
        got = []

        def take():
            got.append(state.lock.acquire(blocking=False))
            if got[0]:
                state.lock.release()

        probe = threading.Thread(target=take)
        probe.start()
        probe.join()
        return got[0]

    for finish, expected in ((lambda: state.issued(8), 8), (state.cancel, 8), (state.launch_failed, 0)):
        assert state.renew(8, 8, (torch.int32,), 1) is not None
        assert not free()
        finish()
        assert free() and state.tiles_issued == expected, expected
    assert state.renew(8, 8, (torch.int32,), 1, limit=4) is None and free()  # nothing reserved
