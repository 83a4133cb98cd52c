"""prefixscan over torch.distributed: one sequence held in pieces by the ranks of a
process group, scanned where it lies (sequence parallelism).

* :func:`scan`: any operator or monoid, orders and tuple sizes; every rank
  reduces its piece, one ``all_gather`` of one monoid element per rank, every
  rank scans its piece with the carry of the ranks before it as ``init``
  (reduce-then-scan, Merrill & Grimshaw 2009);
* :func:`linear_recurrence`: ``h[t] = a[t] h[t-1] + b[t]`` with the time axis
  split over the ranks, differentiable: its backward is the same structure run
  from the end (gradients flow from later ranks to earlier ones).

Works with gloo (CPU tensors) and NCCL (CUDA tensors); the local scans are
prefixscan's own (CPU backend, Triton kernels on the GPU).  Needs torch.
See docs/scaleout.md.
"""

from .recurrence import linear_recurrence
from .scan import scan

__all__ = ["scan", "linear_recurrence"]
