"""From a checked scan request to one compiled kernel call.

The request's arrays are viewed (without copying where NumPy can) as
``(outer, rows, width)`` with ``rows = n / s`` and ``width = s * inner``: the
element ``m + j*s`` of a lane sits at row ``j``, column ``m * inner + c``, so a
tuple scan and a scan along a strided axis are both scans along the middle
axis, and the lanes never move (docs/design/cpu_compiled.md).  float16 fields
travel as their uint16 bits; bfloat16 tensors arrive widened to float32 (as on
the NumPy path).  Results go straight into ``out`` when it is a host array that
either is ``x`` itself or does not overlap it; otherwise into a fresh array.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numba.core.errors import NumbaError

from ...._arrays import as_numpy, writable_host, write_host
from ....monoid import accumulator_dtype_name, resolve_op
from . import chunked, kernels, monoids, parallel, simd
from .jit_support import HALF, PLAIN, StaticInt, builtin_tag
from .launch import call
from .logsumexp import logaddexp_lanes

__all__ = ["run_scan", "scan_arrays", "MAX_STATIC_ORDER", "storage_dtype"]

# Orders up to this one compile with their states in registers; a higher order
# runs as several passes of at most this order (orders compose).
MAX_STATIC_ORDER = 8


def storage_dtype(name: str) -> tuple[np.dtype, object]:
    """The NumPy dtype an array of dtype ``name`` is handed to a kernel in, and its format tag."""
    if name == "float16":
        return np.dtype(np.uint16), HALF
    if name == "bfloat16":
        return np.dtype(np.float32), PLAIN
    return np.dtype(name), PLAIN


def _acc_dtype(name: str) -> tuple[np.dtype, object]:
    """The accumulator's dtype in registers and its format (float16: float32 rounded to half)."""
    if name == "float16":
        return np.dtype(np.float32), HALF
    if name == "bfloat16":
        return np.dtype(np.float32), PLAIN
    return np.dtype(name), PLAIN


def _geometry(request) -> tuple[int, int, int, int]:
    """``(outer, n, inner, s)`` of the request's lanes."""
    s = request.config.tuple_size
    if request.axis is None:
        return 1, request.lane_len, 1, s
    shape = request.shape
    outer = math.prod(shape[: request.axis])
    inner = math.prod(shape[request.axis + 1:])
    return outer, request.lane_len, inner, s


