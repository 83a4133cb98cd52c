"""The ahead-of-time compiled sums (prefixscan.backends.triton.aot), on the CPU.

What runs without a GPU: the builder compiles a variant for sm_90 and writes its cubin
and JSON; the JSON's parameters are the ones the planned replay passes to the compiled
kernel; the launch plan is the one ``launch_lookback`` makes; the loader refuses every
mismatch (the CUDA pieces mocked) and packs the parameters of a launch it accepts;
importing it does not import triton.  tests/backends/triton/test_aot_gpu.py runs them.
"""

from __future__ import annotations

import ctypes
import json
import os
import subprocess
import sys
import threading
import time
import zlib
from types import SimpleNamespace

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

from prefixscan.monoid import BUILTIN_OPS  # noqa: E402
from prefixscan.backends.triton import aot  # noqa: E402
from prefixscan.backends.triton.aot.variants import (DATA_DIR, I32_MAX, TRITON_TYPES, load_spec,  # noqa: E402
                                                     plan_1d, triton_version, variant_name)
from prefixscan.backends.triton.engine.state import state_for  # noqa: E402
from prefixscan.backends.triton.planning import planner, shipped  # noqa: E402
from prefixscan.backends.triton.planning.keys import entry_key  # noqa: E402
from prefixscan.backends.triton.planning.tiles import TileConfig  # noqa: E402
from prefixscan.backends.triton.runtime import launch as runtime  # noqa: E402
from tests.repo_scripts import ROOT, load_script  # noqa: E402

SHIPPED = sorted(p.stem for p in DATA_DIR.glob("*.json"))
MULTI = "scan1d-int32-int64-b4096-w4-r0-m0-s2x16-multi"
SINGLE = "scan1d-int32-int64-b1024-w4-r0-m0-s2x16-single"


def _builder():
    return load_script("tools/aot_build.py", "aot_build")


# -- the builder and the shipped set ---------------------------------------------------------


def test_the_shipped_set_is_what_the_builder_lists():
    assert sorted(_builder().variants()) == SHIPPED
    assert MULTI in SHIPPED and SINGLE in SHIPPED


def test_the_builder_writes_a_cubin_and_its_json(tmp_path):
    """Compiled in a process of its own: the kernels must be Triton's JIT functions, not
    the interpreter's (which a test session without a GPU runs)."""
    name = "scan1d-float32-float32-b1024-w4-r0-m96-s1x32-single"
    env = dict(os.environ, TRITON_INTERPRET="0", PYTHONPATH=str(ROOT))
    subprocess.run([sys.executable, "tools/aot_build.py", "--only", name, "--out", str(tmp_path)], cwd=ROOT,
                   env=env, check=True, capture_output=True)
    spec = json.loads((tmp_path / f"{name}.json").read_text())
    cubin = zlib.decompress((tmp_path / spec["cubin"]).read_bytes())
    assert cubin[:4] == b"\x7fELF" and len(cubin) == spec["cubin_bytes"]
    assert spec["triton"] == triton_version() and spec["target"]["arch"] == 90
    assert spec["name"] == "scan_1d_kernel" and spec["num_warps"] == 4 and spec["maxnreg"] == 96
    # The shipped file was built the same way (same launch; the compiler gave the same code).
    assert spec == load_spec(name)


def test_the_triton_version_is_its_metadatas(tmp_path):
    from importlib import metadata

    from prefixscan.backends.triton.aot.variants import version_beside

    triton_version.cache_clear()
    assert triton_version() == metadata.version("triton")
    package = tmp_path / "triton"
    package.mkdir()
    assert version_beside(package) is None  # no dist-info: importlib.metadata decides
    info = tmp_path / "triton-3.6.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: triton\nVersion: 3.6.0\n\nVersion: 9\n")
    assert version_beside(package) == "3.6.0"
    (tmp_path / "triton-3.5.1.dist-info").mkdir()  # a stale second install: ambiguous
    assert version_beside(package) is None


