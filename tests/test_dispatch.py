"""Backend dispatch: which backend runs, and the errors when none can."""

import numpy as np
import pytest

import prefixscan as ps
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
        with pytest.raises(dispatch.BackendUnavailableError, match=r"pip install 'prefixscan\[gpu\]'"):
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
    assert cpu["available"] and cpu["devices"] == ["cpu"]
