"""Stream compaction (keep the elements where a mask is True, in order) and stable
partition (those first, then the others, each group in its original order), each
in one pass.

Each kept element's slot in the output is the exclusive sum scan of the mask at
it (Blelloch 1990, "Prefix sums and their applications", section 1.5); the
backends fuse that scan with the scatter into one pass over ``x`` and the mask.
On the GPU each tile counts its kept elements, gets its output offset by
decoupled look-back over the tiles' counts and writes its kept elements
compacted (Merrill & Garland 2016, "Single-pass Parallel Prefix Scan with
Decoupled Look-back", section 4; CUB's ``DeviceSelect::Flagged``); on the CPU a
compiled loop writes every element to the running slot and advances the slot by
the mask bit, without a branch.

Partition: a kept element goes to the exclusive sum scan of the mask at it, a
rejected one at global index i to ``count + i - (kept before i)``, the
complementary count (Blelloch 1990, section 1.3, the split operation; CUB's
``DevicePartition::Flagged`` writes the rejected ones from the back, reversed;
here the mask's count is taken first so that they stay in order).  The backends
fuse the scan with the scatter: on the GPU the single-pass look-back kernel of
compaction, on the CPU one compiled loop with a select instead of a branch.

Both run each backend's implementation
(:data:`~prefixscan.primitives.compaction.IMPLEMENTATIONS`);
docs/design/compaction.md has the design and the measurements.
"""

from __future__ import annotations

from ..._arrays import from_native
from ..._typing import ArrayLike, ArrayOrFields, BackendName, Scalar
from ...dispatch import implementation, select_backend
from ..scan.routing import is_torch_tensor, wants_torch_ops
from . import IMPLEMENTATIONS
from .checks import check_compact_args

__all__ = ["compact", "partition"]


def compact(x: ArrayOrFields, mask: ArrayLike, *, size: int | None = None, fill_value: Scalar | None = None,
            backend: BackendName | None = None) -> ArrayOrFields | tuple[ArrayOrFields, ArrayLike]:
    """The elements of ``x`` where ``mask`` is True, in order: ``x[mask]``, in one pass.

    Parameters
    ----------
    x : array or tuple of arrays
        Host or device arrays; a tuple is several fields selected by one mask.
    mask : bool array
        x's shape, on x's device.
    size : int, optional
        A fixed result length: return ``(values, count)`` without waiting for the
        device (no host synchronization, so the call can be captured in a CUDA
        graph).  ``values`` has ``size`` elements: the first ``min(count, size)``
        selected ones, then ``fill_value``.
    fill_value : scalar, optional
        With ``size``: the value after the selected elements; every field's dtype
        must hold it (as ``init`` of :func:`prefixscan.scan`).  By default each
        field's zero of its dtype (``False`` for bool).
    backend : {None, "cpu", "triton"}, default None
        As in :func:`prefixscan.scan`.

    Returns
    -------
    array, tuple of arrays, or (values, count)
        1-D, x's dtype and array type, on x's device (a tuple for a tuple ``x``).
        With ``size``, also ``count``: a 0-d int64 array on x's device holding the
        number of True elements of ``mask`` (it may exceed ``size``).  Without
        ``size``, the result's length is read from the device once; on the GPU a
        result of at least an eighth of x is a view of an x-sized buffer.
        A dask ``x`` or ``mask`` gives lazy dask arrays, nothing computed:
        without ``size``, one block per chunk of unknown size (as dask's
        ``x[mask]``); with ``size``, values of shape ``(size,)`` and a lazy count.

    Raises
    ------
    ValueError
        A mask of another shape or on another device; a negative size.
    TypeError
        A mask that is not bool, an x that is not a numeric or bool array, a size
        that is not an integer, a fill_value x's dtype cannot hold.

    Examples
    --------
    >>> import numpy as np, prefixscan
    >>> x = np.array([5, -1, 7, -3, 2])
    >>> prefixscan.compact(x, x > 0)
    array([5, 7, 2])
    >>> values, count = prefixscan.compact(x, x > 0, size=4, fill_value=-9)
    >>> values, int(count)
    (array([ 5,  7,  2, -9]), 3)
    """
    if wants_torch_ops(x) and is_torch_tensor(mask):  # autograd or torch.compile: the custom operator
        from . import torch_ops as compaction_ops  # imports torch: x is a tensor

        return compaction_ops.compact(x, mask, size=size, fill_value=fill_value, backend=backend)
    args = check_compact_args(x, mask, size, fill_value)
    chosen = select_backend(backend, args.mask.device)  # before any work: it may be unavailable here
    run = implementation("compact", IMPLEMENTATIONS, chosen)  # the backend's, found before any work too
    if any(ref.library == "dask" for ref in args.fields + (args.mask,)):  # lazy, chunk by chunk
        from . import dask as chunked  # imports dask: x or mask is a dask array

        return chunked.compact(args, fill_value=fill_value, chunk_compact=compact, backend=backend)
    values, count = run.compact(args.fields, args.mask, args.size, args.fills)
    values = tuple(from_native(v, ref, chosen.NATIVE_LIBRARY, ref.dtype) for v, ref in zip(values, args.fields))
    result = values if args.struct else values[0]
    if args.size is None:
        return result
    return result, from_native(count, args.fields[0], chosen.NATIVE_LIBRARY)


def partition(x: ArrayOrFields, mask: ArrayLike, *,
              backend: BackendName | None = None) -> tuple[ArrayOrFields, ArrayLike]:
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
        from . import torch_ops as compaction_ops  # imports torch: x is a tensor

        return compaction_ops.partition(x, mask, backend=backend)
    args = check_compact_args(x, mask)
    chosen = select_backend(backend, args.mask.device)  # before any work: it may be unavailable here
    run = implementation("partition", IMPLEMENTATIONS, chosen)  # the backend's, found before any work too
    if any(ref.library == "dask" for ref in args.fields + (args.mask,)):  # lazy, chunk by chunk
        from . import dask as chunked  # imports dask: x or mask is a dask array

        return chunked.partition(args, chunk_partition=partition, backend=backend)
    values, count = run.partition(args.fields, args.mask)
    values = tuple(from_native(v, ref, chosen.NATIVE_LIBRARY, ref.dtype) for v, ref in zip(values, args.fields))
    return (values if args.struct else values[0]), from_native(count, args.fields[0], chosen.NATIVE_LIBRARY)
