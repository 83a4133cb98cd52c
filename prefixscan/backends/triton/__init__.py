"""GPU backend: Triton kernels launched on torch tensors.

CuPy, JAX and other DLPack arrays enter as zero-copy torch views and leave as
their own type (:mod:`prefixscan._arrays`).  Under ``TRITON_INTERPRET=1`` the
same kernels run on CPU torch tensors in Triton's interpreter, which is how CI
tests the kernel logic without a GPU.  Nothing here imports torch or triton
until a scan runs.
"""

from __future__ import annotations

import functools
import importlib.util

from ...dispatch import interpreter_mode

DEVICES = ("cuda",)
NATIVE_LIBRARY = "torch"  # run_scan returns torch tensors


def unavailable_reason(device: str) -> str:
    return _unavailable_reason(device, interpreter_mode())


@functools.lru_cache(maxsize=None)  # asked on every call: keep it off the hot path
def _unavailable_reason(device: str, interpreter: bool) -> str:
    missing = [m for m in ("torch", "triton") if importlib.util.find_spec(m) is None]
    if missing:
        return f"{' and '.join(missing)} not installed: pip install 'prefixscan[gpu]'"
    if device == "cpu":
        if interpreter:
            return ""
        return "CPU tensors run on the Triton backend only in its interpreter (TRITON_INTERPRET=1)"
    import torch

    if not torch.cuda.is_available():
        return "torch sees no CUDA device"
    return ""


def device_names() -> list[str]:
    import torch

    if not torch.cuda.is_available():
        return ["cpu (Triton interpreter)"] if interpreter_mode() else []
    return [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]


def run_scan(request):
    from .scan import run_scan as _run

    return _run(request)


def run_scan_planned(request):
    """``run_scan`` plus a replay function for later calls of the same signature
    (or None): ``fast(x, out) -> result or None`` (None: take the full path)."""
    from .scan import run_scan as _run

    return _run(request, plan=True)
