"""Argument normalization: every check happens here, before any backend runs,
so a bad argument raises an error that names it and nothing is written to ``out``.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ._arrays import ArrayRef, inspect_array
from .backends.triton.registry import DETERMINISTIC_STRATEGIES, STRATEGY_NAMES
from .monoid import Monoid, _dtype_kind, accumulator_dtype_name, resolve_op

ALGORITHMS = ("auto", "serial", "kogge_stone", "sklansky", "brent_kung", "reduce_then_scan")
# GPU meta-strategies (backends/triton/registry.py); "auto" asks the tuner (decoupled
# look-back unless a tuned table says otherwise).
STRATEGIES = ("auto",) + STRATEGY_NAMES


@dataclass(frozen=True)
class ScanConfig:
    """What a scan computes, independent of the data (the reusable part)."""

    monoid: Monoid
    axis: int | None
    inclusive: bool
    reverse: bool
    order: int
    tuple_size: int
    dtype: str | None
    backend: str | None
    algorithm: str
    deterministic: bool = False
    strategy: str = "auto"


@dataclass
class ScanRequest:
    """One scan, fully checked: what a backend receives."""

    config: ScanConfig
    fields: list[ArrayRef]
    struct: bool  # x was a tuple of arrays
    device: str
    shape: tuple  # input shape
    axis: int | None  # normalized non-negative axis, None for flattened
    lane_len: int
    acc_dtypes: tuple[str, ...]
    out_dtypes: tuple[str, ...]
    out_shape: tuple
    init: tuple | None  # one value per field (scalar or array), None when absent
    init_shape: tuple  # shape init values broadcast to: lanes (+ (tuple_size,))
    out: list[ArrayRef] | None = None
    identity: tuple = field(default=())

    def rebind(self, x, out) -> "ScanRequest":
        """The same checked request for other tensors of the same signature."""
        fields = [ArrayRef(x, f.library, f.device, f.shape, f.dtype) for f in self.fields]
        outs = None if self.out is None else [ArrayRef(out, o.library, o.device, o.shape, o.dtype)
                                              for o in self.out]
        new = object.__new__(ScanRequest)  # a shallow copy, without copy.copy's overhead
        new.__dict__.update(self.__dict__)
        new.fields, new.out = fields, outs
        return new

    @property
    def lanes_shape(self) -> tuple:
        if self.axis is None:
            return ()
        return self.shape[: self.axis] + self.shape[self.axis + 1:]


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

    identity = tuple(np.asarray(v, dtype=_np_dtype(d)) for v, d in
                     zip(monoid.identity_values([_np_dtype(d) for d in acc]), acc))
    request = ScanRequest(config, fields, struct, device, shape, norm_axis, lane_len, acc, out_dtypes,
                          out_shape, None, (), identity=identity)
    request.init_shape = request.lanes_shape + ((s,) if s > 1 else ())
    if init is not None:
        request.init = _check_init(init, len(fields), struct, request.init_shape)
    if out is not None:
        request.out = _check_out(out, request)
    return request


def _np_dtype(name: str) -> np.dtype:
    return np.dtype("float32" if name == "bfloat16" else name)


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


def is_integer_dtype(name: str) -> bool:
    return _dtype_kind(name) in "iu"
