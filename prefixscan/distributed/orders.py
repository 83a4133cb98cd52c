"""Order-q integer sums across ranks in one round: one local scan for the summaries,
one ``all_gather``, one local scan of the piece with its carry folded in.

The scan applied q times (``order=q``) is, for ``op="add"``, the linear map
``S^q`` (S: the inclusive prefix sum).  A piece's state at its end is the q
running sums of its passes; seeded with the state ``c`` of the pieces before
it, pass p of a piece of length m ends at

    r_p = c_p + T_p + sum_{k<p} c_k * C(m + p-1-k, p-k)

where ``T_p = (S^p x)[m-1]`` is the piece's own (unseeded) order-p total:
the carry composes as an affine map, the binomial form of the higher-order
carry (Blelloch 1990, "Prefix sums and their applications", section 1.2 on
carrying state across blocks; the coefficients are the sums of
``C(i+j, j)``, the hockey-stick identity).  All q totals come from one local
pass: the last q values of the unseeded order-q scan ``y = S^q x`` give them
by differences, ``T_p = (D^(q-p) y)[m-1]`` (D: first difference, the inverse
of S).

The scan with ``init`` applies one seed to every pass, which cannot express q
different carries; instead the carry goes into the piece's first q elements:
``S^q (x + d) = S^q x + sum_p c_p S^(q-p) 1`` for
``d_j = (-1)^j sum_{p>j} c_p C(p-1, j)`` (``d = sum_p c_p D^p 1``), so one
unseeded order-q scan of the piece with its head changed is the seeded result.
Integers wrap, and S, D are inverse on the integers modulo 2^bits, so every
step is exact: the results equal the single-process scan bitwise.  A reverse
scan mirrors all of it (the head is the piece's end).  Floats keep the rounds
of :mod:`prefixscan.primitives.scan.pieces` (the differences would cancel).
"""

from __future__ import annotations

from math import comb
from typing import Any, Sequence

import numpy as np

from .._request import np_dtype
from ..primitives.scan.pieces import PiecewiseScan, scan_piece, to_host
from ..primitives.scan.routing import is_torch_tensor

__all__ = ["folds_carry", "order_summaries", "order_carries", "scan_with_carry"]

_WORD = 1 << 64


def folds_carry(plan: PiecewiseScan) -> bool:
    """Whether :func:`scan_with_carry` handles this plan: an inclusive integer sum
    of order above one over single-field pieces, one stream, no widening on output."""
    config = plan.config
    if plan.struct or config.order < 2 or not config.inclusive or config.tuple_size != 1:
        return False
    if config.monoid.ufunc is not np.add or plan.acc_dtypes != plan.out_dtypes:
        return False
    acc = np_dtype(plan.acc_dtypes[0])
    return np.issubdtype(acc, np.integer)


def _words(a: Any) -> np.ndarray:
    """Host integers as uint64 (sign-extended), where arithmetic wraps modulo 2^64."""
    return np.asarray(to_host(a)).astype(np.int64).view(np.uint64)


def _edge(plan: PiecewiseScan, a: Any, j: int, *, start: bool = False) -> Any:
    """Element j from where the scan ends (the last, or the first in reverse), or
    with ``start`` from where it starts, along the axis: a view that keeps the axis
    (of length one)."""
    axis, m = plan.config.axis, a.shape[plan.config.axis]
    index = j if plan.config.reverse != start else m - 1 - j
    return a[(slice(None),) * axis + (slice(index, index + 1),)]


def order_summaries(plan: PiecewiseScan, scanned: Any) -> np.ndarray:
    """The piece's totals ``T_1 .. T_q`` (uint64 words, shape ``(q,) + lanes``) from
    its unseeded order-q scan ``scanned``."""
    q, m = plan.config.order, scanned.shape[plan.config.axis]
    lanes = scanned.shape[:plan.config.axis] + scanned.shape[plan.config.axis + 1:]
    last = np.zeros((q,) + lanes, np.uint64)  # y[m-1-j], zero before the piece
    for j in range(min(q, m)):
        last[j] = np.squeeze(_words(_edge(plan, scanned, j)), axis=plan.config.axis)
    totals = np.zeros_like(last)
    with np.errstate(over="ignore"):
        for p in range(1, q + 1):
            for j in range(q - p + 1):
                totals[p - 1] += np.uint64((-1) ** j * comb(q - p, j) % _WORD) * last[j]
    return totals


def order_carries(plan: PiecewiseScan, lengths: Sequence[int], totals: Sequence[np.ndarray],
                  seed: np.ndarray | None) -> list:
    """Every piece's incoming state ``c_1 .. c_q`` (uint64, ``(q,) + lanes``; None:
    nothing carried), from the pieces' lengths and totals and the seed (``init``,
    which seeds every pass alike), pieces in sequence order (from the end in reverse)."""
    q = plan.config.order
    carries: list = [None] * len(lengths)
    state = None if seed is None else np.broadcast_to(_words(seed), (q,) + seed.shape).copy()
    pieces = range(len(lengths) - 1, -1, -1) if plan.config.reverse else range(len(lengths))
    with np.errstate(over="ignore"):
        for k in pieces:
            carries[k] = state
            m, t = lengths[k], totals[k]
            if state is None:
                state = t.copy() if m else None
                continue
            after = state + t
            for p in range(2, q + 1):
                for j in range(1, p):
                    after[p - 1] += np.uint64(comb(m + p - 1 - j, p - j) % _WORD) * state[j - 1]
            state = after
    return carries


def _fold(carry: np.ndarray) -> np.ndarray:
    """``d_j = (-1)^j sum_{p>j} c_p C(p-1, j)``: the head that seeds the q passes with ``carry``."""
    q = carry.shape[0]
    head = np.zeros_like(carry)
    with np.errstate(over="ignore"):
        for j in range(q):
            for p in range(j + 1, q + 1):
                head[j] += np.uint64((-1) ** j * comb(p - 1, j) % _WORD) * carry[p - 1]
    return head


def scan_with_carry(plan: PiecewiseScan, x: Any, carry: np.ndarray | None, scanned: Any) -> Any:
    """The piece's result: ``scanned`` (its unseeded order-q scan) when nothing is
    carried, else one unseeded order-q scan of a copy of ``x`` with ``carry`` folded
    into its head."""
    if carry is None:
        return scanned
    acc = np_dtype(plan.acc_dtypes[0])
    axis = plan.config.axis
    head = np.expand_dims(_fold(carry).astype(acc), axis + 1)  # wraps to the accumulator's width
    if is_torch_tensor(x):
        import torch  # x is a tensor

        moved = x.to(getattr(torch, str(acc)), copy=True)
        shift = torch.from_numpy(head).to(moved.device)
    else:
        moved, shift = np.array(x, dtype=acc), head
    with np.errstate(over="ignore"):
        for j in range(min(plan.config.order, x.shape[axis])):
            view = _edge(plan, moved, j, start=True)
            view += shift[j]
    return scan_piece(plan, (moved,), offset=0, carries=[None] * plan.config.order)[0]
