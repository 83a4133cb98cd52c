"""The custom operators ``prefixscan::segmented_scan`` and ``prefixscan::checked_offsets``.

Registered with ``torch.library.custom_op`` like the scan's operator
(:mod:`prefixscan.primitives.scan.torch_ops`), so ``torch.compile(fullgraph=True)``
traces ``prefixscan.segmented_scan`` of torch tensors (``flags``, ``offsets`` or
``keys`` given as tensors, lists or host arrays) as one opaque operator, with no
graph break: the segments enter the graph as a tensor, and nothing reads their
values while tracing.

The checks that read no value (x 1-D, the operator against the dtype, the
segments' shape, dtype and device) run in plain Python and in the fake
implementation, so a traced call refuses such arguments while tracing.  The
checks of the values (offsets starting at 0, in range, non-decreasing; the
seed's value) run in the real implementation, before the backend's kernel
(:func:`.runner.run_segmented`): eagerly and in compiled code alike, a bad
offset raises the eager ``ValueError`` naming ``offsets``, and the output (a
fresh tensor, copied into ``out`` only after the scan) is never written.

``prefixscan::checked_offsets`` does the same for the packed sequences of
``linear_recurrence`` under ``torch.compile``: the offsets' checks at run time,
the bounds as int64.

The sum's backward is the segmented sum of the gradient in the other direction
over the same segments (the transpose of a prefix sum, Blelloch 1990, "Prefix
sums and their applications", sections 1.3 and 1.5); ``init``, which enters
every output once, gets the sum of the gradient.  The other operators have no
gradient here: a call that would need one is refused.
"""

from __future__ import annotations

from typing import Any, Optional

import torch

from ..._arrays import refuse_dask
from ..._normalize import check_offsets, check_segments
from ..._segments import check_segment_tensor
from ...monoid import accumulator_dtype_name
from ..scan.tensors import _check_out_tensors, _device, _not_traceable, dtype_name, host_seed, scan_config
from ..scan.torch_ops import fresh_output, torch_dtype
from .checks import check_segmented_request
from .runner import run_segmented

__all__ = ["segmented_scan", "segmented_op", "checked_offsets", "checked_offsets_op", "int_list"]

_KINDS = ("flags", "offsets", "keys")


def _device_name(t: torch.Tensor) -> str:
    """The device as the array checks name it: "cuda" or "cpu"."""
    return "cuda" if t.device.type == "cuda" else t.device.type


def _check_layout(kind: str, segments: torch.Tensor, x: torch.Tensor) -> None:
    """The checks of the segments that read no value (what a fake tensor has)."""
    if kind not in _KINDS:
        raise ValueError(f"segments: unknown kind {kind!r}; one of {', '.join(_KINDS)}")
    if _device_name(segments) != _device_name(x):
        raise ValueError(f"{kind} is on {_device_name(segments)} but x is on {_device_name(x)}")
    check_segment_tensor(kind, segments, x.shape[0])


@torch.library.custom_op("prefixscan::segmented_scan", mutates_args=())
def segmented_op(x: torch.Tensor, segments: torch.Tensor, kind: str, op: str, inclusive: bool, reverse: bool,
                 init: Optional[torch.Tensor], dtype: Optional[str], backend: Optional[str]) -> torch.Tensor:
    """The segmented scan of the 1-D ``x`` with a built-in operator, the segments
    given as ``kind`` ("flags", "offsets" or "keys"); ``init`` a 0-d seed or None.
    Every argument is checked (the offsets' values too) before the backend runs."""
    if kind not in _KINDS:
        raise ValueError(f"segments: unknown kind {kind!r}; one of {', '.join(_KINDS)}")
    request = check_segmented_request(x.detach(), op, inclusive=inclusive, reverse=reverse,
                                      init=None if init is None else init.detach(), dtype=dtype, out=None,
                                      backend=backend)
    given = {kind: segments.detach()}
    (result,) = run_segmented(request, given.get("flags"), given.get("offsets"), given.get("keys"))
    return fresh_output(result, x, segments)


