"""The custom operators ``prefixscan::sort`` and ``prefixscan::argsort``.

Registered with ``torch.library.custom_op`` like the scan's operator
(:mod:`prefixscan.primitives.scan.torch_ops`), so ``torch.compile(fullgraph=True)``
traces ``prefixscan.sort`` and ``prefixscan.argsort`` of torch tensors as one
opaque operator each, with no graph break.  The fake implementations give the
shapes: x's shape (flattened for ``axis=None``), the permutation int64.  The real
implementations run the backends' radix sorts
(:data:`~prefixscan.primitives.sort.IMPLEMENTATIONS`).

``prefixscan::sort`` also returns the permutation, which its backward uses: a
sort moves every element to a new place along its row, so the gradient of the
sorted keys (float keys) and of the moved values goes back to the places they
were read from (a scatter by the permutation, as ``torch.sort``'s backward).
The permutation and integer outputs have no gradient.
"""

from __future__ import annotations

from typing import Any, Optional

import torch

from ..._arrays import from_native
from ...dispatch import implementation, select_backend
from ..scan.torch_ops import fresh_output
from . import IMPLEMENTATIONS
from .checks import check_sort_args

__all__ = ["sort", "argsort", "sort_op", "argsort_op"]


def _run(x: torch.Tensor, values: list, axis: Optional[int], descending: bool, key_bits: Optional[int],
         backend: Optional[str], want_keys: bool) -> list:
    x = x.detach()
    values = [v.detach() for v in values]
    args = check_sort_args(x, axis, descending, tuple(values) or None, key_bits)
    chosen = select_backend(backend, args.keys.device)
    run = implementation("sort", IMPLEMENTATIONS, chosen)
    result = run.sort(args, want_keys=want_keys, want_index=True)
    native = chosen.NATIVE_LIBRARY
    index = from_native(result.index, args.keys, native)
    if not want_keys:
        return [index]
    keys = fresh_output(from_native(result.keys, args.keys, native, args.keys.dtype), x)
    moved = [fresh_output(from_native(v, ref, native, ref.dtype), *values)
             for v, ref in zip(result.values, args.values)]
    return [keys, index] + moved


def _shape(x: torch.Tensor, axis: Optional[int]) -> tuple:
    return (x.numel(),) if axis is None else tuple(x.shape)


@torch.library.custom_op("prefixscan::sort", mutates_args=())
def sort_op(x: torch.Tensor, values: list[torch.Tensor], axis: Optional[int], descending: bool,
            key_bits: Optional[int], backend: Optional[str]) -> list[torch.Tensor]:
    """The keys sorted stably along ``axis`` (None: flattened), the permutation
    (int64), then each of ``values`` in the keys' order."""
    return _run(x, values, axis, descending, key_bits, backend, True)


@sort_op.register_fake
def _sort_fake(x, values, axis, descending, key_bits, backend):
    check_sort_args(x, axis, descending, tuple(values) or None, key_bits)  # errors at trace time
    shape = _shape(x, axis)
    return [x.new_empty(shape), x.new_empty(shape, dtype=torch.int64)] + [v.new_empty(shape) for v in values]


@torch.library.custom_op("prefixscan::argsort", mutates_args=())
def argsort_op(x: torch.Tensor, axis: Optional[int], descending: bool, key_bits: Optional[int],
               backend: Optional[str]) -> torch.Tensor:
    """The stable permutation that sorts ``x`` along ``axis`` (None: flattened), int64."""
    return _run(x, [], axis, descending, key_bits, backend, False)[0]


@argsort_op.register_fake
def _argsort_fake(x, axis, descending, key_bits, backend):
    check_sort_args(x, axis, descending, None, key_bits)
    return x.new_empty(_shape(x, axis), dtype=torch.int64)


def _setup_sort(ctx, inputs, output):
    x, values, axis, *_ = inputs
    ctx.axis = axis
    ctx.shape = tuple(x.shape)
    ctx.floats = [x.is_floating_point()] + [v.is_floating_point() or v.is_complex() for v in values]
    ctx.save_for_backward(output[1])


def _sort_grad(ctx, grads):
    (index,) = ctx.saved_tensors
    grad_keys, _, *grad_values = grads

    def back(grad, differentiable):
        if grad is None or not differentiable:
            return None
        if ctx.axis is None:
            return torch.zeros_like(grad).scatter(0, index, grad).reshape(ctx.shape)
        return torch.zeros_like(grad).scatter(ctx.axis, index, grad)

    return (back(grad_keys, ctx.floats[0]), [back(g, f) for g, f in zip(grad_values, ctx.floats[1:])], None, None,
            None, None)


sort_op.register_autograd(_sort_grad, setup_context=_setup_sort)


def sort(x: Any, *, axis: Any = -1, descending: Any = False, values: Any = None, key_bits: Any = None,
         backend: Optional[str] = None) -> Any:
    """:func:`prefixscan.sort` of torch tensors through ``prefixscan::sort``."""
    args = check_sort_args(x, axis, descending, values, key_bits)  # the eager path's errors, before the operator
    listed = list(values) if type(values) is tuple else ([] if values is None else [values])
    keys, _, *moved = sort_op(x, listed, args.axis, args.code.descending, args.code.key_bits, backend)
    if values is None:
        return keys
    return keys, (tuple(moved) if type(values) is tuple else moved[0])


def argsort(x: Any, *, axis: Any = -1, descending: Any = False, key_bits: Any = None,
            backend: Optional[str] = None) -> Any:
    """:func:`prefixscan.argsort` of torch tensors through ``prefixscan::argsort``."""
    args = check_sort_args(x, axis, descending, None, key_bits)
    return argsort_op(x, args.axis, args.code.descending, args.code.key_bits, backend)
