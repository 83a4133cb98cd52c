"""The NumPy drop-ins ``cumsum``, ``cumprod``, ``cummax``, ``cummin`` (NumPy's
signatures and dtype promotion, plus ``exclusive`` and ``reverse``) and the
array API standard's ``cumulative_sum`` / ``cumulative_prod``, each a scan with
a built-in operator.

* :mod:`.api`: the public functions, through :func:`prefixscan.scan` (every
  backend, dask arrays included);
* :mod:`.tensors`: the drop-ins on torch tensors that autograd records or
  ``torch.compile`` traces, through the scan's custom operator.
"""
