"""Scans of torch tensors through the differentiable custom operator.

:func:`differentiable_scan` is what :class:`prefixscan.Scan` (and so
:func:`prefixscan.scan`) calls for a tensor that autograd records or that
``torch.compile`` traces (:func:`.routing.wants_torch_ops`); the NumPy drop-ins
on those tensors are :mod:`prefixscan.primitives.cumulative.tensors`.  The
argument checks here are plain Python on shapes and flags, which TorchDynamo
traces; the arrays' own checks run in the operator (:mod:`prefixscan._normalize`).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import torch

from ..._axes import normalize_axis
from ..._normalize import check_init_value, make_config
from ..._out import check_out_arrays
from ..._request import ScanConfig
from ...monoid import accumulator_dtype_name
from ..recurrence.affine import AFFINE, AFFINE_BACKWARD
from ..recurrence.torch_ops import RecurrenceParams, call_recurrence
from .params import DIFFERENTIABLE_OPS, ScanParams
from .torch_ops import call_scan

__all__ = ["differentiable_scan", "scan", "scan_config", "host_seed", "dtype_name", "DIFFERENTIABLE_OPS"]

_OPERATORS = ", ".join(repr(op) for op in DIFFERENTIABLE_OPS)


def _needs_grad(*values: Any) -> bool:
    return torch.is_grad_enabled() and any(getattr(v, "requires_grad", False) is True for v in values)


def _no_gradient(name: str) -> TypeError:
    return TypeError(f"op={name!r} has no gradient: prefixscan differentiates the built-in operators "
                     f"{_OPERATORS} and the affine monoid (prefixscan.linear_recurrence, or "
                     "scan((a, b), prefixscan.AFFINE) inclusive of order 1); detach the inputs "
                     "(x.detach()) to scan without a gradient")


def _not_traceable(name: str) -> TypeError:
    return TypeError(f"op={name!r}: a user Monoid cannot be an argument of a torch custom operator, so "
                     "torch.compile cannot trace this scan; use a built-in operator or "
                     "prefixscan.linear_recurrence, or run the scan outside the compiled function "
                     "(torch.compiler.disable)")


def dtype_name(t: torch.Tensor) -> str:
    return str(t.dtype).replace("torch.", "")


# dtype names that torch and NumPy share: recognised without NumPy, so that TorchDynamo traces them.
_DTYPE_NAMES = frozenset(["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
                          "float16", "bfloat16", "float32", "float64", "complex64", "complex128"])


def scan_config(op: Any, *, axis=None, inclusive=True, reverse=False, order=1, tuple_size=1, dtype=None,
                backend=None, algorithm=None, deterministic=False, strategy=None) -> ScanConfig:
    """:func:`prefixscan._normalize.make_config`, with torch dtypes and dtype names
    read in plain Python (traceable by TorchDynamo); other dtypes take its rule."""
    name = None
    if isinstance(dtype, torch.dtype):
        name = str(dtype).replace("torch.", "")
    elif isinstance(dtype, str) and dtype in _DTYPE_NAMES:
        name = dtype
    config = make_config(op, axis=axis, inclusive=inclusive, reverse=reverse, order=order, tuple_size=tuple_size,
                         dtype=dtype if name is None else None, backend=backend, algorithm=algorithm,
                         deterministic=deterministic, strategy=strategy)
    return config if name is None else replace(config, dtype=name)


def scan(x, op="add", *, axis=None, inclusive=True, reverse=False, init=None, order=1, tuple_size=1, dtype=None,
         out=None, backend=None, algorithm=None, deterministic=False, strategy=None):
    """:func:`prefixscan.scan` of a torch tensor through the differentiable operator."""
    config = scan_config(op, axis=axis, inclusive=inclusive, reverse=reverse, order=order, tuple_size=tuple_size,
                         dtype=dtype, backend=backend, algorithm=algorithm, deterministic=deterministic,
                         strategy=strategy)
    return differentiable_scan(config, x, init, out)


def differentiable_scan(config: ScanConfig, x: Any, init: Any = None, out: Any = None) -> Any:
    """:func:`prefixscan.scan` of a torch tensor (or a tuple of tensors) as
    ``config`` says, through the custom operator: differentiable for the built-in
    operators of :data:`DIFFERENTIABLE_OPS` and for the affine monoid, and
    traceable by ``torch.compile``.  ``out`` takes the result when nothing
    requires a gradient (torch's rule for ``out=``)."""
    monoid = config.monoid
    grad = _needs_grad(*(x if type(x) is tuple else (x,)), init)
    if out is not None and grad:
        raise RuntimeError("out: functions with out=... arguments do not support automatic differentiation, "
                           "but an argument requires grad; leave out=None")
    if type(x) is tuple:
        result = _affine_scan(config, x, init, out, grad)
    elif not monoid.builtin:
        raise _no_gradient(monoid.name) if grad else _not_traceable(monoid.name)
    else:
        if grad and monoid.name not in DIFFERENTIABLE_OPS:
            raise _no_gradient(monoid.name)
        monoid.check_dtype(config.dtype or dtype_name(x), "x" if config.dtype is None else "dtype")
        x, axis = _lanes(x, config.axis)
        seed = _seed(x, axis, init, config)
        if out is not None:  # before any work
            _check_out_tensors(out, False, 1, tuple(x.shape), (config.dtype or dtype_name(x),), _device(x))
        result = call_scan(ScanParams.from_config(config, axis), x, seed)
    if out is None:
        return result
    struct = type(x) is tuple
    results = result if struct else (result,)
    _check_out_tensors(out, struct, len(results), tuple(results[0].shape), tuple(dtype_name(r) for r in results),
                      _device(results[0]))
    for o, r in zip(out if struct else (out,), results):
        o.copy_(r)  # cast to out's dtype as NumPy casts into out= (same_kind)
    return out


def _check_out_tensors(out: Any, struct: bool, nfields: int, shape: tuple, dtypes: tuple, device: str) -> None:
    """scan's checks of ``out`` (:func:`prefixscan._out.check_out_arrays`: shape, dtype,
    device, writable, fields sharing memory), and tensors only: the result is copied in
    with torch."""
    for o in (out if struct and type(out) is tuple else (out,)):
        if not isinstance(o, torch.Tensor):
            raise TypeError(f"out: a scan of torch tensors that autograd records or torch.compile traces writes "
                            f"into tensors, got {type(o).__name__}")
    check_out_arrays(out, struct, nfields, shape, dtypes, device)


def _device(t: torch.Tensor) -> str:
    """The device name of scan's checks ("cuda" or "cpu")."""
    return "cuda" if t.is_cuda else "cpu"


@torch.compiler.assume_constant_result  # a traced call checks its constant seed once, at trace time
def _checked_number(value: Any, acc: str) -> Any:
    check_init_value(value, acc)
    return value


def host_seed(init: Any, acc: str, device) -> torch.Tensor:
    """A seed given as a number or a host array, after scan's checks of its values
    against the accumulator dtype ``acc`` (an integer accumulator takes integers in
    its range only), as a tensor of ``acc`` on ``device``."""
    # Built on the host, then copied without waiting for the stream (see the Triton
    # backend's seeds): a blocking copy would synchronise every seeded call.
    if type(init) in (bool, int, float, complex):
        value = torch.tensor(_checked_number(init, acc), dtype=getattr(torch, acc))
    else:
        value = torch.as_tensor(check_init_value(init, acc))
    return value.to(device, non_blocking=value.device.type == "cpu")  # host to device only


def _lanes(x: torch.Tensor, axis: Any) -> tuple[torch.Tensor, int]:
    """x and its scanned axis, non-negative: the flattened x for ``axis=None``."""
    if axis is None:
        return x.reshape(-1), 0
    return x, normalize_axis(axis, x.dim())


def _seed(x: torch.Tensor, axis: int, init: Any, config: ScanConfig):
    """``init`` as a tensor of the lane shape (then ``(tuple_size,)``), on x's device."""
    s = config.tuple_size
    n = x.shape[axis]
    if n % s:
        raise ValueError(f"tuple_size={s} does not divide the lane length {n}")
    if init is None:
        return None
    target = tuple(x.shape[:axis]) + tuple(x.shape[axis + 1:]) + ((s,) if s > 1 else ())
    if not isinstance(init, torch.Tensor):
        init = host_seed(init, accumulator_dtype_name(dtype_name(x), config.dtype), x.device)
    try:
        fits = torch.broadcast_shapes(tuple(init.shape), target) == target
    except RuntimeError:
        fits = False
    if not fits:
        raise ValueError(f"init: shape {tuple(init.shape)} does not broadcast to the lane shape {target}")
    return init.expand(target)


def _affine_scan(config: ScanConfig, x: tuple, init: Any, out: Any, grad: bool) -> tuple:
    """``scan((a, b), AFFINE)``: the composed maps ``(A, B)``, A the running
    product of ``a`` and B the recurrence seeded with 0, each a custom operator."""
    monoid = config.monoid
    canonical = (monoid is AFFINE and not config.reverse) or (monoid is AFFINE_BACKWARD and config.reverse)
    if not canonical or len(x) != 2 or not config.inclusive or config.order != 1 or config.tuple_size != 1 \
            or init is not None:
        if monoid.builtin or monoid in (AFFINE, AFFINE_BACKWARD):
            raise TypeError(f"op={monoid.name!r}: a tuple x is differentiable only for scan((a, b), AFFINE) "
                            "(or AFFINE_BACKWARD with reverse=True), inclusive, of order 1 and tuple size 1, "
                            "without init; use prefixscan.linear_recurrence")
        raise _no_gradient(monoid.name) if grad else _not_traceable(monoid.name)
    a, b = x
    if tuple(a.shape) != tuple(b.shape) or a.dtype != b.dtype:
        raise ValueError("x: fields of a struct monoid must have one shape and dtype")
    a, axis = _lanes(a, config.axis)
    b, _ = _lanes(b, config.axis)
    coef = call_scan(ScanParams("mul", axis, reverse=config.reverse, dtype=config.dtype, backend=config.backend,
                                deterministic=config.deterministic, strategy=config.strategy), a)
    offset = call_recurrence(RecurrenceParams(axis, config.reverse, config.backend, config.deterministic,
                                              config.strategy), a, b)
    return coef, offset
