"""prefixscan.scan on every backend present, one test body for all of them.

The ``backend`` fixture of tests/conftest.py runs each test on NumPy arrays with
the CPU backend, on CPU torch tensors with the Triton backend in its interpreter
(no GPU), and on CUDA tensors with the compiled kernels (GPU).  Results are
compared with the plain-loop reference of prefixscan.testing by its tolerance
rule; where a test passes ``out=`` the output is poisoned first, so that
elements a kernel fails to write show.

Sizes depend on the backend: the interpreter's tiles hold 32 elements (window 4),
so lengths around 32..257 already take several tiles and look-back windows; a
GPU's tiles hold thousands, so it gets lengths around those and past a million.
The interpreter runs a launch in about 0.1 s, so its cases stay few.  What only
the Triton kernels have (which kernel runs, tiles, status words, replay) is
tested in tests/backends/triton/.
"""

from __future__ import annotations

import importlib.util
import itertools

import numpy as np
import pytest

import prefixscan as ps
from prefixscan.testing import (
    assert_scan_equal,
    matmul2,
    poisoned,
    random_array,
    random_init,
    reference_scan,
    sparse_array,
    tolerance_for,
)

#: Lengths per backend: 32-element tiles in the interpreter (one partial tile, one
#: whole tile, a partial second tile, many tiles with partial last ones: the
#: interpreter takes about 0.1 s a launch), thousands on a GPU.
SIZES = {"cpu": [1, 2, 31, 32, 33, 97, 130, 257],
         "triton-interpreter": [1, 32, 33, 130, 257],
         "cuda": [1, 2, 31, 1024, 4097, 8191, 8192, 8193, 65537, 1_000_003, (1 << 22) + 1]}


def sizes(backend) -> list[int]:
    return SIZES.get(backend.name, SIZES["cpu"])


def on_gpu(backend) -> bool:
    return backend.name == "cuda"


def interpreted(backend) -> bool:
    return backend.name == "triton-interpreter"


def tuples_per_lane(backend, tuple_size: int) -> int:
    """Odd numbers of tuples spanning at least three tiles (the interpreter's tiles
    hold 32 elements: 8 rows of up to 4 interleaved streams)."""
    if on_gpu(backend):
        return 100_003
    return 67 if tuple_size == 1 else (35 if tuple_size == 2 else 19)


def reference(x, op, **kw):
    """The plain-loop reference; for a GPU's sizes (the loops would take minutes) the
    CPU backend, itself checked against the reference in tests/api/test_scan.py, with
    floats accumulated in float64 and rounded once as the reference does."""
    size = x[0].size if isinstance(x, tuple) else x.size
    if size <= 100_000:
        return reference_scan(x, op, **kw)
    if not isinstance(x, tuple) and x.dtype.kind == "f" and kw.get("dtype") is None:
        return ps.scan(x, op, backend="cpu", dtype=np.float64, **kw).astype(x.dtype)
    return ps.scan(x, op, backend="cpu", **kw)


def check(backend, x, op="add", **kw):
    """Scan NumPy data ``x`` on ``backend`` (NumPy arrays among ``kw`` moved there too)
    and compare with the reference by the tolerance rule; the result comes back in
    the input's array type and the input is left unchanged."""
    xb = backend.asarray(x)
    on = {k: backend.asarray(v) if isinstance(v, np.ndarray) and v.ndim else v for k, v in kw.items()}
    got = ps.scan(xb, op, backend=backend.backend, **on)
    assert type(got) is type(xb), type(got)
    assert_scan_equal(got, reference(x, op, **kw), err_msg=f"op={op} {kw}", **tolerance_for(x, op, **kw))
    np.testing.assert_array_equal(backend.to_numpy(xb), x, err_msg="scan modified its input")
    return got


# ---------------------------------------------------------------------------
# Built-in operators across tile boundaries, every direction, outputs poisoned.

CASES = [
    ("add", "int32"), ("add", "int64"), ("add", "float32"), ("add", "float64"), ("add", "uint8"),
    ("add", "float16"), ("mul", "int32"), ("max", "float32"), ("min", "int16"), ("max", "uint32"),
    ("xor", "int64"), ("or", "uint16"), ("and", "int8"), ("max", "bool"),
]


@pytest.mark.parametrize("op,dtype", CASES, ids=[f"{o}-{d}" for o, d in CASES])
def test_builtin_ops_across_tiles(backend, rng, op, dtype):
    for n, inclusive, reverse in itertools.product(sizes(backend), (True, False), (False, True)):
        if on_gpu(backend) and n > 70000 and not (inclusive and not reverse):
            continue  # the large sizes once per direction set keep compile time down
        x = random_array(rng, dtype, n, op)
        kw = dict(inclusive=inclusive, reverse=reverse, init=None if n % 2 else (3 if dtype != "bool" else True))
        out = backend.asarray(poisoned(n, dtype))
        result = ps.scan(backend.asarray(x), op, out=out, backend=backend.backend, **kw)
        assert result is out
        assert_scan_equal(out, reference(x, op, **kw), err_msg=f"n={n} {kw}", **tolerance_for(x, op, **kw))


