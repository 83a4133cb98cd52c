"""Fixtures of the dask tests: the synchronous scheduler (one thread, the graph
run in order, tracebacks from inside the tasks) and the chunks' array library."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def synchronous():
    """Each test computes with dask's synchronous scheduler (a context, not a global switch)."""
    dask = pytest.importorskip("dask")  # (the test modules skip without dask: so does this fixture)
    with dask.config.set(scheduler="synchronous"):
        yield


def _cupy_with_a_device() -> bool:
    try:
        import cupy

        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:  # noqa: BLE001 - no CuPy, no driver or no device: NumPy chunks only
        return False


@pytest.fixture(params=["numpy"] + ([pytest.param("cupy", marks=pytest.mark.gpu)] if _cupy_with_a_device() else []))
def chunks_on(request):
    """The library of the dask arrays' chunks: NumPy (the CPU backend scans them) or
    CuPy (the GPU backend), as a pair of functions: to the library, back to NumPy."""
    if request.param == "numpy":
        return lambda a: a, lambda a: a
    import cupy

    return cupy.asarray, cupy.asnumpy
