"""Delta coding: q-th order, s-strided differences (``delta_encode``) and their
inverse scan (``delta_decode``), the higher-order and tuple-based prefix sums of
SAM (Maleki, Yang & Burtscher, PLDI 2016).

* :mod:`.api`: ``delta_encode``, ``delta_decode`` (the sum scan of
  :mod:`..scan`, ``order`` times per stream);
* :mod:`.checks`: their arguments;
* :mod:`.cpu` (NumPy, one round per order) and :mod:`.compiled` (one compiled
  pass, Numba): the CPU backend;
* :mod:`.triton`: the GPU backend's one-pass stencil kernel;
* :mod:`.dask`: dask arrays, each chunk with a halo of the elements before it.

:data:`IMPLEMENTATIONS` names the module of each backend's encoder
(:func:`prefixscan.dispatch.implementation`).
"""

#: backend name -> the module implementing ``delta_encode(x, order, tuple_size, axis)`` there.
IMPLEMENTATIONS = {"cpu": "prefixscan.primitives.delta.cpu", "triton": "prefixscan.primitives.delta.triton"}
