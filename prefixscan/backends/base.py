"""The backend interface, written down once: :class:`Backend`.

A backend runs checked scans (:class:`~prefixscan._request.ScanRequest`) on the
arrays of some devices, plus the two derived operations whose data movement is
library-specific: delta encoding, stream compaction and partition.
:mod:`prefixscan.dispatch` picks one per call and the API layer talks to it only
through the members below, never by its module name.

The two backends are modules (:mod:`prefixscan.backends.cpu`,
:mod:`prefixscan.backends.triton`) that conform structurally: a backend is a
process-wide singleton with no state of its own beyond caches, it must import
without its optional dependencies (torch and triton are imported when a scan
runs), and PEP 544 lets a module implement a protocol, its constants and
functions being the members.  ``isinstance(module, Backend)`` checks that every
member is present (tests/backends/test_dispatch.py also compares the signatures).

Capability flags replace tests of a backend's name:

* ``TAKES_ALGORITHM``: runs the CPU scan networks that ``algorithm=`` names
  (:mod:`prefixscan.networks`: Kogge-Stone, Sklansky, Brent-Kung, ...);
* ``TAKES_STRATEGY``: runs the GPU meta-strategies that ``strategy=`` names
  (:mod:`prefixscan.backends.triton.planning.registry`);
* ``COMPLEX_TYPES``: scans complex dtypes (Triton has no complex types: a
  complex scan there is refused before any work, by
  :func:`prefixscan.dispatch.check_capabilities`).
"""

from __future__ import annotations

from typing import Any, Callable, Protocol, runtime_checkable

from .._arrays import ArrayRef
from .._request import ScanRequest

__all__ = ["Backend", "Replay"]

#: A replay of a planned scan on new arrays of the same signature:
#: ``replay(x, out, init) -> result`` (``init``: the checked seed of a seeded plan,
#: else None), or None when the call must take the full path;
#: ``replay.expired()`` is True once the plan is stale (e.g. a new tuned tile).
Replay = Callable[[Any, Any, Any], Any]


@runtime_checkable
class Backend(Protocol):
    """What :mod:`prefixscan.dispatch` hands the API layer."""

    #: The name ``backend=`` selects it by: "cpu" or "triton".
    NAME: str
    #: The devices of the arrays it takes ("cpu", "cuda").
    DEVICES: tuple[str, ...]
    #: The array library of its results: "numpy" or "torch".
    NATIVE_LIBRARY: str
    #: It runs the CPU scan networks selected by ``algorithm=``.
    TAKES_ALGORITHM: bool
    #: It runs the GPU meta-strategies selected by ``strategy=``.
    TAKES_STRATEGY: bool
    #: It scans complex dtypes.
    COMPLEX_TYPES: bool

    def unavailable_reason(self, device: str) -> str:
        """Why it cannot scan arrays on ``device`` here ("" when it can): the
        message says what to install or which backend to use instead."""
        ...

    def device_names(self) -> list[str]:
        """The devices it would run on here, by name."""
        ...

    def run_scan(self, request: ScanRequest) -> list:
        """Run ``request``; one result array of ``NATIVE_LIBRARY`` per field
        (``out``'s arrays when the request has them)."""
        ...

    def run_scan_planned(self, request: ScanRequest) -> tuple[list, Replay | None]:
        """``run_scan`` plus a :data:`Replay` of it for later calls with arrays of
        the same signature, or None where the backend has no faster path."""
        ...

    def delta_encode(self, x: ArrayRef, order: int, tuple_size: int, axis: int) -> Any:
        """``order`` rounds of ``d[j] -= d[j - tuple_size]`` along ``axis`` (checked,
        non-negative) of ``x``; a new array of ``NATIVE_LIBRARY``, x's dtype."""
        ...

    def compact(self, fields: tuple, mask: ArrayRef, size: int | None, fills: tuple) -> tuple:
        """Stream compaction in one pass (a count of each tile's kept elements, its
        offset by look-back, the scatter fused): ``(values, count)``, ``values`` a
        tuple of 1-D arrays of ``NATIVE_LIBRARY``, one per field of ``fields``
        (checked ArrayRefs of the mask's shape), ``count`` a 0-d int64 array of the
        selected elements.  ``size`` None: ``values`` exact (``x[mask]``); an int:
        ``size`` elements each, the first selected ones, then the field's fill value
        (``fills``: one checked NumPy 0-d array of each field's dtype), with no host
        synchronization."""
        ...

    def partition(self, fields: tuple, mask: ArrayRef) -> tuple:
        """Stable partition in one pass: ``(values, count)``, each value a 1-D array
        of all elements of its field with the selected ones first, then the others,
        each group in order; ``count`` a 0-d int64 array of the selected elements."""
        ...

    def segmented_scan(self, request: ScanRequest, segments: tuple) -> list | None:
        """A segmented scan in one pass of the checked 1-D ``request`` (operator,
        inclusive, reverse, ``init`` seeding every segment, dtype, ``out``), the
        segments given as ``(kind, array)`` ("flags", "offsets" or "keys", as checked
        by :func:`prefixscan._normalize.check_segments`: host arrays for the CPU
        backend, torch tensors on x's device for Triton); one result per field
        (``out``'s arrays when given), or None where the backend has no such pass
        for it (the caller's host scan of the lifted monoid runs)."""
        ...

    def linear_recurrence(self, a: Any, b: Any, init: Any, axis: int, reverse: bool,
                          deterministic: bool) -> Any:
        """``h[t] = a[t] h[t-1] + b[t]`` along ``axis`` (non-negative) in one pass, ``h[-1] =
        init`` (the lane shape, or None), from the end with ``reverse``; ``a`` and ``b``
        arrays of ``NATIVE_LIBRARY`` of one shape and dtype (either may be a broadcast
        view).  A new array, or None where the backend has no such pass for them (the
        caller scans the affine monoid)."""
        ...

    def linear_recurrence_total(self, a: Any, b: Any, axis: int, reverse: bool) -> tuple | None:
        """Each lane's map ``h_in -> A h_in + B`` of the recurrence over the whole
        ``axis`` (the reduce step of a recurrence held in pieces): ``(A, B)`` of the lane
        shape, from one read of ``a`` and ``b`` (nothing of ``h`` written), or None where
        the backend has no such pass (the caller multiplies and runs the recurrence)."""
        ...

    def linear_recurrence_backward(self, a: Any, h: Any, grad: Any, init: Any, axis: int, reverse: bool,
                                   deterministic: bool, need_a: bool) -> tuple | None:
        """``(dL/da, dL/db)`` of ``h = linear_recurrence(a, b, init, axis, reverse)`` from
        ``grad = dL/dh`` in one pass (``dL/da`` None unless ``need_a``), or None where the
        backend has no fused backward (the caller runs the reverse recurrence)."""
        ...
