"""The backend interface, written down once: :class:`Backend`.

A backend runs checked scans (:class:`~prefixscan._request.ScanRequest`) on the
arrays of some devices.  :mod:`prefixscan.dispatch` picks one per call and the
API layer talks to it only through the members below, never by its module name.
The other primitives (segmented scans, compaction and partition, linear
recurrences, delta coding) are not members: each names the module that
implements it on each backend in its own table (``IMPLEMENTATIONS`` in its
folder of :mod:`prefixscan.primitives`, looked up by
:func:`prefixscan.dispatch.implementation`), and a backend without one is
simply absent from that table.

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

from .._request import ScanRequest

__all__ = ["Backend", "Replay"]

#: A replay of a planned scan on new arrays of the same signature:
#: ``replay(x, out, init) -> result`` (``init``: the checked seed of a seeded plan,
#: else None), or None when the call must take the full path, which it must where
#: ``out`` may share memory with ``x`` (the caller unaliases x on the full path alone);
#: ``replay.expired()`` is True once the plan is stale (e.g. a new tuned tile).
#: A replay may also offer ``replay.for_length(x)``: the replay of the same plan for an
#: unseeded 1-D ``x`` of another length of its class, ``(n - 1).bit_length()`` (the
#: caller has checked all but the length), or None; :class:`prefixscan.Scan` then
#: keeps one plan per length class (the shipped sums' replays do).
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
