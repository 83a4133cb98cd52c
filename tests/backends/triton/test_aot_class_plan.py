"""A plan per length class for the shipped sums (``Scan`` and ``AotReplay.for_length``), on the CPU.

A new length of a length class a :class:`prefixscan.Scan` has planned, ``(n - 1).bit_length()``,
reuses the class's replay of the shipped kernels (``backends/triton/aot``): only the
variant's tile count, the grid and the length argument are the new length's.  Checked
here three ways: the replay's choice for every edge length up to 2^31 + 1 is a fresh
launcher's (the route's, by test_aot_choice.py); whole streams of ``cumsum`` calls through
``tools/aot_host_bench.py`` (torch's CUDA side faked, a stub ``libcuda.so.1`` recording
every launch) launch exactly what the full path launches call by call; and bad input on a
planned class still raises before anything is launched.
"""

from __future__ import annotations

import json
from types import SimpleNamespace

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

from prefixscan.backends.triton import aot  # noqa: E402
from prefixscan.backends.triton.planning import planner  # noqa: E402
from prefixscan.backends.triton.planning.tiles import TileConfig  # noqa: E402
from tests.backends.triton import test_aot_choice as choice  # noqa: E402
from tests.backends.triton.aot_stub import needs_gcc, run_on_stub  # noqa: E402
from tests.repo_scripts import ROOT, load_script  # noqa: E402

DTYPES, lengths, _config = choice.DTYPES, choice.lengths, choice._config
h200 = choice.h200  # the fixture: CPU tensors planned as on an H200

#: Past the route's edges (test_aot_choice.py stops at 2^28): the i32 limits of the variants.
LARGE = [(1 << k) + d for k in range(29, 32) for d in (-1, 0, 1)] + [(1 << 31) - 2]


def _lane(n: int):
    return SimpleNamespace(numel=lambda: n)


def _class_replay(launcher, device, config, x_dtype, acc, n):
    """The replay a planned call of ``n`` elements would keep (None where the shipped
    kernels do not serve ``n``)."""
    chosen = launcher.variant(device, config, x_dtype, acc, n)
    if isinstance(chosen, str):
        return None
    settled = (0, (str(acc)[6:],), True, 1, (n - 1).bit_length())
    return aot.AotReplay(launcher, *chosen, (n,), acc, device, torch.zeros(1, dtype=acc),
                         aot.LengthClass(config, x_dtype, settled))


