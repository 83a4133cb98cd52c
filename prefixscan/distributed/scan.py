"""``prefixscan.distributed.scan``: one sequence held in pieces by the ranks of a
process group, scanned where it lies.

Each rank holds a contiguous piece (rank order is sequence order; pieces may
differ in length, some may be empty).  The reduce-then-scan of Merrill &
Grimshaw 2009 ("Parallel scan for stream architectures") over the ranks:
every rank reduces its piece to its total (one local read), one ``all_gather``
hands every rank every total (one monoid element per rank: O(world size)
values per lane), each rank combines the totals of the ranks before it (after
it, in reverse) with ``init`` into its carry, and scans its piece with the
carry as ``init`` (one read, one write).  Integer sums of order q take one
round too (:mod:`.orders`: q totals per rank, the carry folded into the piece's
head); other orders take one round of totals per pass, tuple sizes rotate the streams by the piece's offset
(:mod:`prefixscan.primitives.scan.pieces`); with a tuple size above 1 the ranks
first gather their pieces' lengths.

A world of one scans its piece as the whole sequence (one read, one write: no
totals, no collective).  A scan of order 1 and tuple size 1 keeps its totals and carries where the
pieces are (:func:`_resident_carry`): the reduce, the all-gather, the exclusive
scan of the totals over the ranks and the seeded scan of the piece are queued
one behind the other on the device, with no copy to the host between them, so
that on a GPU the host's launch work hides behind the reduce instead of adding
a round trip to every call (docs/scaleout.md: the local cost).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import torch

from .._normalize import build_request, check_init_shape, check_init_value, make_config
from ..primitives.scan.pieces import PiecewiseScan, piece_carries, piece_totals, scan_piece, seed_of
from ..primitives.scan.reduction import reduce_request
from ..primitives.scan.api import shared_scan
from .collectives import Group, all_gather_fields, all_gather_tensors, group_of
from .orders import folds_carry, order_carries, order_summaries, scan_with_carry

__all__ = ["scan"]


def _fields(x: Any) -> tuple:
    fields = tuple(x) if isinstance(x, tuple) else (x,)
    for i, f in enumerate(fields):
        if not torch.is_tensor(f):
            name = "x_local" if len(fields) == 1 else f"x_local[{i}]"
            raise TypeError(f"{name}: expected a torch tensor (the collectives run on tensors), "
                            f"got {type(f).__name__}")
    return fields


def refuse_autograd(tensors, argument: str, hint: str) -> None:
    """TypeError when autograd would record ``tensors``: the call has no backward across ranks."""
    if torch.is_grad_enabled() and any(t is not None and torch.is_tensor(t) and t.requires_grad for t in tensors):
        raise TypeError(f"{argument} requires grad, but this distributed call has no backward across ranks; "
                        f"{hint}")


def _resident_carry(ranks: Group, request, init: tuple | None, arguments: dict) -> tuple | None:
    """This rank's carry (fields of the lane shape, tensors on the pieces' device), or
    None where nothing is carried in (the first piece of an unseeded scan): the piece's
    total, all-gathered, scanned exclusively over the ranks with ``init`` (the checked
    seed, one value per field) at the sequence's start (its end, reverse) and this
    rank's row taken.  ``request``: the piece's checked request; ``arguments``: the
    scan's own (operator, direction, dtype, backend), for the shared planned scans."""
    first = ranks.size - 1 if arguments["reverse"] else 0
    gathered = all_gather_tensors(ranks, reduce_request(request))  # (the reduction ignores the direction)
    if init is None and ranks.rank == first:
        return None
    # Over the ranks: axis 0 of (ranks, lanes...), in the accumulator dtypes (a planned
    # scan: replayed from the second call of a signature on).
    struct = request.struct
    over_ranks = shared_scan(**dict(arguments, axis=0, inclusive=False,
                                    dtype=arguments["dtype"] if struct else request.acc_dtypes[0]))
    carries = over_ranks(tuple(gathered) if struct else gathered[0],
                         init=None if init is None else (init if struct else init[0]))
    return tuple(c[ranks.rank] for c in (carries if struct else (carries,)))


