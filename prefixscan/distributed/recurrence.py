"""``prefixscan.distributed.linear_recurrence``: ``h[t] = a[t] h[t-1] + b[t]`` with
the time axis split over the ranks of a process group (sequence parallelism),
differentiable.

Forward: every rank sums its time slice up as its affine map ``h -> A h + B``
per lane (A the product of its ``a``, B its final state from a zero start; the
affine monoid of Blelloch 1990, "Prefix sums and their applications", section
1.4), one ``all_gather`` hands every rank every map (O(lanes x world size)
values), each rank composes the maps of the ranks before it into its incoming
state and runs its own recurrence from that state (:func:`prefixscan.linear_recurrence`).
B is the last step of the slice's recurrence from zero, which is the result on
the first rank when it has no ``init`` (a product and one recurrence: 4/3 of a
single recurrence's memory traffic).  Every other rank reduces its slice to its
map in one read of ``a`` and ``b`` (the compiled CPU loop, the Triton recurrence
kernel's lane-maps mode; 5/3 with its recurrence from the incoming state), or
where a backend has no such pass by a product and a recurrence from zero (7/3).
The maps are composed in float64 where the slices are (the GPU for NCCL): the
reduce, the all-gather, the composition and the recurrence are queued one behind
the other with no copy to the host, so the host's launch work hides behind the
kernels instead of adding round trips to every call.

A world of one runs :func:`prefixscan.linear_recurrence` on its slice (the whole
sequence): one pass forward, one fused pass backward, no collective.

Backward: the adjoint ``lam[t] = dL/dh[t]`` obeys the reverse recurrence
``lam[t] = a[t+1] lam[t+1] + g[t]`` (g the incoming gradient), so gradients flow
from later ranks to earlier ones through the same structure run from the end:
every rank reduces its slice to the reverse map ``mu -> A mu + a[0] Q`` (Q its
``lam[0]`` from a zero start, A the same product of ``a``), one ``all_gather``,
each rank composes the maps of the ranks after it into the adjoint arriving
from its right and runs its reverse recurrence from it; then ``db = lam``,
``da = lam * h[t-1]`` (the incoming state before the first step) and, on the
first rank, ``dinit = a[0] lam[0]``.
"""

from __future__ import annotations

import torch

from .._normalize import check_axis, check_init_shape
from .._arrays import inspect_array
from .._axes import AxisError
from ..primitives.recurrence.in_memory import recurrence_in_memory as local_recurrence
from ..primitives.recurrence.in_memory import linear_recurrence_total as recurrence_total
from .collectives import Group, all_gather_tensors, group_of

__all__ = ["linear_recurrence"]


def _accumulator(like: torch.Tensor) -> torch.dtype:
    """The dtype a recurrence of ``like``'s dtype runs in (16-bit floats in float32)."""
    return torch.float32 if like.dtype in (torch.float16, torch.bfloat16) else like.dtype


