"""``prefixscan.distributed.linear_recurrence``: ``h[t] = a[t] h[t-1] + b[t]`` with
the time axis split over the ranks of a process group (sequence parallelism),
differentiable.

Forward: every rank but the last sums its time slice up as its affine map
``h -> A h + B`` per lane (A the product of its ``a``, B its final state from a
zero start; the affine monoid of Blelloch 1990, "Prefix sums and their
applications", section 1.4) in one read of ``a`` and ``b`` (the compiled CPU loop,
the Triton recurrence kernel's lane-maps mode), the first rank's with ``init``
folded in; one ``all_gather`` hands every rank every map (O(lanes x world size)
values; nobody composes the last rank's, which sends an unfilled buffer); each rank
composes the maps of the ranks before it into its incoming state and runs the
single-GPU recurrence of its slice from it (the same function as
:func:`prefixscan.linear_recurrence`'s torch path).  A map arrives as it is (one
rank before) or the maps are composed in float64 by one recurrence over the rank
axis.  The reduce, the all-gather, the composition and the recurrence are queued
one behind the other on the slices' device (the GPU for NCCL), with no copy to the
host and no wait, so the host's launch work hides behind the kernels.

Backward: the adjoint ``lam[t] = dL/dh[t]`` obeys the reverse recurrence
``lam[t] = g[t] + a[t+1] lam[t+1]`` (g the incoming gradient), so across a rank's
end ``lam[n-1] = g[n-1] + a'[0] lam'[0]`` (primes: the next rank's).  Every rank
but the first reduces its slice to its reverse map ``m -> A m + a[0] Q``: what it
hands the rank before it, ``a[0] lam[0]``, as a function of what arrives from its
right, ``m`` (Q its ``lam[0]`` from ``m = 0``: the reverse map of ``a[1:]`` and
``g[:-1]`` applied to ``g[n-1]``, one read of the slice by the same lane-maps pass,
and A the product of ``a``).  One ``all_gather``; each rank composes the maps of
the ranks after it into the adjoint arriving from its right and runs the single-GPU
fused backward of its slice (:func:`prefixscan.primitives.recurrence.torch_ops.backward_values`,
what :func:`prefixscan.linear_recurrence`'s gradient runs: one pass reading ``a``,
``h`` and ``g``, writing ``dL/db`` and ``dL/da``) with the arriving adjoint added to
``g`` at its last step as the kernel reads it and the rank's incoming state as
``init`` (``dL/da[0] = lam[0] h[-1]``).  On the first rank ``dL/dinit = a[0] lam[0]``
(an empty first rank passes the arriving adjoint on).  Each direction costs the
single-GPU pass of the slice, one lane-maps read before it and one small collective.

A world of one runs :func:`prefixscan.linear_recurrence` on its slice (the whole
sequence): one pass forward, one fused pass backward, no collective.
"""

from __future__ import annotations

from typing import Optional

import torch
from torch.autograd.function import once_differentiable

from .._axes import AxisError
from .._normalize import check_axis_ndim, check_init_shape
from ..primitives.recurrence.in_memory import linear_recurrence_total as recurrence_total
from ..primitives.recurrence.in_memory import recurrence_in_memory as local_recurrence
from ..primitives.recurrence.runner import run_recurrence_total
from ..primitives.recurrence.torch_ops import RecurrenceParams, backward_values, recurrence_values
from .collectives import all_gather_tensors, group_of

__all__ = ["linear_recurrence"]


def _accumulator(dtype: torch.dtype) -> torch.dtype:
    """The dtype a recurrence of ``dtype`` runs in (16-bit floats in float32)."""
    return torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype


def _lane_maps(a: torch.Tensor, b: torch.Tensor, axis: int, reverse: bool) -> tuple:
    """``(A, B)``, each lane's map of the recurrence over ``axis``, in the accumulator
    dtype: the backend's one-read pass called directly (the checks of the public
    ``linear_recurrence_total`` cost as much host time as the pass's launch), else that
    function, which falls back to a product and a recurrence."""
    maps = run_recurrence_total(None, a, b, axis, reverse)
    return maps if maps is not None else recurrence_total(a, b, axis=axis, reverse=reverse)


