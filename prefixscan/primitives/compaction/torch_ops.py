"""The custom operators ``prefixscan::compact`` and ``prefixscan::partition``.

Stream compaction writes each kept element to the exclusive sum scan of the
mask at it, and a stable partition writes a rejected one at index i to
``count + i - (kept before i)`` (Blelloch 1990, "Prefix sums and their
applications", sections 1.3 and 1.5).  Registered with
``torch.library.custom_op`` like the scan's operator
(:mod:`prefixscan.primitives.scan.torch_ops`), so ``torch.compile(fullgraph=True)``
traces ``prefixscan.compact`` and ``prefixscan.partition`` of torch tensors as
one opaque operator each, with no graph break.  The fake implementations give
the shapes: ``(size,)`` values and a 0-d int64 count for ``compact`` with a
size, ``(n,)`` values and the count for ``partition``; ``compact`` without a
size has a data-dependent length, a fresh unbacked symbolic size
(``ctx.new_dynamic_size()``).  The real implementations run the backends'
single-pass compaction and partition
(:data:`~prefixscan.primitives.compaction.IMPLEMENTATIONS`).

The backward scatters the gradient of the values back to the positions they
were read from (the same slots, from a sum scan of the mask): a kept element
gets the gradient of its slot, every other element (and a kept one past
``size``) zero; a partition's permutation sends every element its slot's
gradient.  The mask, the count and ``fill_value`` have none.  Without a
``size``, the backward reads the mask, never the values' length (an unbacked
symbolic size under ``torch.compile``).
"""

from __future__ import annotations

from typing import Any, Optional, Union

import torch

from ..._arrays import from_native
from ...dispatch import implementation, select_backend
from ..scan.torch_ops import fresh_output
from . import IMPLEMENTATIONS
from .checks import check_compact_args

__all__ = ["compact", "partition", "compact_op", "partition_op"]

_Fill = Union[int, float, bool]


def _fill_value(real: _Fill, imag: float) -> Any:
    """The fill value the operator got as a real scalar and an imaginary part
    (operator schemas have no complex scalar)."""
    return complex(real, imag) if imag else real


def _run_plain(kind: str, fields: list, mask: torch.Tensor, size: Optional[int], fill: Any,
               backend: Optional[str]) -> list:
    """The backend's compaction or partition of detached tensors: the values, then the count."""
    fields = tuple(f.detach() for f in fields)
    mask = mask.detach()
    args = check_compact_args(fields, mask, size, fill)
    chosen = select_backend(backend, args.mask.device)
    run = implementation(kind, IMPLEMENTATIONS, chosen)
    if kind == "compact":
        values, count = run.compact(args.fields, args.mask, args.size, args.fills)
    else:
        values, count = run.partition(args.fields, args.mask)
    native = chosen.NATIVE_LIBRARY
    values = [fresh_output(from_native(v, ref, native, ref.dtype), *fields) for v, ref in zip(values, args.fields)]
    count = from_native(count, args.fields[0], native)
    return values + [torch.as_tensor(count, dtype=torch.int64, device=mask.device).reshape(())]


@torch.library.custom_op("prefixscan::compact", mutates_args=())
def compact_op(fields: list[torch.Tensor], mask: torch.Tensor, size: Optional[int], fill_value: _Fill,
               fill_imag: float, backend: Optional[str]) -> list[torch.Tensor]:
    """The fields (of one shape) where ``mask`` is True, flattened, in order, then
    the 0-d int64 count: ``size`` values each (the first selected ones, then
    ``fill_value + fill_imag * 1j``), or the count's own length for None."""
    return _run_plain("compact", fields, mask, size, _fill_value(fill_value, fill_imag), backend)


@compact_op.register_fake
def _compact_fake(fields, mask, size, fill_value, fill_imag, backend):
    check_compact_args(tuple(fields), mask, size, _fill_value(fill_value, fill_imag))  # errors at trace time
    length = torch.library.get_ctx().new_dynamic_size() if size is None else size
    count = mask.new_empty((), dtype=torch.int64)
    return [f.new_empty((length,)) for f in fields] + [count]