def test_every_shipped_variant_launches_as_the_loader_does():
    for name in SHIPPED:
        spec = load_spec(name)
        assert spec["num_ctas"] == 1 and spec["shared"] <= 49152, name
        assert [p["name"] for p in spec["params"][-2:]] == ["global_scratch", "profile_scratch"]
        assert all(p["align"] == 16 for p in spec["params"][:-2] if p["type"].startswith("*")), name
        assert (DATA_DIR / spec["cubin"]).stat().st_size < 40_000


# -- the launch the loader makes is the route's ----------------------------------------------


def _job(x, stream=0):
    """The ScanJob the route builds for ps.cumsum(x) (a 1-D CPU tensor) on ``stream``."""
    from prefixscan.backends.triton.device.combine import combine_functions
    from prefixscan.backends.triton.engine.state import identity_tensor
    from prefixscan.backends.triton.scan.job import ScanJob
    from prefixscan.monoid import BUILTIN_OPS

    acc = torch.int64 if x.dtype in (torch.int32, torch.int64) else x.dtype
    y = torch.empty(x.shape, dtype=acc)
    ident = identity_tensor(-0.0 if acc.is_floating_point else 0, acc, x.device)
    config = SimpleNamespace(monoid=BUILTIN_OPS["add"], inclusive=True, reverse=False, deterministic=False,
                             strategy="decoupled_lookback", order=1)
    pair, flat = combine_functions(BUILTIN_OPS["add"], 1, False)
    return ScanJob((x,), (y,), (ident,), None, pair, flat, True, (acc,), 1, x.numel(), 1, config, stream, False)


@pytest.fixture
def recorded(monkeypatch):
    """Launches recorded, not run: nothing is compiled or interpreted, so these tests run
    alike with and without a GPU (a process without ``TRITON_INTERPRET=1`` holds JIT
    kernels, which the interpreter cannot run, and the reverse)."""
    seen = []
    monkeypatch.setattr(runtime, "launch_kernel", seen.append)
    return seen


@pytest.mark.parametrize("dtype", ["int32", "float64"])
@pytest.mark.parametrize("n", [20, 64, 65, 200])
@pytest.mark.parametrize("tile", [TileConfig(64, 1, 8), TileConfig(64, 2, 32, raking=16, occupancy=4)])
def test_plan_is_launch_lookbacks(recorded, dtype, n, tile):
    from prefixscan.backends.triton.engine import state as engine_state
    from prefixscan.backends.triton.scan.lookback import launch_lookback

    x = torch.from_numpy(np.random.default_rng(n).integers(-50, 50, n).astype(dtype))
    stream = 7_000_004  # a state of its own: the recorded launch counts tiles no kernel takes
    job = _job(x, stream)
    try:
        with planner.override(tile):
            launch_lookback(job)
    finally:
        engine_state._states.pop((x.device, stream), None)
    (launch,) = recorded
    plan = plan_1d(tile, n, job.accs[0])
    assert {k: list(v) for k, v in launch.constexprs.items() if k != "MONOID"} == aot.variants.constexprs(plan)
    assert (launch.grid, launch.num_warps, launch.maxnreg) == (plan.tiles, plan.num_warps, plan.maxnreg)


class _FakeCompiled:
    """Records what the replay passes to ``CompiledKernel.run``."""

    function = packed_metadata = None

    def __init__(self):
        self.calls = []

    def run(self, *args):
        self.calls.append(args)


def _leaf_types(args):
    out = []
    for a in args:
        if isinstance(a, tuple):
            out += _leaf_types(a)
        elif torch.is_tensor(a):
            out.append("*" + TRITON_TYPES[str(a.dtype)[6:]])
        else:
            out.append(runtime.int_width(a))
    return out


