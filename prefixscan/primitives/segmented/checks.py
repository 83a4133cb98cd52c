"""The arguments of ``segmented_scan`` but the segments, checked before any work:
a 1-D ``x`` (or tuple of same-length ones) under the scan's checks.  The segment
descriptions (``flags``, ``offsets``, ``keys``) are checked by
:func:`prefixscan._segments.check_segments`, shared with ``linear_recurrence``'s
``offsets`` and the dask path.
"""

from __future__ import annotations

from typing import Any

from ..._arrays import inspect_array
from ..._normalize import _split_fields, build_request, make_config
from ..._request import ScanRequest

__all__ = ["check_segmented_request"]


def check_segmented_request(x: Any, op: Any, *, inclusive: Any, reverse: Any, init: Any, dtype: Any, out: Any,
                            backend: Any) -> ScanRequest:
    """``segmented_scan``'s arguments but the segments: a 1-D ``x`` (or tuple of
    same-length ones), checked as :func:`build_request` checks a flattened scan's
    (operator against the dtypes, ``init`` one value per field, ``out``)."""
    config = make_config(op, axis=None, inclusive=inclusive, reverse=reverse, order=1, tuple_size=1, dtype=dtype,
                         backend=backend, algorithm=None)
    values, struct = _split_fields(x)
    config.monoid.check_fields(len(values), struct)
    for i, v in enumerate(values):
        shape = inspect_array(v, "x" if not struct else f"x[{i}]").shape
        if len(shape) != 1:
            raise ValueError(f"x must be 1-D for a segmented scan, got shape {shape}")
    return build_request(config, x, init, out)
