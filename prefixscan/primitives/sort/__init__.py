"""Sorting and grouping: ``sort``, ``argsort`` (both stable), ``unique`` and
``run_length_encode``, on a least-significant-digit radix sort whose every digit
pass is a scan of the digits' counts (Blelloch 1990, "Prefix sums and their
applications", section 3.4, the split radix sort; Merrill & Grimshaw 2011,
"High performance and scalable radix sorting"; Adinets & Merrill 2022, "Onesweep").

* :mod:`.api`: ``sort``, ``argsort``, ``unique``, ``run_length_encode``;
* :mod:`.checks`: their arguments;
* :mod:`.keys`: keys of every dtype as order-preserving unsigned integers (floats,
  signed integers, descending, ``key_bits``);
* :mod:`.cpu` (NumPy's stable sorts) and :mod:`.compiled` (an LSD radix sort with
  8-bit digits, Numba): the CPU backend;
* :mod:`.triton` (launcher, entry points) and :mod:`.triton_kernels` (the kernels):
  the GPU backend's Onesweep on the engine, one histogram pass, then one launch per
  4-bit digit whose tiles carry their digit counts by look-back;
* :mod:`.torch_ops`: the custom operators ``prefixscan::sort`` and
  ``prefixscan::argsort`` and their gradient;
* :mod:`.dask`: dask arrays, each block sorted along an axis held in one chunk.

:data:`IMPLEMENTATIONS` names the module of each backend
(:func:`prefixscan.dispatch.implementation`); docs/design/sort.md has the design
and the measurements.
"""

#: backend name -> the module implementing ``sort(args, want_keys, want_index)``,
#: ``unique(args)`` and ``run_length_encode(ref)`` there.
IMPLEMENTATIONS = {"cpu": "prefixscan.primitives.sort.cpu", "triton": "prefixscan.primitives.sort.triton"}