@pytest.mark.parametrize("n, name", [(200, MULTI), (20, SINGLE)])
def test_json_parameters_are_what_the_replay_passes(recorded, n, name):
    """The replay (runtime/replay.py) calls ``CompiledKernel.run(grid, 1, 1, stream, function,
    metadata, None, None, None, *args)``; Triton's launcher drops the constexprs, flattens
    the tuples and appends the two scratch pointers: the JSON lists exactly that."""
    from prefixscan.backends.triton.runtime.replay import Launched, Relaunch
    from prefixscan.backends.triton.scan.lookback import launch_lookback

    x = torch.from_numpy(np.random.default_rng(n).integers(-50, 50, n).astype("int32"))
    # A stream of its own: the recorded launch and the fake replay below count tiles no
    # kernel takes, and the state they leave must not be the one later scans use.
    stream = 7_000_003
    job = _job(x, stream)
    try:
        with planner.override(TileConfig(64, 1, 8)):
            launched = launch_lookback(job)
        fake = _FakeCompiled()
        relaunch = Relaunch.of(Launched(launched.launch, fake, launched.renewal), torch.device("cpu"))
        relaunch.torch = SimpleNamespace(_C=SimpleNamespace(_cuda_getCurrentRawStream=lambda index: stream,
                                                            _cuda_isCurrentStreamCapturing=lambda: False))
        assert relaunch(((x,), job.ys, job.idents, job.idents))
    finally:
        from prefixscan.backends.triton.engine import state as engine_state

        engine_state._states.pop((x.device, stream), None)
    (call,) = fake.calls
    args = call[9:]
    n_constexpr = 4  # MONOID, PROTOCOL, SCAN, TILE
    runtime_args = args[: len(args) - n_constexpr]
    spec = load_spec(name)
    assert _leaf_types(runtime_args) == [p["type"] for p in spec["params"][:-2]]
    packed = aot.pack(spec["params"], runtime_args)
    assert not isinstance(packed, str), packed
    assert len(packed[0]) == len(spec["params"])
    # kernel_args builds the same list as launch_lookback.
    status = SimpleNamespace(buffers=launched.launch.args[1], counter=launched.launch.args[2],
                             tile_base=launched.launch.args[5], epoch=launched.launch.args[6])
    mine = aot.kernel_args(launched.launch.args[0], status, n, launched.launch.grid)
    assert [id(a) if torch.is_tensor(a) else a for a in aot._leaves(mine, [])] == \
        [id(a) if torch.is_tensor(a) else a for a in aot._leaves(launched.launch.args, [])]


# -- the loader's refusals (CUDA mocked) -----------------------------------------------------


class _FakeTensor:
    def __init__(self, n=100_000, dtype=torch.int32, ptr=1 << 20, contiguous=True, index=0):
        self.n, self.dtype, self.ptr, self.contiguous = n, dtype, ptr, contiguous
        self.device = SimpleNamespace(type="cuda", index=index)

    def numel(self):
        return self.n

    def is_contiguous(self):
        return self.contiguous

    def data_ptr(self):
        return self.ptr


def _request(x=None, **changes):
    x = x if x is not None else _FakeTensor()
    config = dict(monoid=BUILTIN_OPS["add"], inclusive=True, reverse=False, order=1, tuple_size=1,
                  deterministic=False, strategy="auto")
    config.update({k: changes.pop(k) for k in list(changes) if k in config})
    acc = "int64" if x.dtype in (torch.int32, torch.int64) else str(x.dtype)[6:]
    base = dict(config=SimpleNamespace(**config), struct=False, init=None, axis=None, shape=(x.numel(),),
                lane_len=x.numel(), acc_dtypes=(acc,), out_dtypes=(acc,), out=None, out_shape=(x.numel(),),
                fields=[SimpleNamespace(obj=x, library="torch", device="cuda")], identity=(np.int64(0),))
    base.update(changes)
    return SimpleNamespace(**base)


def _h200_tile(device, config, acc, n):
    table = shipped.load_shipped(shipped.shipped_path("NVIDIA H200"))
    return table.entries[entry_key(acc.itemsize, acc.is_floating_point, "builtin", 1, n)].tile_for(
        "decoupled_lookback")


