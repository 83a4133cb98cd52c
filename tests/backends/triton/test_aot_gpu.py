"""The ahead-of-time compiled sums on an sm_90 GPU (skipped elsewhere).

The variant the shipped kernels launch is the Triton path's (``PREFIXSCAN_AOT=0``), and
their results equal its results bit for bit where the order of combination is fixed, and
``torch.cumsum``'s where the sum is exact (integer sums, and float sums of small
integers); poisoned ``out``; a stream of new lengths; the planned replay; graph capture;
and a fresh process whose first ``prefixscan.cumsum`` and a stream of 300 new lengths
do not import triton.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")

if not torch.cuda.is_available() or torch.cuda.get_device_capability() != (9, 0):
    pytest.skip("needs a GPU of compute capability 9.0", allow_module_level=True)

import prefixscan as ps  # noqa: E402
from prefixscan._normalize import make_config  # noqa: E402
from prefixscan.backends.triton import aot  # noqa: E402
from prefixscan.backends.triton.runtime import launch as runtime  # noqa: E402
from tests.repo_scripts import ROOT  # noqa: E402

pytestmark = pytest.mark.gpu

PRIMES = (1031, 65537, 131071, 1_000_003)
SIZES = (0, 1, 1023, 1024, 1025, 2047, 2048, 2049, 4095, 4096, 4097, 8191, 8192, 8193, 65536, 65537,
         (1 << 21) + 1, (1 << 22) + 1, (1 << 24) + 3) + PRIMES
DTYPES = ("int32", "int64", "float32", "float64")


def _bits(t):
    return t.view({1: torch.int8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[t.element_size()])


def _data(rng, dtype, n, integral):
    if dtype.startswith("int") or integral:
        values = rng.integers(-8, 9, n)
        values[values == 0] = 3  # never zeros
    else:
        values = rng.standard_normal(n)
    return torch.from_numpy(values.astype(dtype)).cuda()


def _config(acc_dtype: str):
    return make_config("add", axis=None, inclusive=True, reverse=False, order=1, tuple_size=1, dtype=acc_dtype,
                       backend=None, algorithm=None)


def _launched(launch) -> tuple:
    return ({k: list(v) for k, v in launch.constexprs.items() if k != "MONOID"}, launch.num_warps, launch.maxnreg,
            launch.grid)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("integral", [True, False])
def test_shipped_kernels_match_triton_and_torch(monkeypatch, dtype, integral):
    """The shipped variant is the one the Triton path launches (constexprs, warps, register
    cap, grid), and the results agree bit for bit wherever the order of combination is
    fixed: integer sums, float sums of small integers (exact in any order), and one-tile
    lanes.  A float sum over several tiles is not reproducible from run to run on either
    path: the decoupled look-back folds whichever predecessors have published by the time
    it reads them (engine/protocol.py, ``lookback``; docs/semantics.md, ``deterministic``),
    so there both paths are checked against float64 sums."""
    if integral and dtype.startswith("int"):
        pytest.skip("integer data is integral")
    launcher = aot.default_launcher()
    rng = np.random.default_rng(len(dtype))
    for n in SIZES:
        x = _data(rng, dtype, n, integral)
        before = launcher.launches
        y = ps.cumsum(x)
        torch.cuda.synchronize()
        served = launcher.launches - before
        assert served == (1 if n >= 1000 else 0), (n, served)
        with monkeypatch.context() as m:
            m.setenv(aot.ENV, "0")
            with runtime.recording() as seen:
                ref = ps.cumsum(x)
        chosen = launcher.variant(x.device, _config(str(y.dtype)[6:]), dtype, y.dtype, n) if n else "empty"
        if served:
            (launch,) = seen
            spec, plan = chosen
            assert (spec["constexprs"], spec["num_warps"], spec["maxnreg"], plan.tiles) == _launched(launch), n
        exact = integral or not dtype.startswith("float") or (served and chosen[1].single)
        assert y.dtype == ref.dtype
        if exact:
            assert torch.equal(_bits(y), _bits(ref)), n
        expect = torch.cumsum(x.to(y.dtype) if y.dtype.is_floating_point else x.long(), 0)
        if integral or not dtype.startswith("float"):
            assert torch.equal(y, expect), n
        else:
            wide = torch.cumsum(x.double(), 0)
            tol = 1e-3 if dtype == "float32" else 1e-9
            for result in (y, ref):
                torch.testing.assert_close(result.double(), wide, rtol=tol, atol=tol * max(1.0, float(n) ** 0.5))
        # Into a poisoned out: every element written.
        out = torch.full_like(y, 12345 if not y.dtype.is_floating_point else float("nan"))
        before = launcher.launches
        assert ps.cumsum(x, out=out) is out
        torch.cuda.synchronize()
        assert launcher.launches - before == (1 if n >= 1000 else 0)
        if exact:
            assert torch.equal(_bits(out), _bits(y)), n
        else:
            assert not out.isnan().any(), n
            torch.testing.assert_close(out.double(), wide, rtol=tol, atol=tol * max(1.0, float(n) ** 0.5))


def test_int32_scan_keeps_int32_on_the_shipped_kernels(monkeypatch):
    """``scan`` of int32 sums in int32 (wrapping as torch's int32 cumsum does): the shipped
    int32 -> int32 variants serve it from 1024 elements, the Triton path's variant, bit for
    bit its result and torch's, planned calls into a poisoned out included."""
    launcher = aot.default_launcher()
    rng = np.random.default_rng(32)
    s = ps.make_scan()
    for n in SIZES:
        x = torch.from_numpy(rng.integers(-(1 << 30), 1 << 30, n, dtype=np.int32)).cuda()  # wraps past 2^31
        before = launcher.launches
        y = ps.scan(x)
        torch.cuda.synchronize()
        assert launcher.launches - before == (1 if n >= 1000 else 0), n
        with monkeypatch.context() as m:
            m.setenv(aot.ENV, "0")
            with runtime.recording() as seen:
                ref = ps.scan(x)
        if n >= 1000:
            spec, plan = launcher.variant(x.device, _config("int32"), "int32", torch.int32, n)
            (launch,) = seen
            assert (spec["constexprs"], spec["num_warps"], spec["maxnreg"], plan.tiles) == _launched(launch), n
        assert y.dtype == torch.int32 and torch.equal(y, ref) and torch.equal(y, torch.cumsum(x, 0, dtype=torch.int32))
        for _ in range(3):  # the plan, its replay, its relaunch
            out = torch.full_like(x, 12345)
            assert s(x, out=out) is out
            assert torch.equal(out, y), n


@pytest.mark.parametrize("dtype", DTYPES)
def test_a_stream_of_new_lengths_matches_torch(dtype):
    """New lengths one after another (the variant remembered per length class, the
    parameters packed in one block each): every call served by the shipped kernels, every
    result torch.cumsum's (integral data: exact in any order), the results kept alive
    until the end as a stream keeps them."""
    launcher = aot.default_launcher()
    rng = np.random.default_rng()
    lengths = sorted({int(v) for v in np.exp(rng.uniform(np.log(1000), np.log(300_000), 200))})
    rng.shuffle(lengths)
    xs = [_data(rng, dtype, n, True) for n in lengths]
    before = launcher.launches
    ys = [ps.cumsum(x) for x in xs]
    torch.cuda.synchronize()
    assert launcher.launches - before == len(xs)
    for x, y in zip(xs, ys):
        expect = torch.cumsum(x.to(y.dtype) if y.dtype.is_floating_point else x.long(), 0)
        assert torch.equal(y, expect), x.numel()


@pytest.mark.parametrize("dtype", ["int64", "float32"])
@pytest.mark.parametrize("n", [1000, 100_003])
def test_planned_replay_takes_the_shipped_kernel(dtype, n):
    """Repeated calls of one signature: the replay, from its third call the relaunch of
    the loaded variant (aot/relaunch.py), into fresh and poisoned outputs, equal to torch
    bit for bit (integral data) on every call."""
    launcher = aot.default_launcher()
    s = ps.make_scan("add")
    rng = np.random.default_rng(5)
    out = torch.empty(n, dtype=getattr(torch, dtype), device="cuda")
    for call in range(8):
        x = _data(rng, dtype, n, True)
        before = launcher.launches
        if call % 2:
            out.fill_(7)
            y = s(x, out=out)
            assert y is out
        else:
            y = s(x)
        torch.cuda.synchronize()
        assert launcher.launches - before == 1, call
        assert torch.equal(y, torch.cumsum(x, 0)), call
    replays = [entry[2] for entry in s._plans.values()]
    assert replays and all(type(r.relaunch).__name__ == "AotRelaunch" for r in replays)
    for r in replays:  # the relaunch itself launches here (it declines nothing on this stream)
        y = torch.full_like(out, 7)
        assert r.relaunch(x, y) is True
        torch.cuda.synchronize()
        assert torch.equal(y, torch.cumsum(x, 0))


def test_graph_capture_replays_the_shipped_kernel(monkeypatch):
    """Loaded before the capture, the shipped kernel is captured with the engine's one-shot
    status (zeroed by every replay); a variant not loaded yet takes the Triton path
    (warmed up outside the capture, as Triton kernels must be), and is not loaded inside
    the capture.  Loaded variants are per launcher and context, and earlier tests of this
    process load the default launcher's: the test runs on a launcher of its own, which
    has loaded nothing (and drops the plans of those tests' calls, which hold the default
    launcher)."""
    launcher = aot.Launcher()
    monkeypatch.setattr(aot, "_default", [launcher])
    ps.clear_caches()
    rng = np.random.default_rng(6)
    for n, warm_aot in ((50_001, True), (70_001, False)):
        x = _data(rng, "int64", n, True)
        spec, _ = launcher.variant(x.device, _config("int64"), "int64", torch.int64, n)
        if warm_aot:
            ps.cumsum(x)
        else:
            with monkeypatch.context() as m:
                m.setenv(aot.ENV, "0")
                ps.cumsum(x)
        torch.cuda.synchronize()
        assert isinstance(launcher.function(spec, torch.cuda.current_device(), load=False), tuple) == warm_aot
        graph = torch.cuda.CUDAGraph()
        before = launcher.launches
        with torch.cuda.graph(graph):
            y = ps.cumsum(x)
        assert launcher.launches - before == (1 if warm_aot else 0)
        # Still not loaded: nothing was loaded inside the capture.
        assert isinstance(launcher.function(spec, torch.cuda.current_device(), load=False), tuple) == warm_aot
        for seed in (7, 8):
            x.copy_(_data(np.random.default_rng(seed), "int64", n, True))
            graph.replay()
            torch.cuda.synchronize()
            assert torch.equal(y, torch.cumsum(x, 0)), (n, seed)


_CHILD = r"""
import json, random, sys, time
t0 = time.perf_counter()
import torch
import prefixscan as ps
x = torch.randint(-1000, 1000, (1 << 20,), dtype=torch.int32, device="cuda")
torch.cuda.synchronize()
t1 = time.perf_counter()
y = ps.cumsum(x)
torch.cuda.synchronize()
t2 = time.perf_counter()
first_ok = torch.equal(y, torch.cumsum(x.long(), 0))
after_first = "triton" in sys.modules
rng = random.Random(7)
lengths = set()
while len(lengths) < 300:
    lengths.add(int(10 ** rng.uniform(3, 5.30103)))
xs = [torch.randint(-1000, 1000, (n,), dtype=torch.int32, device="cuda") for n in sorted(lengths)]
torch.cuda.synchronize()
t3 = time.perf_counter()
ys = [ps.cumsum(v) for v in xs]
torch.cuda.synchronize()
t4 = time.perf_counter()
stream_ok = all(torch.equal(a, torch.cumsum(v.long(), 0)) for v, a in zip(xs, ys))
print(json.dumps({"first_call_s": t2 - t1, "import_s": t1 - t0, "first_ok": first_ok, "stream_s": t4 - t3,
                  "stream_ok": stream_ok, "triton_after_first": after_first,
                  "triton_after_stream": "triton" in sys.modules}))
"""


def test_a_fresh_process_scans_without_triton(tmp_path):
    env = dict(os.environ, TRITON_CACHE_DIR=str(tmp_path / "triton"), PREFIXSCAN_CACHE_DIR=str(tmp_path / "ps"),
               PYTHONPATH=str(ROOT))
    env.pop("TRITON_INTERPRET", None)
    out = subprocess.run([sys.executable, "-c", _CHILD], cwd=ROOT, env=env, capture_output=True, text=True,
                         check=True, timeout=300)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    print(result)  # the times, for the record (benchmarks/cold_start.py measures them properly)
    assert result["first_ok"] and result["stream_ok"]
    assert not result["triton_after_first"] and not result["triton_after_stream"]
