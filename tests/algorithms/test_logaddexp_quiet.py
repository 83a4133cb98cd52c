"""logaddexp of two -inf on NumPy arrays: the combine's ``lo - hi`` is NaN before
its ``where`` drops it, and NumPy warned "invalid value encountered in subtract"
although the result (-inf) is right.  The CPU backend runs combine under the
monoid's ``numpy_errstate``, so no warning, as NumPy's own ``np.logaddexp``."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import prefixscan as ps
from prefixscan.testing import reference_scan

NETWORKS = ["auto", "serial", "kogge_stone", "sklansky", "brent_kung", "reduce_then_scan"]


@pytest.fixture(autouse=True)
def warnings_are_errors():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        yield


@pytest.mark.parametrize("algorithm", NETWORKS)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_all_minus_inf_is_quiet(algorithm, dtype):
    x = np.full((3, 8), -np.inf, dtype)
    x[1, 3] = 0.5
    for kwargs in (dict(), dict(init=-np.inf), dict(inclusive=False), dict(order=2), dict(tuple_size=2),
                   dict(reverse=True, init=-np.inf)):
        got = ps.scan(x, "logaddexp", axis=1, algorithm=algorithm, **kwargs)
        np.testing.assert_array_equal(got, reference_scan(x, "logaddexp", axis=1, **kwargs), err_msg=str(kwargs))


def test_segmented_and_cumulative_are_quiet():
    x = np.array([-np.inf, -np.inf, 1.0, -np.inf, -np.inf])
    got = ps.segmented_scan(x, "logaddexp", flags=np.array([1, 0, 0, 1, 0], bool))
    np.testing.assert_array_equal(got, [-np.inf, -np.inf, 1.0, -np.inf, -np.inf])
    got = ps.segmented_scan(x, "logaddexp", offsets=np.array([0, 3]), reverse=True)
    np.testing.assert_array_equal(got, [1.0, 1.0, 1.0, -np.inf, -np.inf])


def test_other_operators_still_warn():
    # Only logaddexp's own intermediate NaN is silenced: inf - inf in a sum still warns, as NumPy does.
    x = np.array([np.inf, -np.inf, 1.0])
    with pytest.raises(RuntimeWarning):
        ps.scan(x, "add", algorithm="kogge_stone")


def test_builtin_flag():
    assert ps.BUILTIN_OPS["logaddexp"].numpy_errstate == {"invalid": "ignore"}
    assert ps.BUILTIN_OPS["add"].numpy_errstate == {}
    assert ps.Monoid(lambda a, b: a + b, 0).numpy_errstate == {}


def test_plus_inf_pairs():
    x = np.array([np.inf, np.inf, 1.0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = ps.scan(x, "logaddexp", algorithm="kogge_stone")
    np.testing.assert_array_equal(got, np.logaddexp.accumulate(x))


def test_infinite_pairs_on_every_backend(backend):
    """Equal infinities stay infinite (inf - inf would be NaN): +inf pairs, -inf pairs, mixed."""
    x = np.array([np.inf, np.inf, 1.0, -np.inf, 2.0, 2.0], dtype=np.float32)
    y = np.array([-np.inf, -np.inf, -np.inf, 0.5, 0.5, -np.inf], dtype=np.float32)
    for data in (x, y):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the interpreter runs NumPy underneath
            got = backend.to_numpy(ps.scan(backend.asarray(data), "logaddexp", backend=backend.backend))
        np.testing.assert_allclose(got, np.logaddexp.accumulate(data), rtol=1e-6)
