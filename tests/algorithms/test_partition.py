"""partition (primitives/compaction/: api.py; the one-pass kernels of triton.py and
compiled.py) against the plain-loop reference of prefixscan.testing, on every
backend present.
"""

from __future__ import annotations

import numpy as np
import pytest

import prefixscan as ps
from prefixscan.testing import random_array, reference_partition

SIZES = [0, 1, 2, 7, 31, 32, 33, 63, 64, 65, 97, 128, 129, 257, 1021]
GPU_SIZES = [1023, 1024, 1025, 2048, 2049, 4095, 4096, 4097, 65537, 1_000_003]


def masks(rng, n):
    return {"none": np.zeros(n, bool), "all": np.ones(n, bool), "sparse": rng.random(n) < 0.05,
            "half": rng.random(n) < 0.5, "dense": rng.random(n) < 0.95}


def test_partition_sizes(backend, rng):
    for n in SIZES + (GPU_SIZES if backend.name == "cuda" else []):
        x = random_array(rng, "int32", (n,))
        for name, mask in masks(rng, n).items():
            values, count = ps.partition(backend.asarray(x), backend.asarray(mask), backend=backend.backend)
            if n <= 1021:
                expected, expected_count = reference_partition(x, mask)
            else:  # the plain loop is slow there: the NumPy idiom, checked against it above
                expected, expected_count = np.concatenate((x[mask], x[~mask])), int(mask.sum())
            assert int(count) == expected_count
            got = backend.to_numpy(values)
            assert got.dtype == x.dtype and got.shape == (n,)
            np.testing.assert_array_equal(got, expected, err_msg=f"n={n} {name}")


@pytest.mark.parametrize("dtype", ["int8", "float16", "float64", "complex64", "complex128", "bool", "uint64"])
def test_partition_dtypes(backend, rng, dtype):
    x = random_array(rng, dtype, (6, 17), "add" if dtype != "bool" else "xor")
    mask = rng.random(x.shape) < 0.3
    values, count = ps.partition(backend.asarray(x), backend.asarray(mask), backend=backend.backend)
    expected, expected_count = reference_partition(x, mask)
    got = backend.to_numpy(values)
    assert got.dtype == x.dtype and int(count) == expected_count
    np.testing.assert_array_equal(got.view(np.uint8), expected.view(np.uint8))


def test_partition_tuple(backend, rng):
    n = 200
    fields = (random_array(rng, "float64", (n,)), random_array(rng, "int16", (n,)))
    mask = rng.random(n) < 0.7
    values, count = ps.partition(backend.asarray(fields), backend.asarray(mask), backend=backend.backend)
    assert isinstance(values, tuple) and int(count) == mask.sum()
    for got, f in zip(backend.to_numpy(values), fields):
        np.testing.assert_array_equal(got, reference_partition(f, mask)[0])


def test_compiled_cpu_partition_small_sizes(rng):
    pytest.importorskip("numba")
    from prefixscan.primitives.compaction import compiled as compaction

    for n in [0, 1, 7, 8, 9, 63, 64, 65, 1000]:
        for mask in masks(rng, n).values():
            x = random_array(rng, "int64", (n,))
            (values,), count = compaction.partition([x], mask)
            expected, expected_count = reference_partition(x, mask)
            np.testing.assert_array_equal(values, expected)
            assert int(count) == expected_count


def test_reference_partition_is_stable():
    values, count = reference_partition(np.array([5, 1, 6, 2, 7]), np.array([True, False, True, False, False]))
    assert values.tolist() == [5, 6, 1, 2, 7] and count == 2
