"""Stream compaction (``compact``: the elements where a mask is True, in order)
and stable partition (``partition``: those first, then the others), each an
exclusive sum scan of the mask fused with the scatter in one pass (Blelloch 1990,
"Prefix sums and their applications", sections 1.3 and 1.5; Merrill & Garland
2016).

* :mod:`.api`: ``compact``, ``partition``;
* :mod:`.checks`: their arguments;
* :mod:`.cpu` (NumPy's boolean indexing) and :mod:`.compiled` (one branch-free
  compiled pass, Numba, threaded for large inputs): the CPU backend;
* :mod:`.triton`: the GPU backend's single-pass look-back kernel over the tiles'
  counts, the scatter fused;
* :mod:`.torch_ops`: the custom operators ``prefixscan::compact`` and
  ``prefixscan::partition`` and their gradient;
* :mod:`.dask`: dask arrays, each chunk on its own.

:data:`IMPLEMENTATIONS` names the module of each backend
(:func:`prefixscan.dispatch.implementation`); docs/design/compaction.md has the
design and the measurements.
"""

#: backend name -> the module implementing ``compact(fields, mask, size, fills)`` and
#: ``partition(fields, mask)`` there.
IMPLEMENTATIONS = {"cpu": "prefixscan.primitives.compaction.cpu", "triton": "prefixscan.primitives.compaction.triton"}
