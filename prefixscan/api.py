"""Public API: ``scan`` and the functions built on it.

Two levels, as in cuda.compute: :func:`make_scan` returns a reusable
:class:`Scan` (operator, axis, direction, order, tuple size, dtype and backend
checked once); :func:`scan` is the one-shot call.  Every call goes
public API -> argument normalization (:mod:`prefixscan._normalize`) -> backend
dispatch (:mod:`prefixscan.dispatch`) -> backend -> kernels.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from . import dispatch
from ._arrays import from_numpy, from_torch, inspect_array
from ._normalize import ScanRequest, build_request, check_init_shape, make_config
from .monoid import Monoid, resolve_op, where

__all__ = [
    "Scan", "make_scan", "scan", "cumsum", "cumprod", "cummax", "cummin",
    "linear_recurrence", "delta_encode", "delta_decode", "segmented_scan", "compact",
    "AFFINE",
]


class Scan:
    """A configured scan, reusable across calls: ``make_scan(op, ...)(x)``."""

    def __init__(self, op="add", *, axis=None, inclusive=True, reverse=False, order=1,
                 tuple_size=1, dtype=None, backend=None, algorithm=None, deterministic=False, strategy=None):
        self.config = make_config(op, axis=axis, inclusive=inclusive, reverse=reverse, order=order,
                                  tuple_size=tuple_size, dtype=dtype, backend=backend,
                                  algorithm=algorithm, deterministic=deterministic, strategy=strategy)
        self._plans: dict = {}

    def plan(self, x, *, init=None, out=None) -> tuple[ScanRequest, Any]:
        """Check the arguments and pick the backend, without running anything."""
        request = build_request(self.config, x, init, out)
        backend = dispatch.select_backend(self.config.backend, request.device)
        if self.config.algorithm != "auto" and backend.__name__.endswith("triton"):
            raise ValueError(f"algorithm={self.config.algorithm!r} selects a CPU scan network; "
                             "it needs backend='cpu'")
        if self.config.strategy != "auto" and not backend.__name__.endswith("triton"):
            raise ValueError(f"strategy={self.config.strategy!r} selects a GPU strategy; "
                             "it needs the triton backend (a device array or backend='triton')")
        return request, backend

    def __call__(self, x, *, init=None, out=None):
        # Repeated calls on tensors of one signature reuse the checked plan:
        # small scans are dominated by host overhead, not by the kernel.
        key = _signature(x, out) if init is None else None
        cached = self._plans.get(key) if key is not None else None
        if cached is not None:
            request, backend, fast = cached
            if fast is not None:  # a single-launch GPU scan: straight to the kernel
                if fast.expired():  # the tile choice may have changed since: plan again
                    del self._plans[key]
                    return self(x, init=init, out=out)
                result = fast(x, out)
                if result is not None:
                    return result
            request = request.rebind(x, out)
            results = backend.run_scan(request)
        else:
            request, backend = self.plan(x, init=init, out=out)
            fast = None
            if key is not None and hasattr(backend, "run_scan_planned") and not request.struct:
                results, fast = backend.run_scan_planned(request)
            else:
                results = backend.run_scan(request)
            if key is not None:
                if len(self._plans) > 64:
                    self._plans.clear()
                self._plans[key] = (request.rebind(None, None), backend, fast)
        if request.out is None and request.fields[0].library != backend.NATIVE_LIBRARY:
            convert = from_numpy if backend.NATIVE_LIBRARY == "numpy" else from_torch
            results = [convert(r, like, d) for r, like, d in zip(results, request.fields, request.out_dtypes)]
        return tuple(results) if request.struct else results[0]

    def __repr__(self) -> str:
        c = self.config
        return (f"Scan(op={c.monoid.name!r}, axis={c.axis}, inclusive={c.inclusive}, reverse={c.reverse}, "
                f"order={c.order}, tuple_size={c.tuple_size}, dtype={c.dtype}, backend={c.backend})")


def _signature(x, out):
    """Everything the checks depend on, for NumPy arrays and torch tensors; None
    for other inputs (they take the full checks every call)."""
    if type(x) is np.ndarray:
        if out is None:
            return (np.ndarray, x.shape, x.dtype, None)
        if type(out) is np.ndarray:
            return (np.ndarray, x.shape, x.dtype, (out.shape, out.dtype, out.flags.writeable))
        return None
    if type(x).__module__.split(".")[0] != "torch" or not hasattr(x, "is_cuda"):
        return None
    if out is None:
        out_sig = None
    elif type(out) is type(x):
        out_sig = (tuple(out.shape), out.dtype, out.device)
    else:
        return None
    return (type(x), tuple(x.shape), x.dtype, x.device, out_sig)


_SCANS: dict = {}


def _cached_scan(op, axis, inclusive, reverse, order, tuple_size, dtype, backend, algorithm,
                 deterministic, strategy=None) -> "Scan":
    """One Scan object per hashable argument set, so one-shot calls share plans."""
    # Types are part of the key: axis=1.0 must fail its check, not hit axis=1's entry.
    key = (op, axis, type(axis), inclusive, type(inclusive), reverse, type(reverse), order, type(order),
           tuple_size, type(tuple_size), dtype, type(dtype), backend, algorithm, deterministic,
           type(deterministic), strategy)
    try:
        found = _SCANS.get(key)
    except TypeError:  # unhashable argument: no caching
        return Scan(op, axis=axis, inclusive=inclusive, reverse=reverse, order=order, tuple_size=tuple_size,
                    dtype=dtype, backend=backend, algorithm=algorithm, deterministic=deterministic,
                    strategy=strategy)
    if found is None:
        if len(_SCANS) > 256:
            _SCANS.clear()
        found = _SCANS[key] = Scan(op, axis=axis, inclusive=inclusive, reverse=reverse, order=order,
                                   tuple_size=tuple_size, dtype=dtype, backend=backend, algorithm=algorithm,
                                   deterministic=deterministic, strategy=strategy)
    return found


def make_scan(op="add", *, axis=None, inclusive=True, reverse=False, order=1, tuple_size=1,
              dtype=None, backend=None, algorithm=None, deterministic=False, strategy=None) -> Scan:
    """A reusable scan object; call it as ``s(x, init=None, out=None)``."""
    return Scan(op, axis=axis, inclusive=inclusive, reverse=reverse, order=order,
                tuple_size=tuple_size, dtype=dtype, backend=backend, algorithm=algorithm,
                deterministic=deterministic, strategy=strategy)


def scan(x, op="add", *, axis=None, inclusive=True, reverse=False, init=None, order=1,
         tuple_size=1, dtype=None, out=None, backend=None, algorithm=None, deterministic=False,
         strategy=None):
    """Prefix scan of ``x`` with the associative operator ``op``.

    See ``docs/semantics.md`` for the exact meaning of every argument.  Returns
    an array of the caller's type (a tuple of arrays for struct monoids).
    ``deterministic=True`` makes GPU results bitwise reproducible from run to run
    (a chained hand-off between tiles instead of the decoupled look-back); CPU
    results always are.  ``strategy`` picks the GPU meta-strategy (None: the tuned
    choice, decoupled look-back by default; "chained", "reduce_then_scan",
    "scan_then_propagate", "persistent": see ``backends/triton/strategies.py``).
    """
    return _cached_scan(op, axis, inclusive, reverse, order, tuple_size, dtype, backend, algorithm,
                        deterministic, strategy)(x, init=init, out=out)


# ---------------------------------------------------------------------------
# NumPy drop-ins.

def _numpy_result_dtype(x, dtype, probe) -> Any:
    """NumPy's accumulation dtype for ``probe`` (np.cumsum, ...) on x's dtype."""
    if dtype is not None:
        return dtype
    # A NumPy dtype object is a cheap cache key (its .name is a slow property).
    dtype_key = x.dtype if type(x) is np.ndarray else inspect_array(x, "a").dtype
    if isinstance(dtype_key, str) and dtype_key == "bfloat16":
        return dtype_key
    return _numpy_rule(dtype_key, probe.__name__)


@functools.lru_cache(maxsize=None)
def _numpy_rule(dtype, probe: str) -> str:
    return getattr(np, probe)(np.zeros(0, dtype=dtype)).dtype.name


def cumsum(a, axis=None, dtype=None, out=None, *, exclusive=False, reverse=False, backend=None):
    """``numpy.cumsum`` with NumPy's signature and dtype promotion, plus ``exclusive`` and ``reverse``."""
    return scan(a, "add", axis=axis, inclusive=not exclusive, reverse=reverse,
                dtype=_numpy_result_dtype(a, dtype, np.cumsum), out=out, backend=backend)


