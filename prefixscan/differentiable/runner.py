"""The plain (non-differentiable) scan of a checked configuration.

The custom operators of :mod:`.ops` run their forward and backward scans here:
the same path as :class:`prefixscan.Scan` (argument checks in
:mod:`prefixscan._normalize`, backend choice in :mod:`prefixscan.dispatch`, the
backend's ``run_scan``), without the per-signature plan cache, so that this
package sits below the public API that routes to it.  Linear recurrences first
ask the backend for its one-pass recurrence (``linear_recurrence`` and the fused
``linear_recurrence_backward`` members): the Triton kernel of
:mod:`prefixscan.backends.triton.recurrence`, the compiled CPU loop.
"""

from __future__ import annotations

from typing import Any

from .. import dispatch
from .._arrays import from_native
from .._normalize import build_request
from .._request import ScanConfig

__all__ = ["run_scan", "takes_complex", "run_recurrence", "run_recurrence_backward", "run_host_recurrence",
           "run_recurrence_total"]


def run_scan(config: ScanConfig, x: Any, init: Any = None) -> Any:
    """Scan ``x`` (an array or a tuple of field arrays) as ``config`` says, seeded
    with ``init``; the result is of x's array type (a tuple for a struct monoid)."""
    request = build_request(config, x, init, None)
    backend = dispatch.select_backend(config.backend, request.device)
    dispatch.check_capabilities(backend, request)
    results = backend.run_scan(request)
    native = backend.NATIVE_LIBRARY
    if request.fields[0].library != native:
        results = [from_native(r, like, native, d)
                   for r, like, d in zip(results, request.fields, request.out_dtypes)]
    return tuple(results) if request.struct else results[0]


def takes_complex(backend: str | None, device: str) -> bool:
    """Whether the backend a scan of ``device`` arrays would run on (``backend=``'s
    choice) scans complex dtypes; complex recurrences split into real fields where not."""
    return dispatch.select_backend(backend, device).COMPLEX_TYPES


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
                   deterministic: bool) -> Any:
    """``h`` of ``h[t] = a[t] h[t-1] + b[t]`` by the backend's one-pass recurrence, on
    torch tensors ``a``, ``b`` (``init`` of the lane shape or None), as a tensor of a's
    type; None where the backend has none for them."""
    backend = dispatch.select_backend(backend_name, a.device.type)
    return _call_native(backend, (a, b, init),
                        lambda a, b, init: backend.linear_recurrence(a, b, init, axis, reverse, deterministic))


def run_recurrence_backward(backend_name: str | None, a: Any, h: Any, grad: Any, init: Any, axis: int,
                            reverse: bool, deterministic: bool, need_a: bool) -> tuple | None:
    """``(dL/da or None, dL/db)`` by the backend's fused backward, or None where it has none."""
    backend = dispatch.select_backend(backend_name, a.device.type)
    if backend.NATIVE_LIBRARY != "torch":
        return None  # the host backends run the reverse recurrence through the operator
    return backend.linear_recurrence_backward(a, h, grad, init, axis, reverse, deterministic, need_a)


def run_host_recurrence(backend_name: str | None, a: Any, b: Any, init: Any, axis: int, reverse: bool) -> Any:
    """The backend's one-pass recurrence of host NumPy arrays (the CPU backend's
    compiled loop), or None where it has none for them."""
    backend = dispatch.select_backend(backend_name, "cpu")
    if backend.NATIVE_LIBRARY != "numpy":
        return None
    return backend.linear_recurrence(a, b, init, axis, reverse, False)


def run_recurrence_total(backend_name: str | None, a: Any, b: Any, axis: int, reverse: bool) -> tuple | None:
    """``(A, B)``, each lane's map of the recurrence over ``axis`` (non-negative), by the
    backend's one-read pass, of ``a``'s array type (NumPy arrays or torch tensors); None
    where the backend has none for them."""
    on_torch = hasattr(a, "detach")
    if on_torch:  # the map is not differentiated (and NumPy views refuse tensors that require grad)
        a, b = a.detach(), b.detach()
    backend = dispatch.select_backend(backend_name, a.device.type if on_torch else "cpu")
    return _call_native(backend, (a, b), lambda a, b: backend.linear_recurrence_total(a, b, axis, reverse))
