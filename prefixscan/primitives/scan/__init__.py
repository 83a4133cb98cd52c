"""The scan: ``scan``, ``make_scan`` and ``Scan``, and what the other primitives
build on.

* :mod:`.api`: ``scan``, ``make_scan``, ``Scan`` (per-signature plans, the
  planned replay); every backend's ``run_scan``
  (:class:`~prefixscan.backends.base.Backend`) runs it;
* :mod:`.runner`: the plain, non-differentiable scan of a checked configuration
  (what the other primitives and the custom operators call);
* :mod:`.routing`: which calls take the custom operators (torch-free);
* :mod:`.params`, :mod:`.torch_ops`, :mod:`.gradients`: the custom operator
  ``prefixscan::scan``, its plain arguments and its backward (autograd,
  ``torch.compile``);
* :mod:`.tensors`: ``scan`` of torch tensors through the operator;
* :mod:`.reduction` and :mod:`.pieces`: each lane's total, and the scan of a
  sequence held in pieces (reduce, carries, scan), under :mod:`.dask` (dask
  arrays) and :mod:`prefixscan.distributed` (torch.distributed).

User-facing documentation of the differentiable path: ``docs/autograd.md``.
"""
