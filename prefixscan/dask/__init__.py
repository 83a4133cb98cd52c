"""prefixscan on dask arrays: lazy scans over chunks, for arrays larger than memory.

``prefixscan.scan`` and the functions built on it take dask arrays and return
dask arrays of the same chunks, without computing anything; each primitive's
dask path (the ``dask`` module of its folder in :mod:`prefixscan.primitives`)
is where they go (the public functions detect a dask array by its type and hand
it there, so prefixscan never imports dask unless it is given one).  Install the
``dask`` extra from a checkout (prefixscan is not on PyPI):
``pip install -e '.[dask]'``.

This package holds what those paths share:

* :mod:`.graph`: the task graph, three layers: every chunk reduced to its
  total, the totals combined into every chunk's carry by a tree, every chunk
  scanned with its carry as ``init`` (reduce-then-scan, Merrill & Grimshaw
  2009; Blelloch 1990, section 1.2): two reads and one write of the data;
* :mod:`.chunks`: the checks of chunks and of concrete arguments, and the
  small host arrays that travel between the graph's layers.

and names the paths: ``scan`` (``cumsum`` ... ``cummin``, ``delta_decode`` and
``make_scan`` go through it), ``linear_recurrence``, ``delta_encode`` and
``segmented_scan`` (segments given on the host); ``compact`` and ``partition``
run each chunk on its own (unknown chunk sizes, as dask's ``x[mask]``).  They
are loaded on first use: importing this package imports neither dask nor them.

See docs/scaleout.md for the graph, the memory bound and measurements.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["scan", "linear_recurrence", "delta_encode", "segmented_scan"]

#: name -> the module of its dask path.
_PATHS = {
    "scan": "prefixscan.primitives.scan.dask",
    "linear_recurrence": "prefixscan.primitives.recurrence.dask",
    "delta_encode": "prefixscan.primitives.delta.dask",
    "segmented_scan": "prefixscan.primitives.segmented.dask",
}


def __getattr__(name: str) -> Any:
    module = _PATHS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


def __dir__() -> list[str]:
    return sorted(list(globals()) + __all__)
