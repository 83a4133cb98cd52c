"""Stable partition: the elements where a mask is True first, then the others,
each group in its original order, in one pass.

A kept element goes to the exclusive sum scan of the mask at it, a rejected one
at global index i to ``count + i - (kept before i)``, the complementary count
(Blelloch 1990, "Prefix sums and their applications", section 1.3, the split
operation; CUB's ``DevicePartition::Flagged`` writes the rejected ones from the
back, reversed; here the mask's count is taken first so that they stay in
order).  The backends fuse the scan with the scatter
(:meth:`prefixscan.backends.base.Backend.partition`): on the GPU the
single-pass look-back kernel of compaction (Merrill & Garland 2016, section 4),
on the CPU one compiled loop with a select instead of a branch.
docs/design/compaction.md has the design and the measurements.
"""

from __future__ import annotations

from .._arrays import from_native
from .._normalize import check_compact_args
from ..differentiable.routing import is_torch_tensor, wants_torch_ops
from ..dispatch import select_backend

__all__ = ["partition"]


def partition(x, mask, *, backend=None):
    """The elements of ``x`` where ``mask`` is True, then the others, each in order.

    Parameters
    ----------
    x : array or tuple of arrays
        Host or device arrays; a tuple is several fields partitioned by one mask.
    mask : bool array
        x's shape, on x's device.
    backend : {None, "cpu", "triton"}, default None
        As in :func:`prefixscan.scan`.

    Returns
    -------
    (values, count)
        ``values``: 1-D, all of x's elements (a tuple for a tuple ``x``), x's dtype
        and array type, on x's device, ``values[:count]`` equal to ``x[mask]`` and
        ``values[count:]`` to ``x[~mask]``; ``count``: a 0-d int64 array on x's
        device.  Nothing waits for the device (the call can be captured in a CUDA
        graph).
        A dask ``x`` or ``mask`` gives lazy dask arrays, nothing computed:
        ``values`` of unknown chunk sizes (every chunk's kept elements, then
        every chunk's rejected ones) and a lazy ``count``.

    Raises
    ------
    ValueError
        A mask of another shape or on another device.
    TypeError
        A mask that is not bool, an x that is not a numeric or bool array.

    Examples
    --------
    >>> import numpy as np, prefixscan
    >>> x = np.array([5, -1, 7, -3, 2])
    >>> values, count = prefixscan.partition(x, x > 0)
    >>> values, int(count)
    (array([ 5,  7,  2, -1, -3]), 3)
    """
    if wants_torch_ops(x) and is_torch_tensor(mask):  # autograd or torch.compile: the custom operator
        from ..differentiable import compaction_ops  # imports torch: x is a tensor

        return compaction_ops.partition(x, mask, backend=backend)
    args = check_compact_args(x, mask)
    chosen = select_backend(backend, args.mask.device)  # before any work: it may be unavailable here
    if any(ref.library == "dask" for ref in args.fields + (args.mask,)):  # lazy, chunk by chunk
        from ..dask import compaction as chunked  # imports dask: x or mask is a dask array

        return chunked.partition(args, chunk_partition=partition, backend=backend)
    values, count = chosen.partition(args.fields, args.mask)
    values = tuple(from_native(v, ref, chosen.NATIVE_LIBRARY, ref.dtype) for v, ref in zip(values, args.fields))
    return (values if args.struct else values[0]), from_native(count, args.fields[0], chosen.NATIVE_LIBRARY)