class _Cuda:
    def __init__(self, capability=(9, 0), current=0, capturing=False):
        self.cap, self.current, self.capture = capability, current, capturing

    def capability(self, index):
        return self.cap

    def current_device(self):
        return self.current

    def capturing(self):
        return self.capture

    def stream(self, device):
        return 0


def _launcher(**changes):
    kw = dict(get_driver=lambda: None, cuda=_Cuda(), tile=_h200_tile)
    kw.update(changes)
    return aot.Launcher(**kw)


@pytest.fixture
def compiled_mode(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    monkeypatch.delenv(aot.ENV, raising=False)


def test_a_matching_request_is_accepted(compiled_mode):
    x, out, spec, plan = _launcher().why_not(_request())
    assert spec == load_spec(MULTI) and plan.tiles == -(-100_000 // 4096) and out is None
    _, _, spec, _ = _launcher().why_not(_request(_FakeTensor(n=1000)))
    assert spec == load_spec(SINGLE)


@pytest.mark.parametrize("change, reason", [
    (lambda: _request(monoid=BUILTIN_OPS["max"]), "not a sum"),
    (lambda: _request(reverse=True), "not a forward inclusive sum of order 1"),
    (lambda: _request(inclusive=False), "not a forward inclusive sum of order 1"),
    (lambda: _request(order=2), "not a forward inclusive sum of order 1"),
    (lambda: _request(deterministic=True), "not a forward inclusive sum of order 1"),
    (lambda: _request(init=(1,)), "not one unseeded field"),
    (lambda: _request(strategy="chained"), "strategy 'chained'"),
    (lambda: _request(axis=1, shape=(4, 25_000), lane_len=25_000), "several lanes or interleaved streams"),
    (lambda: _request(_FakeTensor(ptr=(1 << 20) + 8)), "input not contiguous or not 16-byte aligned"),
    (lambda: _request(_FakeTensor(contiguous=False)), "input not contiguous or not 16-byte aligned"),
    (lambda: _request(_FakeTensor(dtype=torch.int16), acc_dtypes=("int64",), out_dtypes=("int64",)),
     "dtypes int16 -> int64"),
    (lambda: _request(out=[SimpleNamespace(obj=_FakeTensor(dtype=torch.int64, ptr=(1 << 24) + 4),
                                           library="torch")]),
     "out not contiguous, misaligned, of another dtype or device, or the input"),
    (lambda: _request(out=[SimpleNamespace(obj=_FakeTensor(dtype=torch.int32), library="torch")]),
     "out not contiguous, misaligned, of another dtype or device, or the input"),
])
def test_mismatched_requests_are_refused(compiled_mode, change, reason):
    assert _launcher().why_not(change()) == reason


def test_device_version_and_variant_mismatches_are_refused(compiled_mode, monkeypatch):
    assert _launcher(cuda=_Cuda(capability=(8, 0))).why_not(_request()) == "compute capability (8, 0)"
    assert _launcher(cuda=_Cuda(capability=(10, 0))).why_not(_request()) == "compute capability (10, 0)"
    assert _launcher(cuda=_Cuda(current=1)).why_not(_request()) == "not the current device"
    assert _launcher(version=lambda: "3.5.0").why_not(_request()).startswith("built with triton 3.6")
    assert _launcher(specs=lambda name: None).why_not(_request()).endswith("not shipped")
    small = dict(load_spec(MULTI), max_length=50_000)
    assert _launcher(specs=lambda name: small).why_not(_request()) == "length 100000 outside the variant"
    other = TileConfig(512, 4, 32)
    assert _launcher(tile=lambda *a: other).why_not(_request()).endswith("not shipped")
    with planner.override(other):
        assert _launcher(tile=aot.planned_tile).why_not(_request()) == "a forced tile"
    monkeypatch.setenv(aot.ENV, "0")
    assert _launcher().why_not(_request()) == f"{aot.ENV}=0"
    monkeypatch.setenv(aot.ENV, "1")
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    assert _launcher().why_not(_request()) == "the interpreter"


class _FakeDriver:
    """A CUDA driver that loads nothing and records launches (the parameters read back)."""

    def __init__(self, context=(0xC0, 0), fail_launch=False, fail_load=False):
        self.context, self.fail_launch, self.fail_load = context, fail_launch, fail_load
        self.loads, self.launches = [], []
        self.lock = threading.Lock()

    def current_context(self):
        if self.context == "error":
            raise aot.driver.CudaError("cuCtxGetCurrent failed: CUDA error 3")
        return self.context

    def load(self, cubin, name, shared, device):
        assert cubin[:4] == b"\x7fELF"
        self.loads.append((name, shared, device))
        if self.fail_load:
            raise aot.driver.CudaError("cuModuleLoadData failed: CUDA error 209 (no kernel image)")
        return 0xF00

    def launch(self, function, grid, num_warps, shared, stream, params):
        if self.fail_launch:
            raise aot.driver.CudaError("cuLaunchKernel failed: CUDA error 700")
        # Read now: the values live only for the call, as with cuLaunchKernel.
        read = [(ctypes.cast(params[i], ctypes.POINTER(ctypes.c_uint64)).contents.value,
                 ctypes.cast(params[i], ctypes.POINTER(ctypes.c_int32)).contents.value) for i in range(len(params))]
        self.launches.append((function, grid, num_warps, shared, stream, read))


def _cpu_case(n):
    x = torch.from_numpy(np.random.default_rng(n).integers(-50, 50, n).astype("int32"))
    y = torch.empty(n, dtype=torch.int64)
    ident = torch.zeros(1, dtype=torch.int64)
    tile = TileConfig(4096, 4, 32)
    plan = plan_1d(tile, n, torch.int64)
    return x, y, ident, plan, load_spec(variant_name("int32", "int64", plan))


def test_run_packs_the_parameters_and_renews_the_status(compiled_mode):
    stream = 7_000_001  # a state of its own
    x, y, ident, plan, spec = _cpu_case(100_000)
    drv = _FakeDriver()
    cuda = _Cuda()
    cuda.stream = lambda device: stream
    launcher = _launcher(get_driver=lambda: drv, cuda=cuda)
    state = state_for(x.device, stream)
    try:
        for call in range(2):
            before = state.tiles_issued
            assert launcher.run(spec, plan, x, y, ident)
            fn, grid, warps, shared, s, params = drv.launches[-1]
            assert (fn, grid, warps, shared, s) == (0xF00, plan.tiles, 4, spec["shared"], stream)
            words = [u64 for u64, _ in params[:9]]
            ints = [i32 for _, i32 in params[9:15]]
            tail = [u64 for u64, _ in params[15:]]
            status = state.status.data_ptr()
            assert words == [x.data_ptr(), y.data_ptr(), ident.data_ptr(), ident.data_ptr(), status, status, status,
                             status, state.counter.data_ptr()]
            assert ints == [100_000, plan.tiles, before, state.epoch, plan.tiles, 1]
            assert tail == [0, 0] and state.tiles_issued == before + plan.tiles
        assert len(drv.loads) == 1 and launcher.launches == 2  # loaded once per context
    finally:
        from prefixscan.backends.triton.engine import state as engine_state

        engine_state._states.pop((x.device, stream), None)


def test_threads_load_a_variant_once(compiled_mode):
    """Threads that meet a variant at once load its module once (the driver's lock)."""
    x, y, ident, plan, spec = _cpu_case(100_000)
    drv = _FakeDriver()
    load = drv.load
    barrier = threading.Barrier(4)

    def slow_load(*args):
        time.sleep(0.05)  # the other threads reach the check meanwhile
        return load(*args)

    drv.load = slow_load
    launcher = _launcher(get_driver=lambda: drv)
    got = []

    def worker():
        barrier.wait()
        got.append(launcher.function(spec, 0))

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(drv.loads) == 1 and [g[:2] for g in got] == [(drv, 0xF00)] * 4
    assert len({id(g[2]) for g in got}) == 1  # one packing of the variant's parameters


def test_run_refuses_per_call_mismatches(compiled_mode, monkeypatch):
    stream = 7_000_002
    x, y, ident, plan, spec = _cpu_case(100_000)
    cuda = _Cuda()
    cuda.stream = lambda device: stream
    drv = _FakeDriver()
    ok = _launcher(get_driver=lambda: drv, cuda=cuda)
    assert not _launcher(get_driver=lambda: None, cuda=cuda).run(spec, plan, x, y, ident)  # no libcuda
    assert not _launcher(get_driver=lambda: _FakeDriver(context=None), cuda=cuda).run(spec, plan, x, y, ident)
    assert not _launcher(get_driver=lambda: _FakeDriver(context=(0xC0, 1)), cuda=cuda).run(spec, plan, x, y, ident)
    assert not _launcher(get_driver=lambda: _FakeDriver(context="error"), cuda=cuda).run(spec, plan, x, y, ident)
    unloadable = _FakeDriver(fail_load=True)
    refuses = _launcher(get_driver=lambda: unloadable, cuda=cuda)
    assert not refuses.run(spec, plan, x, y, ident) and not refuses.run(spec, plan, x, y, ident)
    assert len(unloadable.loads) == 1 and unloadable.launches == []  # not tried again
    capturing = _Cuda(capturing=True)
    capturing.stream = cuda.stream
    capture = _launcher(get_driver=lambda: drv, cuda=capturing)
    assert not capture.run(spec, plan, x, y, ident)  # no module loading inside a capture
    with runtime.recording():
        assert not ok.run(spec, plan, x, y, ident)
    import triton

    with monkeypatch.context() as m:
        m.setattr(triton.knobs.runtime, "launch_enter_hook", lambda metadata: None)
        assert not ok.run(spec, plan, x, y, ident)
    state = state_for(x.device, stream)
    try:
        # Past a 32-bit tile base the engine starts the count again: the launch takes base 0.
        state.counter = torch.full((1,), 123, dtype=torch.int64)  # ids taken by the launches before
        state.tiles_issued = I32_MAX - plan.tiles + 1
        assert ok.run(spec, plan, x, y, ident)
        (*_, params), = drv.launches
        assert params[11][1] == 0 and state.tiles_issued == plan.tiles and int(state.counter[0]) == 0
        drv.launches.clear()
        state.tiles_issued = 0
        # A mismatch found inside the reservation gives it back (the counter zeroed, nothing issued).
        wrong = x.to(torch.int64)
        assert not ok.run(spec, plan, wrong, y, ident)
        assert state.tiles_issued == 0 and int(state.counter[0]) == 0
        assert drv.launches == []
        # A failed launch raises, and the reservation is given back the same way.
        bad = _launcher(get_driver=lambda: _FakeDriver(fail_launch=True), cuda=cuda)
        state.tiles_issued = 5
        with pytest.raises(aot.driver.CudaError):
            bad.run(spec, plan, x, y, ident)
        assert state.tiles_issued == 0
        # Loaded before the capture: captured with the one-shot status of the engine (here
        # on the CPU nothing captures, so the shared state serves; on the GPU
        # test_aot_gpu.py checks the replays).
        assert ok.run(spec, plan, x, y, ident) and len(drv.launches) == 1
        capture.functions.update(ok.functions)
        assert capture.run(spec, plan, x, y, ident) and len(drv.launches) == 2
    finally:
        from prefixscan.backends.triton.engine import state as engine_state

        engine_state._states.pop((x.device, stream), None)


def test_pack_refuses_what_the_variant_does_not_take():
    spec = load_spec(SINGLE)
    x = torch.zeros(64, dtype=torch.int32)
    y, ident = torch.zeros(64, dtype=torch.int64), torch.zeros(1, dtype=torch.int64)
    status = SimpleNamespace(buffers=(ident, ident, (ident,), (ident,)), counter=ident, tile_base=0, epoch=0)
    args = aot.kernel_args(((x,), (y,), (ident,), (ident,)), status, 64, 1)
    assert not isinstance(aot.pack(spec["params"], args), str)
    assert aot.pack(spec["params"], args[:-1]) == "14 arguments for 15 parameters"
    big = aot.kernel_args(((x,), (y,), (ident,), (ident,)), status, 1 << 31, 1)
    assert aot.pack(spec["params"], big) == f"M: {1 << 31} is not i32"
    odd = aot.kernel_args(((x[1:],), (y,), (ident,), (ident,)), status, 63, 1)
    assert aot.pack(spec["params"], odd) == "io.0.0: not aligned to 16 bytes"
    other = aot.kernel_args(((x.float(),), (y,), (ident,), (ident,)), status, 64, 1)
    assert aot.pack(spec["params"], other) == "io.0.0: torch.float32 for *i32"


def test_importing_the_aot_path_does_not_import_triton():
    """Nor the tuner, which only a GPU without a shipped table needs (a third of the first
    scan's imports)."""
    code = ("import sys, prefixscan, prefixscan.backends.triton as b, prefixscan.backends.triton.aot, "
            "prefixscan.backends.triton.aot.driver, prefixscan.backends.triton.tuner.first_use; "
            "print([m for m in ('triton', 'prefixscan.backends.triton.tuner.measure', "
            "'prefixscan.backends.triton.tuner.search', 'prefixscan.backends.triton.tuner.store') "
            "if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


class _FakeLib:
    """libcuda.so.1 stand-in: records each call, fills the outputs the driver passes by reference."""

    def __init__(self, optin=232448, static=1024):
        self.calls, self.optin, self.static = [], optin, static

    def __getattr__(self, name):
        lib = self

        class Fn:
            argtypes = restype = None

            def __call__(self, *args):
                lib.calls.append((name, args))
                outputs = {"cuCtxGetCurrent": 0xC0, "cuCtxGetDevice": 0, "cuModuleLoadData": 0x10,
                           "cuModuleGetFunction": 0xF0, "cuDeviceGetAttribute": lib.optin,
                           "cuFuncGetAttribute": lib.static}
                if name in outputs:
                    args[0]._obj.value = outputs[name]
                return 0

        fn = Fn()
        setattr(self, name, fn)
        return fn

    def __getitem__(self, name):  # (ctypes: a function of its own, without argtypes)
        return getattr(self, name)


def test_driver_loads_and_launches_as_tritons_launcher():
    lib = _FakeLib()
    drv = aot.driver.Driver(lib)
    assert drv.current_context() == (0xC0, 0)
    assert drv.load(b"\x7fELF", "scan_1d_kernel", 4096, 0) == 0xF0
    assert [c[0] for c in lib.calls[2:]] == ["cuModuleLoadData", "cuModuleGetFunction"]  # <= 48 KB: no opt-in
    lib.calls.clear()
    drv.load(b"\x7fELF", "scan_1d_kernel", 65536, 0)
    names = [c[0] for c in lib.calls]
    assert names == ["cuModuleLoadData", "cuModuleGetFunction", "cuDeviceGetAttribute", "cuFuncSetCacheConfig",
                     "cuFuncGetAttribute", "cuFuncSetAttribute"]
    assert lib.calls[-1][1][1:] == (aot.driver.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 232448 - 1024)
    lib.calls.clear()
    params = (ctypes.c_void_p * 2)()
    drv.launch(0xF0, 25, 4, 512, 0x5, params)
    (name, args), = lib.calls
    assert name == "cuLaunchKernel" and args[:9] == (0xF0, 25, 1, 1, 128, 1, 1, 512, 0x5) and args[9] is params
    assert args[10] is None
    lib.calls.clear()
    drv.launch(0xF0, 0, 4, 512, 0x5, params)  # an empty grid launches nothing, as Triton's launcher
    assert lib.calls == []
    failing = _FakeLib()
    failing.cuLaunchKernel = lambda *a: 700
    failing.cuGetErrorString = lambda code, out: 0
    with pytest.raises(aot.driver.CudaError, match="cuLaunchKernel failed: CUDA error 700"):
        aot.driver.Driver(failing).launch(0xF0, 1, 4, 0, 0, params)
