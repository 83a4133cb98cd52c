"""The backend's one-pass linear recurrence, for the host path (:mod:`.api`) and
the custom operators (:mod:`.torch_ops`): found in
:data:`~prefixscan.primitives.recurrence.IMPLEMENTATIONS` (the compiled CPU loop,
the Triton kernel; each returns None for dtypes it has no pass for, and the
caller scans the affine monoid) and, for the backward with ``dL/da`` fused, in
:data:`~prefixscan.primitives.recurrence.FUSED_BACKWARD` (elsewhere the reverse
recurrence runs).  Torch tensors reach a host backend as zero-copy NumPy views.
"""

from __future__ import annotations

from typing import Any

from ... import dispatch
from . import FUSED_BACKWARD, IMPLEMENTATIONS, RESTARTING

__all__ = ["run_recurrence", "run_recurrence_backward", "run_host_recurrence", "run_recurrence_total"]


def _host_view(t: Any) -> Any:
    """A CPU torch tensor as a zero-copy NumPy view (None where NumPy has no such dtype)."""
    import numpy as np

    if t is None or not hasattr(t, "numpy"):
        return t
    try:
        return np.asarray(t.numpy())
    except TypeError:  # bfloat16
        return None


def _call_native(backend, arrays: tuple, call) -> Any:
    """``call(*arrays)`` on the backend's own array type: as given for a torch backend;
    CPU tensors as zero-copy NumPy views for a host backend, its result (an array or a
    tuple of them) back as tensors (NumPy arrays stay NumPy); None where a tensor has no
    NumPy view or the backend has no such pass."""
    if backend.NATIVE_LIBRARY == "torch":
        return call(*arrays)
    host = [_host_view(t) for t in arrays]
    if any(v is None and t is not None for v, t in zip(host, arrays)):
        return None
    result = call(*host)
    if result is None or not any(hasattr(t, "numpy") for t in arrays):
        return result
    import torch

    return tuple(torch.from_numpy(r) for r in result) if isinstance(result, tuple) else torch.from_numpy(result)


def run_recurrence(backend_name: str | None, a: Any, b: Any, init: Any, axis: int, reverse: bool,
                   deterministic: bool, log_space: bool = False, restart: Any = None) -> Any:
    """``h`` of ``h[t] = a[t] h[t-1] + b[t]`` (``exp(a[t])`` with ``log_space``) by the
    backend's one-pass recurrence, on torch tensors ``a``, ``b`` (``init`` of the lane
    shape or None), as a tensor of a's type; None where the backend has none for them, or
    none that takes ``restart`` (restart flags, one per step) when they are given."""
    backend = dispatch.select_backend(backend_name, a.device.type)
    passes = dispatch.implementation("linear_recurrence", IMPLEMENTATIONS, backend)
    if restart is not None:  # torch tensors (the packed path), for a backend whose kernel takes the flags
        return passes.linear_recurrence(a, b, init, axis, reverse, deterministic, log_space=log_space,
                                        restart=restart) if backend.NAME in RESTARTING else None
    return _call_native(backend, (a, b, init),
                        lambda a, b, init: passes.linear_recurrence(a, b, init, axis, reverse, deterministic,
                                                                    log_space=log_space))


def run_recurrence_backward(backend_name: str | None, a: Any, h: Any, grad: Any, init: Any, axis: int,
                            reverse: bool, deterministic: bool, need_a: bool, log_space: bool = False,
                            restart: Any = None, final: Any = None) -> tuple | None:
    """``(dL/da or None, dL/db)`` by the backend's fused backward, or None where it has none
    (``log_space``: ``a`` holds log decays, and ``dL/da`` is with respect to them;
    ``restart``: the forward's restart flags, where ``dL/da`` is 0; ``final``: the adjoint
    arriving from after the last step, of the lane shape, added to ``grad`` there)."""
    backend = dispatch.select_backend(backend_name, a.device.type)
    if backend.NAME not in FUSED_BACKWARD or (restart is not None and backend.NAME not in RESTARTING):
        return None  # the reverse recurrence runs through the operator
    fused = dispatch.implementation("linear_recurrence_backward", FUSED_BACKWARD, backend)
    flags = {} if restart is None else {"restart": restart}  # only a RESTARTING backend takes them
    return fused.linear_recurrence_backward(a, h, grad, init, axis, reverse, deterministic, need_a,
                                            log_space=log_space, final=final, **flags)


def run_host_recurrence(backend_name: str | None, a: Any, b: Any, init: Any, axis: int, reverse: bool,
                        log_space: bool = False) -> Any:
    """The backend's one-pass recurrence of host NumPy arrays (the CPU backend's
    compiled loop), or None where it has none for them."""
    backend = dispatch.select_backend(backend_name, "cpu")
    if backend.NATIVE_LIBRARY != "numpy":
        return None
    return dispatch.implementation("linear_recurrence", IMPLEMENTATIONS, backend).linear_recurrence(
        a, b, init, axis, reverse, False, log_space=log_space)


def run_recurrence_total(backend_name: str | None, a: Any, b: Any, axis: int, reverse: bool,
                         log_space: bool = False) -> tuple | None:
    """``(A, B)``, each lane's map of the recurrence over ``axis`` (non-negative), by the
    backend's one-read pass, of ``a``'s array type (NumPy arrays or torch tensors); None
    where the backend has none for them.  ``log_space``: ``A`` is the sum of the log decays."""
    on_torch = hasattr(a, "detach")
    if on_torch:  # the map is not differentiated (and NumPy views refuse tensors that require grad)
        a, b = a.detach(), b.detach()
    backend = dispatch.select_backend(backend_name, a.device.type if on_torch else "cpu")
    passes = dispatch.implementation("linear_recurrence", IMPLEMENTATIONS, backend)
    return _call_native(backend, (a, b),
                        lambda a, b: passes.linear_recurrence_total(a, b, axis, reverse, log_space=log_space))
