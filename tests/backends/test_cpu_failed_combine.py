"""A scan that raises leaves ``out`` as it was, on every CPU path.

The combine of :func:`prefixscan.testing.failing.raising_sum_monoid` raises when
it meets the poisoned element, part-way through the scan.  The compiled kernels
(from 8192 elements) write as they go, so a user's combine scans into a fresh
array that reaches ``out`` only once the scan has succeeded; the NumPy path (below
8192) works on a copy.  Built-in operators under a ``numpy.errstate`` that raises
take the same care where a ufunc accumulate would write ``out`` before NumPy
raises.  Every case checks ``out`` bit for bit, and that the same call without
the poison writes the right values.
"""

from __future__ import annotations

import numpy as np
import pytest

import prefixscan as ps
from prefixscan.testing import poisoned
from prefixscan.testing.failing import POISON, CombineFailed, poison_data, raising_sum_monoid

SIZES = [97, 8191, 8192, 20011]

# (shape, scan keywords): every compiled kernel family (contiguous lanes, orders up to
# and past the static maximum of 8, narrow and wide rows), both directions and flavours.
LAYOUTS = [
    ("1-D", lambda n: (n,), {}),
    ("exclusive", lambda n: (n,), {"inclusive": False}),
    ("reverse", lambda n: (n,), {"reverse": True}),
    ("order 3", lambda n: (n,), {"order": 3}),
    ("order 10", lambda n: (n,), {"order": 10}),
    ("seeded", lambda n: (n,), {"init": 5}),
    ("tuple_size 3", lambda n: (n - n % 3,), {"tuple_size": 3}),
    ("narrow rows", lambda n: (n // 4, 4), {"axis": 0}),
    ("wide rows", lambda n: (n // 40, 40), {"axis": 0, "inclusive": False}),
    ("lanes", lambda n: (4, n // 4), {"axis": 1, "reverse": True}),
]


def _poisoned_like(expected: np.ndarray) -> np.ndarray:
    return poisoned(expected.shape, expected.dtype)


def _assert_untouched(out: np.ndarray, before: np.ndarray, what: str) -> None:
    assert out.tobytes() == before.tobytes(), f"{what}: out was written by a scan that raised"


def _data(rng, shape, dtype, kw, positions=()):
    """Small values whose order-q sums stay small (the q-th differences of small
    values: no partial sum nears the poison), poisoned at the flat ``positions``."""
    x = poison_data(rng, shape, dtype)
    if kw.get("order", 1) > 1:
        x = ps.delta_encode(x, kw["order"])
    x.reshape(-1)[list(positions)] = POISON
    return x


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("dtype", ["int64", "float32"])
def test_scan_that_raises_leaves_out_untouched(rng, n, dtype):
    monoid = raising_sum_monoid()
    # Each layout compiles its own kernels for a user monoid: float32 takes the first few.
    for name, shape_of, kw in LAYOUTS if dtype == "int64" else LAYOUTS[:3]:
        shape = shape_of(n)
        size = int(np.prod(shape))
        clean = _data(rng, shape, dtype, kw)
        expected = ps.scan(clean, "add", **kw)
        out = _poisoned_like(expected)
        assert ps.scan(clean, monoid, out=out, **kw) is out
        np.testing.assert_array_equal(out, expected, err_msg=f"{name}: the scan without poison")
        for position in (size * 2 // 3, size - 1):
            x = _data(rng, shape, dtype, kw, [position])
            out = _poisoned_like(expected)
            before = out.copy()
            with pytest.raises(CombineFailed):
                ps.scan(x, monoid, out=out, **kw)
            _assert_untouched(out, before, f"{name} n={n} poison at {position}")


@pytest.mark.parametrize("n", [97, 20011])
def test_in_place_scan_that_raises_leaves_x_untouched(rng, n):
    monoid = raising_sum_monoid()
    for kw in ({}, {"order": 2}, {"reverse": True, "inclusive": False}):
        x = poison_data(rng, n, np.int64, [n // 2])
        before = x.copy()
        with pytest.raises(CombineFailed):
            ps.scan(x, monoid, out=x, **kw)
        _assert_untouched(x, before, f"in place {kw}")
        with pytest.raises(CombineFailed):
            ps.make_scan(monoid, **kw)(x, out=x)
        _assert_untouched(x, before, f"make_scan in place {kw}")


@pytest.mark.parametrize("n", [97, 20011])
def test_struct_scan_that_raises_leaves_every_out_untouched(rng, n):
    monoid = raising_sum_monoid(fields=2)
    x = (poison_data(rng, n, np.int64, [n - 3]), poison_data(rng, n, np.float64))
    outs = (poisoned(n, np.int64), poisoned(n, np.float64))
    before = tuple(o.copy() for o in outs)
    with pytest.raises(CombineFailed):
        ps.scan(x, monoid, out=outs)
    for o, b in zip(outs, before):
        _assert_untouched(o, b, "struct")
    clean = (poison_data(rng, n, np.int64), x[1])
    ps.scan(clean, monoid, out=outs)
    for o, f in zip(outs, clean):
        np.testing.assert_array_equal(o, np.cumsum(f))


@pytest.mark.parametrize("n", [97, 20011])
def test_torch_out_left_untouched(rng, n):
    torch = pytest.importorskip("torch")
    monoid = raising_sum_monoid()
    x = torch.from_numpy(poison_data(rng, n, np.float32, [n // 3]))
    out = torch.full((n,), float("nan"))
    with pytest.raises(CombineFailed):
        ps.scan(x, monoid, out=out, backend="cpu")
    assert torch.isnan(out).all()


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("segments", ["flags", "offsets", "keys"])
def test_segmented_scan_that_raises_leaves_out_untouched(rng, n, segments):
    monoid = raising_sum_monoid()
    starts = rng.random(n) < 0.01
    starts[0] = True
    given = {"flags": starts, "offsets": np.flatnonzero(starts),
             "keys": np.cumsum(starts).astype(np.int32)}[segments]
    for kw in ({}, {"inclusive": False, "reverse": True}, {"init": 3}):
        x = poison_data(rng, n, np.int64, [n * 3 // 4])
        out = poisoned(n, np.int64)
        before = out.copy()
        with pytest.raises(CombineFailed):
            ps.segmented_scan(x, monoid, out=out, **{segments: given}, **kw)
        _assert_untouched(out, before, f"segmented {segments} {kw}")
        clean = poison_data(rng, n, np.int64)
        ps.segmented_scan(clean, monoid, out=out, **{segments: given}, **kw)
        np.testing.assert_array_equal(out, ps.segmented_scan(clean, "add", **{segments: given}, **kw))


@pytest.mark.parametrize("n", [3, 97, 1024])
def test_builtin_float_accumulate_raising_under_errstate_leaves_out_untouched(n):
    """NumPy's accumulate writes its whole output, then raises for the caller's
    ``errstate``; scans with ``out`` keep it untouched, on the first call and on the
    replayed ones."""
    x = np.full(n, 60000, np.float16)
    for run in (lambda o: ps.cumsum(x, out=o), lambda o: ps.scan(x, "add", out=o, dtype=np.float16),
                lambda o: ps.make_scan("add")(x, out=o)):
        for _ in range(3):  # the first call plans, the later ones replay the plan
            out = poisoned(n, np.float16)
            with np.errstate(over="raise"), pytest.raises(FloatingPointError):
                run(out)
            assert np.isnan(out).all()
        with np.errstate(over="ignore"):
            run(out)
        assert np.isinf(out[1:]).all()


@pytest.mark.parametrize("filters", ["error", "error::RuntimeWarning", "error:overflow"])
@pytest.mark.parametrize("n", [3, 1024])
def test_builtin_float_accumulate_warning_as_error_leaves_out_untouched(n, filters):
    """NumPy's default ``errstate`` warns of an overflow after the accumulate wrote its
    output; warning filters that make that warning an error (``-W error``, pytest's
    ``filterwarnings = error``, one for RuntimeWarning or for some messages only) make
    it an exception raised after the write: ``out`` stays untouched, first call and
    replays.  Filters that leave it a warning keep writing ``out`` directly."""
    import warnings

    action, _, rest = filters.partition(":")
    category = RuntimeWarning if rest.endswith("RuntimeWarning") else Warning
    message = rest if rest and category is Warning else ""
    x = np.full(n, 60000, np.float16)
    for run in (lambda o: ps.cumsum(x, out=o), lambda o: ps.scan(x, "add", out=o, dtype=np.float16),
                lambda o: ps.make_scan("add")(x, out=o)):
        for _ in range(3):  # the first call plans, the later ones replay the plan
            out = poisoned(n, np.float16)
            with np.errstate(over="warn"), warnings.catch_warnings():
                warnings.filterwarnings(action, message, category)
                with pytest.raises(RuntimeWarning, match="overflow"):
                    run(out)
            assert np.isnan(out).all()
        with np.errstate(over="warn"), warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            assert run(out) is out
        assert np.isinf(out[1:]).all() and any("overflow" in str(w.message) for w in seen)


def test_struct_cast_raising_under_errstate_leaves_every_out_untouched():
    """float16 fields accumulate in float32 and are cast on output; a cast that
    raises (the caller's errstate) for the second field leaves the first unwritten."""
    pair = ps.Monoid(lambda a, b: (a[0] + b[0], a[1] + b[1]), (0, 0), name="pair")
    x = (np.ones(5, np.float16), np.full(5, 30000, np.float16))
    outs = (poisoned(5, np.float16), poisoned(5, np.float16))
    with np.errstate(over="raise"), pytest.raises(FloatingPointError):
        ps.scan(x, pair, out=outs)
    assert all(np.isnan(o).all() for o in outs)
    with np.errstate(over="ignore"):
        ps.scan(x, pair, out=outs)
    np.testing.assert_array_equal(outs[0], np.arange(1, 6))
