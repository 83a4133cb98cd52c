"""An independent reference for prefixscan, written from docs/semantics.md only.

Everything here is plain Python loops over elements: no ``numpy.cumsum``, no
ufunc ``accumulate``, no code from ``prefixscan``.  NumPy is used only to hold
inputs and outputs and for dtype metadata.

Element values are held as Python scalars:

* integers as Python ``int``, wrapped to the accumulator dtype's bit width after
  every combine (two's complement, as C wraps), which is exact for any combine
  built from ``+``, ``-``, ``*``, ``&``, ``|``, ``^`` (a ring homomorphism) and
  for ``max``/``min`` (applied to already-wrapped values);
* bools as Python ``bool``;
* floats as Python ``float`` (IEEE double) and complex as Python ``complex``:
  the oracle accumulates floats more precisely than the library does, and rounds
  once to the output dtype.  The inputs are first rounded to the accumulator
  dtype (so ``dtype=float32`` on float64 input sees float32 inputs).

A struct-of-arrays element is a tuple of such scalars.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Sequence

import numpy as np

__all__ = [
    "OP_KINDS",
    "builtin_combine",
    "builtin_identity",
    "acc_dtype",
    "wrap",
    "scan",
    "scan_builtin",
    "segments_from_flags",
    "segments_from_offsets",
    "segments_from_keys",
    "segmented_scan",
    "compact",
    "delta_encode",
    "delta_decode",
    "linear_recurrence",
]


# ---------------------------------------------------------------------------
# Built-in operators on Python scalars.

def _add(a, b):
    return a + b


def _mul(a, b):
    return a * b


def _isnan(v):
    return isinstance(v, float) and v != v


def _max(a, b):
    if _isnan(a):
        return a
    if _isnan(b):
        return b
    return b if b > a else a


def _min(a, b):
    if _isnan(a):
        return a
    if _isnan(b):
        return b
    return b if b < a else a


def _and(a, b):
    return a & b


def _or(a, b):
    return a | b


def _xor(a, b):
    return a ^ b


def _logaddexp(a, b):
    if _isnan(a) or _isnan(b):
        return math.nan
    hi, lo = (a, b) if a >= b else (b, a)
    if lo == -math.inf:
        return hi
    if hi == math.inf:
        return math.inf
    return hi + math.log1p(math.exp(lo - hi))


_COMBINES = {
    "add": _add,
    "mul": _mul,
    "max": _max,
    "min": _min,
    "and": _and,
    "or": _or,
    "xor": _xor,
    "logaddexp": _logaddexp,
}

#: dtype kinds each built-in operator accepts (NumPy kind letters).
OP_KINDS = {
    "add": "iufc",
    "mul": "iufc",
    "max": "biuf",
    "min": "biuf",
    "and": "biu",
    "or": "biu",
    "xor": "biu",
    "logaddexp": "f",
}


def builtin_combine(name: str) -> Callable:
    return _COMBINES[name]


def builtin_identity(name: str, dtype) -> Any:
    """The identity of a built-in operator for values of ``dtype``, as a Python scalar."""
    dt = np.dtype(dtype)
    kind = dt.kind
    if name == "add" or name == "or" or name == "xor":
        return _py(0, dt)
    if name == "mul":
        return _py(1, dt)
    if name == "logaddexp":
        return -math.inf
    if name in ("max", "min", "and"):
        if kind == "b":
            return name != "max"  # max: False, min/and: True
        if kind in "iu":
            info = np.iinfo(dt)
            if name == "max":
                return int(info.min)
            if name == "min":
                return int(info.max)
            return -1 if kind == "i" else int(info.max)  # and: all ones
        return -math.inf if name == "max" else math.inf
    raise KeyError(name)


# ---------------------------------------------------------------------------
# Scalars.

def acc_dtype(input_dtype, requested=None) -> np.dtype:
    """The accumulation dtype: ``requested`` if given, else the input's with
    float16 widened to float32."""
    if requested is not None:
        return np.dtype(requested)
    dt = np.dtype(input_dtype)
    if dt == np.float16:
        return np.dtype(np.float32)
    return dt


def wrap(v, dtype):
    """``v`` as the Python scalar a value of ``dtype`` holds (integers wrap as in C)."""
    dt = np.dtype(dtype)
    kind = dt.kind
    if kind in "iu":
        bits = dt.itemsize * 8
        v = int(v) & ((1 << bits) - 1)
        if kind == "i" and v >= 1 << (bits - 1):
            v -= 1 << bits
        return v
    if kind == "b":
        return bool(v)
    if kind == "c":
        return complex(v)
    return float(v)


def _wrapper(dtype) -> Callable:
    """A fast ``wrap`` for one dtype."""
    dt = np.dtype(dtype)
    kind = dt.kind
    if kind in "iu":
        bits = dt.itemsize * 8
        mask = (1 << bits) - 1
        if kind == "u":
            return lambda v: int(v) & mask
        half = 1 << (bits - 1)
        full = 1 << bits

        def w(v):
            v = int(v) & mask
            return v - full if v >= half else v

        return w
    if kind == "b":
        return bool
    if kind == "c":
        return complex
    return float


def _py(v, dtype):
    """Convert a NumPy scalar or Python number to the oracle's scalar for ``dtype``."""
    dt = np.dtype(dtype)
    if dt.kind in "iu":
        if isinstance(v, (float, np.floating)):
            v = int(v)
        return wrap(int(v), dt)
    if dt.kind == "b":
        return bool(v)
    if dt.kind == "c":
        return complex(v)
    return float(v)


