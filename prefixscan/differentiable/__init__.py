"""Differentiable scans for PyTorch: autograd, linear recurrences, torch.compile.

Torch tensors that need gradients, or that ``torch.compile`` traces, leave the
plain scan path for ``torch.library`` custom operators (:mod:`.ops`):
``prefixscan::scan`` (a built-in operator) and ``prefixscan::linear_recurrence``
(the affine monoid, Blelloch 1990, "Prefix sums and their applications",
section 1.4).  Each has a fake (meta) implementation, so ``torch.compile``
traces it without a graph break, and a backward (:mod:`.gradients`) that runs
on the same scan kernels, one pass per scan, in the opposite direction.

Modules (this package file imports none of them, so the routing test of
:mod:`.routing` costs the public API no torch import):

* :mod:`.routing`: which calls take the custom operators (torch-free);
* :mod:`.affine`: the affine monoids, real and complex (torch-free);
* :mod:`.runner`: the plain, non-differentiable scan of a checked config;
* :mod:`.params`: the operators' plain arguments as frozen dataclasses;
* :mod:`.ops`: the custom operators, their fakes and autograd registration;
* :mod:`.gradients`: the backward formulas;
* :mod:`.scans`: ``differentiable_scan``, ``scan`` and the ``cumsum`` family on tensors;
* :mod:`.recurrence`: the public ``linear_recurrence`` (NumPy and torch);
* :mod:`.tensor_recurrence`: its torch implementation (broadcast coefficients,
  packed sequences, final states);
* :mod:`.compaction_ops`: ``prefixscan::compact`` and ``prefixscan::partition``
  (fixed or data-dependent result lengths, gradients to the kept elements).

User-facing documentation: ``docs/autograd.md``.
"""