def _state(t: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    return t.to(dtype=_accumulator(like), device=like.device)


def _wide(t: torch.Tensor) -> torch.Tensor:
    """A map's values in float64, where they are composed (one rounding per rank otherwise)."""
    return t.to(torch.float64)


def _slice_map(coefficients: torch.Tensor, values: torch.Tensor, axis: int, reverse: bool):
    """A slice's affine map per lane as float64 tensors: (product of the
    coefficients, the state a zero start ends in; (1, 0) for an empty slice), from one
    read of the slice where the backend has that pass (the compiled CPU loop, the Triton
    recurrence kernel's lane-maps mode)."""
    product, state = recurrence_total(coefficients, values, axis=axis, reverse=reverse)
    return _wide(product), _wide(state)


def _zero_start_and_map(coefficients: torch.Tensor, values: torch.Tensor, axis: int, reverse: bool):
    """A slice's recurrence from a zero start and its map: where the zero start is the
    result (the first rank without ``init``; the last rank's adjoint), its last step is
    the map's state, so one recurrence and a product replace the separate reduction."""
    n = coefficients.shape[axis]
    product = _wide(torch.prod(coefficients.to(_accumulator(coefficients)), axis))
    zero_start = local_recurrence(coefficients, values, axis=axis, reverse=reverse)
    end = _wide(zero_start.select(axis, 0 if reverse else n - 1)) if n else torch.zeros_like(product)
    return zero_start, product, end


class _Recurrence(torch.autograd.Function):
    """The distributed recurrence with its reverse-recurrence backward (see the module)."""

    @staticmethod
    def forward(ctx, a, b, init, group: Group, axis: int):
        first = group.rank == 0
        if first and init is None:  # the zero start is this rank's result
            h, product, state = _zero_start_and_map(a, b, axis, reverse=False)
        else:  # one read for the map; the recurrence runs once, from the incoming state
            product, state = _slice_map(a, b, axis, reverse=False)
        if first and init is not None:  # the first rank holds h[-1]: fold it into its map
            state = state + product * _wide(init)
        products, states = all_gather_tensors(group, (product, state))
        incoming = _wide(init) if first and init is not None else torch.zeros_like(state)
        for j in range(group.rank):
            incoming = products[j] * incoming + states[j]
        h_in = _state(incoming, a)
        if group.rank or init is not None:  # from the incoming state (rank 0 without init: the zero start)
            h = local_recurrence(a, b, init=h_in, axis=axis)
        ctx.save_for_backward(a, h, h_in)
        ctx.group, ctx.axis, ctx.product = group, axis, product
        ctx.has_init = init is not None
        return h

    @staticmethod
    def backward(ctx, grad):
        a, h, h_in = ctx.saved_tensors
        group, axis = ctx.group, ctx.axis
        n = a.shape[axis]
        grad = grad.contiguous()
        # lam[t] = a[t+1] lam[t+1] + g[t]: the coefficients shifted by one, 1 after the last step.
        shifted = torch.cat([a.narrow(axis, min(n, 1), max(n - 1, 0)), torch.ones_like(a.narrow(axis, 0, min(n, 1)))],
                            axis)
        last = group.rank == group.size - 1
        if last:  # nothing arrives from the right: the zero start is this rank's adjoint
            lam, _, lam_first = _zero_start_and_map(shifted, grad, axis, reverse=True)
        else:
            _, lam_first = _slice_map(shifted, grad, axis, reverse=True)
        lead = _wide(a.select(axis, 0)) if n else torch.zeros_like(lam_first)
        # The slice's reverse map, mu -> A mu + a[0] Q (Q its lam[0] from zero), for the rank before.
        outgoing = lead * lam_first
        products, values = all_gather_tensors(group, (ctx.product, outgoing))
        arriving = torch.zeros_like(lam_first)
        for j in range(group.size - 1, group.rank, -1):
            arriving = products[j] * arriving + values[j]
        grad_init = None
        if ctx.has_init and ctx.needs_input_grad[2]:  # dL/dh[-1]: this slice's map applied to what arrives
            grad_init = _state(ctx.product * arriving + outgoing, a).to(h_in.dtype)
        if not n:
            return torch.zeros_like(a), torch.zeros_like(grad), grad_init, None, None
        if not last:  # from the adjoint arriving from the right
            lam = local_recurrence(shifted, grad, init=_state(arriving, a), axis=axis, reverse=True)
        before = torch.cat([h_in.to(h.dtype).unsqueeze(axis), h.narrow(axis, 0, n - 1)], axis)
        return lam * before, lam, grad_init, None, None


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
        rank: the backward runs one ``all_gather`` of O(lanes) values per rank.

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
    try:
        a, b = torch.broadcast_tensors(a_local, b_local)
    except RuntimeError:
        raise ValueError(f"b_local has shape {tuple(b_local.shape)}, which does not broadcast against "
                         f"a_local's shape {tuple(a_local.shape)}") from None
    if a.dim() == 0:
        raise AxisError("a_local must have at least one dimension")
    axis = check_axis(inspect_array(a.detach(), "a_local"), axis, "a_local")
    lanes = tuple(a.shape[:axis] + a.shape[axis + 1:])
    ranks = group_of(group, a)
    if ranks.size == 1:  # the slice is the sequence: one recurrence, forward and backward, no collective
        return local_recurrence(a, b, init=init, axis=axis)
    seed = None
    if init is not None and ranks.rank == 0:
        check_init_shape(init, lanes)
        seed = torch.as_tensor(init, dtype=torch.float32 if a.dtype in (torch.float16, torch.bfloat16) else a.dtype,
                               device=a.device).broadcast_to(lanes)
    return _Recurrence.apply(a, b, seed, ranks, axis)
