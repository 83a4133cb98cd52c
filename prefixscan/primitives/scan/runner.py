"""The plain (non-differentiable) scan of a checked configuration.

The custom operators of :mod:`.torch_ops` run their forward and backward scans
here: the same path as :class:`prefixscan.Scan` (argument checks in
:mod:`prefixscan._normalize`, backend choice in :mod:`prefixscan.dispatch`, the
backend's ``run_scan``), without the per-signature plan cache, so that this
module sits below the public API that routes to it.  The other primitives' host
paths scan here too.
"""

from __future__ import annotations

from typing import Any

from ... import dispatch
from ..._arrays import from_native
from ..._normalize import build_request
from ..._request import ScanConfig

__all__ = ["run_scan", "takes_complex"]


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
