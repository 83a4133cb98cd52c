"""Argument checking: the scan's arguments, and the checks every primitive shares.

Where does an argument get checked?  Before any work, here or in the
``checks`` module of its primitive's folder (:mod:`prefixscan.primitives`).
:func:`make_config` checks what a scan computes (operator, axis, order, tuple
size, dtype, backend, algorithm, strategy, determinism); :func:`build_request`
checks the arrays of one call (``x``, ``init``, ``out``) against it and returns
the :class:`~prefixscan._request.ScanRequest` a backend runs.  The other
primitives check their own arguments (``check_compact_args``,
``check_delta_args``, ...) with the shared ``check_*`` helpers below.  So a bad
argument raises an error that names it, before any backend runs and before
anything is written to ``out``.

The request types live in :mod:`prefixscan._request` so that backends can use
them without importing the checks; the checks of segment descriptions
(``flags``, ``offsets``, ``keys``) live in :mod:`prefixscan._segments` and those of
``out`` in :mod:`prefixscan._out`; both are re-exported here.
"""

from __future__ import annotations

import math
import operator
from typing import Any

import numpy as np

from ._arrays import ArrayRef, as_torch, inspect_array, refuse_unsupported
from ._axes import normalize_axis
from ._monoid_probe import probe
from ._out import check_out, check_out_dtype, check_out_writable, numpy_out_accumulator
from ._request import ScanConfig, ScanRequest, np_dtype
from ._segments import check_keys, check_offsets, check_segments
from .backends.triton.planning.registry import DETERMINISTIC_STRATEGIES, STRATEGY_NAMES
from .monoid import Monoid, accumulator_dtype_name, resolve_op

__all__ = ["ALGORITHMS", "STRATEGIES", "make_config", "build_request", "check_init", "check_init_shape", "check_axis",
           "check_axis_ndim", "check_segments", "check_offsets", "check_keys", "check_init_value", "check_flag",
           "check_monoid", "check_order", "check_tuple_size", "MAX_ORDER", "MAX_TUPLE_SIZE", "check_out_dtype",
           "check_out_writable", "numpy_out_accumulator"]

ALGORITHMS = ("auto", "serial", "kogge_stone", "sklansky", "brent_kung", "reduce_then_scan")
# GPU meta-strategies (backends/triton/planning/registry.py); "auto" asks the tuner (decoupled
# look-back unless a tuned table says otherwise).
STRATEGIES = ("auto",) + STRATEGY_NAMES

#: The highest ``order`` a scan or delta coding takes.  Every backend's work grows
#: with the order: the NumPy path repeats the scan q times, the compiled CPU kernels
#: run ceil(q / 8) passes, the GPU's look-back keeps status per tile and per order
#: (memory proportional to q) and its other strategies launch once per order.  An
#: order-q sum grows like n^q / q!, past float64's range for q in the dozens.
MAX_ORDER = 64
#: The highest ``tuple_size``: the longest lane an array of 16-byte elements can
#: have.  A tuple size must divide the lane length, so only empty lanes meet it.
MAX_TUPLE_SIZE = np.iinfo(np.intp).max // 16


def _as_int(value: Any, name: str) -> int:
    if isinstance(value, bool):
        raise TypeError(f"{name} must be an integer, got bool")
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(f"{name} must be an integer, got {type(value).__name__}") from None


def check_flag(value: Any, name: str) -> bool:
    """A True/False argument (``exclusive``, ``reverse``, ...), refused otherwise."""
    return _as_bool(value, name)


def _as_bool(value: Any, name: str) -> bool:
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    raise TypeError(f"{name} must be True or False, got {value!r}")


def check_order(order: Any) -> int:
    """``order``, an integer in ``[1, MAX_ORDER]``."""
    order = _as_int(order, "order")
    if order < 1:
        raise ValueError(f"order must be >= 1, got {order}")
    if order > MAX_ORDER:
        raise ValueError(f"order={order} is above the limit of {MAX_ORDER}: every backend's work grows with "
                         "the order (q passes, or state per order); apply the scan in steps of at most "
                         f"{MAX_ORDER} orders if you need more")
    return order


def check_tuple_size(tuple_size: Any) -> int:
    """``tuple_size``, an integer in ``[1, MAX_TUPLE_SIZE]``."""
    tuple_size = _as_int(tuple_size, "tuple_size")
    if tuple_size < 1:
        raise ValueError(f"tuple_size must be >= 1, got {tuple_size}")
    if tuple_size > MAX_TUPLE_SIZE:
        raise ValueError(f"tuple_size={tuple_size} is longer than any array's axis can be "
                         f"(at most {MAX_TUPLE_SIZE})")
    return tuple_size


