"""The custom operators ``prefixscan::scan`` and ``prefixscan::linear_recurrence``.

Registered with ``torch.library.custom_op`` (PyTorch >= 2.4): each has a fake
implementation (shape and dtype only, for ``torch.compile`` and meta tensors)
and a backward registered with ``register_autograd`` (formulas in
:mod:`.gradients`), so autograd and ``torch.compile(fullgraph=True)`` see one
opaque operator where the scan runs, with no graph break.  The real
implementation runs the plain scan (:mod:`.runner`) on the tensors' device:
the Triton kernels for CUDA tensors (or CPU tensors with ``backend="triton"``
under ``TRITON_INTERPRET=1``), the CPU backend for CPU tensors.

The operators take tensors and plain ints, bools and strings (the fields of
:class:`.params.ScanParams` / :class:`.params.RecurrenceParams`), never a
Monoid: user monoids stay on the eager path.
"""

from __future__ import annotations

from typing import Optional

import torch

from .gradients import recurrence_backward, reverse_recurrence, scan_backward
from .params import RecurrenceParams, ScanParams
from .runner import run_recurrence, run_recurrence_backward, run_scan, takes_complex

__all__ = ["scan_op", "recurrence_op", "recurrence_backward_op", "call_scan", "call_recurrence", "recurrence_values",
           "torch_dtype", "fresh_output"]

_HALF = (torch.float16, torch.bfloat16)


def torch_dtype(name: Optional[str], default: torch.dtype) -> torch.dtype:
    """The torch dtype called ``name`` ("float32", "bfloat16", ...), ``default`` for None."""
    return default if name is None else getattr(torch, name)


def fresh_output(result: torch.Tensor, *inputs: Optional[torch.Tensor]) -> torch.Tensor:
    """A custom operator's output may not alias its inputs; contiguous, as the fake says."""
    result = result.contiguous()
    for t in inputs:
        if t is not None and result.numel() and t.numel() and result.data_ptr() == t.data_ptr():
            return result.clone()
    return result


@torch.library.custom_op("prefixscan::scan", mutates_args=())
def scan_op(x: torch.Tensor, init: Optional[torch.Tensor], op: str, axis: int, inclusive: bool, reverse: bool,
            order: int, tuple_size: int, dtype: Optional[str], backend: Optional[str], algorithm: str,
            deterministic: bool, strategy: str) -> torch.Tensor:
    """A scan with a built-in operator along ``axis`` (non-negative); ``init`` has
    the lane shape (x's shape without ``axis``, then ``(tuple_size,)`` when > 1)."""
    params = ScanParams(op, axis, inclusive, reverse, order, tuple_size, dtype, backend, algorithm, deterministic,
                        strategy)
    seed = None if init is None else init.detach().contiguous()
    return fresh_output(run_scan(params.config(), x.detach().contiguous(), seed), x)


@scan_op.register_fake
def _scan_fake(x, init, op, axis, inclusive, reverse, order, tuple_size, dtype, backend, algorithm, deterministic,
               strategy):
    return x.new_empty(x.shape, dtype=torch_dtype(dtype, x.dtype))


def _setup_scan(ctx, inputs, output):
    x, init, *rest = inputs
    ctx.params = ScanParams(*rest)
    ctx.x_meta = (x.shape, x.dtype)
    ctx.init_meta = None if init is None else (init.shape, init.dtype)
    # A sum's backward needs no values; the others read x, init and the result.
    if ctx.params.op == "add":
        ctx.save_for_backward(None, None, None)
    else:
        ctx.save_for_backward(x, init, output)


def _scan_grad(ctx, grad):
    x, init, y = ctx.saved_tensors
    grad_x, grad_init = scan_backward(ctx.params, x, init, y, grad, ctx.x_meta, ctx.init_meta,
                                      ctx.needs_input_grad[0], ctx.needs_input_grad[1])
    return (grad_x, grad_init) + (None,) * 11


scan_op.register_autograd(_scan_grad, setup_context=_setup_scan)


def call_scan(params: ScanParams, x: torch.Tensor, init: Optional[torch.Tensor] = None) -> torch.Tensor:
    """``prefixscan::scan`` with these parameters."""
    return scan_op(x, init, *params.args())


# ---------------------------------------------------------------------------
# Linear recurrences h[t] = a[t] h[t-1] + b[t].

