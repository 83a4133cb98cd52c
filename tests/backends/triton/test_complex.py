"""Complex dtypes on the Triton backend: refused before any work with a TypeError
naming the argument and the dtype (Triton has no complex types: the
``COMPLEX_TYPES`` capability of :class:`prefixscan.backends.base.Backend`), while
``linear_recurrence`` on complex tensors still runs there by splitting the
coefficients into real fields."""

from __future__ import annotations

import numpy as np
import pytest

import prefixscan as ps
from prefixscan import dispatch
from prefixscan.testing import backends_under_test, poisoned, reference_linear_recurrence

TRITON = [b for b in backends_under_test() if b.is_triton]
pytestmark = pytest.mark.skipif(not TRITON, reason="no Triton backend here")


def test_capability_flags():
    assert dispatch.get_backend("cpu").COMPLEX_TYPES is True
    assert dispatch.get_backend("triton").COMPLEX_TYPES is False


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
@pytest.mark.parametrize("call", ["scan", "make_scan", "cumsum", "cumprod", "delta_decode"])
def test_complex_scans_refused_before_any_work(dtype, call, monkeypatch):
    backend = TRITON[0]
    x = backend.asarray(np.ones(8, dtype))
    ran = []
    triton = dispatch.get_backend("triton")
    for member in ("run_scan", "run_scan_planned"):
        monkeypatch.setattr(triton, member, lambda *args, _m=member, **kw: ran.append(_m))
    fn = {"scan": lambda: ps.scan(x, backend="triton"),
          "make_scan": lambda: ps.make_scan("add", backend="triton")(x),
          "cumsum": lambda: ps.cumsum(x, backend="triton"),
          "cumprod": lambda: ps.cumprod(x, backend="triton"),
          "delta_decode": lambda: ps.delta_decode(x, backend="triton")}[call]
    with pytest.raises(TypeError, match=rf"x: the Triton backend has no complex types \({dtype}\)"):
        fn()
    assert not ran


def test_out_untouched_and_complex_dtype_argument_named():
    backend = TRITON[0]
    out = backend.asarray(poisoned((4,), "complex64"))
    before = backend.to_numpy(out).copy()
    with pytest.raises(TypeError, match="complex"):
        ps.scan(backend.asarray(np.ones(4, np.complex64)), backend="triton", out=out)
    np.testing.assert_array_equal(backend.to_numpy(out), before)
    with pytest.raises(TypeError, match=r"dtype='complex64' \(for x\): the Triton backend has no complex types"):
        ps.scan(backend.asarray(np.ones(4, np.float32)), backend="triton", dtype="complex64")


def test_complex_scan_runs_on_the_cpu_backend():
    x = np.array([1 + 1j, 2 - 1j, 3j], np.complex64)
    np.testing.assert_allclose(ps.scan(x), np.cumsum(x))


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_complex_linear_recurrence_still_runs_on_triton(dtype):
    backend = TRITON[0]
    rng = np.random.default_rng(3)
    shape = (2, 9)
    a = (rng.uniform(-0.9, 0.9, shape) + 1j * rng.uniform(-0.9, 0.9, shape)).astype(dtype)
    b = (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)
    init = np.array([1 - 2j, 0.5j], dtype)
    expected = reference_linear_recurrence(a, b, init=init)
    got = ps.linear_recurrence(backend.asarray(a), backend.asarray(b), init=backend.asarray(init), backend="triton")
    np.testing.assert_allclose(backend.to_numpy(got), expected, rtol=1e-4, atol=1e-5)
