"""A naive, plain-Python-loop reference for every feature of prefixscan.

Used by ``prefixscan check`` (and usable by tests) to verify the real
implementations.  Everything here is deliberately simple and slow: one Python
loop per scan, one combine per element, written straight from
``docs/semantics.md`` and independent of the library's own code (the built-in
operators are re-implemented here on Python scalars).

Values are Python scalars (``int``, ``float``, ``bool``) or tuples of them for
struct monoids.  Integer results are wrapped to the dtype's width after every
combine (C semantics), so long products stay cheap; floats are computed in
double precision and compared with a tolerance by the caller.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Iterable, Sequence

import numpy as np

__all__ = [
    "OPS",
    "identity_for",
    "wrapper_for",
    "scan_1d",
    "scan_lanes",
    "segmented_scan",
    "flags_from_offsets",
    "flags_from_keys",
    "compact",
    "delta_encode",
    "delta_decode",
    "linear_recurrence",
]


# ---------------------------------------------------------------------------
# Operators on Python scalars.

def _add(a, b):
    return a + b


def _mul(a, b):
    return a * b


def _max(a, b):
    # NumPy's maximum: NaN propagates.
    if isinstance(a, float) and math.isnan(a):
        return a
    if isinstance(b, float) and math.isnan(b):
        return b
    return a if a >= b else b


def _min(a, b):
    if isinstance(a, float) and math.isnan(a):
        return a
    if isinstance(b, float) and math.isnan(b):
        return b
    return a if a <= b else b


def _and(a, b):
    return a & b


def _or(a, b):
    return a | b


def _xor(a, b):
    return a ^ b


def _logaddexp(a, b):
    hi, lo = (a, b) if a >= b else (b, a)
    if lo == -math.inf:
        return hi
    return hi + math.log1p(math.exp(lo - hi))


OPS: dict[str, Callable[[Any, Any], Any]] = {
    "add": _add,
    "mul": _mul,
    "max": _max,
    "min": _min,
    "and": _and,
    "or": _or,
    "xor": _xor,
    "logaddexp": _logaddexp,
}


def identity_for(op: str, dtype: Any) -> Any:
    """The identity of a built-in operator for a dtype, as a Python scalar."""
    dt = np.dtype(dtype)
    kind = dt.kind
    if op == "add" or op in ("or", "xor"):
        return False if kind == "b" else (0 if kind in "iu" else 0.0)
    if op == "mul":
        return True if kind == "b" else (1 if kind in "iu" else 1.0)
    if op == "and":
        if kind == "b":
            return True
        return int(np.iinfo(dt).max) if kind == "u" else -1
    if op == "max":
        if kind == "b":
            return False
        return int(np.iinfo(dt).min) if kind in "iu" else -math.inf
    if op == "min":
        if kind == "b":
            return True
        return int(np.iinfo(dt).max) if kind in "iu" else math.inf
    if op == "logaddexp":
        return -math.inf
    raise ValueError(f"unknown op {op!r}")


def wrapper_for(dtype: Any) -> Callable[[Any], Any] | None:
    """A function that wraps a Python int to the dtype's width (two's
    complement for signed types), or None for non-integer dtypes."""
    dt = np.dtype(dtype)
    if dt.kind not in "iu":
        return None
    bits = 8 * dt.itemsize
    mask = (1 << bits) - 1
    if dt.kind == "u":
        return lambda v: int(v) & mask
    half = 1 << (bits - 1)

    def wrap(v):
        v = int(v) & mask
        return v - (1 << bits) if v >= half else v

    return wrap


def _to_python(values: Iterable) -> list:
    """A 1-D sequence (NumPy array or list) as a list of Python scalars."""
    if isinstance(values, np.ndarray):
        return values.tolist()
    return [v.item() if isinstance(v, np.generic) else v for v in values]


# ---------------------------------------------------------------------------
# Scans.

def _one_pass(xs: list, combine, identity, inclusive, reverse, init, post) -> list:
    """One scan of one stream (a list), following docs/semantics.md literally."""
    n = len(xs)
    out = [None] * n
    if n == 0:
        return out
    fix = post or (lambda v: v)
    if not reverse:
        if inclusive:
            acc = None if init is None else init
            for i in range(n):
                acc = xs[i] if acc is None else fix(combine(acc, xs[i]))
                out[i] = acc
        else:
            acc = identity if init is None else init
            for i in range(n):
                out[i] = acc
                acc = fix(combine(acc, xs[i]))
    else:
        if inclusive:
            acc = None if init is None else init
            for i in range(n - 1, -1, -1):
                acc = xs[i] if acc is None else fix(combine(xs[i], acc))
                out[i] = acc
        else:
            acc = identity if init is None else init
            for i in range(n - 1, -1, -1):
                out[i] = acc
                acc = fix(combine(xs[i], acc))
    return out


def scan_1d(
    xs: Sequence,
    combine: Callable | str = "add",
    identity: Any = None,
    *,
    inclusive: bool = True,
    reverse: bool = False,
    init: Any = None,
    order: int = 1,
    tuple_size: int = 1,
    post: Callable | None = None,
    dtype: Any = None,
) -> list:
    """Scan one lane (a list of scalars, or of tuples for struct monoids).

    ``combine`` is a callable or a built-in name (then ``identity`` and ``post``
    default from ``dtype``).  ``init`` is None, a scalar, or a sequence of
    ``tuple_size`` seeds, one per stream.  Element ``m + j*s`` belongs to stream
    ``m``; each stream is scanned on its own, ``order`` times.
    """
    if isinstance(combine, str):
        name = combine
        combine = OPS[name]
        if dtype is not None:
            if identity is None:
                identity = identity_for(name, dtype)
            if post is None:
                post = wrapper_for(dtype)
    xs = list(xs)
    s = int(tuple_size)
    n = len(xs)
    if s < 1 or n % s:
        raise ValueError(f"tuple_size={s} does not divide the lane length {n}")
    if init is not None and s > 1 and isinstance(init, (list, np.ndarray)):
        # One seed per stream (a tuple is one struct value, used for all streams).
        seeds = list(init)
        if len(seeds) != s:
            raise ValueError("init must hold one seed per stream")
    else:
        seeds = [init] * s
    result = xs
    for _ in range(int(order)):
        nxt = [None] * n
        for m in range(s):
            stream = result[m::s]
            scanned = _one_pass(stream, combine, identity, inclusive, reverse, seeds[m], post)
            nxt[m::s] = scanned
        result = nxt
    return result


def scan_lanes(
    x: np.ndarray,
    op: Callable | str = "add",
    identity: Any = None,
    *,
    axis: int | None = None,
    inclusive: bool = True,
    reverse: bool = False,
    init: Any = None,
    order: int = 1,
    tuple_size: int = 1,
    dtype: Any = None,
    post: Callable | None = None,
) -> np.ndarray:
    """Scan a NumPy array along ``axis`` (None: flattened), lane by lane.

    Returns an object array of Python scalars of the result's shape; the caller
    converts it.  ``init`` may be a scalar or an array broadcastable to the lane
    shape (+ ``(tuple_size,)``).
    """
    x = np.asarray(x)
    acc_dtype = np.dtype(dtype) if dtype is not None else x.dtype
    if isinstance(op, str) and acc_dtype.kind in "iu" and x.dtype.kind not in "biu":
        raise ValueError("reference: integer accumulation of a non-integer input")
    if axis is None:
        flat = x.reshape(-1).astype(acc_dtype)
        seeds = None if init is None else np.asarray(init)
        if seeds is not None and seeds.ndim > 0:
            seeds = _to_python(seeds.reshape(-1))
        elif seeds is not None:
            seeds = seeds.item()
        res = scan_1d(_to_python(flat), op, identity, inclusive=inclusive, reverse=reverse,
                      init=seeds, order=order, tuple_size=tuple_size, post=post, dtype=acc_dtype)
        out = np.empty(len(res), dtype=object)
        out[:] = res
        return out
    ax = axis % x.ndim
    moved = np.moveaxis(x.astype(acc_dtype), ax, -1)
    lanes_shape = moved.shape[:-1]
    if init is not None:
        init_arr = np.asarray(init)
        target = lanes_shape + ((tuple_size,) if tuple_size > 1 else ())
        init_arr = np.broadcast_to(init_arr, target)
    out = np.empty(moved.shape, dtype=object)
    for idx in np.ndindex(*lanes_shape):
        seeds = None
        if init is not None:
            seeds = init_arr[idx]
            seeds = _to_python(seeds) if tuple_size > 1 else seeds.item()
        res = scan_1d(_to_python(moved[idx]), op, identity, inclusive=inclusive, reverse=reverse,
                      init=seeds, order=order, tuple_size=tuple_size, post=post, dtype=acc_dtype)
        out[idx] = res if res else []
    return np.moveaxis(out, -1, ax)


# ---------------------------------------------------------------------------
# Segmented scans and compaction.

def flags_from_offsets(offsets: Sequence[int], n: int) -> list[bool]:
    """Segment-start flags from ``cu_seqlens``-style offsets."""
    flags = [False] * n
    if n:
        flags[0] = True
    for o in _to_python(offsets):
        if 0 <= o < n:
            flags[o] = True
    return flags


def flags_from_keys(keys: Sequence) -> list[bool]:
    """Segment-start flags from keys: runs of equal consecutive keys."""
    keys = _to_python(keys)
    return [i == 0 or keys[i] != keys[i - 1] for i in range(len(keys))]


def segmented_scan(
    xs: Sequence,
    flags: Sequence[bool],
    combine: Callable | str = "add",
    identity: Any = None,
    *,
    inclusive: bool = True,
    reverse: bool = False,
    dtype: Any = None,
    post: Callable | None = None,
) -> list:
    """Scan each segment on its own (a True flag starts a segment; element 0
    always starts one).  Exclusive scans put the identity first in each
    segment; reverse scans run from each segment's end."""
    xs = _to_python(xs)
    flags = [bool(f) for f in _to_python(flags)]
    n = len(xs)
    out: list = []
    start = 0
    while start < n:
        end = start + 1
        while end < n and not flags[end]:
            end += 1
        out.extend(scan_1d(xs[start:end], combine, identity, inclusive=inclusive,
                           reverse=reverse, post=post, dtype=dtype))
        start = end
    return out


