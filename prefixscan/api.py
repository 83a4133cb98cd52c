"""The public API: every public function in one place.

The scan itself (:func:`scan`, :func:`make_scan`, :class:`Scan`) is implemented
in :mod:`prefixscan._scan`, the functions derived from it in
:mod:`prefixscan.algorithms`, which scan through :mod:`prefixscan._scan`; this
module sits above both and re-exports them, and :mod:`prefixscan` imports from
here.  Imports point one way: public API -> derived algorithms -> the scan ->
argument normalization -> dispatch -> backends.
"""

from __future__ import annotations

from ._scan import _SCANS, Scan, make_scan, scan  # noqa: F401 - _SCANS: the one-shot Scans, for tests
from .algorithms import (
    AFFINE,
    compact,
    cummax,
    cummin,
    cumprod,
    cumsum,
    cumulative_prod,
    cumulative_sum,
    delta_decode,
    delta_encode,
    linear_recurrence,
    partition,
    segmented_scan,
)

__all__ = ["AFFINE", "Scan", "compact", "cummax", "cummin", "cumprod", "cumsum", "cumulative_prod", "cumulative_sum",
           "delta_decode", "delta_encode",
           "linear_recurrence", "make_scan", "partition", "scan", "segmented_scan"]
