"""Segmented scans: a scan that restarts at every segment head, the segments given
as head flags, CSR-style start offsets (``cu_seqlens``) or runs of equal keys
(Schwartz 1980; Blelloch 1990, "Prefix sums and their applications", section 1.5).

* :mod:`.api`: ``segmented_scan``;
* :mod:`.checks`: its arguments (the segments' own checks are
  :mod:`prefixscan._segments`);
* :mod:`.cpu` (the lifted monoid's scan in NumPy) and :mod:`.compiled` (one
  compiled pass, Numba): the CPU backend;
* :mod:`.triton`: the GPU backend's single-pass kernel, the segment heads riding
  on the engine's look-back;
* :mod:`.dask`: dask arrays (segments given on the host).

:data:`IMPLEMENTATIONS` names the module of each backend
(:func:`prefixscan.dispatch.implementation`).
"""

#: backend name -> the module implementing ``segmented_scan(request, segments)`` there.
IMPLEMENTATIONS = {"cpu": "prefixscan.primitives.segmented.cpu", "triton": "prefixscan.primitives.segmented.triton"}
