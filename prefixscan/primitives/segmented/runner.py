"""The segmented scan of arrays in memory, once its arguments are checked.

:func:`run_segmented` is what ``segmented_scan`` runs for host arrays, device
arrays and tensors that take no custom operator, and what the operator
``prefixscan::segmented_scan`` (:mod:`.torch_ops`) runs: it chooses the backend,
checks the segments (:func:`prefixscan._segments.check_segments`, values
included, before any kernel) and runs the backend's segmented scan
(:data:`~prefixscan.primitives.segmented.IMPLEMENTATIONS`).
"""

from __future__ import annotations

from typing import Any

from ..._arrays import as_torch, from_native, write_results
from ..._normalize import check_segments
from ..._request import ScanRequest
from ...dispatch import check_capabilities, implementation, select_backend
from . import IMPLEMENTATIONS

__all__ = ["run_segmented"]


def run_segmented(request: ScanRequest, flags: Any, offsets: Any, keys: Any) -> list:
    """The segmented scan of the checked 1-D ``request``
    (:func:`.checks.check_segmented_request`) with the one segment description
    given: one result per field, of the caller's array type (``out``'s arrays when
    the request has them)."""
    chosen = select_backend(request.config.backend, request.device)
    check_capabilities(chosen, request)
    on_device = chosen.NATIVE_LIBRARY == "torch"
    # x's torch device (its index too): host segments are copied there
    segments = check_segments(request.lane_len, flags, offsets, keys,
                              device=as_torch(request.fields[0]).device if on_device else None)
    results = implementation("segmented_scan", IMPLEMENTATIONS, chosen).segmented_scan(request, segments)
    native = chosen.NATIVE_LIBRARY
    if request.cast_out is not None:  # out of another dtype: cast into it now that the scan succeeded
        write_results(request.cast_out, results)
        return [o.obj for o in request.cast_out]
    if request.out is not None:
        return [o.obj for o in request.out]
    if request.fields[0].library != native:
        return [from_native(r, like, native, d) for r, like, d in zip(results, request.fields, request.out_dtypes)]
    return list(results)