def cumprod(a, axis=None, dtype=None, out=None, *, exclusive=False, reverse=False, backend=None):
    """``numpy.cumprod`` with NumPy's signature and dtype promotion, plus ``exclusive`` and ``reverse``."""
    return scan(a, "mul", axis=axis, inclusive=not exclusive, reverse=reverse,
                dtype=_numpy_result_dtype(a, dtype, np.cumprod), out=out, backend=backend)


def cummax(a, axis=None, dtype=None, out=None, *, exclusive=False, reverse=False, backend=None):
    """Running maximum (``np.maximum.accumulate``); keeps the dtype.  NaN propagates."""
    return scan(a, "max", axis=axis, inclusive=not exclusive, reverse=reverse, dtype=dtype, out=out,
                backend=backend)


def cummin(a, axis=None, dtype=None, out=None, *, exclusive=False, reverse=False, backend=None):
    """Running minimum (``np.minimum.accumulate``); keeps the dtype.  NaN propagates."""
    return scan(a, "min", axis=axis, inclusive=not exclusive, reverse=reverse, dtype=dtype, out=out,
                backend=backend)


# ---------------------------------------------------------------------------
# Linear recurrences through the affine monoid.

def _affine(f, g):
    """Apply f = (a1, b1) first, then g = (a2, b2): h -> a2 (a1 h + b1) + b2."""
    a1, b1 = f
    a2, b2 = g
    return a1 * a2, a2 * b1 + b2