def recurrence_values(params: RecurrenceParams, a: torch.Tensor, b: torch.Tensor,
                      init: Optional[torch.Tensor]) -> torch.Tensor:
    """The recurrence itself, without autograd: the backend's one-pass recurrence
    (:func:`.runner.run_recurrence`), else one scan of the pairs (a, b) under the
    affine monoid; 16-bit inputs accumulate and combine with ``init`` in float32
    and are rounded once.  Complex coefficients on the Triton backend, which has no
    complex types, scan as four real fields."""
    a, b = a.resolve_conj(), b.resolve_conj()
    if params.strategy == "auto":
        h = run_recurrence(params.backend, a, b, None if init is None else init.resolve_conj(), params.axis,
                           params.reverse, params.deterministic)
        if h is not None:
            return h
    dtype = a.dtype
    wide = "float32" if dtype in _HALF else None
    split = a.is_complex() and not takes_complex(params.backend, a.device.type)
    if split:
        fields = (a.real.contiguous(), a.imag.contiguous(), b.real.contiguous(), b.imag.contiguous())
        ar, ai, br, bi = run_scan(params.config(True, wide), fields)
        coef, offset = torch.complex(ar, ai), torch.complex(br, bi)
    else:
        coef, offset = run_scan(params.config(False, wide), (a.contiguous(), b.contiguous()))
    if init is not None:
        offset = offset + coef * init.unsqueeze(params.axis).to(coef.dtype)
    return offset.to(dtype)


@torch.library.custom_op("prefixscan::linear_recurrence", mutates_args=())
def recurrence_op(a: torch.Tensor, b: torch.Tensor, init: Optional[torch.Tensor], axis: int, reverse: bool,
                  backend: Optional[str], deterministic: bool, strategy: str) -> torch.Tensor:
    """``h[t] = a[t] h[t-1] + b[t]`` along ``axis`` (non-negative), ``h[-1] = init``
    (``h[n] = init`` with ``reverse``); a and b of one shape and dtype, init of the
    lane shape (a's shape without ``axis``) or None."""
    params = RecurrenceParams(axis, reverse, backend, deterministic, strategy)
    seed = None if init is None else init.detach()
    return fresh_output(recurrence_values(params, a.detach(), b.detach(), seed), a, b)


@recurrence_op.register_fake
def _recurrence_fake(a, b, init, axis, reverse, backend, deterministic, strategy):
    return a.new_empty(a.shape)


def _setup_recurrence(ctx, inputs, output):
    a, b, init, *rest = inputs
    ctx.params = RecurrenceParams(*rest)
    ctx.init_dtype = None if init is None else init.dtype
    ctx.save_for_backward(a, init, output)  # the coefficients, the seed and h: O(output)


def _recurrence_grad(ctx, grad):
    a, init, h = ctx.saved_tensors
    grads = recurrence_backward(ctx.params, a, init, h, grad, ctx.init_dtype, ctx.needs_input_grad[:3])
    return grads + (None,) * 5


recurrence_op.register_autograd(_recurrence_grad, setup_context=_setup_recurrence)


@torch.library.custom_op("prefixscan::linear_recurrence_backward", mutates_args=())
def recurrence_backward_op(a: torch.Tensor, h: torch.Tensor, grad: torch.Tensor, init: Optional[torch.Tensor],
                           axis: int, reverse: bool, backend: Optional[str], deterministic: bool, strategy: str,
                           need_a: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """``(dL/da, dL/db)`` of ``h = prefixscan::linear_recurrence(a, b, init, ...)`` from
    ``grad = dL/dh``: the backend's fused pass, else the reverse recurrence;
    ``dL/da`` is an empty tensor unless ``need_a``."""
    params = RecurrenceParams(axis, reverse, backend, deterministic, strategy)
    a, h, grad = a.detach().resolve_conj(), h.detach().resolve_conj(), grad.detach().resolve_conj()
    seed = None if init is None else init.detach().resolve_conj()
    fused = None
    if strategy == "auto":
        fused = run_recurrence_backward(backend, a, h, grad, seed, axis, reverse, deterministic, need_a)
    grad_a, grad_b = fused if fused is not None else reverse_recurrence(params, a, seed, h, grad, need_a)
    if grad_a is None:
        grad_a = a.new_empty((0,))
    return fresh_output(grad_a, a, h, grad), fresh_output(grad_b, a, h, grad)


@recurrence_backward_op.register_fake
def _recurrence_backward_fake(a, h, grad, init, axis, reverse, backend, deterministic, strategy, need_a):
    return a.new_empty(h.shape if need_a else (0,)), a.new_empty(h.shape)


def call_recurrence(params: RecurrenceParams, a: torch.Tensor, b: torch.Tensor,
                    init: Optional[torch.Tensor] = None) -> torch.Tensor:
    """``prefixscan::linear_recurrence`` with these parameters."""
    return recurrence_op(a, b, init, *params.args())
