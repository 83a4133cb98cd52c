"""GPU backend: Triton kernels launched on torch tensors.

CuPy, JAX and other DLPack arrays enter as zero-copy torch views and leave as
their own type (:mod:`prefixscan._arrays`).  Under ``TRITON_INTERPRET=1`` the
same kernels run on CPU torch tensors in Triton's interpreter, which is how CI
tests the kernel logic without a GPU.  Nothing here imports torch or triton
until a scan runs.

Implements :class:`prefixscan.backends.base.Backend` as a module: the scan path
is :mod:`.scan` (strategies from :mod:`.planning.registry`, tiles from
:mod:`.planning.planner`).  The backend is sorted by job:

* :mod:`.device`: device-side building blocks (a tile's loads, stores and
  in-tile scans, a monoid's combine as Triton functions, Gluon);
* :mod:`.engine`: the single-pass decoupled look-back pipeline every
  single-pass primitive runs on, and its status protocol;
* :mod:`.runtime`: the launch of every compiled kernel, and the planned replay;
* :mod:`.planning`: strategies, tiles, the routing policy and the tuned tables'
  read side;
* :mod:`.scan`: the scan's router and kernel families;
* :mod:`.tuner`: the tuner (measuring, writing tables).

The other primitives' kernels and launchers (segmented scans, compaction,
recurrences, delta coding) live with each primitive, in
:mod:`prefixscan.primitives` (their ``triton`` modules).
"""

from __future__ import annotations

import functools
import importlib.util

from ..._environment import interpreter_mode
from ..._install_hint import install_command
from ...caches import register_cache

NAME = "triton"
DEVICES = ("cuda",)
NATIVE_LIBRARY = "torch"  # run_scan returns torch tensors
TAKES_ALGORITHM = False  # algorithm= names CPU scan networks
TAKES_STRATEGY = True  # strategy= picks a strategy of .planning.registry
COMPLEX_TYPES = False  # Triton has no complex types (complex recurrences split into real fields)


def unavailable_reason(device: str) -> str:
    return _unavailable_reason(device, interpreter_mode())


@functools.lru_cache(maxsize=None)  # asked on every call: keep it off the hot path
def _unavailable_reason(device: str, interpreter: bool) -> str:
    missing = [m for m in ("torch", "triton") if importlib.util.find_spec(m) is None]
    if missing:
        return f"{' and '.join(missing)} not installed: {install_command('gpu')}"
    if device == "cpu":
        if interpreter:
            return ""
        return "CPU tensors run on the Triton backend only in its interpreter (TRITON_INTERPRET=1)"
    import torch

    if not torch.cuda.is_available():
        return "torch sees no CUDA device"
    return ""


register_cache("prefixscan.backends.triton.unavailable_reason", _unavailable_reason.cache_clear)


def device_names() -> list[str]:
    import torch

    if not torch.cuda.is_available():
        return ["cpu (Triton interpreter)"] if interpreter_mode() else []
    return [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]


# The entry points of the scan path, imported by the first scan (this package is imported
# whenever a backend is chosen, for host arrays too, so they cannot be imported with it),
# then kept here: an import statement in run_scan costs microseconds on every call.
_entry: list = []


def _entry_points() -> tuple:
    """(``aot.try_scan``, ``tuner.first_use.ensure_for``), imported on first use."""
    if not _entry:
        # The sums shipped compiled (.aot) do not load triton; the scan route does, and is
        # imported only when they decline a scan.
        from .aot import try_scan
        from .tuner.first_use import ensure_for

        _entry.append((try_scan, ensure_for))
    return _entry[0]


def run_scan(request):
    """Scan ``request`` into torch tensors.  A key the GPU's tuned table lacks is
    tuned first, once per process (:func:`.tuner.first_use.ensure_for`); the scan
    path below only reads the table."""
    try_scan, ensure_for = _entry[0] if _entry else _entry_points()
    ensure_for(request)
    results = try_scan(request)
    if results is not None:
        return results
    from .scan.route import run_scan as _run

    return _run(request)


def run_scan_planned(request):
    """``run_scan`` plus a replay function for later calls of the same signature
    (or None): ``fast(x, out, init) -> result or None`` (None: take the full path)."""
    try_scan, ensure_for = _entry[0] if _entry else _entry_points()
    ensure_for(request)
    planned = try_scan(request, plan=True)
    if planned is not None:
        return planned
    from .scan.route import run_scan as _run

    return _run(request, plan=True)