def _compose(maps: torch.Tensor, reverse: bool) -> Optional[torch.Tensor]:
    """The state that the lane maps ``maps`` (``(k, 2, *lanes)``: each rank's ``(A, B)`` in
    rank order) give from a zero start, applied first to last (last to first with
    ``reverse``): None for no map, the one map's B as it is, else composed in float64 by
    one recurrence over the rank axis (one lane-maps pass) and rounded once."""
    if maps.shape[0] == 0:
        return None
    if maps.shape[0] == 1:
        return maps[0, 1]
    wide = maps.to(torch.float64)
    _, state = _lane_maps(wide[:, 0], wide[:, 1], 0, reverse)
    return state.to(maps.dtype)


def _reverse_map(a: torch.Tensor, grad: torch.Tensor, axis: int) -> torch.Tensor:
    """The slice's reverse map ``m -> A m + a[0] Q`` as one ``(2, *lanes)`` tensor in the
    accumulator dtype: A the product of ``a``, Q the slice's ``lam[0]`` when nothing
    arrives from its right, i.e. the reverse map of ``(a[1:], grad[:-1])`` applied to
    ``grad[n-1]`` (one read of the slice, by views: no shifted copy)."""
    n = a.shape[axis]
    if n == 0:  # the identity: what arrives passes on
        unit = torch.zeros((2,) + a.shape[:axis] + a.shape[axis + 1:], dtype=_accumulator(a.dtype), device=a.device)
        unit[0] = 1
        return unit
    rest, state = _lane_maps(a.narrow(axis, 1, n - 1), grad.narrow(axis, 0, n - 1), axis, True)
    lam0 = torch.addcmul(state, rest, grad.select(axis, n - 1))  # lam[0] from a zero adjoint after the end
    return torch.stack((rest, lam0)).to(_accumulator(a.dtype)).mul_(a.select(axis, 0))


class _Recurrence(torch.autograd.Function):
    """The distributed recurrence and its backward (see the module): each direction one
    lane-maps read, one ``all_gather``, one single-GPU pass of the slice."""

    @staticmethod
    def forward(ctx, a, b, init, group, axis: int):
        if group.rank < group.size - 1:  # the ranks after this one compose its map
            product, state = _lane_maps(a, b, axis, False)
            if init is not None:  # the first rank holds h[-1]: its map applied to it
                state = torch.addcmul(state, product, init)
            mine = torch.stack((product, state)).to(_accumulator(a.dtype))  # every rank's buffer alike
        else:  # the last rank's map is nobody's: an unfilled buffer of the right size
            mine = a.new_empty((2,) + a.shape[:axis] + a.shape[axis + 1:], dtype=_accumulator(a.dtype))
        (maps,) = all_gather_tensors(group, (mine,))
        incoming = init if group.rank == 0 else _compose(maps[:group.rank], reverse=False)
        h = recurrence_values(RecurrenceParams(axis), a.detach(), b.detach(),
                              None if incoming is None else incoming.detach())
        ctx.save_for_backward(a, h, incoming)
        ctx.group, ctx.axis = group, axis
        return h

    @staticmethod
    @once_differentiable
    def backward(ctx, grad):
        a, h, incoming = ctx.saved_tensors
        group, axis = ctx.group, ctx.axis
        need_a, need_b, need_init = ctx.needs_input_grad[:3]
        if group.rank > 0:  # the ranks before this one compose its reverse map
            mine = _reverse_map(a, grad, axis)
        else:  # the first rank's is nobody's
            mine = a.new_empty((2,) + a.shape[:axis] + a.shape[axis + 1:], dtype=_accumulator(a.dtype))
        (maps,) = all_gather_tensors(group, (mine,))
        arriving = _compose(maps[group.rank + 1:], reverse=True)  # dL/dh[n-1] from the later ranks' losses
        first = group.rank == 0 and need_init and incoming is not None
        if a.shape[axis] == 0:
            grad_init = arriving.to(incoming.dtype) if first else None
            return (torch.zeros_like(a) if need_a else None, torch.zeros_like(a) if need_b else None, grad_init,
                    None, None)
        grad_a, grad_b = backward_values(RecurrenceParams(axis), a, h, grad, incoming, need_a, final=arriving)
        acc = _accumulator(a.dtype)  # 16-bit slices: the product in float32, as the kernels compute
        grad_init = (grad_b.select(axis, 0).to(acc) * a.select(axis, 0).to(acc)).to(incoming.dtype) if first else None
        return grad_a if need_a else None, grad_b if need_b else None, grad_init, None, None


