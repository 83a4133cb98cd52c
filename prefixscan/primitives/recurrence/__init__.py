"""Linear recurrences ``h[t] = a[t] h[t-1] + b[t]``: the affine monoid's scan
(Blelloch 1990, "Prefix sums and their applications", section 1.4; Kogge &
Stone 1973), with one-pass kernels where a backend has them.

* :mod:`.api`: ``linear_recurrence``: arrays in memory go to
  :mod:`.in_memory` (host arrays there, tensors and device arrays through
  :mod:`.tensors`; also the totals of a recurrence held in pieces), dask arrays
  to :mod:`.dask`;
* :mod:`.checks`: its arguments;
* :mod:`.affine`: the affine monoids, real and complex (``prefixscan.AFFINE``),
  and over log decays;
* :mod:`.runner`: the backend's one-pass recurrence, found in the tables below;
* :mod:`.cpu` / :mod:`.compiled`: the compiled CPU loop (Numba);
* :mod:`.triton` / :mod:`.triton_kernel`: the one-pass GPU kernel (forward,
  totals, fused backward), with :mod:`.triton_decays` (its decays, plain or as
  logs: ``log_space``);
* :mod:`.torch_ops`: the custom operators ``prefixscan::linear_recurrence`` and
  ``prefixscan::linear_recurrence_backward`` and their gradient;
* :mod:`.tensors`: ``linear_recurrence`` on torch tensors (broadcast
  coefficients, packed sequences, final states), with :mod:`.packing` (the
  restart flags and positions of packed sequences, from host or device offsets);
* :mod:`.dask`: dask arrays, chunk by chunk.
"""

#: backend name -> the module implementing ``linear_recurrence`` and
#: ``linear_recurrence_total`` there (each returns None for dtypes it has no pass
#: for: the caller scans the affine monoid).
IMPLEMENTATIONS = {"cpu": "prefixscan.primitives.recurrence.cpu",
                   "triton": "prefixscan.primitives.recurrence.triton"}
#: backend name -> the module implementing ``linear_recurrence_backward`` (the
#: backward with ``dL/da`` fused, taking ``final``: an adjoint arriving from after the
#: last step); elsewhere the reverse recurrence runs.
FUSED_BACKWARD = {"triton": "prefixscan.primitives.recurrence.triton"}
#: backends whose ``linear_recurrence`` and ``linear_recurrence_backward`` take
#: ``restart`` (a flag per step where packed sequences start, applied in the kernel);
#: elsewhere the caller zeroes those decays in a copy of ``a`` first.
RESTARTING = frozenset({"triton"})
