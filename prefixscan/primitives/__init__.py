"""The primitives, one folder each: everything about one primitive in one place.

Each is a scan with a particular operator or a small computation around one
(Blelloch 1990, "Prefix sums and their applications", sections 1.3-1.5):

* :mod:`.scan`: ``scan``, ``make_scan`` and ``Scan``, and what every other
  primitive builds on: the plain scan of a checked configuration, the
  differentiable custom operator and its gradients, scans held in pieces (dask,
  torch.distributed);
* :mod:`.cumulative`: ``cumsum``, ``cumprod``, ``cummax``, ``cummin`` with
  NumPy's signatures and dtype promotion, and the array API standard's
  ``cumulative_sum`` / ``cumulative_prod``;
* :mod:`.segmented`: ``segmented_scan`` through the operator lifted to
  (head flag, value) pairs (Schwartz 1980; Blelloch 1990, section 1.5);
* :mod:`.compaction`: ``compact`` and ``partition``, an exclusive scan of the
  mask fused with the scatter in one pass (Merrill & Garland 2016);
* :mod:`.recurrence`: ``linear_recurrence`` through the affine monoid
  (``AFFINE``; Blelloch 1990, section 1.4);
* :mod:`.delta`: ``delta_encode`` / ``delta_decode``, higher-order and
  tuple-based differences and their inverse scans (Maleki, Yang & Burtscher,
  PLDI 2016).

What a folder holds, module by module (a primitive has the modules it needs):

* ``api.py``: the public functions (re-exported by :mod:`prefixscan.api`);
* ``checks.py``: their arguments, checked before any work (the checks every
  primitive shares are :mod:`prefixscan._normalize`'s);
* ``__init__.py``: ``IMPLEMENTATIONS``, backend name -> the module that
  implements the primitive on that backend, found by
  :func:`prefixscan.dispatch.implementation` (a backend without one is absent
  from the table; the scan itself is every backend's
  :class:`~prefixscan.backends.base.Backend` interface);
* ``cpu.py``: the CPU backend's implementation (its NumPy path), and
  ``compiled.py``: its compiled pass (Numba kernels and their driver, imported
  only where Numba is);
* ``triton.py``: the GPU backend's kernels, launcher and entry points, on the
  engine and runtime of :mod:`prefixscan.backends.triton`;
* ``torch_ops.py``: the ``torch.library`` custom operators and their
  gradients (autograd, ``torch.compile``), and ``tensors.py``: the public
  function's path for torch tensors;
* ``dask.py``: the lazy, chunk-by-chunk path of dask arrays, on the graph of
  :mod:`prefixscan.dask`.

Imports point one way: public API -> primitives (each built on the scan) ->
argument checks -> dispatch -> backends -> kernels.  docs/design/adding-a-primitive.md
describes how a primitive is added.
"""
