"""The launch runtime of the GPU kernels: every compiled kernel is launched by
:mod:`.launch` (Triton's dispatch on a variant's first launch, its compiled
launcher directly after that), and a planned scan is replayed by :mod:`.replay`
(``prefixscan.Scan``'s fast path: the same launch on new tensors).  Nothing here
knows what a kernel computes."""