@segmented_op.register_fake
def _segmented_fake(x, segments, kind, op, inclusive, reverse, init, dtype, backend):
    _check_layout(kind, segments, x)  # errors at trace time; the values are checked when the operator runs
    return x.new_empty(x.shape, dtype=torch_dtype(dtype, x.dtype))


def _setup_segmented(ctx, inputs, output):
    x, segments, kind, op, inclusive, reverse, init, dtype, backend = inputs
    ctx.save_for_backward(segments)
    ctx.args = (kind, op, inclusive, reverse, backend)
    ctx.x_dtype = x.dtype
    ctx.init_dtype = None if init is None else init.dtype


def _segmented_grad(ctx, grad):
    (segments,) = ctx.saved_tensors
    kind, op, inclusive, reverse, backend = ctx.args
    if op != "add":  # the public function refuses these before the forward
        raise _no_gradient(op)
    grad_x = grad_init = None
    if ctx.needs_input_grad[0]:
        # The transpose of a segmented sum: the segmented sum the other way, over the same segments.
        back = torch.ops.prefixscan.segmented_scan(grad.contiguous(), segments, kind, "add", inclusive, not reverse,
                                                   None, None, backend)
        grad_x = back.to(ctx.x_dtype)
    if ctx.needs_input_grad[6] and ctx.init_dtype is not None:
        grad_init = grad.sum().to(ctx.init_dtype)  # the seed enters every output once
    return grad_x, None, None, None, None, None, grad_init, None, None


segmented_op.register_autograd(_segmented_grad, setup_context=_setup_segmented)


@torch.library.custom_op("prefixscan::checked_offsets", mutates_args=())
def checked_offsets_op(offsets: torch.Tensor, n: int, length: str, whole: bool) -> torch.Tensor:
    """``offsets`` checked for an axis of ``n`` elements (``length`` names n in
    messages), as int64 on their device; with ``whole`` they must hold every
    bound, n last (the number of segments is then their length less one)."""
    bounds = check_offsets(offsets.detach(), n, device=_device_name(offsets), full=whole, length=length)
    if bounds.shape[0] != offsets.shape[0]:
        raise ValueError(f"offsets must end with {n} ({length}) in a function compiled by torch.compile when the "
                         f"number of sequences gives a shape (init, return_final), got {int(offsets[-1])} last: "
                         f"append {n}")
    return fresh_output(bounds.to(torch.int64), offsets)


@checked_offsets_op.register_fake
def _checked_offsets_fake(offsets, n, length, whole):
    check_segment_tensor("offsets", offsets, n)
    return offsets.new_empty(offsets.shape, dtype=torch.int64)


def checked_offsets(offsets: torch.Tensor, n: int, length: str, whole: bool) -> torch.Tensor:
    """``prefixscan::checked_offsets``: the checked offsets as int64 (with
    ``whole``, every bound, n last)."""
    return checked_offsets_op(offsets, n, length, whole)


# ---------------------------------------------------------------------------
# The public function on tensors.


def _no_gradient(name: str) -> TypeError:
    return TypeError(f"op={name!r} has no gradient in segmented_scan, which differentiates op='add'; detach the "
                     "inputs (x.detach()) to scan without a gradient")


def _needs_grad(*values: Any) -> bool:
    return torch.is_grad_enabled() and any(getattr(v, "requires_grad", False) is True for v in values)


