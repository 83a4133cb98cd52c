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


# ---------------------------------------------------------------------------
# The primitives' registry: each primitive's IMPLEMENTATIONS, found by dispatch.implementation.

PRIMITIVE_TABLES = {  # primitive package -> the entry points each of its modules defines
    "prefixscan.primitives.segmented": {"IMPLEMENTATIONS": ("segmented_scan",)},
    "prefixscan.primitives.compaction": {"IMPLEMENTATIONS": ("compact", "partition")},
    "prefixscan.primitives.recurrence": {"IMPLEMENTATIONS": ("linear_recurrence", "linear_recurrence_total"),
                                         "FUSED_BACKWARD": ("linear_recurrence_backward",)},
    "prefixscan.primitives.delta": {"IMPLEMENTATIONS": ("delta_encode",)},
    "prefixscan.primitives.sort": {"IMPLEMENTATIONS": ("sort", "unique", "run_length_encode")},
}


@pytest.mark.parametrize("package", sorted(PRIMITIVE_TABLES))
def test_each_primitive_table_names_its_modules_and_their_entry_points(package):
    import importlib
    import importlib.util
    import inspect

    pkg = importlib.import_module(package)
    for table_name, entries in PRIMITIVE_TABLES[package].items():
        table = getattr(pkg, table_name)
        assert table and set(table) <= set(dispatch.BACKEND_NAMES), (package, table_name)
        for backend, module_name in table.items():
            assert module_name.startswith(package + "."), module_name
            if backend == "triton" and importlib.util.find_spec("triton") is None:
                continue  # the GPU modules import triton
            module = importlib.import_module(module_name)
            for entry in entries:
                assert inspect.isfunction(getattr(module, entry, None)), f"{module_name} has no {entry}"


def test_a_backend_missing_from_a_table_is_refused_by_name():
    table = {"cpu": "prefixscan.primitives.delta.cpu"}
    with pytest.raises(dispatch.PrimitiveUnavailableError,
                       match=r"^delta_encode: the triton backend has no implementation of delta_encode "
                             r"\(backends that have one: 'cpu'\)$"):
        dispatch.implementation("delta_encode", table, dispatch.get_backend("triton"))
    assert issubclass(dispatch.PrimitiveUnavailableError, ps.BackendUnavailableError)
    found = dispatch.implementation("delta_encode", table, dispatch.get_backend("cpu"))
    assert found.__name__ == "prefixscan.primitives.delta.cpu"


def test_a_primitive_without_an_implementation_refuses_before_any_work(monkeypatch):
    """A backend absent from a primitive's table: the error names both, nothing runs."""
    from prefixscan.primitives import compaction, delta, segmented
    from prefixscan.primitives.compaction import cpu as compaction_cpu
    from prefixscan.primitives.delta import cpu as delta_cpu
    from prefixscan.primitives.segmented import cpu as segmented_cpu

    for table in (delta.IMPLEMENTATIONS, compaction.IMPLEMENTATIONS, segmented.IMPLEMENTATIONS):
        monkeypatch.delitem(table, "cpu")  # restored after the test
    for module, name in ((delta_cpu, "delta_encode"), (compaction_cpu, "compact"), (compaction_cpu, "partition"),
                         (segmented_cpu, "segmented_scan")):
        monkeypatch.setattr(module, name, lambda *a, **k: pytest.fail("an implementation ran"))
    x = np.arange(9, dtype=np.int64)
    out = np.full(9, -7, dtype=np.int64)
    calls = {
        "delta_encode": lambda: ps.delta_encode(x),
        "compact": lambda: ps.compact(x, x > 3),
        "partition": lambda: ps.partition(x, x > 3),
        "segmented_scan": lambda: ps.segmented_scan(x, offsets=[0, 4], out=out),
    }
    for name, call in calls.items():
        with pytest.raises(dispatch.PrimitiveUnavailableError, match=rf"^{name}: the cpu backend has no "):
            call()
    np.testing.assert_array_equal(out, np.full(9, -7))