@pytest.mark.parametrize("x_dtype, acc_dtype", DTYPES)
def test_a_class_replay_chooses_what_a_fresh_launcher_chooses(h200, monkeypatch, x_dtype, acc_dtype):
    """For every edge length (2^k - 1, 2^k, 2^k + 1 to 2^31 + 1, the tiles' multiples,
    primes) and random ones, in random order: the replay of the length's class, made
    from another length of the class, gives the variant and plan a fresh launcher gives
    the length (tile count and grid included), or None where that launcher refuses."""
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    rng = np.random.default_rng()
    device, config, acc = torch.device("cpu"), _config(), getattr(torch, acc_dtype)
    launcher = aot.Launcher(get_driver=lambda: None, settled=lambda key: True)
    ns = lengths() + LARGE + [int(v) for v in rng.integers(1, 1 << 31, 100)]
    classes: dict = {}
    checked = 0
    for n in [int(v) for v in rng.permutation(ns)]:
        c = (n - 1).bit_length()
        if c not in classes:
            classes[c] = _class_replay(launcher, device, config, x_dtype, acc, n)
            continue
        replay = classes[c]
        if replay is None:
            continue
        derived = replay.for_length(_lane(n))
        fresh = aot.Launcher(get_driver=lambda: None).variant(device, config, x_dtype, acc, n)
        if isinstance(fresh, str):
            assert derived is None, (n, fresh)
            continue
        assert (derived.spec, derived.plan, derived.shape, derived.dtype) == (*fresh, (n,), acc), n
        assert derived.plan.tiles == -(-n // derived.plan.block) or derived.plan.single
        checked += 1
    assert checked > 50
    # 2^31 is of 2^31 - 1's class, beyond the variants' i32 length: not through the class.
    top = _class_replay(launcher, device, config, x_dtype, acc, (1 << 31) - 1)
    assert top is not None and top.for_length(_lane(1 << 31)) is None


def test_a_class_replay_declines_where_the_full_path_must_decide(h200, monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    device, config = torch.device("cpu"), _config()
    settled = {True}
    launcher = aot.Launcher(get_driver=lambda: None, settled=lambda key: settled == {True})
    replay = _class_replay(launcher, device, config, "int32", torch.int64, 100_000)
    assert replay.for_length(_lane(110_000)).plan.tiles == -(-110_000 // replay.plan.block)
    assert replay.for_length(_lane(0)) is None
    assert replay.for_length(_lane(65_536)) is None and replay.for_length(_lane(131_073)) is None  # other classes
    settled.pop()  # first-use tuning of the class not settled: the full path asks the tuner
    assert replay.for_length(_lane(110_000)) is None
    settled.add(True)
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    assert replay.for_length(_lane(110_000)) is None
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    with planner.override(TileConfig(4096, 4, 32)):  # the generation moves: expired
        assert replay.for_length(_lane(110_000)) is None
    assert replay.expired() and replay.for_length(_lane(110_000)) is None


# -- whole streams, the CUDA side faked (tools/aot_host_bench.py) ---------------------------



def _stream_lengths(rng) -> list:
    """Several lengths per class from 2^10 to 2^22 (edges and random), shuffled: most
    calls are new lengths of a class planned earlier."""
    ns = {(1 << k) + d for k in range(10, 23) for d in (-1, 0, 1)} | {2048 * 3 + 1, 4096 * 5 - 1, 8192 * 7}
    ns |= {int(v) for v in rng.integers(1000, 1 << 22, 60)}
    return [int(v) for v in rng.permutation(sorted(ns))]


@needs_gcc
@pytest.mark.parametrize("dtype", ["int32", "float64"])
def test_class_plans_launch_what_the_full_path_launches(tmp_path, dtype):
    """cumsum over a shuffled stream (one shared Scan: per-signature and per-class plans)
    and the same stream with every call on a new Scan (the full path each time) launch
    the same variants with the same grid, threads, shared memory, stream and parameters."""
    bench = load_script("tools/aot_host_bench.py", "aot_host_bench")
    listed = tmp_path / "lengths.json"
    listed.write_text(json.dumps(_stream_lengths(np.random.default_rng())))
    runs = {}
    for mode in ("planned", "fresh"):
        out = tmp_path / f"{mode}.json"
        argv = ["--runs", "0", "--tree", str(ROOT), "--length-list", str(listed), "--dtype", dtype,
                "--args-out", str(out)] + (["--fresh-scans"] if mode == "fresh" else [])
        assert bench.main(argv) == 0
        runs[mode] = json.loads(out.read_text())
    assert len(runs["planned"]) == len(json.loads(listed.read_text())) + bench.REPEATED * bench.REPEAT_ROUNDS
    assert runs["planned"] == runs["fresh"]


_BAD_INPUT = r"""
s = ps.make_scan("add", dtype="int64")
x = lambda n: to_cuda(torch.ones(n, dtype=torch.int32))
out = lambda n, dtype=torch.int64: torch.empty(n, dtype=dtype, device="cuda")
s(x(100_000), out=out(100_000))
s(x(100_000))
report = {"classes": len(s._classes)}
before = count()
for n, o, name in [(100_001, out(100_002), "shape"), (100_001, out((2, 50_000)), "2-d")]:
    try:
        s(x(n), out=o)
        report[name] = "no error"
    except ValueError as e:
        report[name] = str(e)
report["launched_by_bad"] = count() - before
s(x(110_000), out=out(110_000))
report["derived"] = sum(1 for entry in s._plans.values() if entry[0] is None)
report["launches"] = [count(), aot.default_launcher().launches]
# A call the class's replay declines (the shipped kernels switched off) takes the full path
# (the backend's run_scan, recorded here: the Triton path needs a real GPU), and the replay
# stays the plan of its length: the next call launches the shipped kernel again.
import os
backend = next(entry[1] for entry in s._plans.values() if entry[0] is None)
full, real = [], backend.run_scan
backend.run_scan = lambda request: full.append(request.out_shape) or [request.out[0].obj]
os.environ["PREFIXSCAN_AOT"] = "0"
o = out(110_000)
before = count()
report["declined"] = [s(x(110_000), out=o) is o, full, count() - before]
del os.environ["PREFIXSCAN_AOT"]
backend.run_scan = real
s(x(110_000), out=out(110_000))
report["after_decline"] = [count() - before, sum(1 for entry in s._plans.values() if entry[0] is None)]
print(json.dumps(report))
"""


@needs_gcc
def test_bad_input_on_a_planned_class_raises_before_any_launch(tmp_path):
    """Bad input on a planned class raises before any launch; a call its replay declines
    takes the full path once, and the replay stays the length's plan."""
    report = run_on_stub(_BAD_INPUT, tmp_path)
    assert report["classes"] == 2  # with out= and without: two signatures' classes
    assert report["shape"] == "out has shape (100002,); the result has shape (100001,)"
    assert report["2-d"] == "out has shape (2, 50000); the result has shape (100001,)"
    assert report["launched_by_bad"] == 0
    assert report["derived"] == 1  # 110 000 went through its class's plan
    assert report["launches"] == [3, 3]
    assert report["declined"] == [True, [[110_000]], 0]
    assert report["after_decline"] == [1, 1]  # the class's replay served the next call
