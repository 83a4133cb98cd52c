"""Backward formulas of the differentiable scans, run on the scan kernels themselves.

Every formula is a few scans of the gradient in the opposite direction (or of an
index in the same direction) plus elementwise torch operations: one kernel pass
each, no loop over the sequence.  Scans are called through the custom operators
(``torch.ops.prefixscan``), so the backward is itself traceable by
``torch.compile`` and differentiable again.

* Sum: the transpose of a prefix sum is the prefix sum in the other direction
  (Blelloch 1990, "Prefix sums and their applications", section 1.3), with the
  same ``inclusive``, ``order`` and ``tuple_size``.
* Product: ``grad x[k] = sum_{j>=k} g[j] y[j] / x[k]`` before the first zero of a
  lane; at the first zero, the reverse sum of ``g`` times the products that skip
  it; zero after it (exact with zeros, as ``torch.cumprod``'s backward).
* Max / min: the gradient goes to the position of the running extremum, the
  most recently scanned one among ties, NaN included, as ``torch.cummax`` does;
  the positions are a max (min, for reverse scans) scan of record indices.
* Logaddexp: the softmax-weighted reverse sum ``grad x[k] = sum_{j>=k} g[j]
  exp(x[k] - y[j])``, as two reverse logaddexp scans of ``log|g| - y`` split by
  sign (the formula of ``torch.logcumsumexp``'s backward).
* The seed ``init`` and exclusive scans: the seed is prepended to each lane (the
  identity when absent), which makes every scan an inclusive scan of the longer
  lane, whose gradient splits into the seed's and x's.  ``order > 1`` applies
  the single-order backward once per order (sums take one pass of any order).

The linear recurrence's gradient is with its operator
(:mod:`prefixscan.primitives.recurrence.torch_ops`).
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Optional

import torch

from .params import ScanParams

__all__ = ["scan_backward", "stream_sum"]

_HALF = (torch.float16, torch.bfloat16)


def _scan(params: ScanParams, x: torch.Tensor, init: Optional[torch.Tensor] = None) -> torch.Tensor:
    return torch.ops.prefixscan.scan(x, init, *params.args())


def _conj(t: torch.Tensor) -> torch.Tensor:
    return torch.conj_physical(t) if t.is_complex() else t


def stream_sum(t: torch.Tensor, axis: int, tuple_size: int) -> torch.Tensor:
    """Sum ``t`` over ``axis`` stream by stream: the lane shape, then
    ``(tuple_size,)`` when it is above 1 (the shape of a scan's ``init``)."""
    if tuple_size == 1:
        return t.sum(axis)
    moved = t.movedim(axis, -1)
    return moved.reshape(moved.shape[:-1] + (moved.shape[-1] // tuple_size, tuple_size)).sum(-2)


def scan_backward(params: ScanParams, x, init, y, grad, x_meta, init_meta, need_x: bool, need_init: bool):
    """``(grad x, grad init)`` of ``y = scan(x, init)`` (None where not needed)."""
    if params.op == "add":
        return _sum_backward(params, grad, x_meta, init_meta, need_x, need_init)
    one = replace(params, order=1)
    compute = _compute_dtype(x.dtype, y.dtype, grad.dtype)
    # order = q applies the scan q times: recompute the q - 1 inner results
    # (the fused kernel keeps none), then go back through each application.
    levels = [x]
    for _ in range(params.order - 1):
        levels.append(_scan(replace(one, dtype=_name(compute)), levels[-1], init))
    grad_init = None
    for level in reversed(range(params.order)):
        out = y if level == params.order - 1 else levels[level + 1]
        grad, g_init = _single_backward(one, levels[level], init, out, grad, compute)
        if g_init is not None:
            grad_init = g_init if grad_init is None else grad_init + g_init
    grad_x = grad.to(x_meta[1]) if need_x else None
    grad_init = grad_init.to(init_meta[1]) if need_init and grad_init is not None else None
    return grad_x, grad_init


def _name(dtype: torch.dtype) -> str:
    return str(dtype).replace("torch.", "")


def _compute_dtype(*dtypes: torch.dtype) -> torch.dtype:
    """The dtype the formulas run in: the widest of the inputs, 16-bit floats as float32."""
    result = dtypes[0]
    for d in dtypes[1:]:
        result = torch.promote_types(result, d)
    return torch.float32 if result in _HALF else result


def _sum_backward(params: ScanParams, grad, x_meta, init_meta, need_x, need_init):
    grad_x = grad_init = None
    back = replace(params, reverse=not params.reverse, dtype=None)
    if need_x:
        grad_x = _scan(back, grad).to(x_meta[1])
    if need_init and init_meta is not None:
        weight = grad
        if params.order > 1:
            # y depends on init through the scan of zeros seeded with it (binomial weights).
            ones = torch.ones(init_meta[0], dtype=grad.dtype, device=grad.device)
            weight = grad * _scan(replace(params, dtype=None), torch.zeros_like(grad), ones)
        grad_init = stream_sum(weight, params.axis, params.tuple_size).to(init_meta[1])
    return grad_x, grad_init


def _identity(op: str) -> float:
    return {"mul": 1.0, "max": -math.inf, "min": math.inf, "logaddexp": -math.inf}[op]


def _combine(op: str, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    if op == "mul":
        return a * b
    if op == "max":
        return torch.maximum(a, b)
    if op == "min":
        return torch.minimum(a, b)
    return torch.logaddexp(a, b)


def _single_backward(params: ScanParams, x, init, y, grad, compute):
    """One application (order 1) of a product, max, min or logaddexp scan."""
    axis, s, n = params.axis, params.tuple_size, x.shape[params.axis]
    x, y, grad = x.to(compute), y.to(compute), grad.to(compute)
    shape = list(x.shape)
    shape[axis] = s
    if init is None:
        seed = torch.full(shape, _identity(params.op), dtype=compute, device=x.device)
    else:  # init has the lane shape, then (s,) when s > 1: one seed per stream, at the lane's start
        seed = (init.movedim(-1, axis) if s > 1 else init.unsqueeze(axis)).to(compute)
    head = (lambda t: t.narrow(axis, 0, s))
    tail = (lambda t: t.narrow(axis, t.shape[axis] - s, s))
    zero = torch.zeros(shape, dtype=compute, device=x.device)
    # The seed is one more element at the lane's start (its end for reverse scans):
    # the scan becomes inclusive and seedless over n + s elements, z its result.
    if not params.reverse:
        x_ext = torch.cat([seed, x], axis)
        if params.inclusive:
            z_ext, g_ext = torch.cat([seed, y], axis), torch.cat([zero, grad], axis)
        else:
            z_ext = torch.cat([y, _combine(params.op, tail(y), tail(x))], axis)
            g_ext = torch.cat([grad, zero], axis)
    else:
        x_ext = torch.cat([x, seed], axis)
        if params.inclusive:
            z_ext, g_ext = torch.cat([y, seed], axis), torch.cat([grad, zero], axis)
        else:
            z_ext = torch.cat([_combine(params.op, head(x), head(y)), y], axis)
            g_ext = torch.cat([zero, grad], axis)
    g_ext = _inclusive_backward(params, x_ext, z_ext, g_ext)
    if not params.reverse:
        g_seed, g_x = g_ext.narrow(axis, 0, s), g_ext.narrow(axis, s, n)
    else:
        g_x, g_seed = g_ext.narrow(axis, 0, n), g_ext.narrow(axis, n, s)
    g_init = None
    if init is not None:
        g_init = g_seed.movedim(axis, -1) if s > 1 else g_seed.squeeze(axis)
    return g_x, g_init


def _inclusive_backward(params: ScanParams, x, z, grad):
    """Gradient of the inclusive, seedless scan ``z`` of ``x`` (direction and
    tuple size from ``params``)."""
    along = replace(params, inclusive=True, order=1, dtype=None)
    against = replace(along, reverse=not params.reverse)
    axis = params.axis
    if params.op == "mul":
        return _product_backward(along, against, x, z, grad)
    if params.op in ("max", "min"):
        n = x.shape[axis]
        view = [1] * x.dim()
        view[axis] = n
        position = torch.arange(n, device=x.device).view(view)
        record = (x == z) | torch.isnan(x)  # where the running extremum was last taken
        if not params.reverse:
            source = _scan(replace(along, op="max"), torch.where(record, position, -1))
        else:
            source = _scan(replace(along, op="min"), torch.where(record, position, n))
        return torch.zeros_like(grad).scatter_add(axis, source, grad)
    # logaddexp: grad x[k] = exp(x[k]) sum_{j>=k} g[j] exp(-z[j]), in log space by the sign of g.
    lowest = torch.finfo(grad.dtype).min
    log_abs = grad.abs().log()
    terms = torch.stack([torch.where(grad > 0, log_abs, lowest) - z, torch.where(grad < 0, log_abs, lowest) - z])
    sums = _scan(replace(against, op="logaddexp", axis=axis + 1), terms)
    return (sums[0] + x).exp() - (sums[1] + x).exp()


def _product_backward(along: ScanParams, against: ScanParams, x, z, grad):
    zero = x == 0
    count = _scan(replace(along, op="add"), zero.to(torch.int32))  # zeros seen so far, per stream
    before = count == 0
    first = zero & (count == 1)
    skipping = _scan(replace(along, op="mul"), torch.where(first, torch.ones_like(x), x))  # products without it
    sums = _scan(replace(against, op="add", axis=along.axis + 1),
                 torch.stack([grad * _conj(z), grad * _conj(skipping)]))
    safe = torch.where(before, _conj(x), torch.ones_like(x))
    return torch.where(before, sums[0] / safe, torch.where(first, sums[1], torch.zeros_like(x)))
