"""The CPU backend's replay of small scans: one ufunc accumulate straight from x to
out on later calls of a signature, and the full path wherever that would be wrong."""

from __future__ import annotations

import numpy as np

import prefixscan as ps
from prefixscan.testing import reference_scan


def test_replayed_calls_match_the_reference(rng):
    scan = ps.make_scan("add")
    x = rng.integers(-1000, 1000, 1021).astype(np.int32)
    scan(x)  # plans, and keeps the replay
    (_, _, replay), = scan._plans.values()
    assert replay is not None
    for _ in range(3):
        x = rng.integers(-1000, 1000, 1021).astype(np.int32)
        out = np.full(1021, -7, dtype=np.int32)
        assert scan(x, out=out) is out
        np.testing.assert_array_equal(out, reference_scan(x, "add"))
        np.testing.assert_array_equal(scan(x), reference_scan(x, "add"))


def test_replay_declines_overlap_and_keeps_layouts(rng):
    scan = ps.make_scan("max", axis=0)
    x = rng.standard_normal((33, 5))
    out = np.empty_like(x)
    scan(x, out=out)
    scan(x, out=out)  # the replay now
    np.testing.assert_array_equal(out, np.maximum.accumulate(x, axis=0))
    scan(out, out=out)  # in place: the replay declines and the full path runs
    np.testing.assert_array_equal(out, np.maximum.accumulate(x, axis=0))
    fortran = np.asfortranarray(rng.standard_normal((33, 5)))
    y = scan(fortran)  # same signature (shape, dtype), another layout
    assert y.flags.c_contiguous
    np.testing.assert_array_equal(y, np.maximum.accumulate(fortran, axis=0))
    strided = rng.standard_normal((66, 5))[::2]
    np.testing.assert_array_equal(scan(strided), np.maximum.accumulate(strided, axis=0))


def test_no_replay_where_the_full_path_is_needed(rng):
    x = rng.integers(-9, 9, 101)
    for scan in (ps.make_scan("add", reverse=True), ps.make_scan("add", inclusive=False),
                 ps.make_scan("add", order=2)):
        scan(x)
        (_, _, replay), = scan._plans.values()
        assert replay is None
