"""GPU backend: Triton kernels launched on torch tensors (work in progress)."""

from __future__ import annotations

import importlib.util

from ...dispatch import interpreter_mode

DEVICES = ("cuda",)


def unavailable_reason(device: str) -> str:
    missing = [m for m in ("torch", "triton") if importlib.util.find_spec(m) is None]
    if missing:
        return f"{' and '.join(missing)} not installed: pip install 'prefixscan[gpu]'"
    if device == "cpu" and not interpreter_mode():
        return "CPU tensors run on the Triton backend only in the interpreter (TRITON_INTERPRET=1)"
    return "the GPU kernels are not written yet"


def device_names() -> list[str]:
    return []


def run_scan(request):
    raise NotImplementedError