def scan(x_local, op="add", *, group=None, inclusive=True, reverse=False, init=None, order=1, tuple_size=1,
         axis=-1, dtype=None, backend=None):
    """This rank's piece of the scan of a sequence held in pieces by a process group.

    Parameters
    ----------
    x_local : torch.Tensor or tuple of them
        This rank's contiguous piece of the sequence along ``axis`` (a tuple of
        same-shape tensors for a struct monoid); the group's ranks hold the
        pieces in rank order.  Pieces may differ in length along ``axis`` and
        may be empty; the other dimensions (the lanes) and the dtypes must be
        the same on every rank.  CPU tensors with gloo, CUDA tensors with NCCL.
    op, inclusive, reverse, order, tuple_size, dtype, backend
        As in :func:`prefixscan.scan`, for the whole sequence: ``tuple_size``
        must divide the whole sequence's length, not each piece's.
    group : torch.distributed.ProcessGroup, optional
        The ranks that hold the sequence (None: the default group).  Every rank
        of it must call this function with the same arguments but ``x_local``.
    init : scalar or array, optional
        The seed of the whole sequence (as :func:`prefixscan.scan`'s, of the
        lane shape + ``(tuple_size,)``); give the same value on every rank.
    axis : int, default -1
        The sequence's axis in ``x_local``.

    Returns
    -------
    torch.Tensor or tuple of them
        This rank's piece of the scan, x_local's shape.

    Raises
    ------
    TypeError, ValueError
        As :func:`prefixscan.scan` for its arguments; TypeError for an
        ``x_local`` that is not a tensor or that requires grad (there is no
        backward across ranks: :func:`prefixscan.distributed.linear_recurrence`
        has one).  A ``tuple_size`` that does not divide the sequence's length
        raises ValueError on every rank.
    RuntimeError
        torch.distributed not initialised.
    """
    fields = _fields(x_local)
    refuse_autograd(fields, "x_local", "for a sum with gradients use prefixscan.distributed.linear_recurrence "
                                       "with a = 1, or detach x_local")
    config = make_config(op, axis=axis, inclusive=inclusive, reverse=reverse, order=order, tuple_size=tuple_size,
                         dtype=dtype, backend=backend, algorithm=None)
    s = config.tuple_size
    # The piece's own checks; the tuple size applies to the whole sequence, checked once its length is known.
    request = build_request(replace(config, tuple_size=1), x_local, None, None)
    if request.axis is None:
        raise ValueError("axis: give the sequence's axis (an integer)")
    checked = None  # the seed, one checked value per field
    if init is not None:
        values = list(init) if request.struct else [init]
        if request.struct and len(values) != len(fields):
            raise ValueError(f"init: expected a tuple of {len(fields)} values for a struct monoid")
        shape = request.lanes_shape + ((s,) if s > 1 else ())
        for v in values:
            check_init_shape(v, shape)
        checked = tuple(check_init_value(v, acc) for v, acc in zip(values, request.acc_dtypes))
    ranks = group_of(group, fields[0])
    if ranks.size == 1:  # the piece is the sequence: one scan, no totals and no collective
        whole = shared_scan(op, axis=request.axis, inclusive=inclusive, reverse=reverse, order=order,
                            tuple_size=tuple_size, dtype=dtype, backend=backend, algorithm=None, deterministic=False)
        return whole(fields if request.struct else fields[0], init=init)
    plan = PiecewiseScan(replace(config, axis=request.axis), request.acc_dtypes, request.out_dtypes,
                         request.identity, request.struct)
    offset = 0
    if s > 1:  # where this piece starts: its streams are the sequence's, rotated by the offset
        lengths = [int(r[0][0]) for r in all_gather_fields(ranks, (np.array([request.lane_len], np.int64),))]
        if sum(lengths) % s:
            raise ValueError(f"tuple_size={s} does not divide the sequence's length {sum(lengths)} "
                             f"(pieces of {lengths})")
        offset = sum(lengths[:ranks.rank])
    if s == 1 and plan.rounds == 1 and fields[0].device == ranks.device:
        arguments = dict(op=op, reverse=reverse, order=1, tuple_size=1, dtype=dtype, backend=backend,
                         algorithm=None, deterministic=False)
        carry = _resident_carry(ranks, request, checked, arguments)
        piece = shared_scan(**dict(arguments, axis=request.axis, inclusive=inclusive))
        return piece(fields if request.struct else fields[0],
                     init=None if carry is None else (carry if request.struct else carry[0]))
    # Host totals and carries: the seed as carries of the lane shape + (tuple_size,).
    seed = None if checked is None else seed_of(plan, checked, request.lanes_shape)
    if folds_carry(plan):  # one local scan, one all_gather, one local scan
        piece = fields[0]
        scanned = scan_piece(plan, fields, offset=0, carries=[None] * plan.rounds)[0]
        length = np.array([request.lane_len], np.int64)
        gathered = all_gather_fields(ranks, (length, order_summaries(plan, scanned)))
        carry = order_carries(plan, [int(g[0][0]) for g in gathered], [g[1] for g in gathered],
                              None if seed is None else seed[0][..., 0])[ranks.rank]
        return scan_with_carry(plan, piece, carry, scanned)
    carries = []
    for _ in range(plan.rounds):
        total = piece_totals(plan, fields, offset=offset, lower=carries)
        totals = all_gather_fields(ranks, total)
        carries.append(piece_carries(plan, totals, seed)[ranks.rank])
    result = scan_piece(plan, fields, offset=offset, carries=carries)
    return result if request.struct else result[0]
