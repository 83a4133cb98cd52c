"""The Triton backend's kernels, on whatever runs them here.

Without a GPU (CI) the kernels run in Triton's interpreter on CPU torch tensors
with tiny tiles (see ``tiles.INTERPRETER_TILE``), so multi-tile look-back, window
moves and tile boundaries are exercised on small inputs.  On the device machine
the same tests run compiled on CUDA tensors with larger sizes; tests marked
``gpu`` need a CUDA device.

References: the plain-loop reference of prefixscan.testing for the built-in
operators (the CPU backend for the device's sizes), the CPU backend (itself
checked against the reference in test_scan.py) for user monoids.  Outputs are
poisoned before every run so unwritten elements show.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

CUDA = torch.cuda.is_available()  # without it conftest.py set TRITON_INTERPRET=1

import triton  # noqa: E402
import triton.language as tl  # noqa: E402

import prefixscan as ps  # noqa: E402
from prefixscan.testing import (  # noqa: E402
    assert_scan_equal,
    reference_delta_encode,
    reference_scan,
    tolerance_for,
)
from prefixscan.backends.triton import blocked, blocked_lookback, blocked_rules, blocks, gluon_interpreter, lookback  # noqa: E402
from prefixscan.backends.triton import replay, runtime, scan, status  # noqa: E402
from prefixscan.backends.triton.policy import routing  # noqa: E402
from prefixscan._environment import interpreter_mode  # noqa: E402

if not CUDA and not interpreter_mode():
    pytest.skip("no CUDA device and TRITON_INTERPRET=0", allow_module_level=True)

DEVICE = "cuda" if CUDA else "cpu"
pytestmark = pytest.mark.interpreter if not CUDA else pytest.mark.gpu


@pytest.fixture
def kernels_run():
    """The kernels launched during the test, in order (runtime.recording)."""
    with runtime.recording() as launches:
        yield _Kernels(launches)


class _Kernels:
    """A view of recorded launches as their kernels: ``== [kernel, ...]`` and ``clear()``."""

    def __init__(self, launches):
        self.launches = launches

    def clear(self):
        self.launches.clear()

    def __len__(self):
        return len(self.launches)

    def __eq__(self, kernels):
        return [launch.kernel for launch in self.launches] == list(kernels)

    def __repr__(self):
        return repr([launch.kernel for launch in self.launches])

# Interpreter tiles hold 32 elements (window 4); device tiles several thousand.
SIZES = [1, 2, 31, 32, 33, 97, 130, 257] if not CUDA else [1, 2, 31, 1024, 4097, 8191, 8192, 8193, 65537,
                                                          1_000_003, (1 << 22) + 1]


def first_nonzero(a, b):
    return ps.where(a != 0, a, b)


def last_nonzero(a, b):
    return ps.where(b != 0, b, a)


FIRST_NONZERO = ps.Monoid(first_nonzero, 0, name="first_nonzero")
LAST_NONZERO = ps.Monoid(last_nonzero, 0, name="last_nonzero")

INT_RANGES = {"int8": (-100, 100), "uint8": (0, 255), "int16": (-1000, 1000), "uint16": (0, 60000),
              "int32": (-(1 << 30), 1 << 30), "uint32": (0, 1 << 32), "int64": (-(1 << 62), 1 << 62)}


def random_data(rng, dtype: str, shape, sparse: bool = False) -> np.ndarray:
    if dtype == "bool":
        x = rng.random(shape) < 0.5
    elif dtype in INT_RANGES:
        lo, hi = INT_RANGES[dtype]
        x = rng.integers(lo, hi, size=shape, dtype=np.int64 if dtype != "uint32" else np.uint64).astype(dtype)
        x[x == 0] = 1
    elif dtype in ("float16", "bfloat16"):
        # Mean zero: a drifting sum would cross float16's largest value at an index
        # that depends on the float32 grouping (both sides round to inf there).
        x = rng.standard_normal(shape).astype(dtype)
    else:
        x = (rng.standard_normal(shape) + 0.5).astype(dtype)
    if sparse:
        x[rng.random(shape) < 0.7] = 0
    return x


def to_device(x: np.ndarray):
    return torch.from_numpy(np.array(x, copy=True)).to(DEVICE)


def _reference(x, op, **kw):
    """The plain-loop reference of prefixscan.testing; for the device's sizes (millions
    of elements: the loops would take minutes) the CPU backend, itself checked against
    the reference in test_scan.py, with floats accumulated in float64 and rounded once
    as the reference does."""
    if not CUDA or x.size <= 100_000:
        return reference_scan(x, op, **kw)
    if x.dtype.kind == "f" and kw.get("dtype") is None:
        return ps.scan(x, op, backend="cpu", dtype=np.float64, **kw).astype(x.dtype)
    return ps.scan(x, op, backend="cpu", **kw)


CASES = [
    ("add", "int32"), ("add", "int64"), ("add", "float32"), ("add", "float64"), ("add", "uint8"),
    ("add", "float16"), ("mul", "int32"), ("max", "float32"), ("min", "int16"), ("max", "uint32"),
    ("xor", "int64"), ("or", "uint16"), ("and", "int8"), ("max", "bool"),
]


@pytest.mark.parametrize("op,dtype", CASES, ids=[f"{o}-{d}" for o, d in CASES])
def test_builtin_ops(op, dtype):
    rng = np.random.default_rng(abs(hash((op, dtype))) % 2**32)
    for n, inclusive, reverse in itertools.product(SIZES, (True, False), (False, True)):
        if CUDA and n > 70000 and not (inclusive and not reverse):
            continue  # the large sizes once per direction set keep compile time down
        x = random_data(rng, dtype, n)
        if op == "mul":
            x = np.where(rng.random(n) < 0.5, 1, -1).astype(dtype)
        kw = dict(inclusive=inclusive, reverse=reverse, init=None if n % 2 else (3 if dtype != "bool" else True))
        expected = _reference(x, op, **kw)
        out = to_device(np.zeros(n, dtype)).fill_(7 if dtype != "bool" else True)
        if dtype.startswith("float"):
            out.fill_(float("nan"))
        result = ps.scan(to_device(x), op, out=out, backend="triton", **kw)
        assert result is out
        assert_scan_equal(out, expected, err_msg=f"n={n} {kw}", **tolerance_for(x, op, **kw))


@pytest.mark.parametrize("monoid", [FIRST_NONZERO, LAST_NONZERO], ids=lambda m: m.name)
@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_non_commutative(monoid, dtype):
    """Order matters: a wrong combination order picks the wrong nonzero."""
    rng = np.random.default_rng(5)
    for n, inclusive, reverse in itertools.product(SIZES[:6] if CUDA else SIZES, (True, False), (False, True)):
        x = random_data(rng, dtype, n, sparse=True)
        expected = ps.scan(x, monoid, inclusive=inclusive, reverse=reverse, backend="cpu", algorithm="serial")
        got = ps.scan(to_device(x), monoid, inclusive=inclusive, reverse=reverse, backend="triton")
        np.testing.assert_array_equal(got.cpu().numpy(), expected)


LAYOUTS = [((37, 3), 0, 1), ((70, 4), 0, 1), ((5, 66), 1, 1), ((4, 9, 6), 1, 1), ((120,), None, 4),
           ((3, 60), 1, 5), ((130, 2), 0, 1), ((6, 40), 1, 8), ((3, 5, 70), -1, 1), ((65, 33), 0, 1)]


@pytest.mark.parametrize("shape,axis,tuple_size", LAYOUTS, ids=[str(c) for c in LAYOUTS])
def test_axes_and_tuples(shape, axis, tuple_size):
    rng = np.random.default_rng(len(shape) * 100 + (axis or 0))
    if CUDA:
        shape = tuple(d * 97 if i == (axis or 0) else d for i, d in enumerate(shape))
    for reverse, inclusive in itertools.product((False, True), (True, False)):
        x = random_data(rng, "int32", shape)
        expected = ps.scan(x, axis=axis, tuple_size=tuple_size, reverse=reverse, inclusive=inclusive, init=2,
                           backend="cpu")
        got = ps.scan(to_device(x), axis=axis, tuple_size=tuple_size, reverse=reverse, inclusive=inclusive,
                      init=2, backend="triton")
        np.testing.assert_array_equal(got.cpu().numpy(), expected)


# The (B, M, K) layout on 1-D tiles with masked columns (lookback.scan_cols_kernel),
# forced for every K and type here; the dispatch uses it where it measured faster.
COLUMN_CASES = [("int32", 2, True, False), ("int32", 3, False, True), ("float32", 3, True, True),
                ("int64", 5, False, False), ("uint8", 6, True, True), ("int16", 7, False, True)]


@pytest.mark.parametrize("dtype,k,inclusive,reverse", COLUMN_CASES, ids=[f"{c[0]}-K{c[1]}-incl{c[2]}-rev{c[3]}"
                                                                         for c in COLUMN_CASES])
def test_masked_columns_kernel(kernels_run, dtype, k, inclusive, reverse):
    """Two lanes with a per-lane, per-column seed; tiles that cut rows (tile sizes are
    powers of two, rows are K elements)."""
    rng = np.random.default_rng(k)
    x = random_data(rng, dtype, (2, 23 * (4099 if CUDA else 1), k))
    init = random_data(rng, dtype, (2, k))
    expected = ps.scan(x, axis=1, init=init, inclusive=inclusive, reverse=reverse, backend="cpu")
    with routing(columns_max=8, columns_itemsizes=(1, 2, 4, 8)):
        got = ps.scan(to_device(x), axis=1, init=to_device(init), inclusive=inclusive, reverse=reverse, backend="triton")
    assert kernels_run == [lookback.scan_cols_kernel]
    if np.dtype(dtype).kind == "f":
        np.testing.assert_allclose(got.cpu().numpy(), expected, rtol=1e-5, atol=1e-3)
    else:
        np.testing.assert_array_equal(got.cpu().numpy(), expected)


def test_masked_columns_dispatch(kernels_run):
    """Masked columns where they measured faster (one 4-byte field, K <= RoutingPolicy.columns_max,
    order 1); the 2-D kernel otherwise."""
    rng = np.random.default_rng(3)
    for shape, dtype, kw, kernel in (((50, 2), "float32", dict(axis=0), lookback.scan_cols_kernel),
                                     ((50, 2), "int32", dict(axis=0, op="max"), lookback.scan_cols_kernel),
                                     ((150,), "float32", dict(tuple_size=3), lookback.scan_cols_kernel),
                                     ((50, 4), "float32", dict(axis=0), lookback.scan_2d_kernel),
                                     ((50, 2), "int64", dict(axis=0, op="max"), lookback.scan_2d_kernel),
                                     ((50, 4), "int32", dict(axis=0), blocked.orders_kernel),
                                     ((50, 16), "int32", dict(axis=0), blocked.orders_kernel),
                                     ((50, 2), "int64", dict(axis=0), blocked.orders_kernel),
                                     ((3, 50, 2), "int32", dict(axis=1), lookback.scan_cols_kernel),
                                     ((100,), "int32", dict(tuple_size=2, order=2), blocked.orders_kernel),
                                     ((100,), "float32", dict(tuple_size=2, order=2), lookback.scan_2d_kernel),
                                     ((99,), "int32", dict(tuple_size=3, order=2), blocked.orders_kernel),
                                     ((50, 32), "int32", dict(axis=0), lookback.scan_2d_kernel),
                                     ((50, 8), "int64", dict(axis=0), blocked.orders_kernel),
                                     ((50, 16), "int64", dict(axis=0), lookback.scan_2d_kernel)):
        kernels_run.clear()
        x = random_data(rng, dtype, shape)
        op = kw.pop("op", "add")
        got = ps.scan(to_device(x), op, backend="triton", **kw)
        assert kernels_run == [kernel], (shape, dtype, kw)
        np.testing.assert_allclose(got.cpu().numpy(), ps.scan(x, op, backend="cpu", **kw), rtol=1e-5)


def test_per_lane_init_and_order():
    rng = np.random.default_rng(11)
    x = random_data(rng, "int64", (4, 150))
    init = rng.integers(-5, 5, 4)
    for order in (1, 2, 3, 8):
        expected = ps.scan(x, axis=1, init=init, order=order, backend="cpu")
        got = ps.scan(to_device(x), axis=1, init=to_device(init), order=order, backend="triton")
        np.testing.assert_array_equal(got.cpu().numpy(), expected)


def test_in_place_and_types():
    rng = np.random.default_rng(12)
    x = random_data(rng, "int32", 1000)
    xt = to_device(x)
    result = ps.scan(xt, out=xt, backend="triton")
    assert result is xt
    np.testing.assert_array_equal(xt.cpu().numpy(), np.cumsum(x, dtype=np.int32))
    got = ps.cumsum(to_device(x), backend="triton")
    assert isinstance(got, torch.Tensor) and got.dtype == torch.int64  # NumPy's promotion
    np.testing.assert_array_equal(got.cpu().numpy(), np.cumsum(x))


def test_half_precision_accumulates_in_float32():
    x = np.full(3000, 0.1, dtype=np.float16)
    got = ps.scan(to_device(x), backend="triton")
    assert got.dtype == torch.float16
    expected = np.cumsum(x.astype(np.float32)).astype(np.float16)
    np.testing.assert_allclose(got.cpu().numpy().astype(np.float32), expected.astype(np.float32), rtol=1e-3)
    bf = torch.full((3000,), 0.1, dtype=torch.bfloat16, device=DEVICE)
    got = ps.scan(bf, backend="triton")
    assert got.dtype == torch.bfloat16
    assert abs(float(got[-1]) - 300.0) < 2.0  # bf16 accumulation would stall near 32


def test_empty_and_single():
    assert ps.scan(torch.zeros(0, dtype=torch.int32, device=DEVICE), backend="triton").shape == (0,)
    got = ps.scan(torch.tensor([5], dtype=torch.int32, device=DEVICE), inclusive=False, init=2, backend="triton")
    assert got.cpu().tolist() == [2]


@pytest.mark.gpu
@pytest.mark.skipif(not CUDA, reason="needs a CUDA device")
@pytest.mark.parametrize("dtype", ["int32", "int64"])  # one and two status words per tile
def test_repeated_large_runs_bitwise_identical(dtype):
    """A race shows as a result that changes between runs."""
    rng = np.random.default_rng(13)
    x = to_device(random_data(rng, dtype, (1 << 26) + 3))
    expected = np.cumsum(x.cpu().numpy(), dtype=dtype)
    first = ps.scan(x)
    for _ in range(5):
        again = ps.scan(x)
        assert torch.equal(first, again)
    np.testing.assert_array_equal(first.cpu().numpy(), expected)


@pytest.mark.gpu
@pytest.mark.slow
@pytest.mark.skipif(not CUDA, reason="needs a CUDA device")
def test_a_length_past_int32_after_a_small_one():
    """A kernel variant compiled for a 32-bit length is not relaunched with a 64-bit one
    (compiled.run raised OverflowError: the variant key did not hold the width).  One
    forced tile, so that both scans take the same constexprs."""
    from prefixscan.backends.triton import planner, tiles

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
    expected = x.view(-1, tuple_size).t()
    for _ in range(order):
        expected = expected.cumsum(1, dtype=torch.int64)
    expected = expected.t().reshape(-1).to(torch.int32)
    assert torch.equal(got, expected)


@triton.jit
def _publish_then_read(status_ptr, a_ptr, b_ptr, state_ptr, a_out, b_out, epoch, N: tl.constexpr,
                       PUBLISH: tl.constexpr, WORDS: tl.constexpr):
    """Entry i gets fields (a[i], b[i]) published with state 2 (when PUBLISH), then
    entries 0..N-1 are read back as a look-back window reads them."""
    i = tl.arange(0, N)
    ident = (tl.load(a_ptr), tl.load(b_ptr))
    if PUBLISH:
        for k in tl.static_range(N):
            value = (tl.load(a_ptr + k), tl.load(b_ptr + k))
            blocks._publish(status_ptr, status_ptr, (a_ptr, b_ptr), k, value, 2, epoch, WORDS)
    state, value = blocks._load_window(status_ptr, status_ptr, (a_ptr, b_ptr), (a_ptr, b_ptr), i, i >= 0,
                                        epoch, ident, WORDS)
    tl.store(state_ptr + i, state)
    tl.store(a_out + i, value[0])
    tl.store(b_out + i, value[1])


@pytest.mark.parametrize("a_dtype,b_dtype", [(torch.int64, torch.float32), (torch.float64, torch.int16)])
def test_status_words_round_trip_and_torn_reads(a_dtype, b_dtype):
    """Tagged status words (blocks: WORDS): every field comes back bit for bit, and
    an entry whose words carry different tags (a publication half seen) reads as
    not ready."""
    kernel = _publish_then_read
    words = sum(2 if t.itemsize == 8 else 1 for t in (a_dtype, b_dtype))
    n, epoch = 8, 5
    a = (torch.arange(n, device=DEVICE, dtype=torch.float64) * -1.5e9 + 3).to(a_dtype)
    b = (torch.arange(n, device=DEVICE, dtype=torch.float64) * 7 - 20).to(b_dtype)
    status = torch.zeros(n * words, dtype=torch.int64, device=DEVICE)
    state = torch.full((n,), -1, dtype=torch.int32, device=DEVICE)
    a_out, b_out = torch.full_like(a, 99), torch.full_like(b, 99)
    kernel[(1,)](status, a, b, state, a_out, b_out, epoch, N=n, PUBLISH=True, WORDS=words)
    assert state.cpu().tolist() == [2] * n
    assert torch.equal(a_out, a) and torch.equal(b_out, b)
    # Tear entry 3 (its last word from an aggregate publication) and age entry 5
    # (every word from the previous call): both must read as state 0.
    torn = status.clone()
    torn[3 * words + words - 1] = ((epoch * 4 + 1) << 32) | (int(torn[3 * words + words - 1]) & 0xFFFFFFFF)
    torn[5 * words:6 * words] = torn[5 * words:6 * words] - (4 << 32)
    kernel[(1,)](torn, a, b, state, a_out, b_out, epoch, N=n, PUBLISH=False, WORDS=words)
    assert state.cpu().tolist() == [2, 2, 2, 0, 2, 0, 2, 2]


@pytest.mark.parametrize("dtype", [torch.uint8, torch.uint16, torch.uint32, torch.int64])
def test_delta_round_trip_on_tensors(dtype):
    """Unsigned 16/32-bit tensors have no subtraction on CUDA in torch: the encoder
    works on the signed view, which wraps to the same bits."""
    x = torch.randint(0, 250, (3, 210), dtype=torch.int64).to(dtype).to(DEVICE)
    d = ps.delta_encode(x, order=3, tuple_size=5)
    assert d.dtype == dtype and d.device == x.device
    ref = ps.delta_encode(x.cpu().numpy(), order=3, tuple_size=5)
    np.testing.assert_array_equal(d.cpu().numpy(), ref)
    assert torch.equal(ps.delta_decode(d, order=3, tuple_size=5), x)


def matmul2(p, q):
    """2x2 matrix product p @ q, row-major fields (a, b, c, d): not commutative."""
    a1, b1, c1, d1 = p
    a2, b2, c2, d2 = q
    return a1 * a2 + b1 * c2, a1 * b2 + b1 * d2, c1 * a2 + d1 * c2, c1 * b2 + d1 * d2


MATMUL2 = ps.Monoid(matmul2, (1, 0, 0, 1), name="matmul2")


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("inclusive", [True, False])
def test_struct_monoids(reverse, inclusive):
    """Tuples of arrays: the affine map (2 fields) and 2x2 integer matrices (4 fields,
    exact, wrapping), against the CPU backend."""
    rng = np.random.default_rng(21)
    n = 131 if not CUDA else 100_003
    a, b = rng.integers(-3, 4, n).astype(np.int64), rng.integers(-9, 10, n).astype(np.int64)
    expected = ps.scan((a, b), ps.AFFINE, inclusive=inclusive, reverse=reverse, backend="cpu")
    got = ps.scan((to_device(a), to_device(b)), ps.AFFINE, inclusive=inclusive, reverse=reverse, backend="triton")
    for g, e in zip(got, expected):
        np.testing.assert_array_equal(g.cpu().numpy(), e)
    m = tuple(rng.integers(-2, 3, n).astype(np.int32) for _ in range(4))
    expected = ps.scan(m, MATMUL2, inclusive=inclusive, reverse=reverse, backend="cpu")
    got = ps.scan(tuple(to_device(f) for f in m), MATMUL2, inclusive=inclusive, reverse=reverse,
                  backend="triton")
    for g, e in zip(got, expected):
        np.testing.assert_array_equal(g.cpu().numpy(), e)


def test_linear_recurrence_along_axes():
    rng = np.random.default_rng(22)
    a = (0.5 + 0.5 * rng.random((3, 70, 4))).astype(np.float32)
    b = rng.standard_normal((3, 70, 4)).astype(np.float32)
    for axis, reverse in ((1, False), (1, True), (-1, False), (0, True)):
        expected = ps.linear_recurrence(a, b, axis=axis, reverse=reverse)
        monoid = ps.algorithms.recurrence.AFFINE_BACKWARD if reverse else ps.AFFINE
        coef, got = ps.scan((to_device(a), to_device(b)), monoid, axis=axis, reverse=reverse, backend="triton")
        np.testing.assert_allclose(got.cpu().numpy(), expected, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("shape,axis", [((1000,), None), ((300, 4), 0)])
def test_deterministic_chained_scan(shape, axis):
    """deterministic=True: the chained hand-off gives the same integers as the
    look-back, and floats that are bitwise identical from run to run."""
    rng = np.random.default_rng(23)
    if CUDA:
        shape = tuple(d * 1000 for d in shape[:1]) + shape[1:]
    xi = to_device(random_data(rng, "int64", shape))
    np.testing.assert_array_equal(ps.scan(xi, axis=axis, deterministic=True, backend="triton").cpu().numpy(),
                                  ps.scan(xi.cpu().numpy(), axis=axis))
    xf = to_device(random_data(rng, "float32", shape))
    first = ps.scan(xf, axis=axis, deterministic=True, backend="triton")
    for _ in range(3 if CUDA else 1):
        assert torch.equal(first, ps.scan(xf, axis=axis, deterministic=True, backend="triton"))
    x = xf.cpu().numpy()
    assert_scan_equal(first, _reference(x, "add", axis=axis), **tolerance_for(x, "add", axis=axis))


# Orders 1..8 x tuple sizes 1..32 (one pass on the GPU: SAM's per-order look-back).
# Lengths are odd numbers of tuples spanning at least three tiles (the
# interpreter's tiles hold 32 elements: 8 rows of up to 4 interleaved streams).


def _tuples_per_lane(tuple_size: int) -> int:
    if CUDA:
        return 100_003
    return 67 if tuple_size == 1 else (35 if tuple_size == 2 else 19)


@pytest.mark.parametrize("order", range(1, 9))
def test_order_tuple_grid_sum(order):
    """Every tuple size 1..32 at this order: int32 sums, wrap-around included."""
    rng = np.random.default_rng(order)
    for tuple_size in range(1, 33):
        n = tuple_size * _tuples_per_lane(tuple_size)
        x = random_data(rng, "int32", n)
        out = to_device(np.full(n, -77, np.int32))  # poison: unwritten elements show
        ps.scan(to_device(x), order=order, tuple_size=tuple_size, out=out, backend="triton")
        np.testing.assert_array_equal(out.cpu().numpy(), _reference(x, "add", order=order, tuple_size=tuple_size),
                                      err_msg=f"order={order} tuple_size={tuple_size}")


ORDER_VARIANTS = [("int64", "add", True, False, None), ("int32", "add", False, False, None),
                  ("int64", "add", True, True, 5), ("int32", "max", True, False, None),
                  ("int64", "xor", False, True, None), ("float32", "add", True, False, None),
                  ("int32", "add", False, True, 2), ("int32", "min", False, False, -3)]
ORDER_TUPLE_CASES = [(q, s) for q in range(1, 9) for s in (1, 2, 3, 5, 8, 32)]


@pytest.mark.parametrize("order,tuple_size", ORDER_TUPLE_CASES, ids=[f"q{q}-s{s}" for q, s in ORDER_TUPLE_CASES])
def test_order_tuple_variants(order, tuple_size):
    """Other dtypes, operators, exclusive, reverse and init over the grid, one variant per
    point in rotation (every variant meets every order and several tuple sizes)."""
    dtype, op, inclusive, reverse, init = ORDER_VARIANTS[(order + tuple_size) % len(ORDER_VARIANTS)]
    rng = np.random.default_rng(order * 100 + tuple_size)
    n = tuple_size * _tuples_per_lane(tuple_size)
    x = random_data(rng, dtype, n) if dtype != "float32" else rng.integers(-3, 4, n).astype(dtype)
    kw = dict(order=order, tuple_size=tuple_size, inclusive=inclusive, reverse=reverse, init=init)
    expected = _reference(x, op, **kw)
    out = to_device(np.full(n, np.nan if dtype == "float32" else -77, dtype))
    ps.scan(to_device(x), op, out=out, backend="triton", **kw)
    label = f"{dtype} {op} inclusive={inclusive} reverse={reverse} init={init}"
    if dtype == "float32":  # orders of small integers outgrow 2^24: compare to the summed terms
        assert_scan_equal(out, expected, err_msg=label, **tolerance_for(x, op, **kw))
    else:
        np.testing.assert_array_equal(out.cpu().numpy(), expected, err_msg=label)


# The one-look-back kernel of integer sums (blocked.orders_kernel): orders 2..8 and
# power-of-two tuple sizes, int32 and int64, lengths of many tiles that are not a
# multiple of the tile, outputs poisoned, the kernel that ran asserted.  With
# prefixes=False tiles publish aggregates only, so every look-back folds windows of
# them (binomial shifts of whole windows) down to tile 0.
BLOCKED_CASES = ([(q, s) for q, s in itertools.product((1, 2, 3, 5, 8), (1, 2, 3, 4, 5, 7, 8, 16, 17, 32))
                  if q > 1 or s > 1]
                 if CUDA else  # the interpreter's cost grows with q x s: each of the axes, and mixed
                 [(2, 1), (3, 1), (5, 1), (8, 1), (1, 2), (1, 4), (1, 32), (2, 2), (3, 8), (8, 4), (1, 5), (3, 3),
                  (2, 7), (1, 3), (1, 7), (1, 17)])


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
    rng = np.random.default_rng(order * 64 + tuple_size)
    tile = _blocked_tiles(np.dtype(dtype).itemsize, tuple_size, order)
    # Many tiles, and a few (the interpreter is slow: a look-back over aggregates only
    # walks windows of two entries back to tile 0, quadratic in the tile count).
    tiles = (7, 2) if not CUDA else (1031, 2)
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
    n = (5 * _blocked_tiles(np.dtype(dtype).itemsize, tuple_size, order) - 2 * tuple_size) // tuple_size * tuple_size
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

    def applies(op="add", dtype="int32", B=1, K=1, has_init=False, **kw):
        kw = dict(dict(axis=None, inclusive=True, reverse=False, order=2, tuple_size=1, dtype=None, backend=None,
                       algorithm=None, deterministic=False, strategy=None), **kw)
        return blocked_rules.blocked_applies(make_config(op, **kw), [getattr(torch, dtype)], B, K, has_init)

    with routing(blocked_orders="always"):
        assert applies() and applies(dtype="int64", order=8) and applies(order=1, K=32) and applies(order=5, K=4)
        assert applies(deterministic=True)  # integer sums are exact in any order
        assert not applies(order=1)  # plain scans keep the tuned kernels
        assert applies(K=3) and not applies(K=64) and not applies(B=2)
        assert not applies(dtype="float32") and not applies(dtype="int16") and not applies(op="max")
        assert not applies(inclusive=False) and not applies(reverse=True) and not applies(has_init=True)
        assert not applies(strategy="chained") and applies(strategy="decoupled_lookback")
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


CAPPED_CASES = [("int64", 1, 1), ("float64", 1, 1), ("int32", 2, 1), ("int32", 5, 1), ("int32", 1, 3),
                ("int32", 1, 4), ("int64", 1, 4)]


@pytest.mark.parametrize("occupancy", [0, 4, 6])
@pytest.mark.parametrize("dtype,order,tuple_size", CAPPED_CASES)
def test_register_caps_give_the_same_results(dtype, order, tuple_size, occupancy):
    """Tiles forced to a register cap (TileConfig.occupancy -> maxnreg: ptxas spills
    what does not fit) compute what the uncapped kernels do: the plain 1-D kernel,
    order 2 with one look-back, the loop over orders, masked columns (K = 3) and the
    2-D kernel, against the reference, poisoned outputs.  In the interpreter the
    cap is ignored (no registers) and the logic runs the same."""
    from prefixscan.backends.triton import planner, tiles

    rng = np.random.default_rng(order * 10 + tuple_size + occupancy)
    n = tuple_size * _tuples_per_lane(tuple_size)
    x = random_data(rng, dtype, n) if dtype != "float64" else rng.integers(-9, 10, n).astype(dtype)
    out = to_device(np.full(n, np.nan if dtype == "float64" else -77, dtype))
    config = tiles.TileConfig(block=2048 if CUDA else 32, num_warps=4 if CUDA else 1, window=16,
                               occupancy=occupancy)
    planner.set_override(config)
    try:
        ps.scan(to_device(x), order=order, tuple_size=tuple_size, out=out, backend="triton")
    finally:
        planner.set_override(None)
    np.testing.assert_array_equal(out.cpu().numpy(), _reference(x, "add", order=order, tuple_size=tuple_size),
                                  err_msg=f"cap {tiles.register_cap(config)}")


@pytest.mark.parametrize("order", [2, 3])
def test_order_non_commutative(order):
    """Order q of a non-commutative struct monoid (2x2 integer matrices) in one pass."""
    rng = np.random.default_rng(40 + order)
    n = 131 if not CUDA else 100_003
    m = tuple(rng.integers(-2, 3, n).astype(np.int32) for _ in range(4))
    for reverse, inclusive in ((False, True), (True, True), (False, False)):
        expected = ps.scan(m, MATMUL2, order=order, reverse=reverse, inclusive=inclusive, backend="cpu")
        got = ps.scan(tuple(to_device(f) for f in m), MATMUL2, order=order, reverse=reverse,
                      inclusive=inclusive, backend="triton")
        for g, e in zip(got, expected):
            np.testing.assert_array_equal(g.cpu().numpy(), e)


def test_order_is_one_launch(kernels_run):
    """Order q and tuple size s read and write once: a single kernel launch."""
    x = to_device(random_data(np.random.default_rng(5), "int32", 5 * 97))
    ps.scan(x, order=8, tuple_size=5, backend="triton")
    ps.scan(x, order=3, inclusive=False, backend="triton")
    assert len(kernels_run) == 2


# delta_encode / delta_decode on the GPU backend: one kernel per call.
DELTA_CASES = [("int32", 1, 1), ("int32", 3, 5), ("int64", 8, 2), ("uint8", 2, 3), ("int16", 5, 32),
               ("float32", 2, 1), ("float64", 4, 7), ("uint32", 8, 1)]


@pytest.mark.parametrize("dtype,order,tuple_size", DELTA_CASES, ids=[f"{d}-q{q}-s{s}" for d, q, s in DELTA_CASES])
def test_delta_coding(dtype, order, tuple_size):
    """Integers: encode against the plain-loop reference (wrap-around included) and decode
    back exactly.  Floats: bitwise equal to the CPU backend's pass-by-pass differences
    (the kernel does the passes' own float subtractions; the reference rounds once)."""
    rng = np.random.default_rng(order * 10 + tuple_size)
    m = 41 if not CUDA else 200_003  # odd, several blocks
    x = random_data(rng, dtype, tuple_size * m)
    enc = ps.delta_encode(to_device(x), order, tuple_size, backend="triton")
    integer = dtype[0] in "iu"
    expected = reference_delta_encode(x, order, tuple_size) if integer and not CUDA else \
        ps.delta_encode(x, order, tuple_size, backend="cpu")
    np.testing.assert_array_equal(enc.cpu().numpy(), expected)
    if integer:
        dec = ps.delta_decode(enc, order, tuple_size, backend="triton")
        np.testing.assert_array_equal(dec.cpu().numpy(), x)


def test_delta_axis_and_one_launch(monkeypatch):
    """Axis 0 of a 3-D array (interleaved lanes) and a single launch per call."""
    from prefixscan.backends.triton import delta

    launches = []
    kernel = delta.delta_encode_kernel
    monkeypatch.setattr(delta, "delta_encode_kernel", type("Spy", (), {
        "__getitem__": lambda self, grid: (launches.append(grid), kernel[grid])[1]})())
    rng = np.random.default_rng(3)
    x = random_data(rng, "int32", (24, 3, 5))
    for axis, q, s in ((0, 3, 2), (1, 2, 3), (-1, 4, 5)):
        got = ps.delta_encode(to_device(x), q, s, axis=axis, backend="triton")
        np.testing.assert_array_equal(got.cpu().numpy(), reference_delta_encode(x, q, s, axis=axis))
    assert len(launches) == 3


@pytest.mark.skipif(not CUDA, reason="the replay path exists for compiled kernels only")
def test_replay_follows_a_tile_override():
    """A planned replay must not keep launching its old tile once an override (the
    tuner's, a sweep's) is set or lifted: it is planned again."""
    from prefixscan.backends.triton import planner, tiles

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
        fast = s._plans[next(k for k in s._plans if k[-1] is None)][2]
        assert isinstance(fast, replay.FastScan) and fast is not planned and fast.grid == -(-n // 2048)
    finally:
        planner.set_override(None)
    s(x)
    fast = s._plans[next(k for k in s._plans if k[-1] is None)][2]
    assert fast is not planned and fast.grid == planned.grid  # planned again, with the table's tile


@pytest.mark.skipif(not CUDA, reason="the replay path exists for compiled kernels only")
def test_single_tile_replay(monkeypatch):
    """Repeated small scans of one signature go straight to the compiled kernel; tensors
    the replay cannot take (strided, in place) take the full path, with the same results."""
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
    at = 11  # scan_1d_kernel: tile_base at 11, epoch at 12
    assert lookback.scan_1d_kernel.arg_names[at:at + 2] == ["tile_base", "epoch"]
    args = (None, None, (ident,), (ident,), words, words, (words,), (words,), words, 96, 3, 0, 1, 3, 1)
    renewal = replay.StatusRenewal(state, 3, (torch.int32,), 1, 0, at)
    fast = replay.FastScan(compiled, 3, (96,), torch.int32, torch.device("cuda", 0), args, (), renewal)
    fast.torch = types.SimpleNamespace(_C=types.SimpleNamespace(_cuda_getCurrentRawStream=lambda index: 0))
    x, out = torch.ones(96, dtype=torch.int32), torch.empty(96, dtype=torch.int32)
    state.tiles_issued = (1 << 31) - 4
    assert fast(x, out) is out and runs[-1][9 + at] == (1 << 31) - 4  # the kernel arguments start at 9
    assert state.tiles_issued == (1 << 31) - 1
    assert fast(x, out) is out and len(runs) == 2  # the last base that fits
    assert fast(x, out) is None and len(runs) == 2  # 2^31 + 2: the full path takes it


def test_backend_memos_are_registered():
    """Every memo of the Triton backend can be emptied through prefixscan.caches."""
    from prefixscan.caches import registered_caches

    names = set(registered_caches())
    for name in ("runtime.compiled", "status.states", "status.identities", "combine.functions",
                 "reduce_then_scan.segmented", "strategy_blocks.resident_blocks", "persistent.rings",
                 "persistent.grids"):
        assert f"prefixscan.backends.triton.{name}" in names, name