def _affine_backward(f, g):
    """The same composition in the other order: g first, then f (for reverse recurrences)."""
    a1, b1 = f
    a2, b2 = g
    return a1 * a2, a1 * b2 + b1


AFFINE = Monoid(_affine, (1, 0), name="affine")
_AFFINE_BACKWARD = Monoid(_affine_backward, (1, 0), name="affine_backward")


def linear_recurrence(a, b, *, init=None, axis=-1, reverse=False):
    """``h[t] = a[t] * h[t-1] + b[t]`` along ``axis`` with ``h[-1] = init`` (0 when None).

    ``reverse=True`` runs from the end: ``h[t] = a[t] * h[t+1] + b[t]``, ``h[n] = init``.
    ``init`` is a scalar or an array of the lane shape (``a``'s shape without ``axis``).
    """
    ra, rb = inspect_array(a, "a"), inspect_array(b, "b")
    if ra.shape != rb.shape:
        raise ValueError(f"b has shape {rb.shape} but a has shape {ra.shape}")
    if ra.dtype != rb.dtype:
        raise TypeError(f"b has dtype {rb.dtype} but a has dtype {ra.dtype}")
    if len(ra.shape) == 0:
        raise ValueError("a must have at least one dimension")
    widen = False
    if init is not None:  # checked before any work
        ndim = len(ra.shape)
        if not -ndim <= axis < ndim:
            raise ValueError(f"axis {axis} is out of range for an array of {ndim} dimension(s)")
        widen = bool(check_init_shape(init, ra.shape[: axis % ndim] + ra.shape[axis % ndim + 1:]))
    monoid = _AFFINE_BACKWARD if reverse else AFFINE
    coef, offset = scan((a, b), monoid, axis=axis, reverse=reverse)
    if init is None:
        return offset
    if widen:
        init = init.unsqueeze(axis % ndim) if hasattr(init, "unsqueeze") else np.expand_dims(init, axis % ndim)
    return coef * init + offset


# ---------------------------------------------------------------------------
# Delta coding (q-th order, s-strided differences) and its inverse.

def _moved(x, axis):
    ref = inspect_array(x, "x")
    if len(ref.shape) == 0:
        raise ValueError("x must have at least one dimension")
    ndim = len(ref.shape)
    if not -ndim <= axis < ndim:
        raise ValueError(f"axis {axis} is out of range for an array of {ndim} dimension(s)")
    return ref, axis % ndim


