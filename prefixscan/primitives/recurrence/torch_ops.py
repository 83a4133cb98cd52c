"""The custom operators ``prefixscan::linear_recurrence`` and
``prefixscan::linear_recurrence_backward``, and their gradient.

Registered with ``torch.library.custom_op`` as the scan's operator is
(:mod:`prefixscan.primitives.scan.torch_ops`): a fake implementation for
``torch.compile`` and meta tensors, and a backward registered with
``register_autograd``, so autograd and ``torch.compile(fullgraph=True)`` see one
opaque operator; eager calls with gradients run the same forward and backward as an
``autograd.Function`` instead (:func:`call_recurrence`), without the library's
dispatch.  The forward runs the backend's one-pass recurrence (:mod:`.runner`), else
one scan of the pairs (a, b) under the affine monoid (:mod:`.affine`; Blelloch 1990,
"Prefix sums and their applications", section 1.4).  The operators take tensors and
the plain fields of :class:`RecurrenceParams`, never a Monoid.

The gradient: ``grad b`` is the reverse recurrence of ``grad h`` with ``a``
shifted by one step, ``grad a[t] = grad b[t] h[t-1]``, and ``grad init = a[0]
grad b[0]`` (conjugated for complex values, torch's convention); it reads h,
never recomputes it.  With log decays (``log_space``: ``h[t] = exp(a[t]) h[t-1]
+ b[t]``) the reverse recurrence runs in log space too, ``grad a[t] = grad b[t]
h[t-1] exp(a[t])`` and ``grad init = exp(a[0]) grad b[0]``.  The backend fuses
both into one pass where it can (Martin & Cundy 2018, "Parallelizing Linear
Recurrent Neural Nets Over Sequence Length", section 2.2).
"""

from __future__ import annotations

import functools
import math
from dataclasses import astuple, dataclass, replace
from typing import Optional

import torch

from ..._normalize import make_config
from ..._request import ScanConfig
from ...caches import register_cache
from ..scan.gradients import _compute_dtype, _conj
from ..scan.runner import run_scan, takes_complex
from ..scan.torch_ops import fresh_output
from .affine import affine_monoid
from .runner import run_recurrence, run_recurrence_backward

__all__ = ["RecurrenceParams", "recurrence_op", "recurrence_backward_op", "call_recurrence", "recurrence_values",
           "backward_values", "recurrence_backward", "reverse_recurrence", "restarted"]

_HALF = (torch.float16, torch.bfloat16)


@dataclass(frozen=True)
class RecurrenceParams:
    """A linear recurrence along a non-negative ``axis``, forward or from the end."""

    axis: int
    reverse: bool = False
    backend: Optional[str] = None
    deterministic: bool = False
    strategy: str = "auto"
    log_space: bool = False  # a holds log decays: h[t] = exp(a[t]) h[t-1] + b[t]

    def args(self) -> tuple:
        return astuple(self)

    def config(self, split_complex: bool, dtype: Optional[str]) -> ScanConfig:
        return _recurrence_config(*astuple(self), split_complex, dtype)


@functools.lru_cache(maxsize=256)
def _recurrence_config(axis, reverse, backend, deterministic, strategy, log_space, split_complex,
                       dtype) -> ScanConfig:
    return make_config(affine_monoid(reverse, split_complex, log_space), axis=axis, inclusive=True, reverse=reverse,
                       order=1, tuple_size=1, dtype=dtype, backend=backend, algorithm=None, deterministic=deterministic,
                       strategy=strategy)


register_cache("prefixscan.primitives.recurrence.torch_ops.configs", _recurrence_config.cache_clear)



def restarted(a: torch.Tensor, restart: Optional[torch.Tensor], axis: int, log_space: bool) -> torch.Tensor:
    """``a`` with the decays at the restarts (``restart``: a flag per step along ``axis``)
    replaced by 0 (log decays by -inf), as a new tensor; ``a`` itself without restarts."""
    if restart is None:
        return a
    shape = [1] * a.dim()
    shape[axis] = a.shape[axis]
    return torch.where(restart.view(shape) != 0, a.new_full((), -math.inf if log_space else 0.0), a)


