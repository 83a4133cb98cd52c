"""Test helpers for prefixscan and for your own monoids (as ``numpy.testing`` or
``cupy.testing`` are for theirs).

One reference and one tolerance rule, the ones prefixscan's own test suite and
``prefixscan check`` use:

* :func:`reference_scan` and friends: every function of docs/semantics.md in
  plain Python loops, independent of the library's code
  (:mod:`prefixscan.testing.reference`);
* :func:`assert_scan_equal`: bitwise equality for integers and bools; for
  floats a bound relative to the float64 reference and the magnitude of the
  summed terms (:mod:`prefixscan.testing.tolerance`);
* random inputs that make wrong results show, poisoned outputs and example
  monoids (:mod:`prefixscan.testing.data`).

Test your own monoid on every array type and backend::

    import numpy as np
    import torch
    import prefixscan as ps
    from prefixscan.testing import assert_scan_matches

    def last_nonzero(a, b):
        return ps.where(b != 0, b, a)

    fill = ps.Monoid(last_nonzero, 0, name="last_nonzero")
    x = np.array([0, 3, 0, 0, 5, 0], np.int32)
    assert_scan_matches(fill, x)                               # NumPy, CPU backend
    assert_scan_matches(fill, torch.from_numpy(x).cuda(), reverse=True)   # GPU backend

or compare a result you computed yourself::

    from prefixscan.testing import assert_scan_equal, reference_scan, tolerance_for
    assert_scan_equal(my_cumsum(x), reference_scan(x, "add"), **tolerance_for(x, "add"))

Importing this package imports NumPy only (torch when handed a tensor).
"""

from ._scalars import accumulator_dtype
from .backends import ArrayBackend, backends_under_test
from .data import (
    AFFINE_IDENTITY,
    ALL_DTYPES,
    BUILTIN_OP_NAMES,
    COMPLEX_DTYPES,
    FLOAT_DTYPES,
    INT_DTYPES,
    INTEGER_DTYPES,
    MATMUL2_IDENTITY,
    UINT_DTYPES,
    ArrayLike,
    add_pair,
    add_pair_monoid,
    affine,
    affine_data,
    affine_monoid,
    first_nonzero,
    first_nonzero_monoid,
    matmul2,
    matmul2_data,
    matmul2_monoid,
    op_applies,
    poisoned,
    random_array,
    random_init,
    sparse_array,
    valid_op_dtypes,
)
from .reference import (
    reference_argsort,
    reference_compact,
    reference_partition,
    reference_delta_decode,
    reference_delta_encode,
    reference_linear_recurrence,
    reference_run_length_encode,
    reference_scan,
    reference_segmented_scan,
    reference_unique,
    segment_bounds,
)
from .tolerance import RTOL, assert_scan_equal, assert_scan_matches, to_numpy, tolerance_for

__all__ = [
    # the reference
    "reference_scan", "reference_segmented_scan", "segment_bounds", "reference_compact", "reference_partition",
    "reference_delta_encode", "reference_delta_decode", "reference_linear_recurrence", "reference_argsort",
    "reference_unique", "reference_run_length_encode", "accumulator_dtype",
    # the tolerance rule
    "RTOL", "assert_scan_equal", "assert_scan_matches", "tolerance_for", "to_numpy",
    # data
    "INT_DTYPES", "UINT_DTYPES", "INTEGER_DTYPES", "FLOAT_DTYPES", "COMPLEX_DTYPES", "ALL_DTYPES",
    "BUILTIN_OP_NAMES", "op_applies", "valid_op_dtypes", "random_array", "random_init", "poisoned",
    "ArrayLike",
    # example monoids
    "affine", "AFFINE_IDENTITY", "affine_monoid", "affine_data", "matmul2", "MATMUL2_IDENTITY",
    "matmul2_monoid", "matmul2_data", "add_pair", "add_pair_monoid", "first_nonzero",
    "first_nonzero_monoid", "sparse_array",
    # backends
    "ArrayBackend", "backends_under_test",
]
