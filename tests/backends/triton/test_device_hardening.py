"""The Triton backend under what a GPU program does around it: CUDA graphs, several
streams and threads, tight memory, and lengths past 2^31 in every strategy.

These run on a CUDA device only (marker ``gpu``): the interpreter has no streams,
graphs or allocator to speak of.  Results are compared bitwise with torch's own
integer cumsum (an independent implementation), so a race or a stale status word
shows as a mismatch, not as a tolerance question.
"""

from __future__ import annotations

import threading

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

import prefixscan as ps  # noqa: E402
from prefixscan.backends.triton.planning.registry import STRATEGY_NAMES  # noqa: E402

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")]


def wrapped_cumsum(x, dim=0):
    """torch's cumsum in int64, wrapped back to x's integer type (what our scan keeps)."""
    return torch.cumsum(x, dim, dtype=torch.int64).to(x.dtype)


def random_ints(n, dtype, seed, high=1000):
    gen = torch.Generator(device="cuda").manual_seed(seed)
    return torch.randint(-high, high, (n,), dtype=dtype, device="cuda", generator=gen)


@pytest.mark.parametrize("dtype", [torch.int32, torch.int64])
def test_graph_replay_scans_new_data(dtype):
    """A captured look-back scan replays right: epochs and tile ids are frozen into the
    graph, so a capture takes one-shot status buffers that each replay zeroes."""
    n = (1 << 20) + 3  # many tiles: the look-back runs
    x = random_ints(n, dtype, 1)
    y = torch.empty_like(x)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):  # warm up on the capture's stream: compiled kernel and the replay fast path
            ps.scan(x, out=y)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=side):
        ps.scan(x, out=y)
    for seed in (2, 3, 4):
        x.copy_(random_ints(n, dtype, seed))
        y.fill_(-7)
        graph.replay()
        torch.cuda.synchronize()
        assert torch.equal(y, wrapped_cumsum(x))
    # eager scans on the same stream after the replays still see their own epochs
    with torch.cuda.stream(side):
        z = ps.scan(x)
    torch.cuda.synchronize()
    assert torch.equal(z, wrapped_cumsum(x))


def test_graph_replay_of_exclusive_reverse_and_axis0():
    m, k = 200_003, 3
    x = random_ints(m * k, torch.int32, 5).view(m, k)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        ps.scan(x, axis=0, inclusive=False, reverse=True)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=side):
        y = ps.scan(x, axis=0, inclusive=False, reverse=True)
    for seed in (6, 7):
        x.copy_(random_ints(m * k, torch.int32, seed).view(m, k))
        graph.replay()
        torch.cuda.synchronize()
        flipped = wrapped_cumsum(x.flip(0), 0).flip(0)
        assert torch.equal(y, flipped - x)


def test_two_streams_at_once():
    """Scans in flight on two streams keep separate status buffers."""
    n = (1 << 22) + 11
    streams = [torch.cuda.Stream(), torch.cuda.Stream()]
    data = [random_ints(n, torch.int32, 10 + i) for i in range(2)]
    outs = [torch.empty_like(d) for d in data]
    for s in streams:
        s.wait_stream(torch.cuda.current_stream())
    for _ in range(20):
        for s, d, o in zip(streams, data, outs):
            with torch.cuda.stream(s):
                ps.scan(d, out=o)
    torch.cuda.synchronize()
    for d, o in zip(data, outs):
        assert torch.equal(o, wrapped_cumsum(d))


def test_threads_with_their_own_streams():
    n = (1 << 21) + 5
    data = [random_ints(n, torch.int64, 20 + i) for i in range(4)]
    expected = [wrapped_cumsum(d) for d in data]
    torch.cuda.synchronize()
    failures = []

    def work(i):
        stream = torch.cuda.Stream()
        with torch.cuda.stream(stream):
            for _ in range(10):
                got = ps.scan(data[i])
                stream.synchronize()
                if not torch.equal(got, expected[i]):
                    failures.append(i)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures


def test_memory_is_order_tiles_with_out_and_in_place():
    """With ``out=`` (and in place) a scan allocates O(tiles), never O(n)."""
    n = 1 << 26
    x = random_ints(n, torch.int32, 30)
    y = torch.empty_like(x)
    ps.scan(x, out=y)  # status buffers and kernels exist now
    ps.scan(x, out=x)
    torch.cuda.synchronize()
    for out in (y, x):
        before = torch.cuda.memory_allocated()
        torch.cuda.reset_peak_memory_stats()
        ps.scan(x, out=out)
        torch.cuda.synchronize()
        assert torch.cuda.max_memory_allocated() - before < n * 4 // 64


def test_out_of_memory_raises_and_the_process_goes_on():
    """A result that does not fit raises torch.OutOfMemoryError; later scans still run."""
    free, _ = torch.cuda.mem_get_info()
    n = free // 8 * 3 // 4  # x fits, x's int64 result next to it does not
    x = torch.ones(n, dtype=torch.int32, device="cuda")
    try:
        with pytest.raises(torch.OutOfMemoryError):
            ps.scan(x, dtype="int64")
    finally:
        del x
        torch.cuda.empty_cache()
    small = random_ints(10_001, torch.int32, 31)
    assert torch.equal(ps.scan(small), wrapped_cumsum(small))  # the process goes on


CASES = [  # (dtype, order, tuple_size): int8 keeps four 2^31 arrays in memory at once
    (torch.int8, 1, 1), (torch.int8, 2, 1), (torch.int8, 1, 3), (torch.int32, 1, 1)]


@pytest.mark.slow
@pytest.mark.parametrize("strategy", STRATEGY_NAMES)
def test_past_int32_after_small_scans_in_every_strategy(strategy):
    """Small scans first (kernels compiled with 32-bit lengths), then more than 2^31
    elements with the same strategy: every family (plain, orders, tuples) of it."""
    n = (1 << 31) + 9
    for dtype, order, tuple_size in CASES:
        small = random_ints(3 * 100_003, dtype, 40, high=3)
        try:
            got = ps.scan(small, order=order, tuple_size=tuple_size, strategy=strategy)
        except ValueError as error:  # a strategy that does not run this family says so
            assert "strategy" in str(error)
            continue
        assert torch.equal(got, reference(small, order, tuple_size))
        big = random_ints(n - n % tuple_size, dtype, 41, high=3)
        got = ps.scan(big, order=order, tuple_size=tuple_size, strategy=strategy)
        assert torch.equal(got, reference(big, order, tuple_size)), (dtype, order, tuple_size)
        del big, got
        torch.cuda.empty_cache()


def reference(x, order, tuple_size):
    """torch's cumsum accumulating in x's type (int8 via int32, wrapped back):
    no int64 copy of a 2^31-element array."""
    y = x.view(-1, tuple_size).t().contiguous()  # torch scans along narrow columns one thread per column
    for _ in range(order):
        y = torch.cumsum(y, 1, dtype=torch.int32).to(x.dtype)
    return y.t().reshape(-1)