def recurrence_values(params: RecurrenceParams, a: torch.Tensor, b: torch.Tensor,
                      init: Optional[torch.Tensor], restart: Optional[torch.Tensor] = None) -> torch.Tensor:
    """The recurrence itself, without autograd: the backend's one-pass recurrence
    (:func:`.runner.run_recurrence`), else one scan of the pairs (a, b) under the
    affine monoid (over log decays with ``log_space``); 16-bit inputs accumulate and
    combine with ``init`` in float32 and are rounded once.  Complex coefficients on the
    Triton backend, which has no complex types, scan as four real fields.  ``restart``:
    a flag per step along the axis, where packed sequences start (the state restarts
    there: the decay reads as 0), in the backend's kernel where it takes them, else in a
    copy of ``a``."""
    a, b = a.resolve_conj(), b.resolve_conj()
    seed = None if init is None else init.resolve_conj()
    if params.strategy == "auto" and restart is not None:
        h = run_recurrence(params.backend, a, b, seed, params.axis, params.reverse, params.deterministic,
                           params.log_space, restart)
        if h is not None:
            return h
    a = restarted(a, restart, params.axis, params.log_space)
    if params.strategy == "auto":
        h = run_recurrence(params.backend, a, b, seed, params.axis, params.reverse, params.deterministic,
                           params.log_space)
        if h is not None:
            return h
    dtype = a.dtype
    wide = "float32" if dtype in _HALF else None
    split = a.is_complex() and not takes_complex(params.backend, a.device.type) and not params.log_space
    if split:
        fields = (a.real.contiguous(), a.imag.contiguous(), b.real.contiguous(), b.imag.contiguous())
        ar, ai, br, bi = run_scan(params.config(True, wide), fields)
        coef, offset = torch.complex(ar, ai), torch.complex(br, bi)
    else:
        coef, offset = run_scan(params.config(False, wide), (a.contiguous(), b.contiguous()))
    if init is not None:
        offset = offset + (coef.exp() if params.log_space else coef) * init.unsqueeze(params.axis).to(coef.dtype)
    return offset.to(dtype)


@torch.library.custom_op("prefixscan::linear_recurrence", mutates_args=())
def recurrence_op(a: torch.Tensor, b: torch.Tensor, init: Optional[torch.Tensor], axis: int, reverse: bool,
                  backend: Optional[str], deterministic: bool, strategy: str,
                  log_space: bool = False, restart: Optional[torch.Tensor] = None) -> torch.Tensor:
    """``h[t] = a[t] h[t-1] + b[t]`` along ``axis`` (non-negative), ``h[-1] = init``
    (``h[n] = init`` with ``reverse``); a and b of one shape and dtype, init of the
    lane shape (a's shape without ``axis``) or None.  ``log_space``: ``a`` holds log
    decays, ``h[t] = exp(a[t]) h[t-1] + b[t]``.  ``restart``: a flag per step along
    ``axis``, nonzero where a packed sequence starts (the decay there is taken as 0,
    and has no gradient)."""
    params = RecurrenceParams(axis, reverse, backend, deterministic, strategy, log_space)
    seed = None if init is None else init.detach()
    return fresh_output(recurrence_values(params, a.detach(), b.detach(), seed, restart), a, b)


@recurrence_op.register_fake
def _recurrence_fake(a, b, init, axis, reverse, backend, deterministic, strategy, log_space=False, restart=None):
    return a.new_empty(a.shape)


def _save(ctx, params: RecurrenceParams, a, init, h, restart) -> None:
    """What the gradient needs, for the operator's autograd and the eager Function alike."""
    ctx.params = params
    ctx.init_dtype = None if init is None else init.dtype
    ctx.save_for_backward(a, init, h, restart)  # the coefficients, the seed, h and the flags: O(output)


def _gradients(ctx, grad, eager: bool) -> tuple:
    """``(grad a, grad b, grad init)`` from what :func:`_save` kept."""
    a, init, h, restart = ctx.saved_tensors
    return recurrence_backward(ctx.params, a, init, h, grad, ctx.init_dtype, ctx.needs_input_grad[:3], eager=eager,
                               restart=restart)


def _setup_recurrence(ctx, inputs, output):
    a, b, init, axis, reverse, backend, deterministic, strategy, log_space, restart = inputs  # defaults filled in
    _save(ctx, RecurrenceParams(axis, reverse, backend, deterministic, strategy, log_space), a, init, output, restart)


def _recurrence_grad(ctx, grad):
    return _gradients(ctx, grad, eager=False) + (None,) * 7


recurrence_op.register_autograd(_recurrence_grad, setup_context=_setup_recurrence)


