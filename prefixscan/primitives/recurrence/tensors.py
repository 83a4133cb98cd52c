"""``linear_recurrence`` on torch tensors: broadcast coefficients, packed
variable-length sequences, final states, gradients.

The recurrence runs as the custom operator ``prefixscan::linear_recurrence``
(:mod:`.torch_ops`: one scan under the affine monoid, Blelloch 1990, "Prefix sums and
their applications", section 1.4) when ``torch.compile`` or another recorder traces it,
as the operator's forward and gradient in an ``autograd.Function`` when eager autograd
records it, and as the same computation without either otherwise.
Everything around it is differentiable torch indexing, so gradients reach
``a``, ``b`` and ``init`` through the same graph:

* ``a`` and ``b`` broadcast to one shape (``expand``: a per-channel decay costs
  no copy until the scan reads it, and its gradient is summed back);
* packed sequences (``offsets``, the ``cu_seqlens`` of variable-length
  batches): the state restarts where a sequence starts, by a zero coefficient
  there (a log decay of ``-inf`` in log space: flags the GPU kernel reads beside
  ``a``, a copy of ``a`` elsewhere), and a sequence's seed enters through its
  first ``b``; the flags and positions come from :mod:`.packing` (host offsets
  in NumPy and one copy, device offsets by torch operations);
* the final states are read from ``h`` (one per lane, or per sequence).
"""

from __future__ import annotations

from typing import Any

import torch

from ..._axes import AxisError
from ..._normalize import check_axis_ndim
from ...monoid import accumulator_dtype_name
from ..scan.routing import wants_torch_ops
from ..scan.tensors import host_seed
from .checks import check_log_space_dtype
from .packing import pack_sequences, sequence_bounds
from .torch_ops import RecurrenceParams, call_recurrence, recurrence_values

__all__ = ["linear_recurrence_tensors"]


def _name(dtype: torch.dtype) -> str:
    return str(dtype).replace("torch.", "")


def _shape(a: torch.Tensor, b: torch.Tensor) -> tuple:
    if a.dtype != b.dtype:
        raise TypeError(f"b has dtype {_name(b.dtype)} but a has dtype {_name(a.dtype)}")
    try:
        # equal shapes (the common case) skip torch's broadcast, a third of the host path
        shape = tuple(a.shape) if a.shape == b.shape else tuple(torch.broadcast_shapes(tuple(a.shape), tuple(b.shape)))
    except RuntimeError:
        raise ValueError(f"b has shape {tuple(b.shape)}, which does not broadcast against a's shape "
                         f"{tuple(a.shape)}") from None
    if not shape:
        raise AxisError("a must have at least one dimension (a and b broadcast to a 0-d shape)")
    return shape


def _seed(init: Any, target: tuple, dtype: torch.dtype, device) -> torch.Tensor:
    """``init`` as a tensor of a's dtype expanded to ``target``, after scan's checks."""
    if not isinstance(init, torch.Tensor):
        init = host_seed(init, accumulator_dtype_name(_name(dtype)), device)
    elif init.device != torch.device(device) and init.dim() > 0:  # a 0-d tensor is a scalar, as in torch
        raise ValueError(f"init is on {init.device} but a and b are on {torch.device(device)}")
    try:
        fits = tuple(torch.broadcast_shapes(tuple(init.shape), target)) == target
    except RuntimeError:
        fits = False
    if not fits:
        raise ValueError(f"init: shape {tuple(init.shape)} does not broadcast to {target}, the shape of one "
                         "state per lane" + (" and sequence" if len(target) else ""))
    return init.to(device=device, dtype=dtype, non_blocking=True).expand(target)  # a host scalar: no wait


_REAL_FLOATS = (torch.float16, torch.bfloat16, torch.float32, torch.float64)

# Torch has no add (nor index_add, index_fill, index_select) for these: the
# recurrence runs in the signed type of the same width, whose add and multiply
# are the same arithmetic modulo 2**bits, so the bits of every result agree.
_SIGNED_TWIN = {torch.uint16: torch.int16, torch.uint32: torch.int32, torch.uint64: torch.int64}


