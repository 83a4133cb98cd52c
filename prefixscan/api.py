"""The public API: every public function in one place.

Each primitive is implemented in its folder of :mod:`prefixscan.primitives`
(the scan itself, :func:`scan`, :func:`make_scan` and :class:`Scan`, in
:mod:`prefixscan.primitives.scan`; the others scan through it); this module
sits above them all and re-exports their public functions, and
:mod:`prefixscan` imports from here.  Imports point one way: public API ->
primitives -> argument normalization -> dispatch -> backends.
"""

from __future__ import annotations

from .primitives.compaction.api import compact, partition
from .primitives.cumulative.api import cummax, cummin, cumprod, cumsum, cumulative_prod, cumulative_sum
from .primitives.delta.api import delta_decode, delta_encode
from .primitives.recurrence.affine import AFFINE
from .primitives.recurrence.api import linear_recurrence
from .primitives.scan.api import _SCANS, Scan, make_scan, scan  # noqa: F401 - _SCANS: the one-shot Scans, for tests
from .primitives.segmented.api import segmented_scan
from .primitives.sort.api import argsort, run_length_encode, sort, unique

__all__ = ["AFFINE", "Scan", "argsort", "compact", "cummax", "cummin", "cumprod", "cumsum", "cumulative_prod",
           "cumulative_sum", "delta_decode", "delta_encode",
           "linear_recurrence", "make_scan", "partition", "run_length_encode", "scan", "segmented_scan", "sort",
           "unique"]