@torch.library.custom_op("prefixscan::linear_recurrence_backward", mutates_args=())
def recurrence_backward_op(a: torch.Tensor, h: torch.Tensor, grad: torch.Tensor, init: Optional[torch.Tensor],
                           axis: int, reverse: bool, backend: Optional[str], deterministic: bool, strategy: str,
                           log_space: bool, need_a: bool,
                           restart: Optional[torch.Tensor] = None) -> tuple[torch.Tensor, torch.Tensor]:
    """``(dL/da, dL/db)`` of ``h = prefixscan::linear_recurrence(a, b, init, ...)`` from
    ``grad = dL/dh``: the backend's fused pass, else the reverse recurrence;
    ``dL/da`` is an empty tensor unless ``need_a`` (with ``log_space``, the gradient
    with respect to the log decays; 0 at the ``restart`` flags)."""
    params = RecurrenceParams(axis, reverse, backend, deterministic, strategy, log_space)
    return backward_values(params, a, h, grad, init, need_a, restart)


def backward_values(params: RecurrenceParams, a, h, grad, init, need_a: bool,
                    restart: Optional[torch.Tensor] = None,
                    final: Optional[torch.Tensor] = None) -> tuple[torch.Tensor, torch.Tensor]:
    """The body of ``prefixscan::linear_recurrence_backward`` (called directly by the
    eager gradient and by :mod:`prefixscan.distributed`'s).  ``final`` (the lane shape, or
    None): an adjoint arriving from after the last step (the first, in reverse), a later
    piece's, taken as added to ``grad`` there."""
    a, h, grad = a.detach().resolve_conj(), h.detach().resolve_conj(), grad.detach().resolve_conj()
    seed = None if init is None else init.detach().resolve_conj()
    fused = None
    if params.strategy == "auto":
        fused = run_recurrence_backward(params.backend, a, h, grad, seed, params.axis, params.reverse,
                                        params.deterministic, need_a, params.log_space, restart, final)
    grad_a, grad_b = (fused if fused is not None else
                      reverse_recurrence(params, a, seed, h, grad, need_a, restart, final))
    if grad_a is None:
        grad_a = a.new_empty((0,))
    return fresh_output(grad_a, a, h, grad), fresh_output(grad_b, a, h, grad)


@recurrence_backward_op.register_fake
def _recurrence_backward_fake(a, h, grad, init, axis, reverse, backend, deterministic, strategy, log_space, need_a,
                              restart=None):
    return a.new_empty(h.shape if need_a else (0,)), a.new_empty(h.shape)


_PLAIN = (torch.Tensor, torch.nn.Parameter)  # the tensors the eager Function takes


def call_recurrence(params: RecurrenceParams, a: torch.Tensor, b: torch.Tensor,
                    init: Optional[torch.Tensor] = None, restart: Optional[torch.Tensor] = None) -> torch.Tensor:
    """``prefixscan::linear_recurrence`` with these parameters: the operator itself wherever
    something records or transforms the call (torch.compile, torch.export, functorch's
    vmap, ``torch.jit.trace``, a dispatch mode such as ``make_fx``: they keep one opaque
    node) or a tensor is not a plain one (fake, meta), else the same forward and gradient
    as an ``autograd.Function`` (:class:`_EagerRecurrence`)."""
    if (torch.compiler.is_compiling() or torch._C._are_functorch_transforms_active()
            or torch._C._get_tracing_state() is not None or torch._C._len_torch_dispatch_stack()
            or type(a) not in _PLAIN or type(b) not in _PLAIN or (init is not None and type(init) not in _PLAIN)
            or a.device.type == "meta"):
        return recurrence_op(a, b, init, *params.args(), restart)
    return _EagerRecurrence.apply(a, b, init, params, restart)


class _EagerRecurrence(torch.autograd.Function):
    """The operator's forward and gradient for eager calls, without torch.library's
    dispatch (the custom operator's autograd wrapper, its dynamo guards and a second
    operator for the backward).  The same functions run as inside the operators:
    :func:`recurrence_values`, :func:`recurrence_backward`.  Host time of a forward +
    backward with the kernel launch mocked out (2-core CI machine, three interleaved
    runs each): 564-741 us through the operators, 321-390 us this way; on an H200 the
    step's two kernels take 312 us at (8, 1024, 4096) float32, where the operators'
    0.57-0.73 ms of host time a step had been the bound.  ``forward`` takes ``ctx``
    (no ``setup_context``): with one, ``apply`` binds ``forward``'s signature on every
    call, a fifth of this path's host time."""

    @staticmethod
    def forward(ctx, a, b, init, params, restart):
        h = fresh_output(recurrence_values(params, a, b, init, restart), a, b)
        _save(ctx, params, a, init, h, restart)
        return h

    @staticmethod
    def backward(ctx, grad):
        return _gradients(ctx, grad, eager=True) + (None, None)


# ---------------------------------------------------------------------------
# The gradient.


