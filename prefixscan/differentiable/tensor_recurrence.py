"""``linear_recurrence`` on torch tensors: broadcast coefficients, packed
variable-length sequences, final states, gradients.

The recurrence runs as the custom operator ``prefixscan::linear_recurrence``
(:mod:`.ops`: one scan under the affine monoid, Blelloch 1990, "Prefix sums and
their applications", section 1.4) when autograd records it or ``torch.compile``
traces it, and as the same computation without the dispatcher otherwise.
Everything around it is differentiable torch indexing, so gradients reach
``a``, ``b`` and ``init`` through the same graph:

* ``a`` and ``b`` broadcast to one shape (``expand``: a per-channel decay costs
  no copy until the scan reads it, and its gradient is summed back);
* packed sequences (``offsets``, the ``cu_seqlens`` of variable-length
  batches): the state restarts where a sequence starts, by a zero coefficient
  there, and a sequence's seed enters through its first ``b``;
* the final states are read from ``h`` (one per lane, or per sequence).
"""

from __future__ import annotations

from typing import Any

import torch

from .._axes import AxisError, normalize_axis
from ..monoid import accumulator_dtype_name
from .ops import call_recurrence, recurrence_values
from .params import RecurrenceParams, check_offsets
from .routing import wants_torch_ops
from .scans import host_seed

__all__ = ["linear_recurrence_tensors"]


def _name(dtype: torch.dtype) -> str:
    return str(dtype).replace("torch.", "")


def _shape(a: torch.Tensor, b: torch.Tensor) -> tuple:
    if a.dtype != b.dtype:
        raise TypeError(f"b has dtype {_name(b.dtype)} but a has dtype {_name(a.dtype)}")
    try:
        shape = tuple(torch.broadcast_shapes(tuple(a.shape), tuple(b.shape)))
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
    try:
        fits = tuple(torch.broadcast_shapes(tuple(init.shape), target)) == target
    except RuntimeError:
        fits = False
    if not fits:
        raise ValueError(f"init: shape {tuple(init.shape)} does not broadcast to {target}, the shape of one "
                         "state per lane" + (" and sequence" if len(target) else ""))
    return init.to(dtype).expand(target)


def _offsets_tensor(offsets: Any, n: int, device) -> torch.Tensor:
    if not torch.compiler.is_compiling():  # data-dependent checks: eager calls only
        check_offsets(offsets, n)
    if isinstance(offsets, torch.Tensor):
        return offsets.to(device=device, dtype=torch.int64)
    return torch.as_tensor(offsets, dtype=torch.int64, device=device)


# Torch has no add (nor index_add, index_fill, index_select) for these: the
# recurrence runs in the signed type of the same width, whose add and multiply
# are the same arithmetic modulo 2**bits, so the bits of every result agree.
_SIGNED_TWIN = {torch.uint16: torch.int16, torch.uint32: torch.int32, torch.uint64: torch.int64}


def _zero_at(t: torch.Tensor, axis: int, positions: torch.Tensor) -> torch.Tensor:
    """``t`` with the slices at ``positions`` along ``axis`` set to 0, as a new tensor.
    Not ``index_fill``: on an expanded ``t`` (a decay broadcast over steps) inductor's
    CUDA decomposition of it writes into a fresh buffer with ``copy_``, which AOTAutograd
    refuses in a traced graph; a mask and ``where`` trace functionally everywhere."""
    n = t.shape[axis]
    hit = torch.zeros(n, dtype=torch.bool, device=t.device).index_put((positions,), t.new_ones((), dtype=torch.bool))
    shape = [1] * t.dim()
    shape[axis] = n
    return torch.where(hit.view(shape), t.new_zeros(()), t)


def linear_recurrence_tensors(a: torch.Tensor, b: torch.Tensor, *, init: Any = None, axis: int = -1,
                              reverse: bool = False, offsets: Any = None, return_final: bool = False,
                              backend: Any = None):
    """:func:`prefixscan.linear_recurrence` of torch tensors (see its docstring);
    ``axis`` is checked by the caller's rules here."""
    shape = _shape(a, b)
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
    axis = normalize_axis(axis, len(shape), "a")
    n = shape[axis]
    params = RecurrenceParams(axis, reverse, backend)
    recur = call_recurrence if wants_torch_ops(a, init, b) else recurrence_values
    a_full, b_full = a.expand(shape), b.expand(shape)
    lanes = shape[:axis] + shape[axis + 1:]
    if offsets is None:
        seed = None if init is None else _seed(init, lanes, a.dtype, a.device)
        h = recur(params, a_full, b_full, seed)
        if not return_final:
            return h
        if n == 0:
            return h, (seed if seed is not None else a_full.new_zeros(lanes)).clone()
        return h, h.select(axis, 0 if reverse else n - 1)
    cuts = _offsets_tensor(offsets, n, a.device)
    starts, ends = cuts[:-1], cuts[1:] - 1
    restart = ends if reverse else starts  # where each sequence's first step is taken
    b_eff = b_full
    if init is not None:
        per_sequence = shape[:axis] + (cuts.shape[0] - 1,) + shape[axis + 1:]
        seed = _seed(init, per_sequence, a.dtype, a.device)
        b_eff = b_full.index_add(axis, restart, a_full.index_select(axis, restart) * seed)
    h = recur(params, _zero_at(a_full, axis, restart), b_eff, None)
    if not return_final:
        return h
    return h, h.index_select(axis, starts if reverse else ends)
