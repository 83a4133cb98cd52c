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
* Linear recurrences ``h[t] = a[t] h[t-1] + b[t]``: ``grad b`` is the reverse
  recurrence of ``grad h`` with ``a`` shifted by one step, ``grad a[t] =
  grad b[t] h[t-1]``, and ``grad init = a[0] grad b[0]`` (conjugated for
  complex values, torch's convention); it reads h, never recomputes it.  The
  backend fuses both into one pass where it can (Martin & Cundy 2018,
  "Parallelizing Linear Recurrent Neural Nets Over Sequence Length", section 2.2).
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Optional

import torch

from .params import RecurrenceParams, ScanParams

__all__ = ["scan_backward", "recurrence_backward", "reverse_recurrence", "stream_sum"]

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


# ---------------------------------------------------------------------------
# Linear recurrences.

def _shift(t: torch.Tensor, axis: int, toward_end: bool, fill: torch.Tensor) -> torch.Tensor:
    """``t`` moved one step along ``axis`` (toward its end or its start), ``fill``
    (one slice) entering at the vacated end."""
    n = t.shape[axis]
    if toward_end:
        return torch.cat([fill, t.narrow(axis, 0, n - 1)], axis)
    return torch.cat([t.narrow(axis, 1, n - 1), fill], axis)


def recurrence_backward(params: RecurrenceParams, a, init, h, grad, init_dtype, needs):
    """``(grad a, grad b, grad init)`` of ``h = linear_recurrence(a, b, init)``.

    Outside ``create_graph`` one fused pass (the operator
    ``prefixscan::linear_recurrence_backward``: the backend's kernel where it has one);
    with ``create_graph`` the same formulas as differentiable operators."""
    need_a, need_b, need_init = needs
    axis, reverse = params.axis, params.reverse
    n = a.shape[axis]
    if n == 0:
        g_init = torch.zeros_like(init) if init is not None and need_init else None
        return (torch.zeros_like(a) if need_a else None, torch.zeros_like(a) if need_b else None, g_init)
    if torch.is_grad_enabled():
        grad_a, grad_b = reverse_recurrence(params, a, init, h, grad, need_a)
    else:
        grad_a, grad_b = torch.ops.prefixscan.linear_recurrence_backward(a, h, grad, init, *params.args(), need_a)
        grad_a = grad_a if need_a else None
    grad_init = None
    if need_init and init is not None:
        first = n - 1 if reverse else 0
        grad_init = (grad_b.select(axis, first) * _conj(a).select(axis, first)).to(init_dtype)
    return grad_a, (grad_b if need_b else None), grad_init


def reverse_recurrence(params: RecurrenceParams, a, init, h, grad, need_a: bool):
    """``(grad a or None, grad b)`` by the reverse recurrence of ``grad`` through the
    ``prefixscan::linear_recurrence`` operator, then ``grad a = grad b * conj(h[t-1])``."""
    axis, reverse = params.axis, params.reverse
    a_c = _conj(a)
    blank = torch.zeros_like(a_c.narrow(axis, 0, 1))
    # grad b[t] = grad h[t] + conj(a[t+1]) grad b[t+1]: the recurrence run the other way.
    a_next = _shift(a_c, axis, toward_end=reverse, fill=blank)
    grad_b = torch.ops.prefixscan.linear_recurrence(a_next, grad.to(a.dtype).contiguous(), None,
                                                    *replace(params, reverse=not reverse).args())
    grad_a = None
    if need_a:
        seed = blank if init is None else init.unsqueeze(axis).to(h.dtype)
        h_prev = _shift(h, axis, toward_end=not reverse, fill=seed)
        compute = _compute_dtype(grad_b.dtype)
        grad_a = (grad_b.to(compute) * _conj(h_prev).to(compute)).to(a.dtype)
    return grad_a, grad_b
