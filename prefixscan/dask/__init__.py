"""prefixscan on dask arrays: lazy scans over chunks, for arrays larger than memory.

``prefixscan.scan`` and the functions built on it take dask arrays and return
dask arrays of the same chunks, without computing anything; this package is
where they go (the public functions detect a dask array by its type and hand it
here, so prefixscan never imports dask unless it is given one).  Install the
``dask`` extra from a checkout (prefixscan is not on PyPI):
``pip install -e '.[dask]'``.

* :mod:`.graph`: the task graph, three layers: every chunk reduced to its
  total, the totals combined into every chunk's carry by a tree, every chunk
  scanned with its carry as ``init`` (reduce-then-scan, Merrill & Grimshaw
  2009; Blelloch 1990, section 1.2): two reads and one write of the data;
* :mod:`.chunked`: ``scan`` (``cumsum`` ... ``cummin``, ``delta_decode`` and
  ``make_scan`` go through it);
* :mod:`.derived`: ``linear_recurrence`` and ``delta_encode``;
* :mod:`.segmented`: ``segmented_scan`` (segments given on the host).
* :mod:`.compaction`: ``compact`` and ``partition``, each chunk on its own
  (unknown chunk sizes, as dask's ``x[mask]``).

See docs/scaleout.md for the graph, the memory bound and measurements.
"""

from .chunked import scan
from .derived import delta_encode, linear_recurrence
from .segmented import segmented_scan

__all__ = ["scan", "linear_recurrence", "delta_encode", "segmented_scan"]