@torch.library.custom_op("prefixscan::partition", mutates_args=())
def partition_op(fields: list[torch.Tensor], mask: torch.Tensor, backend: Optional[str]) -> list[torch.Tensor]:
    """The fields (of one shape), flattened, where ``mask`` is True, then the
    others, each in order, then the 0-d int64 count of the True elements."""
    return _run_plain("partition", fields, mask, None, 0, backend)


@partition_op.register_fake
def _partition_fake(fields, mask, backend):
    check_compact_args(tuple(fields), mask)
    return [f.new_empty((f.numel(),)) for f in fields] + [mask.new_empty((), dtype=torch.int64)]


def _slots(mask: torch.Tensor) -> torch.Tensor:
    """The exclusive sum scan of the flattened mask: each kept element's slot."""
    keep = mask.reshape(-1).to(torch.int64)
    return torch.cumsum(keep, 0) - keep


def _gather_back(grad: Optional[torch.Tensor], shape: torch.Size, source: torch.Tensor) -> Optional[torch.Tensor]:
    """``grad[source]`` in the field's shape, zero where ``source`` is -1 (no slot)."""
    if grad is None:
        return None
    padded = torch.cat((grad, grad.new_zeros((1,))))
    return padded[source].reshape(shape)


def _setup_partition(ctx, inputs, output):
    fields, mask, _ = inputs
    ctx.shapes = [f.shape for f in fields]
    ctx.save_for_backward(mask, output[-1])


def _setup_compact(ctx, inputs, output):
    _setup_partition(ctx, (inputs[0], inputs[1], None), output)
    ctx.size = inputs[2]


def _compact_grad(ctx, grads):
    mask, _ = ctx.saved_tensors
    keep = mask.reshape(-1)
    slots = _slots(mask)
    if ctx.size is not None:  # the kept elements past size were dropped
        keep = keep & (slots < ctx.size)
    # The size, never the gradient's length: without one that is an unbacked symbolic size.
    source = torch.where(keep, slots, -1)
    grad_fields = [_gather_back(grad, shape, source) for grad, shape in zip(grads[:-1], ctx.shapes)]
    return grad_fields, None, None, None, None, None


def _partition_grad(ctx, grads):
    mask, count = ctx.saved_tensors
    keep = mask.reshape(-1)
    slots = _slots(mask)
    index = torch.arange(keep.numel(), device=mask.device)
    source = torch.where(keep, slots, count + index - slots)  # where each element went
    grad_fields = [_gather_back(grad, shape, source) for grad, shape in zip(grads[:-1], ctx.shapes)]
    return grad_fields, None, None


compact_op.register_autograd(_compact_grad, setup_context=_setup_compact)
partition_op.register_autograd(_partition_grad, setup_context=_setup_partition)


def _fields(x: Any) -> list:
    return list(x) if type(x) is tuple else [x]


def compact(x: Any, mask: Any, *, size: Any = None, fill_value: Any = None, backend: Optional[str] = None) -> Any:
    """:func:`prefixscan.compact` of torch tensors through ``prefixscan::compact``."""
    if fill_value is None:  # each field's zero: False is 0 of every dtype and the zero of bool
        fill_value = False
    if type(fill_value).__module__ == "numpy" and getattr(fill_value, "ndim", None) == 0:
        fill_value = fill_value.item()  # a NumPy scalar: the operator's schema takes Python numbers
    if not isinstance(fill_value, (bool, int, float, complex)):
        raise TypeError(f"fill_value must be a number, got {type(fill_value).__name__}")
    real, imag = (fill_value.real, fill_value.imag) if isinstance(fill_value, complex) else (fill_value, 0.0)
    *values, count = compact_op(_fields(x), mask, size, real, imag, backend)
    result = tuple(values) if type(x) is tuple else values[0]
    return result if size is None else (result, count)


def partition(x: Any, mask: Any, *, backend: Optional[str] = None) -> Any:
    """:func:`prefixscan.partition` of torch tensors through ``prefixscan::partition``."""
    *values, count = partition_op(_fields(x), mask, backend)
    return (tuple(values) if type(x) is tuple else values[0]), count