def _shift(t: torch.Tensor, axis: int, toward_end: bool, fill: torch.Tensor) -> torch.Tensor:
    """``t`` moved one step along ``axis`` (toward its end or its start), ``fill``
    (one slice) entering at the vacated end."""
    n = t.shape[axis]
    if toward_end:
        return torch.cat([fill, t.narrow(axis, 0, n - 1)], axis)
    return torch.cat([t.narrow(axis, 1, n - 1), fill], axis)


def recurrence_backward(params: RecurrenceParams, a, init, h, grad, init_dtype, needs, eager: bool = False,
                        restart: Optional[torch.Tensor] = None):
    """``(grad a, grad b, grad init)`` of ``h = linear_recurrence(a, b, init)``.

    Outside ``create_graph`` one fused pass (the operator
    ``prefixscan::linear_recurrence_backward``, or its body called directly from the
    ``eager`` gradient: the backend's kernel where it has one); with ``create_graph``
    the same formulas as differentiable operators.  ``restart``: the forward's restart
    flags (no gradient to the decays there)."""
    need_a, need_b, need_init = needs
    axis, reverse = params.axis, params.reverse
    n = a.shape[axis]
    if n == 0:
        g_init = torch.zeros_like(init) if init is not None and need_init else None
        return (torch.zeros_like(a) if need_a else None, torch.zeros_like(a) if need_b else None, g_init)
    if torch.is_grad_enabled():
        grad_a, grad_b = reverse_recurrence(params, a, init, h, grad, need_a, restart)
    else:
        grad_a, grad_b = (backward_values(params, a, h, grad, init, need_a, restart) if eager else
                          torch.ops.prefixscan.linear_recurrence_backward(a, h, grad, init, *params.args(), need_a,
                                                                          restart))
        grad_a = grad_a if need_a else None
    grad_init = None
    if need_init and init is not None:
        a = restarted(a, restart, axis, params.log_space)  # a restart at the first step cuts init off
        first = n - 1 if reverse else 0
        if params.log_space:
            compute = _compute_dtype(grad_b.dtype)
            decay = a.select(axis, first).to(compute).exp()
            grad_init = (grad_b.select(axis, first).to(compute) * decay).to(init_dtype)
        else:
            grad_init = (grad_b.select(axis, first) * _conj(a).select(axis, first)).to(init_dtype)
    return grad_a, (grad_b if need_b else None), grad_init


def reverse_recurrence(params: RecurrenceParams, a, init, h, grad, need_a: bool,
                       restart: Optional[torch.Tensor] = None, final: Optional[torch.Tensor] = None):
    """``(grad a or None, grad b)`` by the reverse recurrence of ``grad`` through the
    ``prefixscan::linear_recurrence`` operator (from ``final``, the adjoint arriving from
    after the last step, where given), then ``grad a = grad b * conj(h[t-1])`` (times
    ``exp(a[t])`` for log decays; 0 at the ``restart`` flags)."""
    axis, reverse = params.axis, params.reverse
    a_c = _conj(restarted(a, restart, axis, params.log_space))
    blank = torch.zeros_like(a_c.narrow(axis, 0, 1))
    # grad b[t] = grad h[t] + conj(a[t+1]) grad b[t+1]: the recurrence run the other way.
    # The step shifted in is taken first, from a zero state: its decay is never used
    # (0, or log 1 in log space); from ``final`` it is 1 (log 1), which passes it on.
    unit = final is not None and not params.log_space
    a_next = _shift(a_c, axis, toward_end=reverse, fill=torch.ones_like(blank) if unit else blank)
    # the arriving adjoint in the accumulator's precision (a 16-bit recurrence accumulates in float32)
    start = None if final is None else final.to(_compute_dtype(a.dtype))
    grad_b = torch.ops.prefixscan.linear_recurrence(a_next, grad.to(a.dtype).contiguous(), start,
                                                    *replace(params, reverse=not reverse).args())
    grad_a = None
    if need_a:
        seed = blank if init is None else init.unsqueeze(axis).to(h.dtype)
        h_prev = _shift(h, axis, toward_end=not reverse, fill=seed)
        compute = _compute_dtype(grad_b.dtype)
        if not params.log_space:
            grad_a = grad_b.to(compute) * _conj(h_prev).to(compute)
        elif torch.is_grad_enabled():  # d/d la of exp(la) h[t-1], differentiable (create_graph)
            grad_a = a.to(compute).exp() * grad_b.to(compute) * h_prev.to(compute)
        else:  # the decays taken once, into the result's own buffer: no other array of exp(a)
            grad_a = a.to(compute).exp().mul_(grad_b.to(compute)).mul_(h_prev.to(compute))
        grad_a = restarted(grad_a, restart, axis, False).to(a.dtype)
    return grad_a, grad_b