def make_config(op, *, axis, inclusive, reverse, order, tuple_size, dtype, backend, algorithm,
                deterministic=False, strategy=None) -> ScanConfig:
    """Check the data-independent arguments of a scan (see :func:`prefixscan.scan`
    for their meaning) and return them normalized: ``op`` resolved to a
    :class:`~prefixscan.Monoid`, dtypes as NumPy names, None as "auto"."""
    monoid = resolve_op(op)
    if axis is not None:
        axis = _as_int(axis, "axis")
    order = check_order(order)
    tuple_size = check_tuple_size(tuple_size)
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
        found = np.dtype(dtype)
    except TypeError:
        raise TypeError(f"dtype: not a dtype: {dtype!r}") from None
    if found.kind not in "biufc":
        shown = repr(dtype) if isinstance(dtype, str) else str(found)
        raise TypeError(f"dtype: {shown} is not a numeric dtype; a scan accumulates in a bool, "
                        "integer, float or complex dtype (or bfloat16)")
    return found.name


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
    monoid.check_fields(len(values), struct)
    fields = [inspect_array(v, "x" if not struct else f"x[{i}]") for i, v in enumerate(values)]
    shape = fields[0].shape
    for i, f in enumerate(fields[1:], 1):
        if f.shape != shape:
            raise ValueError(f"x: fields of a struct monoid must have one shape; x[0] is {shape}, x[{i}] is {f.shape}")
    devices = {f.device for f in fields}
    if len(devices) > 1:
        raise ValueError("x: all fields must be on one device")
    if len({f.library == "dask" for f in fields}) > 1:
        raise TypeError("x: some fields are dask arrays and some are not; make them all dask arrays "
                        "(dask.array.asarray) or all in-memory arrays")
    device = devices.pop()

    for f in fields:
        monoid.check_dtype(config.dtype or f.dtype, "x" if config.dtype is None else "dtype")
    acc = tuple(accumulator_dtype_name(f.dtype, config.dtype) for f in fields)
    out_dtypes = tuple(config.dtype or f.dtype for f in fields)

    if config.axis is None:
        norm_axis = None
        lane_len = int(math.prod(shape))  # the shape's ints (NumPy's prod costs microseconds)
        out_shape = (lane_len,)
    else:
        norm_axis = normalize_axis(config.axis, len(shape))
        lane_len = shape[norm_axis]
        out_shape = shape
    s = config.tuple_size
    if lane_len % s:
        raise ValueError(f"tuple_size={s} does not divide the lane length {lane_len}")

    identity = check_monoid(monoid, acc)
    request = ScanRequest(config, fields, struct, device, shape, norm_axis, lane_len, acc, out_dtypes,
                          out_shape, None, (), identity=identity)
    request.init_shape = request.lanes_shape + ((s,) if s > 1 else ())
    if init is not None:
        request.init = check_init(init, acc, struct, request.init_shape)
    if out is not None:
        refs = check_out(out, request)
        if any(ref.dtype != d for ref, d in zip(refs, request.out_dtypes)):
            request.cast_out = refs  # the result goes to a fresh array, then cast into out
        else:
            request.out = refs
    return request


def check_init(init: Any, acc: tuple, struct: bool, target: tuple) -> tuple:
    """``init`` checked against the accumulator dtypes ``acc`` and the lane shape
    ``target``: one checked value per field (:func:`check_init_value`)."""
    if struct and not isinstance(init, tuple):
        raise TypeError(f"init: expected a tuple of {len(acc)} seeds for a struct monoid (one per field of x), "
                        f"got {type(init).__name__} {_shown(init)}")
    if struct and len(init) != len(acc):
        raise ValueError(f"init: expected a tuple of {len(acc)} seeds for a struct monoid (one per field of x), "
                         f"got a tuple of {len(init)}")
    values = list(init) if struct else [init]
    names = ["init" if not struct else f"init[{i}]" for i in range(len(values))]
    for v, name in zip(values, names):
        refuse_unsupported(v, name)
        check_init_shape(v, target)
    return tuple(check_init_value(v, a, name) for v, a, name in zip(values, acc, names))


def _shown(value: Any) -> str:
    """A short description of a value for messages: a number itself, an array by its shape."""
    shape = getattr(value, "shape", None)
    if shape is not None and shape != ():
        return f"of shape {tuple(shape)}"
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


# ---------------------------------------------------------------------------
# A monoid's identity and combine, once per accumulator dtypes.

