"""One case of test_failed_launches.py, run in a process of its own (the parent's
timeout turns a hang into a failure): a multi-tile call whose launch fails
part-way, then normal multi-tile calls (the 1-D look-back scan and the failed
kernel itself) on the look-back state the failure could have left wrong, which
must return the right results.

``python failed_launch_child.py <case>``; prints ``ok <case>`` when every call
after the failure matched its reference.  Cases:

* a strategy or ``segmented`` / ``2d``: a combine that raises inside the kernel
  (in the interpreter, once tiles have taken their ids; on a GPU Triton cannot
  compile it, so the launch fails before it runs);
* ``interrupt-<kernel>``: the launch of that kernel runs half its programs and
  then raises (a launch stopped part-way), for the kernels that take no combine.
"""

from __future__ import annotations

import dataclasses
import sys

import numpy as np
import torch

import prefixscan as ps
from prefixscan.backends.triton.scan import orders as blocked, lookback
from prefixscan.primitives.compaction import triton as compaction
from prefixscan.primitives.segmented import triton as segmented
from prefixscan.backends.triton.planning import planner, tiles
from prefixscan.backends.triton.runtime import launch as runtime
from prefixscan.testing import reference_scan, reference_segmented_scan

CUDA = torch.cuda.is_available()
DEVICE = "cuda" if CUDA else "cpu"
SCALE = 997 if CUDA else 1  # lengths on the GPU: several of its tiles


def combine_outside_numpy(a, b):
    """A sum on NumPy arrays (the host's checks of a combine pass) that fails in a kernel."""
    return a + b if isinstance(a, np.ndarray) else a.attribute_no_tensor_has


RAISING = ps.Monoid(combine_outside_numpy, identity=0, name="raises-in-kernels")


def data(rng, dtype, shape):
    x = rng.integers(-50, 50, size=shape).astype(dtype)
    x[x == 0] = 7
    return x


def device(x):
    return torch.from_numpy(np.ascontiguousarray(x)).to(DEVICE)


def check(got, want, what: str) -> None:
    got = got.cpu().numpy() if torch.is_tensor(got) else np.asarray(got)
    if not np.array_equal(got, want):
        raise AssertionError(f"{what}: wrong result after a failed launch")


def normal_calls(rng, case: str) -> None:
    """Multi-tile calls after the failure, each against its reference: the 1-D look-back
    scan, and a normal call of the failed call's own kernel.  Every look-back kernel
    reserves its status from the engine's one state per device and stream
    (engine/state.py), so a state the failure left wrong shows in any of them."""
    family = case.removeprefix("interrupt-")
    with runtime.recording() as launches:
        x = data(rng, "int32", 61 * SCALE)
        check(ps.scan(device(x), backend="triton"), reference_scan(x), "1-D look-back")
        if family in ("chained", "persistent", "reduce_then_scan", "scan_then_propagate"):
            check(ps.scan(device(x), strategy=family, backend="triton"), reference_scan(x), family)
        elif family == "2d":
            m = data(rng, "float32", (37 * SCALE, 4))
            check(ps.scan(device(m), "max", axis=0, backend="triton"), reference_scan(m, "max", axis=0), "2-D")
        elif family == "orders":
            w = data(rng, "int32", 302 * SCALE)  # interpreter: 128-element tiles
            check(ps.scan(device(w), order=2, tuple_size=2, backend="triton"),
                  reference_scan(w, order=2, tuple_size=2), "orders kernel, order 2")
        elif family == "segmented":
            offsets = np.array([0, 5, 5, 19 * SCALE, 40 * SCALE])
            check(ps.segmented_scan(device(x), offsets=offsets, backend="triton"),
                  reference_segmented_scan(x, "add", offsets=offsets), "segmented")
        elif family == "compaction":
            mask = rng.random(x.shape) < 0.4
            check(ps.compact(device(x), device(mask), backend="triton"), x[mask], "compact")
            values, count = ps.partition(device(x), device(mask), backend="triton")
            check(values, np.concatenate([x[mask], x[~mask]]), "partition")
        used = {launch.kernel for launch in launches if launch.grid > 1}
    wanted = {"2d": lookback.scan_2d_kernel, "orders": blocked.orders_kernel, "segmented": segmented.segmented_kernel,
              "compaction": compaction.select_kernel}.get(family, lookback.scan_1d_kernel)
    for kernel in {lookback.scan_1d_kernel, wanted}:
        if kernel not in used:
            raise AssertionError(f"no multi-tile launch of {kernel.fn.__name__}: the case does not test it")


def interrupt_once(kernel, stopped: list) -> None:
    """The next launch of ``kernel`` runs the first half of its programs, then raises
    (and goes to ``stopped``)."""
    real = runtime.launch_kernel

    def launch(request):
        if request.kernel is not kernel:
            return real(request)
        runtime.launch_kernel = real
        stopped.append(request)
        real(dataclasses.replace(request, grid=max(1, request.grid // 2)))
        raise RuntimeError("a launch stopped part-way")

    runtime.launch_kernel = launch  # this process only: it runs one case


def failing_call(case: str, rng) -> None:
    x = device(data(rng, "int32", 61 * SCALE))
    stopped: list = []
    if case.startswith("interrupt-"):
        name = case.removeprefix("interrupt-")
        interrupt_once({"lookback": lookback.scan_1d_kernel, "orders": blocked.orders_kernel,
                        "segmented": segmented.segmented_kernel, "compaction": compaction.select_kernel}[name], stopped)
        calls = {"lookback": lambda: ps.scan(x, backend="triton"),
                 "orders": lambda: ps.scan(device(data(rng, "int32", 302 * SCALE)), order=2, tuple_size=2,
                                           backend="triton"),
                 "segmented": lambda: ps.segmented_scan(x, offsets=[0, 9], backend="triton"),
                 "compaction": lambda: ps.compact(x, x > 0, backend="triton")}
        call = calls[name]
    elif case == "segmented":
        call = lambda: ps.segmented_scan(x, RAISING, offsets=[0, 9], backend="triton")  # noqa: E731
    elif case == "2d":
        call = lambda: ps.scan(x[:60 * SCALE].reshape(-1, 3), RAISING, axis=0, backend="triton")  # noqa: E731
    else:
        call = lambda: ps.scan(x, RAISING, strategy=case, backend="triton")  # noqa: E731
    with runtime.recording() as launches:
        try:
            call()
        except Exception:  # noqa: BLE001 - the failure this case is about
            pass
        else:
            raise AssertionError(f"{case}: the call meant to fail returned")
    failed = stopped or launches
    if not failed or failed[-1].grid < 2:
        raise AssertionError(f"{case}: the failing launch was not a multi-tile one")


def main(case: str) -> None:
    rng = np.random.default_rng(sum(map(ord, case)))
    tile = None if CUDA else tiles.TileConfig(block=8, num_warps=1, window=2, max_kb=2)
    with planner.override(tile):
        failing_call(case, rng)
        normal_calls(rng, case)
    print("ok", case)


if __name__ == "__main__":
    main(sys.argv[1])
