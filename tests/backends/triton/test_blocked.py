"""The one-look-back kernel of integer sums of orders and tuples (scan/orders.py,
orders_lookback.py, orders_rules.py): results, row chunks, status buffers,
binomial coefficients, the tile rules and when the kernel applies.

Device, sizes and data: device.py of this folder.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

# First: it skips this module where no Triton backend runs.
from .device import CUDA, DEVICE_MARK, random_data, to_device, torch

import triton.language as tl  # noqa: E402

import prefixscan as ps  # noqa: E402
from prefixscan.backends.triton.scan import (orders as blocked, orders_lookback as blocked_lookback,
                                             orders_rules as blocked_rules)  # noqa: E402
from prefixscan.backends.triton.device import gluon as gluon_interpreter  # noqa: E402
from prefixscan.backends.triton.engine import state as status  # noqa: E402
from prefixscan.backends.triton.planning.policy import routing  # noqa: E402

pytestmark = DEVICE_MARK


# The one-look-back kernel of integer sums (blocked.orders_kernel): orders 2..8 and
# power-of-two tuple sizes, int32 and int64, lengths of many tiles that are not a
# multiple of the tile, outputs poisoned, the kernel that ran asserted.  With
# prefixes=False tiles publish aggregates only, so every look-back folds windows of
# them (binomial shifts of whole windows) down to tile 0.
BLOCKED_CASES = ([(q, s) for q, s in itertools.product((1, 2, 3, 5, 8), (1, 2, 3, 4, 5, 7, 8, 16, 17, 32))
                  if q > 1 or s > 1]
                 if CUDA else  # the interpreter's cost grows with q x s: each of the axes, and mixed
                 [(2, 1), (3, 1), (5, 1), (8, 1), (1, 2), (1, 4), (1, 32), (2, 2), (3, 8), (8, 4), (1, 5), (3, 3),
                  (2, 7), (1, 3), (1, 7)])  # (1, 17): one case took minutes there; tests/api runs it


def _orders_expected(x: np.ndarray, order: int, tuple_size: int) -> np.ndarray:
    """Order ``order`` sums of each of ``tuple_size`` interleaved columns, wrapping in x's
    dtype like the kernel (NumPy's cumsum: the plain-loop reference is too slow for GPU sizes)."""
    expected = x.copy()
    for _ in range(order):
        for column in range(tuple_size):
            expected[column::tuple_size] = np.cumsum(expected[column::tuple_size], dtype=x.dtype)
    return expected


def _blocked_tiles(itemsize: int, tuple_size: int, order: int = 1) -> int:
    return blocked_rules.blocked_block(itemsize, tuple_size, not CUDA, order=order)[0]


@pytest.mark.parametrize("prefixes", [True, False], ids=["prefixes", "aggregates-only"])
@pytest.mark.parametrize("dtype", ["int32", "int64"])
@pytest.mark.parametrize("order,tuple_size", BLOCKED_CASES, ids=[f"q{q}-s{s}" for q, s in BLOCKED_CASES])
def test_blocked_orders(order, tuple_size, dtype, prefixes, kernels_run):
    if not CUDA and (BLOCKED_CASES.index((order, tuple_size)) + (dtype == "int64")) % 2:
        pytest.skip("interpreted: each case in one dtype, the dtypes alternating over the cases")
    rng = np.random.default_rng(order * 64 + tuple_size)
    tile = _blocked_tiles(np.dtype(dtype).itemsize, tuple_size, order)
    # Many tiles, and a few (the interpreter is slow: a look-back over aggregates only
    # walks windows of two entries back to tile 0, quadratic in the tile count).
    tiles = (5, 2) if not CUDA else (1031, 2)
    for count in tiles:
        # The last tile is partial; the library asks for whole tuples (flat tiles of tuple
        # sizes that are not powers of two hold no whole number of them: tuples cross tiles).
        n = (count * tile - tuple_size * 3) // tuple_size * tuple_size
        x = random_data(rng, dtype, n)
        out = to_device(np.full(n, -77, dtype))
        kernels_run.clear()
        with routing(blocked_orders="always", blocked_prefixes=prefixes):
            ps.scan(to_device(x), order=order, tuple_size=tuple_size, out=out, backend="triton")
        assert kernels_run == [blocked.orders_kernel]
        np.testing.assert_array_equal(out.cpu().numpy(), _orders_expected(x, order, tuple_size), err_msg=f"n={n}")


@pytest.mark.parametrize("chunks", [2, 4])
@pytest.mark.parametrize("dtype", ["int32", "int64"])
@pytest.mark.parametrize("order,tuple_size", [(3, 1), (8, 1), (2, 2), (2, 3)])
def test_blocked_row_chunks(order, tuple_size, dtype, chunks, monkeypatch):
    """A thread's row scanned in chunks (the order-r ends of one chunk seed the next) gives
    the unchunked results; rows of 2 x chunks tuples (the interpreter's) or the default."""
    itemsize = np.dtype(dtype).itemsize
    columns = blocked_rules.blocked_block(itemsize, tuple_size, not CUDA)[1]
    if not CUDA:
        monkeypatch.setattr(blocked_rules, "blocked_tile", lambda *a: (2 * chunks * columns, 1))
    assert blocked_rules.blocked_block(itemsize, tuple_size, not CUDA, order=order)[2] // columns % chunks == 0
    monkeypatch.setattr(blocked_rules, "blocked_chunks", lambda *a: chunks)
    rng = np.random.default_rng(order * 64 + tuple_size + chunks)
    n = 5 * _blocked_tiles(itemsize, tuple_size, order) - tuple_size * 2
    x = random_data(rng, dtype, n)
    out = to_device(np.full(n, -77, dtype))
    with routing(blocked_orders="always"):
        ps.scan(to_device(x), order=order, tuple_size=tuple_size, out=out, backend="triton")
    np.testing.assert_array_equal(out.cpu().numpy(), _orders_expected(x, order, tuple_size))


def test_blocked_single_tile_then_many():
    """A one-tile scan takes no ticket from the tile counter; the next scan's tile ids
    must still start at 0 (they once started at -1 and wrote before the status buffer)."""
    rng = np.random.default_rng(8)
    for n in (5, 3 * _blocked_tiles(4, 1) + 1, 1, 2 * _blocked_tiles(4, 1) + 7):
        x = random_data(rng, "int32", n)
        got = ps.scan(to_device(x), order=3, backend="triton").cpu().numpy()
        expected = np.cumsum(np.cumsum(np.cumsum(x, dtype=np.int32), dtype=np.int32), dtype=np.int32)
        np.testing.assert_array_equal(got, expected, err_msg=f"n={n}")


@pytest.mark.parametrize("order,tuple_size,dtype", [(8, 17, "int32"), (1, 5, "int64"), (3, 5, "int32"), (2, 1, "int64")])
def test_blocked_status_stays_in_its_buffer(order, tuple_size, dtype, monkeypatch):
    """The status words a launch reserves hold every word the kernel writes: the buffer
    is handed over exactly as large as reserved, with a poisoned guard behind it that
    must stay poisoned (entries spaced wider than reserved once wrote tags into the
    output that happened to lie behind the buffer)."""
    import torch

    guard = 4096
    poison = -0x0123456789ABCDE
    guards = []

    def begin(self, entries, accs, words):
        self.epoch += 1
        whole = torch.full((entries * words + guard,), 0, dtype=torch.int64, device=self.device)
        whole[entries * words:] = poison
        guards.append(whole[entries * words:])
        if self.counter is None:
            self.counter = torch.zeros(1, dtype=torch.int64, device=self.device)
        status = whole[:entries * words]
        return status, status, (status,), (status,)

    monkeypatch.setattr(status.DeviceState, "begin", begin)
    rng = np.random.default_rng(order * 64 + tuple_size)
    # the interpreter: four tiles (order 8 of 17 fields took 25 s with five; with three, entries
    # spaced wider than reserved would overrun the (1, 5, int64) buffer by only 2 of 40 words)
    tiles = 5 if CUDA else 4
    n = (tiles * _blocked_tiles(np.dtype(dtype).itemsize, tuple_size, order) - 2 * tuple_size) // tuple_size * tuple_size
    x = random_data(rng, dtype, n)
    with routing(blocked_orders="always"):
        out = ps.scan(to_device(x), order=order, tuple_size=tuple_size, backend="triton")
    np.testing.assert_array_equal(out.cpu().numpy(), _orders_expected(x, order, tuple_size))
    assert len(guards) == 1
    assert bool((guards[0] == poison).all()), "the kernel wrote past the status words it reserved"


gl = gluon_interpreter.gl  # Gluon's language, or its stand-in under the interpreter


@gluon_interpreter.jit
def _coefficients_kernel(l_ptr, out_ptr, Q: tl.constexpr, N: tl.constexpr):
    layout: tl.constexpr = gl.BlockedLayout([1], [32], [4], [0])
    i = gl.arange(0, N, layout=layout)
    coefs = blocked_lookback._coefficients(gl.load(l_ptr + i), Q)
    for k in gl.static_range(Q):
        gl.store(out_ptr + k * N + i, coefs[k])


def test_blocked_coefficients():
    """The binomial shift's coefficients C(L + k - 1, k) mod 2^64 against Python's exact
    integers, for lengths around powers of two and up to 2^62."""
    import math

    n = 128
    rng = np.random.default_rng(5)
    lengths = np.concatenate([np.arange(0, 40), [1 << p for p in range(6, 62, 3)],
                              [(1 << p) - 1 for p in range(6, 62, 3)], [(1 << p) + 3 for p in range(6, 62, 3)],
                              rng.integers(0, 1 << 62, n)])[:n].astype(np.int64)
    out = to_device(np.zeros(8 * n, np.int64))
    _coefficients_kernel[(1,)](to_device(lengths), out, Q=8, N=n, num_warps=4)
    got = out.cpu().numpy().view(np.uint64).reshape(8, n)
    for k in range(8):
        want = [(1 if k == 0 else 0) if int(L) == 0 else math.comb(int(L) + k - 1, k) % (1 << 64) for L in lengths]
        np.testing.assert_array_equal(got[k], np.array(want, dtype=np.uint64), err_msg=f"k={k}")


def test_blocked_strided():
    """Flat tiles for order 1 with tuple sizes that are not powers of two, elsewhere rows
    of whole (padded) tuples; a flat tile holds 32 x warps x R elements, tuples crossing
    its ends."""
    rules = blocked_rules
    assert rules.blocked_strided(1, 5) and rules.blocked_strided(1, 3) and rules.blocked_strided(1, 17)
    assert not rules.blocked_strided(2, 5) and not rules.blocked_strided(1, 8) and not rules.blocked_strided(1, 2)
    assert rules.blocked_block(4, 5, False, order=1) == (128 * 128, 8, 128, 4)
    assert rules.blocked_block(4, 5, False, order=2) == (128 * 8 * 5, 8, 64, 4)
    with routing(blocked_strided=False):
        assert not rules.blocked_strided(1, 5) and rules.blocked_block(4, 5, False, order=1) == (128 * 8 * 5, 8, 64, 4)


def test_blocked_register_cap():
    """Register caps of the one-look-back kernel: padded int32 tuples and flat tiles."""
    assert blocked_rules.blocked_register_cap(4, 3, 7) == 128 and blocked_rules.blocked_register_cap(8, 3, 7) is None
    assert blocked_rules.blocked_register_cap(4, 1, 5) == 168 and blocked_rules.blocked_register_cap(8, 1, 5) == 168
    assert blocked_rules.blocked_register_cap(4, 8, 1) is None and blocked_rules.blocked_register_cap(8, 1, 8) is None
    assert blocked_rules.blocked_register_cap(4, 1, 16) == 128 and blocked_rules.blocked_register_cap(8, 1, 16) is None


def test_blocked_tile_rows():
    """High orders take rows twice as long (tuple sizes 1 and 2), in two chunks, and so do
    int64 rows of 8 columns or more; the interpreter keeps short rows."""
    assert blocked_rules.blocked_tile(4, 1, False, 8) == (128, 4) and blocked_rules.blocked_tile(4, 1, False, 2) == (64, 4)
    assert blocked_rules.blocked_tile(8, 1, False, 5) == (64, 4) and blocked_rules.blocked_tile(8, 1, False, 2) == (32, 4)
    assert blocked_rules.blocked_tile(4, 2, False, 8) == (128, 4) and blocked_rules.blocked_tile(4, 4, False, 8) == (64, 4)
    assert blocked_rules.blocked_tile(8, 8, False, 1) == (64, 4) and blocked_rules.blocked_tile(8, 4, False, 1) == (32, 4)
    assert blocked_rules.blocked_tile(4, 8, False, 1) == (64, 4) and blocked_rules.blocked_tile(8, 8, True, 1) == (8, 1)
    assert blocked_rules.blocked_tile(4, 1, True, 8) == (4, 1)
    assert blocked_rules.blocked_tile(4, 8, False, 1, True) == (128, 4) and blocked_rules.blocked_tile(8, 8, False, 1, True) == (64, 4)
    assert blocked_rules.blocked_tile(8, 8, True, 1, True) == (8, 1)
    assert blocked_rules.blocked_chunks(4, 128) == 2 and blocked_rules.blocked_chunks(8, 64) == 2
    assert blocked_rules.blocked_chunks(4, 64) == 1 and blocked_rules.blocked_chunks(8, 32) == 1


def test_blocked_applies():
    """Which scans take the one-look-back kernel: where it can ("always"), and by default
    where it measured faster; the rest the general kernels."""
    from prefixscan._normalize import make_config

    def applies(op="add", dtype="int32", B=1, K=1, has_init=False, x_itemsize=None, **kw):
        kw = dict(dict(axis=None, inclusive=True, reverse=False, order=2, tuple_size=1, dtype=None, backend=None,
                       algorithm=None, deterministic=False, strategy=None), **kw)
        return blocked_rules.blocked_applies(make_config(op, **kw), [getattr(torch, dtype)], B, K, has_init, x_itemsize)

    with routing(blocked_orders="always"):
        assert applies() and applies(dtype="int64", order=8) and applies(order=1, K=32) and applies(order=5, K=4)
        assert applies(deterministic=True)  # integer sums are exact in any order
        assert not applies(order=1)  # plain scans keep the tuned kernels
        assert applies(K=3) and not applies(K=64) and not applies(B=2)
        assert not applies(dtype="float32") and not applies(dtype="int16") and not applies(op="max")
        assert not applies(inclusive=False) and not applies(reverse=True) and not applies(has_init=True)
        assert not applies(strategy="chained") and applies(strategy="decoupled_lookback")
        # int8 inputs of an int64 sum: 2-byte shared-memory copies, which do not compile for sm_90
        assert not applies(dtype="int64", x_itemsize=1) and applies(dtype="int64", x_itemsize=2)
        assert applies(x_itemsize=1) and applies(dtype="int64", x_itemsize=4)
    with routing(blocked_orders="measured"):
        assert applies(order=2, K=2) and applies(dtype="int64", order=2) and applies(order=3) and applies(order=8)
        assert applies(order=1, K=8) and applies(order=1, K=4) and applies(order=1, K=16)
        assert applies(dtype="int64", order=1, K=2) and applies(dtype="int64", order=1, K=4)
        assert applies(order=1, K=2) and applies(dtype="int64", order=5, K=4) and applies(order=5, K=8)
        assert not applies(order=2) and not applies(dtype="int64", order=5, K=8)
        assert applies(dtype="int64", order=1, K=8) and not applies(dtype="int64", order=1, K=16)
        assert not applies(order=1, K=32)
        assert applies(K=3, order=5) and applies(order=1, K=5) and applies(dtype="int64", order=1, K=5)
        assert not applies(order=1, K=17) and not applies(dtype="int64", order=1, K=12)
    with routing(blocked_orders="never"):
        assert not applies(order=5)


@pytest.mark.gpu
@pytest.mark.slow
@pytest.mark.skipif(not CUDA, reason="needs a CUDA device")
@pytest.mark.parametrize("order,tuple_size", [(2, 1), (1, 5)])
def test_blocked_beyond_int32_indexing(order, tuple_size):
    """More than 2^31 elements through blocked.orders_kernel (a flat tile for tuple size 5):
    64-bit tile starts and status offsets; a torch reference, wrapping like int32."""
    n = ((1 << 31) // tuple_size + 1001) * tuple_size
    x = torch.randint(-50, 50, (n,), dtype=torch.int32, device="cuda")
    got = ps.scan(x, order=order, tuple_size=tuple_size)
    expected = x.view(-1, tuple_size).t().contiguous()  # rows: torch scans long rows fast, narrow columns slowly
    for _ in range(order):
        expected = expected.cumsum(1, dtype=torch.int32)  # wraps like the kernel; no 16 GiB int64 copy
    expected = expected.t().reshape(-1)
    assert torch.equal(got, expected)