def _cast_array(a: np.ndarray, dtype) -> np.ndarray:
    """``a`` rounded to ``dtype`` element by element (NumPy's casting rules)."""
    with np.errstate(all="ignore"):
        return np.asarray(a).astype(np.dtype(dtype))


def _to_array(values: Sequence, shape, dtype) -> np.ndarray:
    """Python scalars -> array of ``dtype``, rounding floats once."""
    dt = np.dtype(dtype)
    flat = list(values)
    if dt.kind in "iu":
        flat = [wrap(v, dt) for v in flat]
    with np.errstate(all="ignore"):
        if dt.kind in "fc":
            # Round from double once (complex64: each part once).
            tmp = np.array(flat, dtype=np.complex128 if dt.kind == "c" else np.float64)
            out = tmp.astype(dt)
        else:
            out = np.array(flat, dtype=dt) if flat else np.empty(0, dtype=dt)
    return out.reshape(shape)


# ---------------------------------------------------------------------------
# The core one-stream scan.

def _scan1(vals: list, combine: Callable, identity, seed, inclusive: bool, reverse: bool) -> list:
    n = len(vals)
    out = [None] * n
    if not reverse:
        if inclusive:
            acc = seed
            for i in range(n):
                acc = vals[i] if acc is None else combine(acc, vals[i])
                out[i] = acc
        else:
            acc = identity if seed is None else seed
            for i in range(n):
                out[i] = acc
                acc = combine(acc, vals[i])
    else:
        if inclusive:
            acc = seed
            for i in range(n - 1, -1, -1):
                acc = vals[i] if acc is None else combine(vals[i], acc)
                out[i] = acc
        else:
            acc = identity if seed is None else seed
            for i in range(n - 1, -1, -1):
                out[i] = acc
                acc = combine(vals[i], acc)
    return out


def _as_fields(x) -> tuple[tuple[np.ndarray, ...], bool]:
    if isinstance(x, tuple):
        arrs = tuple(np.asarray(a) for a in x)
        shapes = {a.shape for a in arrs}
        if len(shapes) != 1:
            raise ValueError("oracle: fields of different shapes")
        return arrs, True
    return (np.asarray(x),), False