def compact(xs: Sequence, mask: Sequence[bool]) -> list:
    """``x[mask]`` in order, with a loop."""
    xs = _to_python(xs)
    out = []
    for v, keep in zip(xs, _to_python(mask)):
        if keep:
            out.append(v)
    return out


# ---------------------------------------------------------------------------
# Delta coding and linear recurrences.

def delta_encode(xs: Sequence, order: int = 1, tuple_size: int = 1, *, dtype: Any = None) -> list:
    """``order`` times ``d[j] = d[j] - d[j-s]`` for ``j >= s`` (first s kept)."""
    wrap = wrapper_for(dtype) if dtype is not None else None
    d = _to_python(xs)
    s = int(tuple_size)
    for _ in range(int(order)):
        prev = list(d)
        for j in range(s, len(d)):
            v = prev[j] - prev[j - s]
            d[j] = wrap(v) if wrap else v
    return d


def delta_decode(ds: Sequence, order: int = 1, tuple_size: int = 1, *, dtype: Any = None) -> list:
    """The inverse of :func:`delta_encode`: ``order`` running sums per stream."""
    wrap = wrapper_for(dtype) if dtype is not None else None
    x = _to_python(ds)
    s = int(tuple_size)
    for _ in range(int(order)):
        for j in range(s, len(x)):
            v = x[j] + x[j - s]
            x[j] = wrap(v) if wrap else v
    return x


def linear_recurrence(a: Sequence, b: Sequence, init: Any = None, *, reverse: bool = False) -> list:
    """``h[t] = a[t]*h[t-1] + b[t]`` with ``h[-1] = init`` (0 when None);
    reverse: ``h[t] = a[t]*h[t+1] + b[t]`` with ``h[n] = init``."""
    a = _to_python(a)
    b = _to_python(b)
    n = len(a)
    h = 0 if init is None else init
    out = [None] * n
    indices = range(n - 1, -1, -1) if reverse else range(n)
    for t in indices:
        h = a[t] * h + b[t]
        out[t] = h
    return out