def linear_recurrence(a_local, b_local, *, group=None, axis=-1, init=None):
    """This rank's slice of ``h[t] = a[t] h[t-1] + b[t]`` over a time axis split across
    the ranks of a process group; differentiable (sequence parallelism).

    Parameters
    ----------
    a_local, b_local : torch.Tensor
        This rank's contiguous time slice of the coefficients and inputs (float
        dtypes; their shapes broadcast against each other).  The ranks hold the
        slices in rank order; slices may differ in length and may be empty;
        the other dimensions (the lanes) must be the same on every rank.  CPU
        tensors with gloo, CUDA tensors with NCCL.
    group : torch.distributed.ProcessGroup, optional
        The ranks that hold the sequence (None: the default group).  Every rank
        of it calls this function, and calls backward through its result.
    axis : int, default -1
        The time axis.
    init : scalar or tensor, optional
        ``h[-1]``, the state before the first step, broadcast to the lane shape;
        read on the group's first rank (rank 0), which holds the first steps, and
        differentiated there; other ranks may pass it or not.

    Returns
    -------
    torch.Tensor
        This rank's slice of h, the broadcast shape.  Gradients flow to
        ``a_local``, ``b_local`` and (rank 0) ``init`` from the losses of every
        rank: the backward runs one ``all_gather`` of O(lanes) values per rank and
        the single-GPU fused backward of the slice.  Not twice differentiable.

    Raises
    ------
    TypeError
        Tensors of different or complex dtypes, or not tensors.
    ValueError
        Shapes that do not broadcast, an out-of-range axis, an ``init`` that does
        not broadcast to the lane shape.
    """
    for value, name in ((a_local, "a_local"), (b_local, "b_local")):
        if not torch.is_tensor(value):
            raise TypeError(f"{name}: expected a torch tensor, got {type(value).__name__}")
    if a_local.dtype != b_local.dtype:
        raise TypeError(f"b_local has dtype {b_local.dtype} but a_local has dtype {a_local.dtype}")
    if not a_local.dtype.is_floating_point:
        raise TypeError(f"a_local: expected a real floating dtype, got {a_local.dtype}")
    a, b = a_local, b_local
    if a.shape != b.shape:  # equal shapes (the common case) need no broadcast views
        try:
            a, b = torch.broadcast_tensors(a_local, b_local)
        except RuntimeError:
            raise ValueError(f"b_local has shape {tuple(b_local.shape)}, which does not broadcast against "
                             f"a_local's shape {tuple(a_local.shape)}") from None
    if a.dim() == 0:
        raise AxisError("a_local must have at least one dimension")
    axis = check_axis_ndim(a.dim(), axis, "a_local")
    lanes = tuple(a.shape[:axis] + a.shape[axis + 1:])
    ranks = group_of(group, a)
    if ranks.size == 1:  # the slice is the sequence: one recurrence, forward and backward, no collective
        return local_recurrence(a, b, init=init, axis=axis)
    seed = None
    if init is not None and ranks.rank == 0:
        check_init_shape(init, lanes)
        if isinstance(init, (int, float)):  # a number: filled on the device, no copy from the host
            seed = torch.full(lanes, init, dtype=_accumulator(a.dtype), device=a.device)
        else:
            seed = torch.as_tensor(init, dtype=_accumulator(a.dtype), device=a.device).broadcast_to(lanes)
    return _Recurrence.apply(a, b, seed, ranks, axis)