def first_nonzero(a, b):
    return ps.where(a != 0, a, b)


def last_nonzero(a, b):
    return ps.where(b != 0, b, a)


FIRST_NONZERO = ps.Monoid(first_nonzero, 0, name="first_nonzero")
LAST_NONZERO = ps.Monoid(last_nonzero, 0, name="last_nonzero")


@pytest.mark.parametrize("monoid", [FIRST_NONZERO, LAST_NONZERO], ids=lambda m: m.name)
@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_non_commutative(backend, rng, monoid, dtype):
    """Order matters: a wrong combination order picks the wrong nonzero."""
    lengths = sizes(backend)[:6] if on_gpu(backend) else sizes(backend)
    for n, inclusive, reverse in itertools.product(lengths, (True, False), (False, True)):
        x = sparse_array(rng, dtype, n, zeros=0.7)
        got = ps.scan(backend.asarray(x), monoid, inclusive=inclusive, reverse=reverse, backend=backend.backend)
        assert_scan_equal(got, reference_scan(x, monoid, inclusive=inclusive, reverse=reverse),
                          err_msg=f"n={n} inclusive={inclusive} reverse={reverse}")


LAYOUTS = [((37, 3), 0, 1), ((70, 4), 0, 1), ((5, 66), 1, 1), ((4, 9, 6), 1, 1), ((120,), None, 4),
           ((3, 60), 1, 5), ((130, 2), 0, 1), ((6, 40), 1, 8), ((3, 5, 70), -1, 1), ((65, 33), 0, 1)]


@pytest.mark.parametrize("shape,axis,tuple_size", LAYOUTS, ids=[str(c) for c in LAYOUTS])
def test_axes_and_tuples(backend, rng, shape, axis, tuple_size):
    if on_gpu(backend):
        shape = tuple(d * 97 if i == (axis or 0) else d for i, d in enumerate(shape))
    directions = list(itertools.product((False, True), (True, False)))
    if interpreted(backend):  # each direction and each of inclusive / exclusive once
        directions = directions[::3] if sum(shape) % 2 else directions[1:3]
    for reverse, inclusive in directions:
        x = random_array(rng, "int32", shape)
        check(backend, x, axis=axis, tuple_size=tuple_size, reverse=reverse, inclusive=inclusive, init=2)


# ---------------------------------------------------------------------------
# Init.

def test_init_semantics_spelled_out(backend):
    def scan(a, *args, **kw):
        return backend.to_numpy(ps.scan(backend.asarray(a), *args, backend=backend.backend, **kw))

    x = np.array([1, 2, 3, 4], dtype=np.int64)
    np.testing.assert_array_equal(scan(x, init=10), [11, 13, 16, 20])
    np.testing.assert_array_equal(scan(x, init=10, inclusive=False), [10, 11, 13, 16])
    np.testing.assert_array_equal(scan(x, init=10, reverse=True), [20, 19, 17, 14])
    np.testing.assert_array_equal(scan(x, init=10, reverse=True, inclusive=False), [19, 17, 14, 10])
    np.testing.assert_array_equal(scan(x, inclusive=False), [0, 1, 3, 6])
    np.testing.assert_array_equal(scan(x, inclusive=False, reverse=True), [9, 7, 4, 0])
    np.testing.assert_array_equal(scan(x, "max", inclusive=False), [np.iinfo(np.int64).min, 1, 2, 3])
    np.testing.assert_array_equal(scan(x.astype(np.float32), "min", inclusive=False, reverse=True),
                                  [2.0, 3.0, 4.0, np.inf])
    # One element: exclusive gives the seed alone; no element: nothing.
    np.testing.assert_array_equal(scan(np.array([5], np.int32), inclusive=False, init=2), [2])
    assert scan(np.zeros(0, np.int32)).shape == (0,)


