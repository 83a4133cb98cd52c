"""GPU backend: Triton kernels launched on torch tensors.

CuPy, JAX and other DLPack arrays enter as zero-copy torch views and leave as
their own type (:mod:`prefixscan._arrays`).  Under ``TRITON_INTERPRET=1`` the
same kernels run on CPU torch tensors in Triton's interpreter, which is how CI
tests the kernel logic without a GPU.  Nothing here imports torch or triton
until a scan runs.

Implements :class:`prefixscan.backends.base.Backend` as a module: the scan path
is :mod:`.scan` (strategies from :mod:`.planning.registry`, tiles from :mod:`.planning.planner`),
delta encoding is the one-pass stencil kernel of :mod:`.delta`, and compaction
and partition the one-pass look-back kernel of :mod:`.compaction`.
"""

from __future__ import annotations

import functools
import importlib.util

import numpy as np

from ..._arrays import ArrayRef, as_torch
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


def run_scan(request):
    """Scan ``request`` into torch tensors.  A key the GPU's tuned table lacks is
    tuned first, once per process (:func:`.tuner.first_use.ensure_for`); the scan
    path below only reads the table."""
    # The scan path loads triton: imported on the first scan, not with the package.
    from .scan.route import run_scan as _run
    from .tuner.first_use import ensure_for

    ensure_for(request)
    return _run(request)


def run_scan_planned(request):
    """``run_scan`` plus a replay function for later calls of the same signature
    (or None): ``fast(x, out, init) -> result or None`` (None: take the full path)."""
    from .scan.route import run_scan as _run
    from .tuner.first_use import ensure_for

    ensure_for(request)
    return _run(request, plan=True)


def delta_encode(x: ArrayRef, order: int, tuple_size: int, axis: int):
    """``order`` rounds of ``d[j] -= d[j - s]`` along ``axis`` in one kernel pass
    (:mod:`.delta`); complex tensors, which Triton has no types for, take one torch
    subtraction per round."""
    t = as_torch(x)
    if not t.is_complex():
        from .delta import delta_encode as encode  # imports triton

        return encode(t, order, tuple_size, axis)
    d = t.clone()
    n, s = d.shape[axis], tuple_size
    for _ in range(order):
        if n > s:
            d.narrow(axis, s, n - s).sub_(d.narrow(axis, 0, n - s).clone())
    return d


def compact(fields: tuple, mask: ArrayRef, size: int | None, fills: tuple):
    """One-pass compaction (:mod:`.compaction`): ``(values, count)`` as torch tensors."""
    from .compaction import compact_fields  # imports triton

    xs = [as_torch(f) for f in fields]
    fill_tensors = None
    if size is not None:
        import torch

        # torch.full, not a copy from the host: a fill kernel is captured by CUDA graphs.
        fill_tensors = [torch.full((1,), np.asarray(v).item(), dtype=x.dtype, device=x.device)
                        for v, x in zip(fills, xs)]
    values, count = compact_fields(xs, as_torch(mask), size=size, fills=fill_tensors)
    return tuple(values), count


def partition(fields: tuple, mask: ArrayRef):
    """One-pass stable partition (:mod:`.compaction`): ``(values, count)`` as torch tensors."""
    from .compaction import partition_fields  # imports triton

    values, count = partition_fields([as_torch(f) for f in fields], as_torch(mask))
    return tuple(values), count


def segmented_scan(request, segments: tuple) -> list:
    """The single-pass segmented scan kernel (:mod:`.segmented`): the segment heads
    ride on the decoupled look-back's states; torch tensors out."""
    from .segmented import run_segmented  # imports triton

    return run_segmented(request, segments)


def linear_recurrence(a, b, init, axis: int, reverse: bool, deterministic: bool):
    """The one-pass recurrence kernel (:mod:`.recurrence`) for float and complex
    tensors; None for other dtypes (the affine scan runs)."""
    from . import recurrence  # imports triton

    if not recurrence.supports(a.dtype):
        return None
    return recurrence.linear_recurrence(a, b, init, axis, reverse, deterministic=deterministic)


def linear_recurrence_total(a, b, axis: int, reverse: bool):
    """The recurrence kernel storing only each lane's map (:mod:`.recurrence`), for
    float and complex tensors; None for other dtypes."""
    import torch

    from . import recurrence  # imports triton

    if not recurrence.supports(a.dtype) or a.dtype != b.dtype:
        return None
    a, b = torch.broadcast_tensors(a, b)  # expanded views: a broadcast decay is read in place
    return recurrence.linear_recurrence_total(a, b, axis, reverse)


def linear_recurrence_backward(a, h, grad, init, axis: int, reverse: bool, deterministic: bool, need_a: bool):
    """The recurrence kernel run backwards, ``dL/da`` fused (:mod:`.recurrence`)."""
    from . import recurrence  # imports triton

    if not recurrence.supports(a.dtype):
        return None
    return recurrence.linear_recurrence_backward(a, h, grad, init, axis, reverse, need_a=need_a,
                                                 deterministic=deterministic)
