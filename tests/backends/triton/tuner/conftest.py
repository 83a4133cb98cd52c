"""Fixtures of the tuner tests: a fake GPU with its own cache directory, scans whose
launches are recorded instead of run, a fake device tuning, a GPU of a given name.

The imports sit inside the fixtures: torch and Triton are optional, and the test
modules that use these fixtures skip themselves (through .fakes) without them.
"""

from __future__ import annotations

import pytest


@pytest.fixture
def fake_gpu(monkeypatch, tmp_path):
    """A CUDA device named GPU whose tables live in tmp_path; first-use tuning on."""
    from prefixscan.backends.triton.planning import planner
    from prefixscan.backends.triton.tuner import first_use
    from prefixscan.backends.triton.planning import table

    from .fakes import GPU, forget

    monkeypatch.setenv("PREFIXSCAN_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("PREFIXSCAN_AUTOTUNE", "1")
    monkeypatch.setattr(table, "gpu_name", lambda device: GPU)
    # an architecture no shipped table has: first-use tuning applies
    monkeypatch.setattr(table, "gpu_properties", lambda device: table.GpuProperties(GPU, 16, (1, 0)))
    monkeypatch.setattr(first_use, "_capturing", lambda: False)
    forget()
    yield tmp_path
    forget()
    planner.set_override(None)


@pytest.fixture
def launches(fake_gpu, monkeypatch):
    """Scans of CPU tensors take the GPU path with a table; returns the recorded launches.

    The launch is faked: the scans run on CPU tensors as if on a GPU with a table (no
    interpreter), and runtime.launch_kernel records the kernel, the warps and the
    constexprs instead of compiling."""
    from prefixscan._environment import interpreter_mode
    from prefixscan.backends.triton.scan import lookback
    from prefixscan.backends.triton.planning import planner
    from prefixscan.backends.triton.runtime import launch as runtime
    from prefixscan.backends.triton.engine import state as status
    from prefixscan.backends.triton.scan import route as scan_path
    from prefixscan.backends.triton.tuner import first_use
    from prefixscan.backends.triton.planning import table

    if not interpreter_mode():
        pytest.skip("CPU tensors reach the Triton backend only with TRITON_INTERPRET=1")
    seen = []

    def record(launch):
        kernel = launch.kernel
        name = kernel.fn.__name__ if hasattr(kernel, "fn") else str(kernel)
        constexprs = launch.constexprs
        if name in lookback.CONSTEXPR_NAMES:  # the scan kernels' grouped constexprs, by name
            constexprs = lookback.named_constexprs(kernel, constexprs)
        seen.append(dict(kernel=name, num_warps=launch.num_warps, interpreter=launch.interpreter,
                         maxnreg=launch.maxnreg, **constexprs))

    monkeypatch.setenv("PREFIXSCAN_AUTOTUNE", "0")
    monkeypatch.setattr(table, "TABLE_DEVICES", ("cuda", "cpu"))
    monkeypatch.setattr(first_use, "interpreter_mode", lambda: False)
    monkeypatch.setattr(scan_path, "interpreter_mode", lambda: False)
    monkeypatch.setattr(runtime, "launch_kernel", record)
    monkeypatch.setattr(status, "_states", {})  # fake launches must not advance the real tile counters
    planner.clear_memo()
    return seen


@pytest.fixture
def fake_tuner(monkeypatch):
    """Replaces the device tuning with a fake that records its calls."""
    from prefixscan.backends.triton.tuner import measure

    from .fakes import two_tile_result

    calls = []
    result, T1, _ = two_tile_result()

    def fake(device, accs, monoid=None, K=1, n=0, **kw):
        calls.append(dict(accs=accs, monoid=monoid, K=K, n=n, **kw))
        return result

    monkeypatch.setattr(measure, "tune_workload", fake)
    return calls, T1


@pytest.fixture
def as_gpu(fake_gpu, monkeypatch):
    """as_gpu(name, sm_count, (major, minor)): the fake CUDA device DEV becomes that GPU
    (properties None: asking for them fails the test -- a GPU with a table of its own
    must not need them)."""
    from prefixscan.backends.triton.planning import table

    from .fakes import forget

    def become(name, sm_count=None, capability=None):
        monkeypatch.setattr(table, "gpu_name", lambda device: name)

        def properties(device):
            assert sm_count is not None, "properties asked for a GPU with a shipped table of its own"
            return table.GpuProperties(name, sm_count, capability)

        monkeypatch.setattr(table, "gpu_properties", properties)
        forget()
        return name

    return become