def _check_delta_args(ref, axis, order, tuple_size):
    from ._normalize import _as_int

    order = _as_int(order, "order")
    tuple_size = _as_int(tuple_size, "tuple_size")
    if order < 1:
        raise ValueError(f"order must be >= 1, got {order}")
    if tuple_size < 1:
        raise ValueError(f"tuple_size must be >= 1, got {tuple_size}")
    n = ref.shape[axis]
    if n % tuple_size:
        raise ValueError(f"tuple_size={tuple_size} does not divide the lane length {n}")
    if ref.dtype == "bool" or np.dtype("float32" if ref.dtype == "bfloat16" else ref.dtype).kind not in "iufc":
        raise TypeError(f"x: delta coding needs a numeric dtype, got {ref.dtype}")
    return order, tuple_size


def delta_encode(x, order=1, tuple_size=1, *, axis=-1, backend=None):
    """q-th order, s-strided differences along ``axis``: q times ``d[j] -= d[j - s]`` for j >= s.

    ``delta_decode`` inverts it exactly for integers (wrap-around included).  On the
    GPU one kernel reads and writes each element once whatever the order
    (:mod:`prefixscan.backends.triton.delta`); ``backend`` as in :func:`scan`.
    """
    ref, ax = _moved(x, axis)
    order, s = _check_delta_args(ref, ax, order, tuple_size)
    chosen = dispatch.select_backend(backend, ref.device)
    n = ref.shape[ax]
    if chosen.NATIVE_LIBRARY == "torch":
        from ._arrays import as_torch

        t = as_torch(ref)
        if not t.is_complex():  # Triton has no complex types: torch ops below
            from .backends.triton.delta import delta_encode as encode

            d = encode(t, order, s, ax)
            return from_torch(d, ref) if ref.library != "torch" else d
        d = t.clone()
        for _ in range(order):
            if n > s:
                d.narrow(ax, s, n - s).sub_(d.narrow(ax, 0, n - s).clone())
        return from_torch(d, ref) if ref.library != "torch" else d
    from ._arrays import as_numpy

    d = np.array(as_numpy(ref), copy=True)
    lead = (slice(None),) * ax
    for _ in range(order):
        if n > s:
            d[lead + (slice(s, None),)] = d[lead + (slice(s, None),)] - d[lead + (slice(None, n - s),)]
    return from_numpy(d, ref, ref.dtype)


def delta_decode(d, order=1, tuple_size=1, *, axis=-1, backend=None):
    """Inverse of :func:`delta_encode`: the inclusive sum scan, ``order`` times, per
    stream (one pass on the GPU)."""
    ref, ax = _moved(d, axis)
    order, s = _check_delta_args(ref, ax, order, tuple_size)
    return scan(d, "add", axis=ax, order=order, tuple_size=s, backend=backend)


# ---------------------------------------------------------------------------
# Segmented scans: the operator lifted to (head flag, value) pairs.

def _segment_heads(n: int, flags, offsets, keys) -> np.ndarray:
    given = [name for name, v in (("flags", flags), ("offsets", offsets), ("keys", keys)) if v is not None]
    if len(given) != 1:
        raise ValueError("flags, offsets, keys: give exactly one of them"
                         + (f" (got {', '.join(given)})" if given else ""))
    heads = np.zeros(n, dtype=bool)
    if flags is not None:
        f = np.asarray(flags.cpu() if hasattr(flags, "cpu") else flags)
        if f.shape != (n,):
            raise ValueError(f"flags has shape {f.shape}; expected ({n},), one per element of x")
        if f.dtype != bool:
            raise TypeError(f"flags must be a bool array, got dtype {f.dtype}")
        heads[:] = f
    elif offsets is not None:
        o = np.asarray(offsets.cpu() if hasattr(offsets, "cpu") else offsets)
        if o.ndim != 1 or o.dtype.kind not in "iu":
            raise TypeError("offsets must be a 1-D integer array of segment start offsets")
        if o.size == 0 or o[0] != 0:
            raise ValueError("offsets must start at 0")
        if np.any(np.diff(o) < 0):
            raise ValueError("offsets must be non-decreasing")
        if o[-1] > n:
            raise ValueError(f"offsets go past the end of x: last offset {o[-1]} > length {n}")
        heads[o[o < n]] = True
    else:
        k = np.asarray(keys.cpu() if hasattr(keys, "cpu") else keys)
        if k.shape != (n,):
            raise ValueError(f"keys has shape {k.shape}; expected ({n},), one per element of x")
        if n:
            heads[1:] = k[1:] != k[:-1]
    if n:
        heads[0] = True
    return heads