def check_monoid(monoid: Monoid, acc: tuple) -> tuple:
    """The identity of ``monoid`` for the accumulator dtypes ``acc`` (one name per
    field), as one 0-d host array per field, after checking it: its values as
    ``init``'s (:func:`check_init_value`: kind and exact representability), then
    ``combine`` on NumPy arrays of those dtypes (:func:`prefixscan._monoid_probe.probe`:
    arrays used as truth values or given to :mod:`math`, the number of fields
    returned, the identity law).  Done once per monoid and ``acc``, on the host;
    later calls return the checked identity."""
    acc = tuple(acc)
    found = monoid.__dict__.setdefault("_checked", {}).get(acc)
    if found is not None and found[0] is monoid.combine and found[1] is monoid.identity:
        return found[2]
    combine, given = monoid.combine, monoid.identity
    identity = tuple(_identity_value(monoid, v, a, i, len(acc))
                     for i, (v, a) in enumerate(zip(_identity_values(monoid, acc), acc)))
    probe(monoid, identity)
    monoid._checked[acc] = (combine, given, identity)
    return identity


def _identity_values(monoid: Monoid, acc: tuple) -> tuple:
    try:
        return monoid.identity_values([np_dtype(d) for d in acc])
    except Exception as exc:  # noqa: BLE001 - a callable identity(dtype) that fails
        if isinstance(exc, ValueError) and str(exc).startswith("op:"):  # identity_values' own: the arity
            raise
        raise ValueError(f"op: the identity of monoid {monoid.name!r}, a callable, raised {type(exc).__name__} "
                         f"for {', '.join(acc)}: {exc}") from exc


def _identity_value(monoid: Monoid, value: Any, acc: str, field: int, nfields: int) -> np.ndarray:
    """One field's identity checked as :func:`check_init_value` checks ``init``."""
    where = f"op: the identity of monoid {monoid.name!r}" + (f" (field {field})" if nfields > 1 else "")
    if not (isinstance(value, (bool, int, float, complex, np.generic))
            or isinstance(value, np.ndarray) and value.ndim == 0):
        raise TypeError(f"{where} must be a number (a tuple of numbers, one per field, for a struct monoid, or "
                        f"a callable identity(dtype) returning them), got {type(value).__name__} {_shown(value)}")
    try:
        return check_init_value(value, acc, where)
    except (TypeError, ValueError) as exc:
        raise type(exc)(f"{exc}; an identity is a value of the accumulator dtype: give the monoid one that "
                        f"{acc} holds, or a callable identity(dtype) returning one per dtype") from None


# ---------------------------------------------------------------------------
# init's values against the accumulator dtype.

_KIND_NAMES = {"b": "bool", "i": "integer", "u": "unsigned integer", "f": "float", "c": "complex"}


def check_init_value(value: Any, acc: str, argument: str = "init") -> Any:
    """``value`` checked against the accumulator dtype ``acc`` (scan's rule for
    ``init``): an integer accumulator takes numbers it holds exactly (integers in
    its range, integral floats included), a bool one True/False only, a float one
    any real number (rounded), a complex one any number.  Returns a NumPy array of
    ``acc`` for host values, the tensor itself for torch and device arrays."""
    refuse_unsupported(value, argument)
    kind = np_dtype(acc).kind
    if isinstance(value, (bool, int, float, complex, str, bytes, np.generic)) and np.ndim(value) == 0:
        _check_scalar(value, acc, kind, argument)
        with np.errstate(over="ignore"):  # a float init beyond a float32 range rounds to inf
            return np.asarray(value, dtype=np_dtype(acc))
    if type(value).__module__.split(".")[0] == "torch" and hasattr(value, "is_cuda"):
        _check_tensor(value, acc, kind, argument)
        return value
    ref = inspect_array(value, argument)
    if ref.device != "cpu":
        tensor = as_torch(ref)  # CuPy, JAX, ... on a GPU: checked through a zero-copy torch view
        _check_tensor(tensor, acc, kind, argument)
        return tensor
    host = np.asarray(ref.obj)
    _check_host_array(host, acc, kind, argument)
    with np.errstate(over="ignore"):
        return host.astype(np_dtype(acc))


def _refuse_kind(value_kind: str, acc: str, kind: str, argument: str, shown: Any) -> None:
    """TypeError when values of NumPy kind ``value_kind`` never fit an accumulator of ``kind``."""
    if value_kind not in "biufc":
        raise TypeError(f"{argument}: expected a number or numeric array, got {shown}")
    if kind == "b" and value_kind != "b":
        raise TypeError(f"{argument}: the accumulator dtype is bool; it takes True or False "
                        f"(or a bool array), got {shown}")
    if value_kind == "c" and kind != "c":
        raise TypeError(f"{argument}: a complex value does not fit the {_KIND_NAMES[kind]} accumulator "
                        f"dtype {acc}; got {shown}")