def test_init_per_lane_and_stream(backend, rng):
    x = random_array(rng, "int32", (4, 12, 3), "add")
    # Lane shape for axis=1 is (4, 3); with tuple_size=2 the seed shape is (4, 3, 2).
    for init in [np.int32(5), rng.integers(-9, 9, (4, 3)).astype(np.int32)[..., None] * np.ones(2, np.int32),
                 rng.integers(-9, 9, (4, 3, 2)).astype(np.int32), rng.integers(-9, 9, (1, 3, 2)).astype(np.int32),
                 rng.integers(-9, 9, (2,)).astype(np.int32)]:
        check(backend, x, "add", axis=1, tuple_size=2, init=init)
        if not interpreted(backend) or init.ndim == 3:  # interpreted: about 0.1 s a launch
            check(backend, x, "add", axis=1, tuple_size=2, init=init, inclusive=False, reverse=True, order=2)
    check(backend, x, "add", axis=1, init=rng.integers(-9, 9, (4, 3)).astype(np.int32))
    check(backend, x, "add", axis=1, init=rng.integers(-9, 9, (3,)).astype(np.int32))
    check(backend, x, "add", axis=None, tuple_size=4, init=rng.integers(-9, 9, (4,)).astype(np.int32))
    # Per-lane seeds with orders, lanes of several tiles.
    x = random_array(rng, "int64", (4, 150), "add")
    init = rng.integers(-5, 5, 4)
    for order in (1, 2, 3, 8):
        check(backend, x, "add", axis=1, init=init, order=order)


# ---------------------------------------------------------------------------
# order x tuple_size.

ORDER_VARIANTS = [("int64", "add", True, False, None), ("int32", "add", False, False, None),
                  ("int64", "add", True, True, 5), ("int32", "max", True, False, None),
                  ("int64", "xor", False, True, None), ("float32", "add", True, False, None),
                  ("int32", "add", False, True, 2), ("int32", "min", False, False, -3)]
ORDER_TUPLE_CASES = [(q, s) for q in range(1, 9) for s in (1, 2, 3, 4, 5, 8, 16, 32)]


@pytest.mark.parametrize("order,tuple_size", ORDER_TUPLE_CASES, ids=[f"q{q}-s{s}" for q, s in ORDER_TUPLE_CASES])
def test_order_tuple_size(backend, rng, order, tuple_size):
    """Orders 1..8 x tuple sizes up to 32 (one pass on the GPU: SAM's per-order look-back).
    Dtypes, operators, exclusive, reverse and init over the grid, one variant per point
    in rotation (every variant meets every order and several tuple sizes), outputs
    poisoned; off the interpreter also three lanes with per-lane seeds."""
    dtype, op, inclusive, reverse, init = ORDER_VARIANTS[(order + tuple_size) % len(ORDER_VARIANTS)]
    n = tuple_size * tuples_per_lane(backend, tuple_size)
    x = random_array(rng, dtype, n, op) if dtype != "float32" else rng.integers(-3, 4, n).astype(dtype)
    kw = dict(order=order, tuple_size=tuple_size, inclusive=inclusive, reverse=reverse, init=init)
    out = backend.asarray(poisoned(n, dtype))
    ps.scan(backend.asarray(x), op, out=out, backend=backend.backend, **kw)
    # orders of small integers outgrow 2^24 in float32: compared to the summed terms
    assert_scan_equal(out, reference(x, op, **kw), err_msg=f"{dtype} {op} {kw}", **tolerance_for(x, op, **kw))
    if interpreted(backend):
        return
    n = 192 if 192 % tuple_size == 0 else 195  # whole tuples
    check(backend, random_array(rng, "int16", n, "add"), "add", order=order, tuple_size=tuple_size)
    op, dtype = [("xor", "uint32"), ("add", "int64"), ("max", "int8"), ("mul", "uint64")][(order + tuple_size) % 4]
    x = random_array(rng, dtype, (3, n), op)
    init = random_init(rng, dtype, (3, tuple_size) if tuple_size > 1 else (3,), op)
    check(backend, x, op, axis=1, order=order, tuple_size=tuple_size, inclusive=bool(order % 2),
          reverse=bool(tuple_size % 3 == 1), init=init)


@pytest.mark.parametrize("order", range(1, 9))
def test_order_tuple_grid_sum(backend, rng, order):
    """Every tuple size 1..32 at this order: int32 sums, wrap-around included.  The
    interpreter (about 0.1 s a launch, more with wide tuples) runs each tuple size at one
    order: sizes order, order + 8, order + 16 and order + 24."""
    for tuple_size in range(1, 33) if not interpreted(backend) else range(order, 33, 8):
        n = tuple_size * tuples_per_lane(backend, tuple_size)
        x = random_array(rng, "int32", n)
        out = backend.asarray(poisoned(n, "int32"))
        ps.scan(backend.asarray(x), order=order, tuple_size=tuple_size, out=out, backend=backend.backend)
        assert_scan_equal(out, reference(x, "add", order=order, tuple_size=tuple_size),
                          err_msg=f"order={order} tuple_size={tuple_size}")


# ---------------------------------------------------------------------------
# Struct monoids: the affine map (2 fields) and 2x2 integer matrices (4 fields,
# exact, wrapping), neither commutative.

MATMUL2 = ps.Monoid(matmul2, (1, 0, 0, 1), name="matmul2")