def _along(mask: torch.Tensor, axis: int, ndim: int) -> torch.Tensor:
    """``mask`` (1-D) shaped to broadcast along ``axis`` of an ``ndim``-D tensor."""
    shape = [1] * ndim
    shape[axis] = mask.shape[0]
    return mask.view(shape)


def linear_recurrence_tensors(a: torch.Tensor, b: torch.Tensor, *, init: Any = None, axis: int = -1,
                              reverse: bool = False, offsets: Any = None, return_final: bool = False,
                              backend: Any = None, log_space: bool = False):
    """:func:`prefixscan.linear_recurrence` of torch tensors (see its docstring);
    ``axis`` is checked by the caller's rules here."""
    shape = _shape(a, b)
    if log_space and a.dtype not in _REAL_FLOATS:  # the name (a str of a dtype) only on the way to the error
        check_log_space_dtype(_name(a.dtype))
    signed = _SIGNED_TWIN.get(a.dtype)
    if signed is not None:
        unsigned = a.dtype
        if init is not None:  # init's values are checked against the unsigned type first
            if not isinstance(init, torch.Tensor):
                init = host_seed(init, accumulator_dtype_name(_name(unsigned)), a.device)
            init = init.to(unsigned).view(signed)
        result = linear_recurrence_tensors(a.view(signed), b.view(signed), init=init, axis=axis, reverse=reverse,
                                           offsets=offsets, return_final=return_final, backend=backend)
        if return_final:
            return tuple(r.view(unsigned) for r in result)
        return result.view(unsigned)
    axis = check_axis_ndim(len(shape), axis, "a")  # an int, in range
    n = shape[axis]
    params = RecurrenceParams(axis, reverse, backend, log_space=log_space)
    recur = call_recurrence if wants_torch_ops(a, init, b) else recurrence_values
    # a view per expand costs microseconds a call: only where a and b broadcast
    a_full = a if a.shape == shape else a.expand(shape)
    b_full = b if b.shape == shape else b.expand(shape)
    lanes = shape[:axis] + shape[axis + 1:]
    if offsets is None:
        seed = None if init is None else _seed(init, lanes, a.dtype, a.device)
        h = recur(params, a_full, b_full, seed)
        if not return_final:
            return h
        if n == 0:
            return h, (seed if seed is not None else a_full.new_zeros(lanes)).clone()
        return h, h.select(axis, 0 if reverse else n - 1)
    bounds = sequence_bounds(offsets, n, a.device, whole=init is not None or return_final)
    per_sequence = shape[:axis] + (bounds.shape[0] - 1,) + shape[axis + 1:]
    seed = None if init is None else _seed(init, per_sequence, a.dtype, a.device)
    if n == 0:  # every sequence is empty: h is, and each final state is its seed
        h = recur(params, a_full, b_full, None)
        return (h, seed.clone() if seed is not None else a_full.new_zeros(per_sequence)) if return_final else h
    # Host offsets reach the device here, after every argument is checked.
    packing = pack_sequences(bounds, n, a.device, reverse=reverse, seeds=seed is not None, finals=return_final)
    # Empty sequences (a repeated bound) take no step: their positions are clamped into
    # range (packing.py) and masked out here by ``keep``.
    keep = None if packing.filled is None else _along(packing.filled, axis, len(shape))
    b_eff = b_full
    if seed is not None:
        first_decay = a_full.index_select(axis, packing.restart)
        added = torch.where(keep, (first_decay.exp() if log_space else first_decay) * seed, seed.new_zeros(()))
        b_eff = b_full.index_add(axis, packing.restart, added)
    # The restart: a zero decay (log decay -inf) at each sequence's first step, which the
    # kernel applies as it reads a (elsewhere, a copy of a with those decays replaced).
    h = recur(params, a_full, b_eff, None, packing.flags)
    if not return_final:
        return h
    picked = h.index_select(axis, packing.picks)
    return h, torch.where(keep, picked, seed if seed is not None else picked.new_zeros(()))
