"""Hypothesis properties: delta coding round trips, and scans split at any point."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp

import prefixscan as ps

from prefixscan.testing import (
    INTEGER_DTYPES,
    affine_monoid,
    reference_delta_encode,
    reference_scan,
)

SETTINGS = settings(max_examples=50, deadline=None)

int_dtypes = st.sampled_from(INTEGER_DTYPES).map(np.dtype)


@st.composite
def delta_case(draw):
    dtype = draw(int_dtypes)
    s = draw(st.integers(1, 32))
    k = draw(st.integers(0, 12))
    order = draw(st.integers(1, 8))
    x = draw(hnp.arrays(dtype, (k * s,), elements=hnp.from_dtype(dtype)))
    return x, order, s


@SETTINGS
@given(delta_case())
def test_delta_round_trip(case):
    x, order, s = case
    enc = ps.delta_encode(x, order, s)
    assert enc.dtype == x.dtype
    np.testing.assert_array_equal(enc, reference_delta_encode(x, order, s))
    np.testing.assert_array_equal(ps.delta_decode(enc, order, s), x)
    np.testing.assert_array_equal(ps.delta_encode(ps.delta_decode(x, order, s), order, s), x)


@st.composite
def delta_2d_case(draw):
    dtype = draw(int_dtypes)
    s = draw(st.integers(1, 8))
    k = draw(st.integers(0, 6))
    rows = draw(st.integers(0, 4))
    axis = draw(st.sampled_from([0, 1, -1]))
    order = draw(st.integers(1, 8))
    shape = (k * s, rows) if axis == 0 else (rows, k * s)
    x = draw(hnp.arrays(dtype, shape, elements=hnp.from_dtype(dtype)))
    return x, order, s, axis


@SETTINGS
@given(delta_2d_case())
def test_delta_round_trip_axis(case):
    x, order, s, axis = case
    enc = ps.delta_encode(x, order, s, axis=axis)
    np.testing.assert_array_equal(ps.delta_decode(enc, order, s, axis=axis), x)


@st.composite
def split_case(draw):
    dtype = draw(int_dtypes)
    a = draw(hnp.arrays(dtype, st.integers(0, 60), elements=hnp.from_dtype(dtype)))
    b = draw(hnp.arrays(dtype, st.integers(0, 60), elements=hnp.from_dtype(dtype)))
    algorithm = draw(st.sampled_from([None, "serial", "kogge_stone", "sklansky", "brent_kung", "reduce_then_scan"]))
    return a, b, algorithm


@SETTINGS
@given(split_case())
def test_scan_split_add(case):
    a, b, algorithm = case
    whole = ps.scan(np.concatenate([a, b]), "add", algorithm=algorithm)
    sa = ps.scan(a, "add", algorithm=algorithm)
    sb = ps.scan(b, "add", algorithm=algorithm, init=sa[-1] if len(a) else None)
    np.testing.assert_array_equal(whole, np.concatenate([sa, sb]))
    # Reverse: the seed sits at the far end.
    rwhole = ps.scan(np.concatenate([a, b]), "add", reverse=True, algorithm=algorithm)
    rb = ps.scan(b, "add", reverse=True, algorithm=algorithm)
    ra = ps.scan(a, "add", reverse=True, algorithm=algorithm, init=rb[0] if len(b) else None)
    np.testing.assert_array_equal(rwhole, np.concatenate([ra, rb]))
    # And both agree with the reference.
    np.testing.assert_array_equal(whole, reference_scan(np.concatenate([a, b]), "add"))


small_ints = st.integers(-4, 4)


@st.composite
def affine_split_case(draw):
    na = draw(st.integers(0, 40))
    nb = draw(st.integers(0, 40))
    dtype = draw(st.sampled_from([np.int32, np.int64]))

    def arr(n):
        return np.array(draw(st.lists(small_ints, min_size=n, max_size=n)), dtype=dtype)

    algorithm = draw(st.sampled_from([None, "serial", "kogge_stone", "sklansky", "brent_kung", "reduce_then_scan"]))
    return (arr(na), arr(na)), (arr(nb), arr(nb)), algorithm


@SETTINGS
@given(affine_split_case())
def test_scan_split_affine(case):
    (a1, b1), (a2, b2), algorithm = case
    m = affine_monoid()
    whole = ps.scan((np.concatenate([a1, a2]), np.concatenate([b1, b2])), m, algorithm=algorithm)
    first = ps.scan((a1, b1), m, algorithm=algorithm)
    init = (first[0][-1], first[1][-1]) if len(a1) else None
    second = ps.scan((a2, b2), m, algorithm=algorithm, init=init)
    for k in range(2):
        np.testing.assert_array_equal(whole[k], np.concatenate([first[k], second[k]]))
    expected = reference_scan((np.concatenate([a1, a2]), np.concatenate([b1, b2])), m)
    for k in range(2):
        np.testing.assert_array_equal(whole[k], expected[k])
    # Reverse split.
    rwhole = ps.scan((np.concatenate([a1, a2]), np.concatenate([b1, b2])), m, reverse=True, algorithm=algorithm)
    rsecond = ps.scan((a2, b2), m, reverse=True, algorithm=algorithm)
    rinit = (rsecond[0][0], rsecond[1][0]) if len(a2) else None
    rfirst = ps.scan((a1, b1), m, reverse=True, algorithm=algorithm, init=rinit)
    for k in range(2):
        np.testing.assert_array_equal(rwhole[k], np.concatenate([rfirst[k], rsecond[k]]))


@SETTINGS
@given(
    st.sampled_from(INTEGER_DTYPES).flatmap(
        lambda d: hnp.arrays(np.dtype(d), st.integers(0, 80), elements=hnp.from_dtype(np.dtype(d)))
    ),
    st.sampled_from(["add", "mul", "max", "min", "and", "or", "xor"]),
    st.booleans(),
    st.booleans(),
)
def test_scan_matches_reference_integers(x, op, inclusive, reverse):
    got = ps.scan(x, op, inclusive=inclusive, reverse=reverse)
    np.testing.assert_array_equal(got, reference_scan(x, op, inclusive=inclusive, reverse=reverse))