def _check_scalar(value: Any, acc: str, kind: str, argument: str) -> None:
    if isinstance(value, (str, bytes)) or isinstance(value, np.generic) and value.dtype.kind not in "biufc":
        raise TypeError(f"{argument}: expected a number, got {type(value).__name__} {value!r}")
    value_kind = "b" if isinstance(value, (bool, np.bool_)) else np.asarray(value).dtype.kind
    if isinstance(value, int) and not isinstance(value, bool):
        value_kind = "i"  # a Python int too large for int64 is still an integer
    _refuse_kind(value_kind, acc, kind, argument, repr(value))
    if kind in "iu":
        if value_kind == "f" and not (math.isfinite(value) and float(value).is_integer()):
            raise ValueError(f"{argument}: {value!r} is not a finite integer, so the integer accumulator "
                             f"dtype {acc} cannot hold it exactly; round it, or pass a float dtype= to accumulate in")
        info = np.iinfo(acc)
        if not info.min <= int(value) <= info.max:
            raise ValueError(f"{argument}: {value!r} is out of the range of the accumulator dtype {acc} "
                             f"[{info.min}, {info.max}]; pass a wider dtype= to accumulate in")
    elif kind in "fc" and value_kind in "iu":
        try:
            float(value)
        except OverflowError:
            raise ValueError(f"{argument}: {value!r} is out of the range of the accumulator dtype {acc}") from None


def _check_host_array(arr: np.ndarray, acc: str, kind: str, argument: str) -> None:
    _refuse_kind(arr.dtype.kind, acc, kind, argument, f"dtype {arr.dtype}")
    if kind not in "iu" or arr.size == 0 or np.can_cast(arr.dtype, acc, "safe"):
        return
    info = np.iinfo(acc)
    if arr.dtype.kind == "f":
        bad = ~np.isfinite(arr) | (arr != np.trunc(arr))
        if bad.any():
            raise ValueError(f"{argument}: {arr[bad].flat[0]!r} is not a finite integer, so the integer accumulator "
                             f"dtype {acc} cannot hold it exactly; round it, or pass a float dtype=")
        # Powers of two, exact in every float type: the range is [min, max + 1).
        out_of_range = (arr < float(info.min)) | (arr >= float(info.max + 1))
    elif arr.dtype.kind == "b":
        return
    else:
        out_of_range = (arr < info.min) | (arr > info.max)
    if out_of_range.any():
        raise ValueError(f"{argument}: {arr[out_of_range].flat[0]!r} is out of the range of the accumulator "
                         f"dtype {acc} [{info.min}, {info.max}]; pass a wider dtype= to accumulate in")


def _check_tensor(t: Any, acc: str, kind: str, argument: str) -> None:
    """The same checks as for host arrays, with torch operations on t's device."""
    import torch

    name = str(t.dtype).replace("torch.", "")
    value_kind = "f" if name == "bfloat16" else ("b" if name == "bool" else np_dtype(name).kind)
    _refuse_kind(value_kind, acc, kind, argument, f"dtype {name}")
    if kind not in "iu" or t.numel() == 0 or value_kind == "b" or (
            name != "bfloat16" and np.can_cast(np_dtype(name), acc, "safe")):
        return
    info = np.iinfo(acc)
    if value_kind == "f":
        if not bool(torch.all(torch.isfinite(t) & (t == torch.trunc(t)))):
            raise ValueError(f"{argument}: holds values that are not integers, so the integer accumulator "
                             f"dtype {acc} cannot hold them exactly; round them, or pass a float dtype=")
        low, high = float(info.min), float(info.max + 1)
        bad = bool(torch.any((t < low) | (t >= high)))
    elif name in ("uint16", "uint32", "uint64"):  # torch has no comparisons for these: check on the host
        _check_host_array(t.detach().cpu().numpy(), acc, kind, argument)
        return
    else:
        bad = int(t.min()) < info.min or int(t.max()) > info.max
    if bad:
        raise ValueError(f"{argument}: holds values out of the range of the accumulator dtype {acc} "
                         f"[{info.min}, {info.max}]; pass a wider dtype= to accumulate in")


def check_init_shape(value: Any, target: tuple) -> tuple:
    """``value``'s shape, which must broadcast to the lane shape ``target``."""
    shape = tuple(getattr(value, "shape", np.shape(value)))
    if shape == target or shape == ():  # the common cases, without NumPy's broadcasting rules
        return shape
    try:
        if np.broadcast_shapes(shape, target) != target:
            raise ValueError
    except ValueError:
        raise ValueError(f"init: shape {shape} does not broadcast to the lane shape {target}") from None
    return shape


# ---------------------------------------------------------------------------
# Shared by the primitives' checks.

def check_axis(ref: ArrayRef, axis: int, argument: str = "x") -> int:
    """``axis`` made non-negative for an array of at least one dimension."""
    return check_axis_ndim(len(ref.shape), axis, argument)


def check_axis_ndim(ndim: int, axis: int, argument: str = "x") -> int:
    """:func:`check_axis` for an array of ``ndim`` dimensions (callers with no
    :class:`ArrayRef` at hand: building one costs more than the check)."""
    return normalize_axis(_as_int(axis, "axis"), ndim, argument)
