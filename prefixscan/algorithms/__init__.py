"""The functions derived from the scan: NumPy drop-ins, linear recurrences,
delta coding, segmented scans and stream compaction.

Each is a scan with a particular operator or a small computation around one
(Blelloch 1990, "Prefix sums and their applications", sections 1.3-1.5):

* :mod:`.cumulative`: ``cumsum``, ``cumprod``, ``cummax``, ``cummin`` with
  NumPy's signatures and dtype promotion, and the array API standard's
  ``cumulative_sum`` / ``cumulative_prod``;
* :mod:`.recurrence`: ``linear_recurrence`` through the affine monoid
  (:data:`AFFINE`; Blelloch 1990, section 1.4);
* :mod:`.delta`: ``delta_encode`` / ``delta_decode``, higher-order and
  tuple-based differences and their inverse scans (Maleki, Yang & Burtscher,
  PLDI 2016);
* :mod:`.segmented`: ``segmented_scan`` through the operator lifted to
  (head flag, value) pairs (Schwartz 1980; Blelloch 1990, section 1.5);
* :mod:`.compaction`: ``compact``, an exclusive scan of the mask fused with
  the scatter in one pass (Merrill & Garland 2016);
* :mod:`.partition`: ``partition``, the stable split of the same pass.

They run their scans through :func:`prefixscan.scan` (the one entry point,
imported from :mod:`prefixscan._scan` below the public API, with its
per-signature plan cache, so a small ``cumsum`` costs what a small ``scan``
costs), check their other arguments in :mod:`prefixscan._normalize`,
and reach a backend's own code (the delta-coding kernel, the compaction kernels)
only through :mod:`prefixscan.dispatch` and the
:class:`~prefixscan.backends.base.Backend` interface.
"""

from .compaction import compact
from .cumulative import cummax, cummin, cumprod, cumsum, cumulative_prod, cumulative_sum
from .delta import delta_decode, delta_encode
from .partition import partition
from .recurrence import AFFINE, linear_recurrence
from .segmented import segmented_scan

__all__ = ["AFFINE", "compact", "cummax", "cummin", "cumprod", "cumsum", "cumulative_prod", "cumulative_sum",
           "delta_decode", "delta_encode",
           "linear_recurrence", "partition", "segmented_scan"]