def scan(
    x,
    combine: Callable,
    identity=None,
    *,
    axis=None,
    inclusive: bool = True,
    reverse: bool = False,
    init=None,
    order: int = 1,
    tuple_size: int = 1,
    dtype=None,
):
    """The reference scan of docs/semantics.md.

    ``x``: an array, or a tuple of same-shape arrays (struct monoid; then
    ``combine`` takes and returns tuples and ``identity``/``init``/``dtype`` are
    tuples, one entry per field).  ``combine`` runs on Python scalars.
    ``identity`` may be a value (tuple for structs) or a callable ``identity(dtype)``
    (``identity(tuple_of_dtypes)`` for structs).  Returns an array (tuple of arrays).
    """
    fields, is_struct = _as_fields(x)
    nf = len(fields)
    if dtype is None or not is_struct:
        dtypes_req = (dtype,) * nf
    else:
        dtypes_req = tuple(dtype)
    accs = tuple(acc_dtype(f.dtype, r) for f, r in zip(fields, dtypes_req))
    outs = tuple(np.dtype(r) if r is not None else f.dtype for f, r in zip(fields, dtypes_req))

    if callable(identity):
        identity = identity(accs if is_struct else accs[0])
    if identity is not None:
        if is_struct:
            identity = tuple(_py(v, d) for v, d in zip(identity, accs))
        else:
            identity = _py(identity, accs[0])

    wrappers = tuple(_wrapper(d) for d in accs)
    if is_struct:
        def comb(a, b):
            r = combine(a, b)
            return tuple(w(v) for v, w in zip(r, wrappers))
    else:
        w0 = wrappers[0]

        def comb(a, b):
            return w0(combine(a, b))

    shape = fields[0].shape
    if axis is None:
        work = tuple(_cast_array(f, a).reshape(1, -1) for f, a in zip(fields, accs))
        lane_shape: tuple = ()
        out_shape = (int(np.prod(shape, dtype=np.int64)),)
    else:
        nd = len(shape)
        if not -nd <= axis < nd:
            raise ValueError("oracle: axis out of range")
        ax = axis % nd
        lane_shape = shape[:ax] + shape[ax + 1:]
        nlanes = int(np.prod(lane_shape, dtype=np.int64))
        work = tuple(
            np.moveaxis(_cast_array(f, a), ax, -1).reshape(nlanes, shape[ax]) for f, a in zip(fields, accs)
        )
        out_shape = shape
    n = work[0].shape[1]
    s = tuple_size
    if s < 1 or (n % s) != 0:
        raise ValueError("oracle: tuple_size must divide the lane length")

    # Seeds: one per (lane, stream).
    seeds = None
    if init is not None:
        inits = init if is_struct else (init,)
        seed_shape = lane_shape + ((s,) if s > 1 else ())
        seeds = []
        for iv, a in zip(inits, accs):
            b = np.broadcast_to(_cast_array(np.asarray(iv), a), seed_shape).reshape(-1, s)
            seeds.append(b)

    lanes = work[0].shape[0]
    results = [[None] * (lanes * n) for _ in range(nf)]
    for lane in range(lanes):
        cols = [[wrappers[k](v) for v in work[k][lane].tolist()] for k in range(nf)]
        if is_struct:
            vals = list(zip(*cols)) if n else []
        else:
            vals = cols[0]
        for m in range(s):
            sub = vals[m::s]
            seed = None
            if seeds is not None:
                if is_struct:
                    seed = tuple(_py(seeds[k][lane, m], accs[k]) for k in range(nf))
                else:
                    seed = _py(seeds[0][lane, m], accs[0])
            for _ in range(order):
                sub = _scan1(sub, comb, identity, seed, inclusive, reverse)
            vals[m::s] = sub
        for j in range(n):
            v = vals[j]
            if is_struct:
                for k in range(nf):
                    results[k][lane * n + j] = v[k]
            else:
                results[0][lane * n + j] = v

    out = []
    for k in range(nf):
        if axis is None:
            arr = _to_array(results[k], out_shape, outs[k])
        else:
            moved_shape = lane_shape + (n,)
            arr = _to_array(results[k], moved_shape, outs[k])
            arr = np.moveaxis(arr, -1, axis % len(shape))
            arr = np.ascontiguousarray(arr)
        out.append(arr)
    return tuple(out) if is_struct else out[0]


def scan_builtin(x, op: str = "add", *, dtype=None, **kw):
    """``scan`` for a built-in operator name."""
    x = np.asarray(x)
    acc = acc_dtype(x.dtype, dtype)
    return scan(x, builtin_combine(op), builtin_identity(op, acc), dtype=dtype, **kw)


# ---------------------------------------------------------------------------
# Segmented scans.

def segments_from_flags(flags, n: int) -> list[tuple[int, int]]:
    flags = list(np.asarray(flags).reshape(-1))
    starts = [0] + [i for i in range(1, n) if flags[i]]
    if n == 0:
        return []
    ends = starts[1:] + [n]
    return list(zip(starts, ends))


def segments_from_offsets(offsets, n: int) -> list[tuple[int, int]]:
    offs = [int(o) for o in np.asarray(offsets).reshape(-1)]
    bounds = offs + [n]
    return [(bounds[i], bounds[i + 1]) for i in range(len(offs))]


def segments_from_keys(keys, n: int) -> list[tuple[int, int]]:
    keys = list(np.asarray(keys).reshape(-1))
    segs = []
    start = 0
    for i in range(1, n + 1):
        if i == n or keys[i] != keys[i - 1]:
            segs.append((start, i))
            start = i
    return segs


