"""``linear_recurrence``: ``h[t] = a[t] * h[t-1] + b[t]`` as one scan, on any array type.

The maps ``h -> a h + b`` compose into maps of the same form, so the recurrence
is a scan of the pairs ``(a[t], b[t])`` under composition of affine maps, an
associative but not commutative operator: the affine monoid (:mod:`.affine`;
Blelloch 1990, "Prefix sums and their applications", section 1.4; Kogge &
Stone 1973).  Arrays in memory (host arrays through NumPy, torch tensors through
a differentiable custom operator) go to :mod:`.in_memory`; dask arrays go to
:mod:`.dask`, chunk by chunk.
"""

from __future__ import annotations

from ..._arrays import is_dask_collection, refuse_dask
from ..._normalize import check_flag
from ..._typing import ArrayLike, BackendName, OffsetsLike, Scalar
from ..scan.routing import is_torch_tensor
from .in_memory import recurrence_in_memory

__all__ = ["linear_recurrence"]


def linear_recurrence(a: ArrayLike | Scalar, b: ArrayLike | Scalar, *, init: ArrayLike | Scalar | None = None,
                      axis: int = -1, reverse: bool = False, offsets: OffsetsLike | None = None,
                      return_final: bool = False, log_space: bool = False,
                      backend: BackendName | None = None) -> ArrayLike | tuple[ArrayLike, ArrayLike]:
    """Solve ``h[t] = a[t] * h[t-1] + b[t]`` along ``axis``, with ``h[-1] = init``
    (``h[t] = exp(a[t]) * h[t-1] + b[t]`` with ``log_space=True``).

    Computed as one scan of the pairs ``(a, b)`` with the affine monoid
    (:data:`prefixscan.AFFINE`; Blelloch 1990, section 1.4), so it runs in
    parallel on both backends: the state of a linear RNN or state-space model
    (a diagonal SSM's scan, a gated linear recurrence), an exponential moving
    average (``a = 1 - alpha``, ``b = alpha * x``).  Differentiable for torch
    tensors (gradients to ``a``, ``b``, ``init`` and through the final state)
    and traceable by ``torch.compile`` without a graph break; see
    ``docs/autograd.md``.

    Parameters
    ----------
    a, b : array
        Coefficients and inputs, of one dtype, of any type :func:`prefixscan.scan`
        takes; their shapes broadcast against each other (``a`` of shape
        ``(channels, 1)`` is a per-channel decay for ``b`` of shape
        ``(channels, steps)``), and ``h`` has the broadcast shape (at least 1-D).
        Real or complex; float16 and bfloat16 accumulate in float32 and are
        rounded once.
    init : scalar or array, optional
        ``h[-1]`` (``h[n]`` with ``reverse``); 0 when None.  A scalar or an
        array that broadcasts to the lane shape (h's shape without ``axis``);
        with ``offsets``, to h's shape with ``axis`` of length the number of
        sequences (one seed per sequence).
    axis : int, default -1
        The time axis.
    reverse : bool, default False
        Run from the end: ``h[t] = a[t] * h[t+1] + b[t]`` with ``h[n] = init``.
    offsets : 1-D integer array or list of ints, optional
        Packed variable-length sequences along ``axis``, as ``cu_seqlens``:
        ``[0, l0, l0 + l1, ..., n]``; the final n may be left out and a
        repeated value is an empty sequence (whose final state is its seed).
        The same rule as ``segmented_scan``'s ``offsets`` (docs/semantics.md,
        "Segments").  The state restarts at every sequence start (from its
        ``init``, or 0).  Offsets on a GPU are checked there, which waits for
        the GPU once a call; a list or a host array is checked on the host and
        copied without waiting (the faster choice in a training loop).
    return_final : bool, default False
        Also return the final state: ``h`` at the last step (the first with
        ``reverse``), of the lane shape; with ``offsets``, one per sequence,
        stacked along ``axis``.  Differentiable like ``h``.
    log_space : bool, default False
        ``a`` holds log decays: ``h[t] = exp(a[t]) * h[t-1] + b[t]``, the way
        gated models produce them (``F.logsigmoid(x)``, ``-F.softplus(x)``,
        ``dt * A``).  Products of decays are sums of logs (the pairs compose
        as ``(la1 + la2, exp(la2) * b1 + b2)``), so a long span decays to
        exactly ``exp`` of its summed log decay, never to an early 0 or a NaN,
        and no array of ``exp(a)`` is made (the kernels take ``exp`` where a
        decay multiplies a state).  The gradient goes to the log decays:
        ``dL/da[t] = dL/db[t] * h[t-1] * exp(a[t])``, the gradient of the
        decay ``exp(a[t])`` times the decay.  Real floating dtypes only
        (float16 and bfloat16 accumulate in float32).
    backend : {None, "cpu", "triton"}, default None
        As in :func:`prefixscan.scan`.

    Returns
    -------
    array, or (array, array) with ``return_final``
        ``h``, of the broadcast shape and a's dtype, of the caller's array type
        (and the final state).

    Raises
    ------
    ValueError
        Shapes of ``a`` and ``b`` that do not broadcast (or broadcast to 0-d),
        an out-of-range ``axis``, an ``init`` that does not broadcast to its
        shape, ``offsets`` that do not start at 0, decrease, or leave ``[0, n]``.
    TypeError
        ``a`` and ``b`` of different dtypes, a flag that is not a bool,
        ``log_space=True`` with a dtype that is not a real float.

    Examples
    --------
    >>> import numpy as np, prefixscan
    >>> prefixscan.linear_recurrence(np.array([2.0, 2.0, 2.0]), np.array([1.0, 1.0, 1.0]), init=1.0)
    array([ 3.,  7., 15.])
    >>> prefixscan.linear_recurrence(np.log([2.0, 2.0, 2.0]), np.array([1.0, 1.0, 1.0]), init=1.0, log_space=True)
    array([ 3.,  7., 15.])
    """
    log_space = check_flag(log_space, "log_space")
    # Tensors first: torch.compile traces this function, and a type's module name
    # (the dask test) is something TorchDynamo cannot read.
    if is_torch_tensor(a) or is_torch_tensor(b):
        return recurrence_in_memory(a, b, init=init, axis=axis, reverse=reverse, offsets=offsets,
                                    return_final=return_final, backend=backend, log_space=log_space)
    if is_dask_collection(a) or is_dask_collection(b):  # lazy, chunk by chunk
        from . import dask as chunked  # imports dask: a or b is a dask array

        return chunked.linear_recurrence(a, b, init=init, axis=axis, reverse=reverse, offsets=offsets,
                                         return_final=return_final, backend=backend, log_space=log_space)
    refuse_dask(offsets, "offsets")  # host a and b: the offsets are read now, not computed behind their back
    return recurrence_in_memory(a, b, init=init, axis=axis, reverse=reverse, offsets=offsets,
                                return_final=return_final, backend=backend, log_space=log_space)