def int_list(values: Any, n: int, length: str = "len(x)") -> torch.Tensor:
    """A list of offsets as an int64 tensor, in a traced call: the values are
    checked when the operator runs; what is not an int, or that no int64 holds,
    is refused here (``length`` names n in messages)."""
    if not values:
        raise ValueError("offsets must start at 0, got an empty list")
    for i, v in enumerate(values):
        if isinstance(v, bool) or not isinstance(v, int):
            raise TypeError("offsets must be a 1-D array of integers (or a list of ints): segment boundaries "
                            f"starting at 0, got {type(v).__name__} at offsets[{i}]")
        if not -2**63 <= v < 2**63:
            raise ValueError(f"offsets[{i}] = {v} is out of range: offsets lie in [0, {n}], {n} being {length}")
    return torch.tensor(list(values), dtype=torch.int64)


def _segments_tensor(kind: str, value: Any, x: torch.Tensor) -> torch.Tensor:
    """The segment description as a tensor on x's device: a tensor as it is (its
    checks run in the operator), else checked on the host now, or in a traced call
    converted (lists of offsets by :func:`int_list`) and checked in the operator."""
    if isinstance(value, torch.Tensor):
        return value
    if torch.compiler.is_compiling():
        if kind == "offsets" and isinstance(value, (list, tuple)):
            return int_list(value, x.shape[0]).to(x.device)
        return torch.as_tensor(value).to(x.device)
    refuse_dask(value, kind)
    none = dict.fromkeys(_KINDS)
    return check_segments(x.shape[0], **{**none, kind: value}, device=x.device)[1]


def _seed(init: Any, x: torch.Tensor, acc: str) -> torch.Tensor:
    """``init`` as a 0-d tensor: a number checked against the accumulator dtype
    now; a tensor's value is checked by the operator."""
    if not isinstance(init, torch.Tensor):
        return host_seed(init, acc, x.device)
    if init.dim() != 0:
        raise ValueError(f"init: shape {tuple(init.shape)} does not broadcast to the lane shape ()")
    return init


def segmented_scan(x: Any, op: Any = "add", *, flags: Any = None, offsets: Any = None, keys: Any = None,
                   inclusive: Any = True, reverse: Any = False, init: Any = None, dtype: Any = None, out: Any = None,
                   backend: Any = None) -> Any:
    """:func:`prefixscan.segmented_scan` of a torch tensor through ``prefixscan::segmented_scan``."""
    given = [(name, v) for name, v in zip(_KINDS, (flags, offsets, keys)) if v is not None]
    if len(given) != 1:
        raise ValueError("flags, offsets, keys: give exactly one of them"
                         + (f" (got {', '.join(name for name, _ in given)})" if given else ""))
    config = scan_config(op, inclusive=inclusive, reverse=reverse, dtype=dtype, backend=backend)
    monoid = config.monoid
    grad = _needs_grad(*(x if type(x) is tuple else (x,)), init)
    if out is not None and grad:
        raise RuntimeError("out: functions with out=... arguments do not support automatic differentiation, "
                           "but an argument requires grad; leave out=None")
    if type(x) is tuple or not monoid.builtin:
        if type(x) is tuple and monoid.builtin:
            monoid.check_fields(len(x), True)  # a built-in operator takes one array: refused here
        raise _no_gradient(monoid.name) if grad else _not_traceable(monoid.name)
    if x.dim() != 1:
        raise ValueError(f"x must be 1-D for a segmented scan, got shape {tuple(x.shape)}")
    monoid.check_dtype(config.dtype or dtype_name(x), "x" if config.dtype is None else "dtype")
    if grad and monoid.name != "add":
        raise _no_gradient(monoid.name)
    seed = None if init is None else _seed(init, x, accumulator_dtype_name(dtype_name(x), config.dtype))
    kind, value = given[0]
    segments = _segments_tensor(kind, value, x)
    if out is not None:  # before any work
        _check_out_tensors(out, False, 1, tuple(x.shape), (config.dtype or dtype_name(x),), _device(x))
    result = segmented_op(x, segments, kind, monoid.name, config.inclusive, config.reverse, seed, config.dtype,
                          config.backend)
    if out is None:
        return result
    out.copy_(result)  # cast to out's dtype as NumPy casts into out= (same_kind)
    return out