def segmented_scan(x, combine: Callable, identity, segments, *, inclusive=True, reverse=False, dtype=None):
    """Scan each ``[start, end)`` segment of 1-D ``x`` (or tuple of 1-D arrays) independently."""
    fields, is_struct = _as_fields(x)
    n = fields[0].shape[0]
    pieces = [[None] * n for _ in fields]
    covered = [False] * n
    for (a, b) in segments:
        if b <= a:
            continue
        part = tuple(f[a:b] for f in fields) if is_struct else fields[0][a:b]
        r = scan(part, combine, identity, axis=None, inclusive=inclusive, reverse=reverse, dtype=dtype)
        rs = r if is_struct else (r,)
        for k, arr in enumerate(rs):
            for j in range(b - a):
                pieces[k][a + j] = arr[j]
            for j in range(a, b):
                covered[j] = True
    assert all(covered), "oracle: segments do not cover x"
    outs = []
    for k, f in enumerate(fields):
        dt = np.dtype(dtype) if dtype is not None and not is_struct else f.dtype
        outs.append(np.array(pieces[k], dtype=dt) if n else np.empty(0, dtype=dt))
    return tuple(outs) if is_struct else outs[0]


# ---------------------------------------------------------------------------
# Compaction, delta coding, linear recurrences.

def compact(x, mask) -> np.ndarray:
    x = np.asarray(x)
    mask = np.asarray(mask)
    vals = [x[idx] for idx in np.ndindex(*x.shape) if mask[idx]]
    return np.array(vals, dtype=x.dtype) if vals else np.empty(0, dtype=x.dtype)


def _lanes_apply(x: np.ndarray, axis: int, fn: Callable[[list], list]) -> np.ndarray:
    x = np.asarray(x)
    ax = axis % x.ndim
    moved = np.moveaxis(x, ax, -1)
    flat = moved.reshape(int(np.prod(moved.shape[:-1], dtype=np.int64)), moved.shape[-1])
    res = []
    for lane in range(flat.shape[0]):
        res.extend(fn([_py(v, x.dtype) for v in flat[lane]]))
    out = _to_array(res, moved.shape, x.dtype)
    return np.ascontiguousarray(np.moveaxis(out, -1, ax))


def delta_encode(x, order: int = 1, tuple_size: int = 1, *, axis: int = -1) -> np.ndarray:
    """``order`` times ``d[j] = d[j] - d[j-s]`` for ``j >= s`` (simultaneously), wrapping."""
    x = np.asarray(x)
    dt = x.dtype
    s = tuple_size

    def enc(d):
        for _ in range(order):
            d = [d[j] if j < s else wrap(d[j] - d[j - s], dt) for j in range(len(d))]
        return d

    return _lanes_apply(x, axis, enc)


def delta_decode(x, order: int = 1, tuple_size: int = 1, *, axis: int = -1) -> np.ndarray:
    """The inverse of ``delta_encode``: ``order`` times ``d[j] += d[j-s]`` in increasing ``j``."""
    x = np.asarray(x)
    dt = x.dtype
    s = tuple_size

    def dec(d):
        d = list(d)
        for _ in range(order):
            for j in range(s, len(d)):
                d[j] = wrap(d[j] + d[j - s], dt)
        return d

    return _lanes_apply(x, axis, dec)


def linear_recurrence(a, b, *, init=None, axis: int = -1, reverse: bool = False, dtype=None) -> np.ndarray:
    """``h[t] = a[t] * h[t-1] + b[t]``, ``h[-1] = init`` (0 when None); reverse:
    ``h[t] = a[t] * h[t+1] + b[t]``, ``h[n] = init``.  Computed in double precision,
    rounded once to ``dtype`` (default: ``result_type(a, b)``)."""
    a = np.asarray(a)
    b = np.asarray(b)
    shape = np.broadcast_shapes(a.shape, b.shape)
    a = np.broadcast_to(a, shape)
    b = np.broadcast_to(b, shape)
    dt = np.dtype(dtype) if dtype is not None else np.result_type(a.dtype, b.dtype)
    ax = axis % len(shape)
    lane_shape = shape[:ax] + shape[ax + 1:]
    nlanes = int(np.prod(lane_shape, dtype=np.int64))
    am = np.moveaxis(a, ax, -1).reshape(nlanes, shape[ax])
    bm = np.moveaxis(b, ax, -1).reshape(nlanes, shape[ax])
    if init is None:
        inits = np.zeros(am.shape[0], dtype=dt)
    else:
        inits = np.broadcast_to(np.asarray(init), lane_shape).reshape(-1)
    n = shape[ax]
    res = []
    for lane in range(am.shape[0]):
        h = _py(inits[lane], dt)
        row = [None] * n
        order = range(n - 1, -1, -1) if reverse else range(n)
        for t in order:
            h = wrap(_py(am[lane, t], dt) * h + _py(bm[lane, t], dt), dt)
            row[t] = h
        res.extend(row)
    out = _to_array(res, lane_shape + (n,), dt)
    return np.ascontiguousarray(np.moveaxis(out, -1, ax))
