"""Backend dispatch: which backend runs, and the errors when none can."""

import re

import numpy as np
import pytest

import prefixscan as ps
from prefixscan._install_hint import install_command
from prefixscan import dispatch
from prefixscan.backends import triton as triton_backend


class FakeCudaArray:
    """Claims to live on a CUDA device (DLPack device type 2)."""

    shape = (4,)
    dtype = np.dtype("int32")

    def __dlpack_device__(self):
        return (2, 0)

    def __dlpack__(self, stream=None):  # pragma: no cover - never reached
        raise AssertionError("must not be read")


def test_host_arrays_take_the_cpu_backend():
    assert dispatch.select_backend(None, "cpu").__name__ == "prefixscan.backends.cpu"
    s = ps.make_scan()
    _, backend = s.plan(np.arange(5))
    assert backend.__name__ == "prefixscan.backends.cpu"


def test_cuda_array_without_gpu_backend_says_what_to_install(monkeypatch):
    triton_backend._unavailable_reason.cache_clear()
    monkeypatch.setattr(triton_backend.importlib.util, "find_spec", lambda name: None)
    try:
        with pytest.raises(dispatch.BackendUnavailableError, match=re.escape(install_command("gpu"))):
            ps.scan(FakeCudaArray())
        with pytest.raises(dispatch.BackendUnavailableError, match="cpu"):
            ps.scan(np.arange(3), backend="triton")
    finally:
        triton_backend._unavailable_reason.cache_clear()


def test_cpu_backend_refuses_device_arrays():
    with pytest.raises(dispatch.BackendUnavailableError, match="host arrays"):
        ps.scan(FakeCudaArray(), backend="cpu")


def test_available_backends_lists_both():
    names = [b["name"] for b in ps.available_backends()]
    assert names == ["triton", "cpu"]
    cpu = ps.available_backends()[1]
    # one device, the host, with what runs there ("cpu (compiled kernels: Numba)" or "cpu (NumPy only; ...)")
    assert cpu["available"] and len(cpu["devices"]) == 1 and cpu["devices"][0].startswith("cpu")


@pytest.mark.parametrize("name", dispatch.BACKEND_NAMES)
def test_each_backend_conforms_to_the_protocol(name):
    import inspect

    from prefixscan.backends.base import Backend

    backend = dispatch.get_backend(name)
    assert isinstance(backend, Backend)
    assert backend.NAME == name
    assert backend.NATIVE_LIBRARY in ("numpy", "torch")
    for flag in ("TAKES_ALGORITHM", "TAKES_STRATEGY"):
        assert isinstance(getattr(backend, flag), bool)
    for member, spec in vars(Backend).items():
        if member.startswith("_") or not callable(spec):
            continue
        expected = [p for p in inspect.signature(spec).parameters if p != "self"]
        assert list(inspect.signature(getattr(backend, member)).parameters) == expected, member


def test_capability_flags_route_algorithm_and_strategy():
    cpu, triton = dispatch.get_backend("cpu"), dispatch.get_backend("triton")
    assert cpu.TAKES_ALGORITHM and not cpu.TAKES_STRATEGY
    assert triton.TAKES_STRATEGY and not triton.TAKES_ALGORITHM
    with pytest.raises(ValueError, match="GPU strategy"):
        ps.scan(np.arange(4), strategy="chained")


def test_clear_caches_drops_plans():
    from prefixscan import api

    held = ps.make_scan("add")
    held(np.arange(6))
    ps.scan(np.arange(6))
    assert held._plans and api._SCANS
    ps.clear_caches()
    assert not held._plans and not api._SCANS
    np.testing.assert_array_equal(held(np.arange(6)), np.cumsum(np.arange(6)))
