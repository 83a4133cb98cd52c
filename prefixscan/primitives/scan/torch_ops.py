"""The custom operator ``prefixscan::scan``.

Registered with ``torch.library.custom_op`` (PyTorch >= 2.4): each has a fake
implementation (shape and dtype only, for ``torch.compile`` and meta tensors)
and a backward registered with ``register_autograd`` (formulas in
:mod:`.gradients`), so autograd and ``torch.compile(fullgraph=True)`` see one
opaque operator where the scan runs, with no graph break.  The real
implementation runs the plain scan (:mod:`.runner`) on the tensors' device:
the Triton kernels for CUDA tensors (or CPU tensors with ``backend="triton"``
under ``TRITON_INTERPRET=1``), the CPU backend for CPU tensors.

The operators take tensors and plain ints, bools and strings (the fields of
:class:`.params.ScanParams`), never a Monoid: user monoids stay on the eager
path.  The recurrence's operators, on the same pattern, are
:mod:`prefixscan.primitives.recurrence.torch_ops`; compaction's,
:mod:`prefixscan.primitives.compaction.torch_ops`.
"""

from __future__ import annotations

from typing import Optional

import torch

from .gradients import scan_backward
from .params import ScanParams
from .runner import run_scan

__all__ = ["scan_op", "call_scan", "torch_dtype", "fresh_output"]


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
