"""Backend dispatch: an ordered list of backends with a guaranteed CPU fallback,
and the one registry lookup of the primitives' implementations.

``backend=None`` takes the first backend that is available and accepts the
arrays' device: the Triton backend for CUDA arrays, the CPU backend for host
arrays.  A CUDA array on a machine without the GPU backend is an error that says
what to install, never a silent copy to the host.

Backends are named here and imported on first use (the Triton backend's module
imports nothing heavy, but it is only needed once a scan asks for it); each one
conforms to :class:`prefixscan.backends.base.Backend`, the only interface the
layers above use for the scan.  A primitive other than the scan (segmented
scan, compaction, recurrence, delta coding) names its implementations in its own
table, backend name -> module (``IMPLEMENTATIONS`` in its folder of
:mod:`prefixscan.primitives`), and finds the chosen backend's with
:func:`implementation`: a backend missing from the table has no implementation
and is refused before any work, never served by a stub.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import cast

from ._environment import interpreter_mode
from ._request import ScanRequest
from .backends.base import Backend

__all__ = ["BACKEND_NAMES", "BackendUnavailableError", "PrimitiveUnavailableError", "get_backend", "select_backend",
           "check_capabilities", "implementation", "available_backends", "interpreter_mode"]

BACKEND_NAMES = ("triton", "cpu")
_MODULES = {"triton": "prefixscan.backends.triton", "cpu": "prefixscan.backends.cpu"}


class BackendUnavailableError(RuntimeError):
    """The requested backend cannot run here; the message says what to install."""


class PrimitiveUnavailableError(BackendUnavailableError):
    """The chosen backend has no implementation of a primitive; the message names
    both and the backends that have one."""


def get_backend(name: str) -> Backend:
    """The backend called ``name`` ("triton" or "cpu"), whether or not it can run here."""
    if name not in _MODULES:
        raise ValueError(f"backend: unknown backend {name!r}; choose from {', '.join(BACKEND_NAMES)} or None")
    return cast(Backend, _module(_MODULES[name]))


def select_backend(name: str | None, device: str) -> Backend:
    """The backend that will run a scan of arrays on ``device``: the one called
    ``name``, or with None the first of :data:`BACKEND_NAMES` that takes the
    device and is available.  Raises :class:`BackendUnavailableError` saying why
    when none can."""
    if name is not None:
        backend = get_backend(name)
        reason = backend.unavailable_reason(device)
        if reason:
            raise BackendUnavailableError(f"backend={name!r} cannot run on {device} arrays: {reason}")
        return backend
    for candidate in BACKEND_NAMES:
        backend = get_backend(candidate)
        if device in backend.DEVICES and not backend.unavailable_reason(device):
            return backend
    reason = get_backend("triton").unavailable_reason(device)
    raise BackendUnavailableError(f"x is a {device} array and no backend can scan it: {reason}")


def check_capabilities(backend: Backend, request: ScanRequest) -> None:
    """Refuse, before any work, a request that ``backend`` cannot run: ``algorithm=``
    without the CPU scan networks, ``strategy=`` without the GPU strategies, complex
    dtypes without complex types (the Triton backend)."""
    config = request.config
    if config.algorithm != "auto" and not backend.TAKES_ALGORITHM:
        raise ValueError(f"algorithm={config.algorithm!r} selects a CPU scan network; it needs backend='cpu'")
    if config.strategy != "auto" and not backend.TAKES_STRATEGY:
        raise ValueError(f"strategy={config.strategy!r} selects a GPU strategy; "
                         "it needs the triton backend (a device array or backend='triton')")
    names = ["x"] if not request.struct else [f"x[{i}]" for i in range(len(request.fields))]
    for name, field, acc in zip(names, request.fields, request.acc_dtypes):
        dtype = field.dtype if field.dtype.startswith("complex") else acc
        if dtype.startswith("complex") and not backend.COMPLEX_TYPES:
            what = name if dtype == field.dtype else f"dtype={dtype!r} (for {name})"
            raise TypeError(f"{what}: the {backend.NAME.title()} backend has no complex types ({dtype}); use "
                            "the CPU backend (host arrays), or scan the real and imaginary parts as separate "
                            "real fields (prefixscan.linear_recurrence does so for complex coefficients)")


def implementation(primitive: str, table: dict[str, str], backend: Backend) -> ModuleType:
    """The module that implements ``primitive`` on ``backend``: ``table`` maps a
    backend's name to its module's name, imported here on first use (as the
    backends are).  Raises :class:`PrimitiveUnavailableError`, naming the
    primitive and the backend, for a backend the table lacks."""
    name = table.get(backend.NAME)
    if name is None:
        others = ", ".join(repr(b) for b in table) or "none"
        raise PrimitiveUnavailableError(f"{primitive}: the {backend.NAME} backend has no implementation of "
                                        f"{primitive} (backends that have one: {others})")
    return _module(name)


# Backends and implementations already imported, by module name: asked on every call, and
# importlib.import_module costs microseconds.  Filled only with what import_module
# returned, so a module still being imported by another thread is never handed out (a
# sys.modules lookup would; import_module waits on the module's import lock).
_imported: dict = {}


def _module(name: str) -> ModuleType:
    module = _imported.get(name)
    if module is None:
        module = _imported[name] = importlib.import_module(name)
    return module


def available_backends() -> list[dict]:
    """One record per backend: name, availability, reason when unavailable, devices."""
    records = []
    for name in BACKEND_NAMES:
        backend = get_backend(name)
        reason = backend.unavailable_reason(backend.DEVICES[0])
        records.append({"name": name, "available": not reason, "reason": reason,
                        "devices": list(backend.device_names()) if not reason else []})
    return records
