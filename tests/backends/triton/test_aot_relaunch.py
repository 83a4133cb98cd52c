"""The planned replay's relaunch of a loaded shipped variant (``aot/relaunch.py``), on the CPU.

torch's CUDA side faked and a stub ``libcuda.so.1`` recording every launch
(``tools/aot_host_bench.py``): from a replay's third call the relaunch launches (what it
launches is checked parameter for parameter against the general launch over whole
streams by test_aot_class_plan.py); wherever the general launch must decide (another
stream or context, graph capture, a recording block) it launches nothing and reserves
nothing, and the call still returns the right tensor through the general launch; past a
32-bit tile base the count starts again from 0; a launch the driver refuses raises and
gives its reservation back; another thread packs into a parameter block of its own; status
buffers grown since (even between a call's reservation and its launch) are launched on; a
call from within a call on one thread declines.
"""

from __future__ import annotations

import pytest

pytest.importorskip("torch")
pytest.importorskip("triton")

from tests.backends.triton.aot_stub import needs_gcc, run_on_stub  # noqa: E402

_CHILD = r"""
from prefixscan.backends.triton.runtime import launch as runtime

report = {}
for n in (1000, 100_000):  # one tile, several tiles
    x = to_cuda(torch.ones(n, dtype=torch.int64))
    o = torch.empty(n, dtype=torch.int64, device="cuda")
    s = ps.make_scan("add")
    kinds = []
    for _ in range(4):
        s(x, out=o)
        replay = next(iter(s._plans.values()))[2]
        kinds.append(type(replay.relaunch).__name__)
    rl = replay.relaunch
    state = rl.state
    row = {"kinds": kinds, "single": state is None}

    def declined(name):
        before, epoch = count(), None if state is None else (state.epoch, state.tiles_issued)
        got = rl(x, o)
        row[name] = [got, count() - before, None if state is None else (state.epoch, state.tiles_issued) == epoch]

    raw = torch._C._cuda_getCurrentRawStream
    torch._C._cuda_getCurrentRawStream = lambda index: 7
    declined("stream")
    before = count()
    row["stream_call"] = [s(x, out=o) is o, count() - before]  # the general launch, on stream 7
    torch._C._cuda_getCurrentRawStream = raw
    torch._C._cuda_isCurrentStreamCapturing = lambda: True
    declined("capture")
    torch._C._cuda_isCurrentStreamCapturing = lambda: False
    with runtime.recording():
        declined("recording")
    context, rl.context = rl.context, 0xBAD
    declined("context")
    rl.context = context
    if state is not None:
        # Past a 32-bit tile base the engine starts the count again: launched with base 0.
        state.counter.fill_(99)
        state.tiles_issued = (1 << 31) - rl.grid
        before = count()
        row["rebased"] = [rl(x, o), count() - before, state.tiles_issued == rl.grid, int(state.counter[0])]
    # A launch the driver refuses raises, and gives its reservation back (the count from 0).
    ctypes.c_int.in_dll(stub, "stub_fail").value = 700
    if state is not None:
        state.counter.fill_(99)
        state.tiles_issued = 5
    try:
        rl(x, o)
        row["failed"] = "no error"
    except aot.driver.CudaError as e:
        row["failed"] = [str(e), None if state is None else (state.tiles_issued, int(state.counter[0]))]
    ctypes.c_int.in_dll(stub, "stub_fail").value = 0
    before, launches = count(), aot.default_launcher().launches
    row["relaunched"] = [rl(x, o), count() - before]

    def last_launch():
        return bench._launch_records(stub, lambda function: rl.packing.params)[-1]["params"]

    # Another thread: a parameter block of its own, the values of its own call.
    import threading
    x2, o2 = to_cuda(torch.ones(n, dtype=torch.int64)), torch.empty(n, dtype=torch.int64, device="cuda")
    worker = threading.Thread(target=lambda: row.setdefault("thread", [rl(x2, o2), last_launch()]))
    worker.start()
    worker.join()
    launched, params = row["thread"]
    blocks = {id(mine.block) for mine in rl.threads.values()}
    row["thread"] = [launched, params[rl.x_at] == x2.data_ptr(), params[rl.y_at] == o2.data_ptr(), len(blocks)]
    if state is not None:
        # Status buffers grown since the relaunch was made: it launches on the new ones.
        old = state.status.data_ptr()
        state.begin(1 << 20, rl.accs, rl.words)
        rl(x, o)
        params = last_launch()
        row["grown"] = [old != state.status.data_ptr(),
                        [params[at] for at in rl.status_at[:2]] == [state.status.data_ptr()] * 2,
                        params[rl.status_at[-1]] == state.counter.data_ptr()]
        # Grown by another caller between this call's reservation and its launch: the next
        # call launches on the buffers of then, not on the ones reserved before.
        renew = state.renew

        def renew_then_grow(*args):
            reserved = renew(*args)
            state.begin(1 << 22, rl.accs, rl.words)
            return reserved

        state.renew = renew_then_grow
        rl(x, o)
        state.renew = renew
        rl(x, o)
        row["grown_meanwhile"] = last_launch()[rl.status_at[0]] == state.status.data_ptr()

        # A call from within a call on one thread (a finalizer, a signal handler) leaves the
        # block to the outer call: the inner one declines.
        def renew_reentered(*args):
            row["inner"] = rl(x2, o2)
            return renew(*args)

        state.renew = renew_reentered
        rl(x, o)
        state.renew = renew
        params = last_launch()
        row["reentered"] = [row.pop("inner"), params[rl.x_at] == x.data_ptr(), params[rl.y_at] == o.data_ptr()]
    s(x, out=o)
    row["counted"] = aot.default_launcher().launches - launches
    report[n] = row
print(json.dumps(report))
"""


@needs_gcc
def test_the_relaunch_launches_only_where_the_general_launch_would_agree(tmp_path):
    report = run_on_stub(_CHILD, tmp_path)
    for n, single in (("1000", True), ("100000", False)):
        row = report[n]
        # The first call plans (no replay yet), the replay's first call marks it, its second makes the relaunch.
        assert row["kinds"] == ["NoneType", "NoneType", "AotRelaunch", "AotRelaunch"], n
        assert row["single"] is single
        for name in ("stream", "capture", "recording", "context"):
            assert row[name] == [False, 0, None if single else True], (n, name)
        if not single:
            assert row["rebased"] == [True, 1, True, 0]
        assert row["failed"] == ["cuLaunchKernel failed: CUDA error 700 (stub)", None if single else [0, 0]]
        assert row["stream_call"] == [True, 1]
        assert row["relaunched"] == [True, 1]
        assert row["thread"] == [True, True, True, 2]
        if not single:
            assert row["grown"] == [True, True, True]
            assert row["grown_meanwhile"] is True
            assert row["reentered"] == [False, True, True]
        assert row["counted"] == 1  # the launcher counts the relaunch's launches
