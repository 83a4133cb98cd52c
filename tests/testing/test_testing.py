"""prefixscan.testing itself: the reference on docs/semantics.md's examples, the
tolerance rule's edges, and the test data."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import prefixscan as ps
from prefixscan.testing import (
    AFFINE_IDENTITY,
    INTEGER_DTYPES,
    add_pair,
    affine,
    affine_monoid,
    assert_scan_equal,
    assert_scan_matches,
    backends_under_test,
    first_nonzero_monoid,
    poisoned,
    random_array,
    reference_compact,
    reference_delta_decode,
    reference_delta_encode,
    reference_linear_recurrence,
    reference_scan,
    reference_segmented_scan,
    segment_bounds,
    sparse_array,
    tolerance_for,
    valid_op_dtypes,
)


def _scan(values, dtype="int32", **kw):
    return reference_scan(np.array(values, dtype=dtype), "add", **kw).tolist()


def test_reference_semantics_examples():
    # docs/semantics.md, on the reference itself.
    x = [1, 2, 3, 4]
    assert _scan(x) == [1, 3, 6, 10]
    assert _scan(x, init=10) == [11, 13, 16, 20]
    assert _scan(x, inclusive=False, init=10) == [10, 11, 13, 16]
    assert _scan(x, reverse=True) == [10, 9, 7, 4]
    assert _scan(x, reverse=True, init=10) == [20, 19, 17, 14]
    assert _scan(x, reverse=True, inclusive=False) == [9, 7, 4, 0]
    assert _scan(x, reverse=True, inclusive=False, init=10) == [19, 17, 14, 10]
    assert _scan([1, 2, 3, 4, 5, 6], tuple_size=2) == [1, 2, 4, 6, 9, 12]
    assert _scan([1, 2, 3, 4, 5, 6], tuple_size=2, init=[10, 20]) == [11, 22, 14, 26, 19, 32]
    assert _scan(x, order=2) == [1, 4, 10, 20]
    assert _scan([2**31 - 1, 1]) == [2**31 - 1, -(2**31)]
    assert _scan([[1, 2], [3, 4]], axis=0) == [[1, 2], [4, 6]]
    assert _scan([[1, 2], [3, 4]]) == [1, 3, 6, 10]  # axis=None flattens
    assert reference_scan(np.array([1, 2, 3], np.int64), "max", inclusive=False).tolist() == [
        np.iinfo(np.int64).min, 1, 2]
    x64 = np.array([1, 2, 3, 4], np.int64)
    assert reference_segmented_scan(x64, flags=[1, 0, 1, 0]).tolist() == [1, 3, 3, 7]
    assert reference_segmented_scan(x64, offsets=[0, 2, 2, 4]).tolist() == [1, 3, 3, 7]
    assert reference_segmented_scan(x64, keys=[5, 5, 7, 5]).tolist() == [1, 3, 3, 4]
    assert reference_segmented_scan(x64, keys=[5, 5, 7, 7], inclusive=False, reverse=True).tolist() == [2, 0, 4, 0]
    assert segment_bounds(4, offsets=[0, 2, 2, 4]) == [(0, 2), (2, 2), (2, 4), (4, 4)]
    assert segment_bounds(4, flags=[0, 0, 1, 0]) == [(0, 2), (2, 4)]
    assert reference_compact(np.array([1, 2, 3]), [True, False, True]).tolist() == [1, 3]
    d = reference_delta_encode(np.array([5, 7, 1, 9, 3, 3], np.int8), 2, 2)
    assert reference_delta_decode(d, 2, 2).tolist() == [5, 7, 1, 9, 3, 3]
    assert reference_linear_recurrence([1.0, 2.0], [1.0, 1.0], init=3.0).tolist() == [4.0, 9.0]
    assert reference_linear_recurrence([1.0, 2.0], [1.0, 1.0], init=3.0, reverse=True).tolist() == [8.0, 7.0]


def test_reference_dtype_rules():
    # No widening; integers wrap; float16 accumulates wider and rounds once.
    assert reference_scan(np.array([100, 100, 100], np.int8)).tolist() == [100, -56, 44]
    assert reference_scan(np.array([100, 100], np.int8), dtype=np.int64).dtype == np.int64
    got = reference_scan(np.array([2048, 1, 1, 1, 1], np.float16))
    assert got.dtype == np.float16 and got.astype(float).tolist() == [2048, 2048, 2050, 2052, 2052]
    assert reference_scan(np.array([True, True, False]), "add", dtype=np.int32).tolist() == [1, 2, 2]
    with pytest.raises(TypeError, match="add"):
        reference_scan(np.array([True, False]), "add")  # bool needs an integer dtype=
    # NaN propagates through max/min; logaddexp of infinities.
    m = reference_scan(np.array([1.0, np.nan, 3.0]), "max")
    assert m[0] == 1.0 and np.isnan(m[1:]).all()
    assert reference_scan(np.array([np.inf, np.inf, -np.inf]), "logaddexp").tolist() == [np.inf] * 3


def test_reference_bfloat16_tensor():
    torch = pytest.importorskip("torch")
    t = torch.ones(300, dtype=torch.bfloat16)
    got = reference_scan(t)
    assert got.dtype == np.float32
    # Sums up to 300 exact in float32, rounded once to bfloat16's 8 significant bits.
    assert got[255] == 256.0 and got[256] == 256.0 and got[257] == 258.0 and got[-1] == 300.0


def test_reference_struct_and_monoids(rng):
    a, b = np.array([2, 3, -1], np.int64), np.array([1, -2, 5], np.int64)
    # Compose v -> 2v + 1, then v -> 3v - 2, then v -> -v + 5.
    assert [f.tolist() for f in reference_scan((a, b), affine_monoid())] == [[2, 6, -6], [1, 1, 4]]
    assert [f.tolist() for f in reference_scan((a, b), affine, identity=AFFINE_IDENTITY, inclusive=False)] == [
        [1, 2, 6], [0, 1, 1]]
    # Reverse: operands stay in index order, the seed at the far end.
    got = reference_scan((a, b), affine_monoid(), reverse=True, init=(np.int64(1), np.int64(10)))
    assert [f.tolist() for f in got] == [[-6, -3, -1], [14, 17, 15]]
    x = np.array([0, 4, 0, 7], np.int32)
    assert reference_scan(x, first_nonzero_monoid()).tolist() == [0, 4, 4, 4]
    assert reference_scan(x, first_nonzero_monoid(), reverse=True).tolist() == [4, 4, 7, 7]
    with pytest.raises(ValueError, match="identity"):
        reference_scan(x, lambda p, q: p + q, inclusive=False)
    pair = reference_scan((np.array([1, 2], np.int32), np.array([0.5, 0.25])), add_pair, identity=(0, 0))
    assert pair[0].dtype == np.int32 and pair[1].dtype == np.float64 and pair[1].tolist() == [0.5, 0.75]


def test_tolerance_rule():
    e = np.array([1.0, 2.0, np.inf, np.nan], np.float32)
    assert_scan_equal(e.copy(), e)
    with pytest.raises(AssertionError, match="NaNs differ"):
        assert_scan_equal(np.array([1.0, 2.0, np.inf, 0.0], np.float32), e)
    with pytest.raises(AssertionError, match="infinities"):
        assert_scan_equal(np.array([1.0, 2.0, -np.inf, np.nan], np.float32), e)
    with pytest.raises(AssertionError, match="dtype"):
        assert_scan_equal(e.astype(np.float64), e)
    with pytest.raises(AssertionError, match="differ"):
        assert_scan_equal(np.array([1, 2], np.int32), np.array([1, 3], np.int32))
    # Floats: a few float32 units pass, an off-by-one does not; rtol=0.0 is exact.
    x = np.full(100, 0.1, np.float32)
    expected = reference_scan(x)
    nudged = (expected * np.float32(1 + 2e-7)).astype(np.float32)
    assert_scan_equal(nudged, expected, **tolerance_for(x))
    with pytest.raises(AssertionError):
        assert_scan_equal(nudged, expected, rtol=0.0)
    wrong = expected.copy()
    wrong[50] += 1
    with pytest.raises(AssertionError, match="beyond tolerance"):
        assert_scan_equal(wrong, expected, **tolerance_for(x))
    # Exact arithmetic asks for exact results.
    assert tolerance_for(np.arange(1.0, 9.0), "add")["rtol"] == 0.0
    assert tolerance_for(np.array([0.5, 1.5]), "max")["rtol"] == 0.0
    assert tolerance_for(np.array([0.1, 0.2]), "add")["rtol"] is None
    # The magnitude is the scan of |x|: a cancelling sum is judged against it.
    big = np.array([1e8, 1.5, -1e8, 0.25], np.float64)
    assert tolerance_for(big, "add")["mag"].tolist() == [1e8, 1e8 + 1.5, 2e8 + 1.5, 2e8 + 1.75]


def test_assert_scan_matches_catches_a_wrong_monoid():
    def not_associative(p, q):  # p - q, with 0 made an identity: (3 - 1) - 1 != 3 - (1 - 1)
        return ps.where(p == 0, q, ps.where(q == 0, p, p - q))

    x = np.arange(1, 40, dtype=np.int64) % 3 + 1
    assert_scan_matches(first_nonzero_monoid(), sparse_array(np.random.default_rng(1), "int32", 64))
    with pytest.raises(AssertionError):
        assert_scan_matches(ps.Monoid(not_associative, 0), x, backend="cpu", algorithm="kogge_stone")


@pytest.mark.parametrize("op,dtype", valid_op_dtypes(), ids=[f"{o}-{d}" for o, d in valid_op_dtypes()])
def test_random_array_keeps_results_changing(rng, op, dtype):
    x = random_array(rng, dtype, 200, op)
    assert x.dtype == np.dtype(dtype) and x.shape == (200,)
    assert x.any() and not (x.dtype.kind in "fc" and np.isnan(x).any())
    if op in ("add", "mul", "xor"):  # sums and products keep changing
        assert len(np.unique(reference_scan(x, op))) > 1


@pytest.mark.parametrize("dtype", INTEGER_DTYPES + ["float32", "bool"])
def test_poisoned(dtype):
    p = poisoned((3, 4), dtype)
    assert p.dtype == np.dtype(dtype) and p.shape == (3, 4)
    assert np.isnan(p).all() if p.dtype.kind == "f" else len(np.unique(p)) == 1


def test_backends_under_test():
    names = [b.name for b in backends_under_test()]
    assert names[0] == "cpu"
    cpu = backends_under_test()[0]
    x = np.arange(5)
    assert cpu.asarray(x) is not x and np.array_equal(cpu.to_numpy(cpu.asarray(x)), x)


def test_import_is_numpy_only():
    code = ("import sys, prefixscan.testing; "
            "bad = [m for m in ('torch', 'triton', 'matplotlib') if m in sys.modules]; "
            "sys.exit(1 if bad else 0)")
    assert subprocess.run([sys.executable, "-c", code], timeout=60).returncode == 0


@pytest.mark.parametrize("n", [1, 2, 97, 9000])
def test_failing_monoid_raises_as_its_module_says(rng, n):
    """prefixscan.testing.failing: a scan of poisoned data raises CombineFailed on the
    NumPy path (n < 8192) and the compiled one (the Numba overload), wherever the
    poison sits, but for a single element, which no combine touches; the same data
    without the poison scans to the sum; poison_data's values are small and nonzero."""
    from prefixscan.testing.failing import DATA_BOUND, POISON, CombineFailed, poison_data, raising_sum_monoid

    monoid = raising_sum_monoid()
    clean = poison_data(rng, n, np.int64)
    assert (clean != 0).all() and (np.abs(clean) <= DATA_BOUND).all()
    np.testing.assert_array_equal(ps.scan(clean, monoid), np.cumsum(clean))
    for position in sorted({0, n // 2, n - 1}):
        x = clean.copy()
        x[position] = POISON
        if n == 1:
            np.testing.assert_array_equal(ps.scan(x, monoid), x)
            continue
        # Exclusive: the poison not last in scan order (no output holds the last element).
        for kw in ({}, {"reverse": True}, {"inclusive": False, "reverse": position == n - 1}):
            with pytest.raises(CombineFailed):
                ps.scan(x, monoid, **kw)
