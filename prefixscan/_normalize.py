"""Argument checking: every argument of every public function is checked here.

Where does an argument get checked?  Here, and only here.  :func:`make_config`
checks what a scan computes (operator, axis, order, tuple size, dtype, backend,
algorithm, strategy, determinism); :func:`build_request` checks the arrays of
one call (``x``, ``init``, ``out``) against it and returns the
:class:`~prefixscan._request.ScanRequest` a backend runs.  The derived functions
of :mod:`prefixscan.algorithms` check their own arguments with the ``check_*``
functions below before any work starts.  So a bad argument raises an error that
names it, before any backend runs and before anything is written to ``out``.

The request types live in :mod:`prefixscan._request` so that backends can use
them without importing the checks.
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from ._arrays import ArrayRef, inspect_array
from ._request import ScanConfig, ScanRequest, np_dtype
from .backends.triton.registry import DETERMINISTIC_STRATEGIES, STRATEGY_NAMES
from .monoid import Monoid, accumulator_dtype_name, resolve_op

__all__ = ["ALGORITHMS", "STRATEGIES", "make_config", "build_request", "check_init_shape", "check_axis",
           "check_recurrence_args", "check_delta_args", "check_segmented_values", "check_segments",
           "check_compact_args"]

ALGORITHMS = ("auto", "serial", "kogge_stone", "sklansky", "brent_kung", "reduce_then_scan")
# GPU meta-strategies (backends/triton/registry.py); "auto" asks the tuner (decoupled
# look-back unless a tuned table says otherwise).
STRATEGIES = ("auto",) + STRATEGY_NAMES


def _as_int(value: Any, name: str) -> int:
    if isinstance(value, bool):
        raise TypeError(f"{name} must be an integer, got bool")
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(f"{name} must be an integer, got {type(value).__name__}") from None


def _as_bool(value: Any, name: str) -> bool:
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    raise TypeError(f"{name} must be True or False, got {value!r}")


def make_config(op, *, axis, inclusive, reverse, order, tuple_size, dtype, backend, algorithm,
                deterministic=False, strategy=None) -> ScanConfig:
    """Check the data-independent arguments of a scan (see :func:`prefixscan.scan`
    for their meaning) and return them normalized: ``op`` resolved to a
    :class:`~prefixscan.Monoid`, dtypes as NumPy names, None as "auto"."""
    monoid = resolve_op(op)
    if axis is not None:
        axis = _as_int(axis, "axis")
    order = _as_int(order, "order")
    if order < 1:
        raise ValueError(f"order must be >= 1, got {order}")
    tuple_size = _as_int(tuple_size, "tuple_size")
    if tuple_size < 1:
        raise ValueError(f"tuple_size must be >= 1, got {tuple_size}")
    if dtype is not None:
        dtype = _dtype_str(dtype)
    if backend is not None and backend not in ("cpu", "triton"):
        raise ValueError(f"backend: unknown backend {backend!r}; choose from 'triton', 'cpu' or None")
    algorithm = "auto" if algorithm is None else algorithm
    if algorithm not in ALGORITHMS:
        raise ValueError(f"algorithm: unknown algorithm {algorithm!r}; choose from {', '.join(ALGORITHMS)}")
    strategy = "auto" if strategy is None else strategy
    if strategy not in STRATEGIES:
        raise ValueError(f"strategy: unknown strategy {strategy!r}; choose from {', '.join(STRATEGIES)}")
    deterministic = _as_bool(deterministic, "deterministic")
    if deterministic and strategy != "auto" and strategy not in DETERMINISTIC_STRATEGIES:
        # These combine tiles in an order fixed by the sizes and the grid; the
        # decoupled look-back folds whatever its predecessors have published.
        names = ", ".join(repr(s) for s in DETERMINISTIC_STRATEGIES)
        raise ValueError(f"strategy={strategy!r} is not deterministic; deterministic=True needs "
                         f"strategy {names} or None")
    return ScanConfig(monoid, axis, _as_bool(inclusive, "inclusive"), _as_bool(reverse, "reverse"),
                      order, tuple_size, dtype, backend, algorithm, deterministic, strategy)


def _dtype_str(dtype: Any) -> str:
    name = str(dtype).replace("torch.", "")
    if name == "bfloat16":
        return name
    if type(dtype).__module__.startswith("torch"):
        dtype = name  # torch.int32 -> "int32"
    try:
        return np.dtype(dtype).name
    except TypeError:
        raise TypeError(f"dtype: not a dtype: {dtype!r}") from None


def _split_fields(x: Any) -> tuple[list, bool]:
    if isinstance(x, tuple) and x and not all(np.isscalar(v) for v in x):
        return list(x), True
    return [x], False


def build_request(config: ScanConfig, x: Any, init: Any, out: Any) -> ScanRequest:
    """Check the arrays of one call against ``config`` (x's fields, dtypes against
    the operator, axis range, tuple size against the lane length, ``init``'s shape,
    ``out``'s shape, dtype, device and writability) and describe the scan."""
    values, struct = _split_fields(x)
    monoid = config.monoid
    if monoid.fields is not None and monoid.fields != len(values):
        raise ValueError(
            f"x: op {monoid.name!r} combines {monoid.fields} field(s); pass x as a tuple of "
            f"{monoid.fields} arrays" if monoid.fields > 1 else
            f"x: op {monoid.name!r} takes a single array, got a tuple of {len(values)}"
        )
    fields = [inspect_array(v, "x" if not struct else f"x[{i}]") for i, v in enumerate(values)]
    shape = fields[0].shape
    for i, f in enumerate(fields[1:], 1):
        if f.shape != shape:
            raise ValueError(f"x: fields of a struct monoid must have one shape; x[0] is {shape}, x[{i}] is {f.shape}")
    devices = {f.device for f in fields}
    if len(devices) > 1:
        raise ValueError("x: all fields must be on one device")
    device = devices.pop()

    for f in fields:
        monoid.check_dtype(config.dtype or f.dtype, "x" if config.dtype is None else "dtype")
    acc = tuple(accumulator_dtype_name(f.dtype, config.dtype) for f in fields)
    out_dtypes = tuple(config.dtype or f.dtype for f in fields)

    if config.axis is None:
        norm_axis = None
        lane_len = int(np.prod(shape, dtype=np.int64))
        out_shape = (lane_len,)
    else:
        ndim = len(shape)
        if not -ndim <= config.axis < ndim:
            raise ValueError(f"axis {config.axis} is out of range for an array of {ndim} dimension(s)")
        norm_axis = config.axis % ndim
        lane_len = shape[norm_axis]
        out_shape = shape
    s = config.tuple_size
    if lane_len % s:
        raise ValueError(f"tuple_size={s} does not divide the lane length {lane_len}")

    identity = tuple(np.asarray(v, dtype=np_dtype(d)) for v, d in
                     zip(monoid.identity_values([np_dtype(d) for d in acc]), acc))
    request = ScanRequest(config, fields, struct, device, shape, norm_axis, lane_len, acc, out_dtypes,
                          out_shape, None, (), identity=identity)
    request.init_shape = request.lanes_shape + ((s,) if s > 1 else ())
    if init is not None:
        request.init = _check_init(init, len(fields), struct, request.init_shape)
    if out is not None:
        request.out = _check_out(out, request)
    return request


def _check_init(init: Any, nfields: int, struct: bool, target: tuple) -> tuple:
    values = list(init) if struct else [init]
    if struct and (not isinstance(init, tuple) or len(values) != nfields):
        raise ValueError(f"init: expected a tuple of {nfields} values for a struct monoid")
    for v in values:
        check_init_shape(v, target)
    return tuple(values)


def check_init_shape(value: Any, target: tuple) -> tuple:
    """``value``'s shape, which must broadcast to the lane shape ``target``."""
    shape = tuple(getattr(value, "shape", np.shape(value)))
    try:
        if np.broadcast_shapes(shape, target) != target:
            raise ValueError
    except ValueError:
        raise ValueError(f"init: shape {shape} does not broadcast to the lane shape {target}") from None
    return shape


def _check_out(out: Any, request: ScanRequest) -> list[ArrayRef]:
    values = list(out) if request.struct else [out]
    if request.struct and (not isinstance(out, tuple) or len(values) != len(request.fields)):
        raise ValueError(f"out: expected a tuple of {len(request.fields)} arrays")
    refs = []
    for i, v in enumerate(values):
        if isinstance(v, (list, tuple)) or np.isscalar(v):
            raise TypeError(f"out must be an array, got {type(v).__name__}")
        ref = inspect_array(v, "out")
        if ref.library == "other" and not isinstance(v, np.ndarray):
            raise TypeError(f"out must be a NumPy array or tensor, got {type(v).__name__}")
        if ref.shape != request.out_shape:
            raise ValueError(f"out has shape {ref.shape}; the result has shape {request.out_shape}")
        if ref.dtype != request.out_dtypes[i]:
            raise TypeError(f"out has dtype {ref.dtype}; the result has dtype {request.out_dtypes[i]}")
        if ref.device != request.device:
            raise ValueError(f"out is on {ref.device} but x is on {request.device}")
        if isinstance(v, np.ndarray) and not v.flags.writeable:
            raise ValueError("out is read-only")
        refs.append(ref)
    return refs


# ---------------------------------------------------------------------------
# Arguments of the derived functions (prefixscan.algorithms).

def check_axis(ref: ArrayRef, axis: int, argument: str = "x") -> int:
    """``axis`` made non-negative for an array of at least one dimension."""
    if len(ref.shape) == 0:
        raise ValueError(f"{argument} must have at least one dimension")
    ndim = len(ref.shape)
    if not -ndim <= axis < ndim:
        raise ValueError(f"axis {axis} is out of range for an array of {ndim} dimension(s)")
    return axis % ndim


def check_recurrence_args(a: Any, b: Any, init: Any, axis: int) -> tuple[ArrayRef, ArrayRef, bool]:
    """``linear_recurrence``'s coefficients and seed: ``(a_ref, b_ref, widen)``, where
    ``widen`` says that ``init`` is an array of the lane shape that needs the scanned
    axis put back before it broadcasts against the result."""
    ra, rb = inspect_array(a, "a"), inspect_array(b, "b")
    if ra.shape != rb.shape:
        raise ValueError(f"b has shape {rb.shape} but a has shape {ra.shape}")
    if ra.dtype != rb.dtype:
        raise TypeError(f"b has dtype {rb.dtype} but a has dtype {ra.dtype}")
    if len(ra.shape) == 0:
        raise ValueError("a must have at least one dimension")
    widen = False
    if init is not None:  # checked before any work; without init the scan checks the axis
        ndim = len(ra.shape)
        if not -ndim <= axis < ndim:
            raise ValueError(f"axis {axis} is out of range for an array of {ndim} dimension(s)")
        widen = bool(check_init_shape(init, ra.shape[: axis % ndim] + ra.shape[axis % ndim + 1:]))
    return ra, rb, widen


def check_delta_args(x: Any, axis: int, order: Any, tuple_size: Any) -> tuple[ArrayRef, int, int, int]:
    """Delta coding's arguments: ``(x_ref, axis, order, tuple_size)`` with the axis
    made non-negative; ``tuple_size`` must divide the coded axis' length."""
    ref = inspect_array(x, "x")
    axis = check_axis(ref, axis)
    order = _as_int(order, "order")
    tuple_size = _as_int(tuple_size, "tuple_size")
    if order < 1:
        raise ValueError(f"order must be >= 1, got {order}")
    if tuple_size < 1:
        raise ValueError(f"tuple_size must be >= 1, got {tuple_size}")
    n = ref.shape[axis]
    if n % tuple_size:
        raise ValueError(f"tuple_size={tuple_size} does not divide the lane length {n}")
    if ref.dtype == "bool" or np_dtype(ref.dtype).kind not in "iufc":
        raise TypeError(f"x: delta coding needs a numeric dtype, got {ref.dtype}")
    return ref, axis, order, tuple_size


def check_segmented_values(x: Any, op: Any) -> tuple[Monoid, list[ArrayRef]]:
    """``segmented_scan``'s operator and values: 1-D host arrays of one shape whose
    dtypes the operator takes."""
    monoid = resolve_op(op)
    values = list(x) if isinstance(x, tuple) else [x]
    refs = [inspect_array(v, "x") for v in values]
    for r in refs:
        if len(r.shape) != 1:
            raise ValueError(f"x must be 1-D for a segmented scan, got shape {r.shape}")
        if r.device != "cpu":
            raise NotImplementedError("x: segmented_scan runs on host arrays for now")
        monoid.check_dtype(r.dtype)
    if any(r.shape != refs[0].shape for r in refs):
        raise ValueError("x: fields of a struct monoid must have one shape")
    return monoid, refs


def _host(value: Any) -> np.ndarray:
    return np.asarray(value.cpu() if hasattr(value, "cpu") else value)


def check_segments(n: int, flags: Any, offsets: Any, keys: Any) -> tuple[str, np.ndarray]:
    """The one segment description given to ``segmented_scan`` for ``n`` elements, as
    ``(kind, host array)`` with kind "flags", "offsets" or "keys"."""
    given = [name for name, v in (("flags", flags), ("offsets", offsets), ("keys", keys)) if v is not None]
    if len(given) != 1:
        raise ValueError("flags, offsets, keys: give exactly one of them"
                         + (f" (got {', '.join(given)})" if given else ""))
    if flags is not None:
        f = _host(flags)
        if f.shape != (n,):
            raise ValueError(f"flags has shape {f.shape}; expected ({n},), one per element of x")
        if f.dtype != bool:
            raise TypeError(f"flags must be a bool array, got dtype {f.dtype}")
        return "flags", f
    if offsets is not None:
        o = _host(offsets)
        if o.ndim != 1 or o.dtype.kind not in "iu":
            raise TypeError("offsets must be a 1-D integer array of segment start offsets")
        if o.size == 0 or o[0] != 0:
            raise ValueError("offsets must start at 0")
        if np.any(np.diff(o) < 0):
            raise ValueError("offsets must be non-decreasing")
        if o[-1] > n:
            raise ValueError(f"offsets go past the end of x: last offset {o[-1]} > length {n}")
        return "offsets", o
    k = _host(keys)
    if k.shape != (n,):
        raise ValueError(f"keys has shape {k.shape}; expected ({n},), one per element of x")
    return "keys", k


def check_compact_args(x: Any, mask: Any) -> tuple[ArrayRef, ArrayRef]:
    """``compact``'s arguments: a bool ``mask`` of x's shape on x's device."""
    rx, rm = inspect_array(x, "x"), inspect_array(mask, "mask")
    if rm.shape != rx.shape:
        raise ValueError(f"mask has shape {rm.shape}; expected x's shape {rx.shape}")
    if rm.dtype != "bool":
        raise TypeError(f"mask must be a bool array, got dtype {rm.dtype}")
    if rm.device != rx.device:
        raise ValueError("mask must be on the same device as x")
    return rx, rm