def struct_length(backend) -> int:
    return 100_003 if on_gpu(backend) else 131


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("inclusive", [True, False])
def test_struct_monoids(backend, rng, reverse, inclusive):
    n = struct_length(backend)
    kw = dict(inclusive=inclusive, reverse=reverse)
    a, b = rng.integers(-3, 4, n).astype(np.int64), rng.integers(-9, 10, n).astype(np.int64)
    got = ps.scan(backend.asarray((a, b)), ps.AFFINE, backend=backend.backend, **kw)
    assert_scan_equal(got, reference((a, b), ps.AFFINE, **kw))
    m = tuple(rng.integers(-2, 3, n).astype(np.int32) for _ in range(4))
    got = ps.scan(backend.asarray(m), MATMUL2, backend=backend.backend, **kw)
    assert_scan_equal(got, reference(m, MATMUL2, **kw))


@pytest.mark.parametrize("order", [2, 3])
def test_order_non_commutative(backend, rng, order):
    """Order q of a non-commutative struct monoid (2x2 integer matrices), in one pass
    on the GPU."""
    n = struct_length(backend)
    m = tuple(rng.integers(-2, 3, n).astype(np.int32) for _ in range(4))
    for reverse, inclusive in ((False, True), (True, True), (False, False)):
        kw = dict(order=order, reverse=reverse, inclusive=inclusive)
        got = ps.scan(backend.asarray(m), MATMUL2, backend=backend.backend, **kw)
        assert_scan_equal(got, reference(m, MATMUL2, **kw), err_msg=str(kw))


# ---------------------------------------------------------------------------
# Outputs, dtypes, empty arrays.

def test_in_place_and_cumsum_promotion(backend, rng):
    x = random_array(rng, "int32", 1000)
    xb = backend.asarray(x)
    assert ps.scan(xb, out=xb, backend=backend.backend) is xb
    assert_scan_equal(xb, reference_scan(x, "add"))
    got = ps.cumsum(backend.asarray(x), backend=backend.backend)
    assert type(got) is type(xb) and backend.to_numpy(got).dtype == np.int64  # NumPy's promotion
    assert_scan_equal(got, reference_scan(x, "add", dtype=np.int64))


def test_half_precision_accumulates_in_float32(backend):
    """float16 and bfloat16 sums accumulate in float32 and are rounded once."""
    def scan(a, **kw):
        got = ps.scan(backend.asarray(a), backend=backend.backend, **kw)
        assert backend.to_numpy(got).dtype == np.float16
        return backend.to_numpy(got).astype(np.float64)

    # In float16, 2048 + 1 == 2048: accumulating in float16 would stall at 2048.
    # Exact float32 sums, each rounded once to float16 (2049 -> 2048, 2561 -> 2560, ...).
    got = scan(np.ones(4096, dtype=np.float16))
    assert got[-1] == 4096.0
    np.testing.assert_array_equal(got[::512], np.arange(1, 4097, 512).astype(np.float16))
    # float32 sums 2048, 2049, 2050, 2051, 2052 rounded once to float16 (ties to even).
    x = np.array([2048, 1, 1, 1, 1], dtype=np.float16)
    np.testing.assert_array_equal(scan(x), [2048, 2048, 2050, 2052, 2052])
    np.testing.assert_array_equal(scan(x, reverse=True), [2052, 4, 3, 2, 1])
    if importlib.util.find_spec("torch") is None:
        return
    import torch  # bfloat16 tensors, on the CPU backend too

    t = torch.ones(3000, dtype=torch.bfloat16, device=backend.device or "cpu")
    got = ps.scan(t, backend=backend.backend)
    assert isinstance(got, torch.Tensor) and got.dtype == torch.bfloat16
    # bfloat16 has 8 significant bits: accumulating in it would stall at 256.
    assert float(got[-1]) == pytest.approx(3000, rel=1e-2)
    assert float(got[511]) == 512.0


@pytest.mark.parametrize("shape,axis", [((0,), None), ((0,), 0), ((0, 3), 0), ((0, 3), 1), ((3, 0), 1),
                                        ((3, 0), None), ((2, 0, 4), -1), ((2, 0, 4), 0)])
def test_empty_like_numpy(backend, shape, axis):
    x = backend.asarray(np.empty(shape, dtype=np.float32))
    ref = np.cumsum(np.empty(shape, dtype=np.float32), axis=axis)
    got = ps.scan(x, axis=axis, backend=backend.backend)
    assert type(got) is type(x)
    assert tuple(got.shape) == ref.shape
    assert backend.to_numpy(got).dtype == np.float32
    got = ps.scan(x, "max", axis=axis, inclusive=False, reverse=True, order=3, backend=backend.backend)
    assert tuple(got.shape) == ref.shape