def _lift_segmented(inner: Monoid, nfields: int) -> Monoid:
    combine = inner.combine

    def segmented(a, b):
        fa, fb = a[0], b[0]
        merged = (combine(a[1], b[1]),) if nfields == 1 else tuple(combine(tuple(a[1:]), tuple(b[1:])))
        return (fa | fb,) + tuple(where(fb, vb, vm) for vb, vm in zip(b[1:], merged))

    def identity(dtypes):
        return (False,) + tuple(inner.identity_values(list(dtypes[1:])))

    return Monoid(segmented, identity, name=f"segmented_{inner.name}")


def segmented_scan(x, op="add", *, flags=None, offsets=None, keys=None, inclusive=True, reverse=False):
    """Scan that restarts at every segment of the 1-D array ``x`` (or tuple of them).

    Segments are given by exactly one of: ``flags`` (True starts a segment),
    ``offsets`` (start offsets from 0, CSR style; empty segments allowed) or
    ``keys`` (runs of equal consecutive keys).
    """
    monoid = resolve_op(op)
    values = list(x) if isinstance(x, tuple) else [x]
    refs = [inspect_array(v, "x") for v in values]
    for r in refs:
        if len(r.shape) != 1:
            raise ValueError(f"x must be 1-D for a segmented scan, got shape {r.shape}")
        if r.device != "cpu":
            raise NotImplementedError("x: segmented_scan runs on host arrays for now")
        monoid.check_dtype(r.dtype)
    n = refs[0].shape[0]
    if any(r.shape != refs[0].shape for r in refs):
        raise ValueError("x: fields of a struct monoid must have one shape")
    heads = _segment_heads(n, flags, offsets, keys)
    from ._arrays import as_numpy

    arrays = [as_numpy(r) for r in refs]
    if reverse:
        arrays = [a[::-1] for a in arrays]
        # Heads of the flipped array: the first element of each flipped segment.
        seg = np.cumsum(heads)[::-1]
        heads = np.ones(n, dtype=bool)
        heads[1:] = seg[1:] != seg[:-1]
        inner = Monoid(lambda p, q, c=monoid.combine: c(q, p), monoid.identity, name=monoid.name)
    else:
        inner = monoid
    lifted = _lift_segmented(inner, len(arrays))
    result = scan((heads,) + tuple(arrays), lifted, backend="cpu")[1:]
    if not inclusive:
        ident = inner.identity_values([a.dtype for a in arrays])
        shifted = []
        for r, e in zip(result, ident):
            y = np.empty_like(r)
            y[1:] = r[:-1]
            y[heads] = e
            shifted.append(y)
        result = tuple(shifted)
    if reverse:
        result = tuple(np.ascontiguousarray(r[::-1]) for r in result)
    result = tuple(from_numpy(r, ref) for r, ref in zip(result, refs))
    return result if isinstance(x, tuple) else result[0]


# ---------------------------------------------------------------------------
# Stream compaction: an exclusive scan of the mask gives each kept element its slot.

def compact(x, mask):
    """The elements of ``x`` where ``mask`` is True, in order (``x[mask]``), via a scan."""
    rx, rm = inspect_array(x, "x"), inspect_array(mask, "mask")
    if rm.shape != rx.shape:
        raise ValueError(f"mask has shape {rm.shape}; expected x's shape {rx.shape}")
    if rm.dtype != "bool":
        raise TypeError(f"mask must be a bool array, got dtype {rm.dtype}")
    if rm.device != rx.device:
        raise ValueError("mask must be on the same device as x")
    if rx.device == "cuda" or rx.library == "torch":
        from ._arrays import as_torch

        import torch

        xt, mt = as_torch(rx).reshape(-1), as_torch(rm).reshape(-1)
        slots = scan(mt, "add", inclusive=False, dtype="int64")
        count = int(slots[-1] + mt[-1]) if mt.numel() else 0
        result = torch.empty(count, dtype=xt.dtype, device=xt.device)
        result[slots[mt]] = xt[mt]
        return from_torch(result, rx)
    xv, mv = np.asarray(rx.obj).reshape(-1), np.asarray(rm.obj).reshape(-1)
    slots = scan(mv, "add", inclusive=False, dtype=np.int64)
    count = int(slots[-1] + mv[-1]) if mv.size else 0
    result = np.empty(count, dtype=xv.dtype)
    result[slots[mv]] = xv[mv]
    return from_numpy(result, rx)