def _view3(a: np.ndarray, outer: int, n: int, inner: int, s: int, *, writable: bool = False):
    """``a`` as ``(outer, n / s, s * inner)`` without a copy, or None where that needs one.
    Read-only views of inputs keep to one kernel signature whatever the caller's flags."""
    try:
        v = a.view()
        v.shape = (outer, n, inner)
        v.shape = (outer, n // s, s * inner)
    except (AttributeError, ValueError):
        if writable:
            return None
        v = np.ascontiguousarray(a).reshape(outer, n // s, s * inner)
    return v if writable else _readonly(v)


def _readonly(a: np.ndarray) -> np.ndarray:
    v = a.view()
    v.flags.writeable = False
    return v


def _input_views(request, geometry):
    views, fmts = [], []
    for ref in request.fields:
        x = as_numpy(ref)
        dtype, fmt = storage_dtype("float32" if ref.dtype == "bfloat16" else ref.dtype)
        if fmt is HALF:
            x = x.view(np.uint16)
        views.append(_view3(x, *geometry))
        fmts.append(fmt)
    return views, tuple(fmts)


def _same_view(a: np.ndarray, b: np.ndarray) -> bool:
    return (a.__array_interface__["data"][0] == b.__array_interface__["data"][0]
            and a.strides == b.strides and a.shape == b.shape and a.dtype.itemsize == b.dtype.itemsize)


def _output_views(request, geometry, inputs, may_raise: bool):
    """Where the kernel writes: ``out``'s own memory where possible, else fresh arrays.
    A combine that ``may_raise`` (a user's) writes fresh arrays, copied into ``out``
    once the whole scan has run: nothing is written to ``out`` when it raises."""
    arrays, views, fmts, direct = [], [], [], []
    for i, out_dtype in enumerate(request.out_dtypes):
        dtype, fmt = storage_dtype(out_dtype)
        target = None
        if request.out is not None and out_dtype != "bfloat16" and not may_raise:
            ref = request.out[i]
            candidate = writable_host(ref) if ref.library in ("numpy", "other", "torch") else None
            if candidate is not None:
                if fmt is HALF:
                    candidate = candidate.view(np.uint16)
                view = _view3(candidate, *geometry, writable=True)
                if view is not None and _safe_alias(view, i, inputs):
                    target = (candidate, view)
        if target is None:
            y = np.empty(request.out_shape, dtype)
            target = (y, _view3(y, *geometry, writable=True))
            direct.append(False)
        else:
            direct.append(True)
        arrays.append(target[0])
        views.append(target[1])
        fmts.append(fmt)
    return arrays, views, tuple(fmts), direct


def _safe_alias(view: np.ndarray, index: int, inputs: list) -> bool:
    """An output may be its own field's input exactly, and must not overlap any other."""
    for k, x in enumerate(inputs):
        if np.may_share_memory(view, x) and not (k == index and _same_view(view, x)):
            return False
    return True


_NO_SEEDS: dict = {}


def _no_seed(dtype: np.dtype) -> np.ndarray:
    """A read-only placeholder for the seeds of a scan without init (never read)."""
    seed = _NO_SEEDS.get(dtype)
    if seed is None:
        seed = _NO_SEEDS[dtype] = _readonly(np.zeros((1, 1), dtype))
    return seed


def _seeds(request, geometry, acc):
    """Per-field ``(outer, width)`` seeds in the accumulator dtype (a dummy when no init)."""
    outer, n, inner, s = geometry
    seeds = []
    for k, (dtype, fmt) in enumerate(acc):
        if request.init is None:
            seeds.append(_no_seed(dtype))
            continue
        value = request.init[k]
        value = np.asarray(value.cpu() if hasattr(value, "cpu") else value)
        if fmt is HALF:  # a float16 accumulator starts on the float16 grid
            value = value.astype(np.float16)
        value = np.broadcast_to(value.astype(dtype), request.init_shape)
        value = value.reshape(outer, inner, s).transpose(0, 2, 1).reshape(outer, s * inner)
        seeds.append(_readonly(np.array(value, order="C")))
    return tuple(seeds)


def run_scan(request):
    """The scan of ``request`` in compiled kernels; None when this backend leaves it to NumPy."""
    config = request.config
    nfields = len(request.fields)
    found = monoids.operator_for(config.monoid, nfields, config.reverse)
    if found is None:
        return None
    geometry = _geometry(request)
    acc = [_acc_dtype(name) for name in request.acc_dtypes]
    xs, fin = _input_views(request, geometry)
    # Built-in operators cannot raise in a kernel (integer division is not among
    # them, and float errors give IEEE values); a user's combine may, part-way.
    outs, ys, fout, direct = _output_views(request, geometry, xs, may_raise=found[1])
    job = _Job(found, _identity(request.identity, acc), _seeds(request, geometry, acc),
               (fin, tuple(fmt for _, fmt in acc), fout, tuple(PLAIN for _ in acc)),
               (request.init is not None, config.inclusive, config.reverse), config.order)
    if not _execute(job, xs, ys):
        monoids.mark_failed(config.monoid, nfields, config.reverse)
        return None
    results = []
    for i, (y, is_direct) in enumerate(zip(outs, direct)):
        if request.out_dtypes[i] == "float16":
            y = y.view(np.float16)
        if request.out is not None:
            if not is_direct:
                write_host(request.out[i], y)
            results.append(request.out[i].obj)
        else:
            results.append(y)
    return results


def _identity(values, acc) -> tuple:
    """The identity as scalars of the accumulators' register types (float16: on its grid)."""
    return tuple(dtype.type(np.float16(value) if fmt is HALF else value) for value, (dtype, fmt) in zip(values, acc))


@dataclass(frozen=True)
class _Job:
    """What every pass of one scan shares."""

    operator: tuple  # (op, user): a Tag, or a jitted step and True
    identity: tuple
    seeds: tuple
    fmts: tuple  # (inputs, accumulators, outputs, states)
    flags: tuple  # (seeded, inclusive, reverse)
    order: int


def _execute(job: _Job, xs: list, ys: list) -> bool:
    """Run the kernel(s) of ``job`` on ``(outer, rows, width)`` views; False when a user
    combine does not compile."""
    op, user = job.operator
    outer, rows, width = ys[0].shape
    if not (outer and rows and width):
        return True
    narrow = 1 < width and width * min(job.order, MAX_STATIC_ORDER) <= kernels.NARROW
    # float16 accumulators round to float16 after every combine, in index order, as
    # NumPy's float16 accumulate does: any regrouping (the grouped order-1 kernel, the
    # blocked logaddexp, threads) would round differently, so they run the plain chain.
    half = any(f is HALF for f in job.fmts[1])
    blocked_logaddexp = op is builtin_tag("logaddexp") and not half
    # The grouped order-1 kernel doubles the combines to shorten the carried chain;
    # logaddexp's combine is bound by its throughput, so it runs the plain chain.
    if width == 1 and job.order == 1 and op is not builtin_tag("logaddexp") and not half:
        kernel = kernels.scan_lanes_user if user else kernels.scan_lanes
        if not job.flags[2] and simd.supports(op, xs[0][:, :, 0], ys[0][:, :, 0], job.identity, job.fmts):
            kernel = simd.scan_lanes_vector
    elif width == 1:
        kernel = kernels.scan_lanes_orders_user if user else kernels.scan_lanes_orders
        if chunked.supports(op, xs[0][:, :, 0], ys[0][:, :, 0], job.identity, job.fmts, job.order, job.flags):
            kernel = chunked.scan_lanes_orders_chunked
    elif narrow:
        kernel = kernels.scan_narrow_user if user else kernels.scan_narrow
    else:
        kernel = kernels.scan_rows_user if user else kernels.scan_rows
    if width == 1:
        step = -1 if job.flags[2] else 1
        xs = tuple(x[:, ::step, 0] for x in xs)
        ys = tuple(y[:, ::step, 0] for y in ys)
    else:
        xs, ys = tuple(xs), tuple(ys)
    fmts, remaining = job.fmts, job.order
    if width == 1 and parallel.worth_it(rows, outer, remaining) and op is not builtin_tag("logaddexp") and not half:
        seed = tuple(s[0, 0] for s in job.seeds) if job.flags[0] else job.identity
        parallel.scan_lane_threaded(xs, ys, op, user, fmts, job.identity, seed, job.flags[0], job.flags[1])
        return True
    if width == 1 and remaining == 1 and blocked_logaddexp:
        call(logaddexp_lanes, xs, ys, fmts, job.seeds, job.flags, static=(fmts,))
        return True
    try:
        while remaining:
            order = min(remaining, MAX_STATIC_ORDER)
            extra = (StaticInt(width),) if narrow else ()
            static = (op, fmts, tuple([type(v) for v in job.identity]), order, extra)
            call(kernel, xs, ys, op, fmts, job.identity, job.seeds, job.flags, StaticInt(order), *extra,
                 static=static)
            remaining -= order
            if remaining:  # the next passes read the output: orders compose
                xs, fmts = ys, (fmts[2],) + fmts[1:]
    except NumbaError:
        if not user:
            raise
        return False
    return True


def scan_arrays(x: np.ndarray, op: str, *, order: int = 1, tuple_size: int = 1, axis: int | None = None,
                inclusive: bool = True, reverse: bool = False) -> np.ndarray:
    """A built-in scan of one host array (no init), e.g. for delta decoding."""
    monoid = resolve_op(op)
    name = x.dtype.name
    geometry = ((1, x.size, 1, tuple_size) if axis is None else
                (math.prod(x.shape[:axis]), x.shape[axis], math.prod(x.shape[axis + 1:]), tuple_size))
    acc = [_acc_dtype(accumulator_dtype_name(name))]
    _, fin = storage_dtype(name)
    y = np.empty(x.shape if axis is not None else (x.size,), x.dtype)
    xv = x.view(np.uint16) if fin is HALF else x
    yv = y.view(np.uint16) if fin is HALF else y
    ident = _identity(monoid.identity_values([np.dtype(accumulator_dtype_name(name))]), acc)
    seeds = (_no_seed(acc[0][0]),)
    job = _Job(monoids.operator_for(monoid, 1, reverse), ident, seeds,
               ((fin,), (acc[0][1],), (fin,), (PLAIN,)), (False, inclusive, reverse), order)
    _execute(job, [_view3(xv, *geometry)], [_view3(yv, *geometry, writable=True)])
    return y
