"""The reference implementation of every prefixscan function, in plain loops.

Written from docs/semantics.md only: one Python loop per stream, one combine
per element, on Python scalars (see :mod:`prefixscan.testing._scalars` for how
integers wrap and why floats are held in double precision).  NumPy holds the
inputs and outputs and gives dtype metadata; nothing here calls prefixscan's
scans, so a bug in the library cannot hide in its own reference.  It is slow
(about a microsecond per element and pass) and meant for test sizes.

Arguments mirror the library's: ``reference_scan(x, op, axis=..., ...)`` takes
what ``prefixscan.scan`` takes, with ``op`` a built-in name, a
``prefixscan.Monoid`` (its ``combine`` runs on Python scalars; the helpers
``prefixscan.where``/``maximum``/... accept them) or a plain two-argument
function with ``identity=``.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from ._scalars import (
    BUILTIN_COMBINES,
    OP_KINDS,
    accumulator_dtype,
    as_numpy,
    builtin_identity,
    cast,
    from_scalars,
    scalar_converter,
    storage_dtype,
)

__all__ = [
    "reference_scan",
    "reference_segmented_scan",
    "segment_bounds",
    "reference_compact",
    "reference_partition",
    "reference_delta_encode",
    "reference_delta_decode",
    "reference_linear_recurrence",
    "reference_argsort",
    "reference_unique",
    "reference_run_length_encode",
]


# ---------------------------------------------------------------------------
# The operator.

def _operator(op: Any, identity: Any, accs: tuple[np.dtype, ...], struct: bool):
    """``(step, identity)``: ``step(a, b)`` combines two elements and converts the
    result to the accumulators' scalars (wrapping integers); ``identity`` is
    converted likewise, or None when unknown."""
    name = op if isinstance(op, str) else None
    if name is None and getattr(op, "builtin", False) and getattr(op, "name", None) in BUILTIN_COMBINES:
        name = op.name  # prefixscan.BUILTIN_OPS[...]: use the reference's own operator
    if name is not None:
        if name not in BUILTIN_COMBINES:
            raise ValueError(f"op: unknown operator {name!r}; built-ins are {', '.join(BUILTIN_COMBINES)}")
        if struct:
            raise TypeError(f"op={name!r} takes one array, not a tuple of fields")
        if accs[0].kind not in OP_KINDS[name]:
            raise TypeError(f"op={name!r} does not apply to dtype {accs[0]}")
        combine = BUILTIN_COMBINES[name]
        ident = builtin_identity(name, accs[0]) if identity is None else identity
    elif hasattr(op, "combine"):  # a prefixscan.Monoid
        combine = op.combine
        ident = op.identity if identity is None else identity
    elif callable(op):
        combine, ident = op, identity
    else:
        raise TypeError(f"op must be a built-in name, a Monoid or a function, got {type(op).__name__}")
    if callable(ident):
        ident = ident(accs) if struct else ident(accs[0])
    converters = tuple(scalar_converter(a) for a in accs)
    if struct:
        if ident is not None:
            ident = tuple(c(v) for c, v in zip(converters, ident))

        def step(a, b):
            return tuple(c(v) for c, v in zip(converters, combine(a, b)))
    else:
        convert = converters[0]
        if ident is not None:
            ident = convert(ident)

        def step(a, b):
            return convert(combine(a, b))

    return step, ident


def _scan_stream(values: list, step: Callable, identity: Any, seed: Any, inclusive: bool, reverse: bool) -> list:
    """One pass over one stream, as docs/semantics.md defines it: the left operand
    of ``step`` always holds the earlier elements; ``seed`` (None: none) sits
    before the first element, or after the last one in reverse."""
    n = len(values)
    out = [None] * n
    indices = range(n - 1, -1, -1) if reverse else range(n)
    if inclusive:
        acc = seed
        for i in indices:
            if acc is None:
                acc = values[i]
            else:
                acc = step(values[i], acc) if reverse else step(acc, values[i])
            out[i] = acc
        return out
    acc = identity if seed is None else seed
    if acc is None and n:
        raise ValueError("an exclusive scan without init needs the operator's identity (pass identity=)")
    for i in indices:
        out[i] = acc
        acc = step(values[i], acc) if reverse else step(acc, values[i])
    return out


# ---------------------------------------------------------------------------
# Scans.

def _fields(x: Any) -> tuple[tuple[np.ndarray, ...], tuple[str, ...], bool]:
    """The input's fields as NumPy arrays, their dtype names, and whether it is a struct."""
    struct = isinstance(x, tuple)
    converted = [as_numpy(f) for f in (x if struct else (x,))]
    arrays = tuple(a for a, _ in converted)
    if len({a.shape for a in arrays}) != 1:
        raise ValueError(f"x: the fields have different shapes {[a.shape for a in arrays]}")
    return arrays, tuple(name for _, name in converted), struct


def _per_field(value: Any, count: int, struct: bool) -> tuple:
    if not struct:
        return (value,)
    if value is None:
        return (None,) * count
    if len(value) != count:
        raise ValueError(f"expected one entry per field ({count}), got {len(value)}")
    return tuple(value)


@dataclass(frozen=True)
class _Setup:
    """What a scan of ``x`` works with: the fields, their accumulator and output
    dtypes, and the operator as a converting ``step`` with its identity."""

    fields: tuple[np.ndarray, ...]
    struct: bool
    accs: tuple[np.dtype, ...]
    out_names: tuple[str, ...]
    step: Callable
    identity: Any

    def values(self, lanes: tuple[np.ndarray, ...], lane: int) -> list:
        """One lane's elements as accumulator scalars (tuples of them for structs)."""
        columns = [f[lane].tolist() for f in lanes]
        return list(zip(*columns)) if self.struct else columns[0]

    def collect(self, results: list[list], values: list) -> None:
        """Append one lane's results to the per-field lists."""
        if self.struct:
            for k, column in enumerate(results):
                column.extend(v[k] for v in values)
        else:
            results[0].extend(values)


def _setup(x: Any, op: Any, identity: Any, dtype: Any) -> _Setup:
    fields, names, struct = _fields(x)
    requested = _per_field(dtype, len(fields), struct)
    out_names = tuple(np.dtype(r).name if r is not None else n for n, r in zip(names, requested))
    accs = tuple(accumulator_dtype(n, r) for n, r in zip(names, requested))
    step, ident = _operator(op, identity, accs, struct)
    return _Setup(fields, struct, accs, out_names, step, ident)


def reference_scan(
    x: Any,
    op: Any = "add",
    *,
    axis: int | None = None,
    inclusive: bool = True,
    reverse: bool = False,
    init: Any = None,
    order: int = 1,
    tuple_size: int = 1,
    dtype: Any = None,
    identity: Any = None,
) -> np.ndarray | tuple[np.ndarray, ...]:
    """The scan of docs/semantics.md, in plain loops.

    ``x``: an array (NumPy, torch on any device, anything with ``__array__``) or
    a tuple of same-shape arrays (struct monoid; then ``dtype`` and ``init`` are
    tuples with one entry per field).  ``op``: a built-in name, a
    ``prefixscan.Monoid``, or a function ``combine(a, b)`` on Python scalars
    (tuples of them for structs) with ``identity=`` for exclusive scans.
    ``identity`` may also be a callable of the accumulator dtype(s), as a
    Monoid's may.  The other arguments are ``prefixscan.scan``'s.

    Returns NumPy arrays (a tuple for structs) of the output dtype (``dtype`` if
    given, else the input's): integers wrapped as C wraps, floats computed in
    double precision and rounded once (bfloat16 inputs give float32 arrays of
    bfloat16 values).
    """
    setup = _setup(x, op, identity, dtype)
    fields, accs, struct = setup.fields, setup.accs, setup.struct
    order, s = operator.index(order), operator.index(tuple_size)
    if order < 1:
        raise ValueError(f"order must be >= 1, got {order}")

    shape = fields[0].shape
    if axis is None:
        lane_shape: tuple = ()
        n = int(np.prod(shape, dtype=np.int64))
        lanes = tuple(cast(f, a).reshape(1, n) for f, a in zip(fields, accs))
    else:
        ndim = len(shape)
        axis = operator.index(axis)
        if not -ndim <= axis < ndim:
            raise ValueError(f"axis {axis} is out of range for {ndim}-D x")
        ax = axis % ndim
        lane_shape = shape[:ax] + shape[ax + 1:]
        n = shape[ax]
        count = int(np.prod(lane_shape, dtype=np.int64))
        lanes = tuple(np.moveaxis(cast(f, a), ax, -1).reshape(count, n) for f, a in zip(fields, accs))
    if s < 1 or n % s:
        raise ValueError(f"tuple_size={s} must be >= 1 and divide the lane length {n}")

    # Seeds, one per (lane, stream) and field: init broadcast to lane_shape (+ (s,)).
    seeds = None
    seed_converters = [scalar_converter(a) for a in accs]
    if init is not None:
        seed_shape = lane_shape + ((s,) if s > 1 else ())
        seeds = [np.broadcast_to(cast(as_numpy(v)[0], a), seed_shape).reshape(-1, s)
                 for v, a in zip(_per_field(init, len(fields), struct), accs)]

    results: list[list] = [[] for _ in fields]
    for lane in range(lanes[0].shape[0]):
        values = setup.values(lanes, lane)
        for m in range(s):
            seed = None
            if seeds is not None:
                seed = tuple(c(sd[lane, m]) for c, sd in zip(seed_converters, seeds))
                seed = seed if struct else seed[0]
            stream = values[m::s]
            for _ in range(order):
                stream = _scan_stream(stream, setup.step, setup.identity, seed, inclusive, reverse)
            values[m::s] = stream
        setup.collect(results, values)

    outs = []
    for k, name in enumerate(setup.out_names):
        arr = from_scalars(results[k], lane_shape + (n,), name)
        if axis is not None:
            arr = np.ascontiguousarray(np.moveaxis(arr, -1, axis % len(shape)))
        outs.append(arr)
    return tuple(outs) if struct else outs[0]


# ---------------------------------------------------------------------------
# Segmented scans and compaction.

def segment_bounds(n: int, *, flags: Any = None, offsets: Any = None, keys: Any = None) -> list[tuple[int, int]]:
    """The ``[start, end)`` segments of a length-``n`` array described by exactly
    one of ``flags`` (True starts a segment; element 0 always starts one),
    ``offsets`` (non-decreasing starts beginning at 0, at most n; empty segments
    and a trailing n allowed) or ``keys`` (runs of equal consecutive keys)."""
    given = [k for k, v in (("flags", flags), ("offsets", offsets), ("keys", keys)) if v is not None]
    if len(given) != 1:
        raise ValueError(f"pass exactly one of flags, offsets, keys (got {given or 'none'})")
    if flags is not None:
        starts = as_numpy(flags)[0].reshape(-1).tolist()
        heads = [0] + [i for i in range(1, n) if starts[i]] if n else []
        return list(zip(heads, heads[1:] + [n]))
    if offsets is not None:
        offs = [int(o) for o in as_numpy(offsets)[0].reshape(-1).tolist()]
        if not offs or offs[0] != 0 or any(b < a for a, b in zip(offs, offs[1:])) or offs[-1] > n:
            raise ValueError(f"offsets must be non-decreasing, start at 0 and end at most at {n}: {offs}")
        return list(zip(offs, offs[1:] + [n]))
    values = as_numpy(keys)[0].reshape(-1).tolist()
    bounds, start = [], 0
    for i in range(1, n + 1):
        if i == n or values[i] != values[i - 1]:
            bounds.append((start, i))
            start = i
    return bounds


def reference_segmented_scan(
    x: Any,
    op: Any = "add",
    *,
    flags: Any = None,
    offsets: Any = None,
    keys: Any = None,
    inclusive: bool = True,
    reverse: bool = False,
    dtype: Any = None,
    identity: Any = None,
    init: Any = None,
) -> np.ndarray | tuple[np.ndarray, ...]:
    """``prefixscan.segmented_scan``: each segment of 1-D ``x`` (a tuple of 1-D
    arrays for struct monoids) scanned on its own with :func:`reference_scan`.
    Exclusive scans start each segment with the identity; reverse scans run from
    each segment's end; ``init`` (one value per field for structs) seeds every
    segment as it seeds a scan."""
    setup = _setup(x, op, identity, dtype)
    if setup.fields[0].ndim != 1:
        raise ValueError(f"x must be 1-D, got shape {setup.fields[0].shape}")
    n = setup.fields[0].shape[0]
    values = setup.values(tuple(cast(f, a).reshape(1, n) for f, a in zip(setup.fields, setup.accs)), 0)
    seed = None
    if init is not None:
        seed = tuple(scalar_converter(a)(cast(as_numpy(v)[0], a).reshape(())[()])
                     for v, a in zip(_per_field(init, len(setup.fields), setup.struct), setup.accs))
        seed = seed if setup.struct else seed[0]
    scanned: list = []
    for start, end in segment_bounds(n, flags=flags, offsets=offsets, keys=keys):
        scanned.extend(_scan_stream(values[start:end], setup.step, setup.identity, seed, inclusive, reverse))
    results: list[list] = [[] for _ in setup.fields]
    setup.collect(results, scanned)
    outs = tuple(from_scalars(r, (n,), name) for r, name in zip(results, setup.out_names))
    return outs if setup.struct else outs[0]


def reference_compact(x: Any, mask: Any) -> np.ndarray:
    """``prefixscan.compact``: the elements of ``x`` whose ``mask`` is True, in C order, as a 1-D array."""
    values = as_numpy(x)[0]
    keep = as_numpy(mask)[0]
    if keep.shape != values.shape:
        raise ValueError(f"mask shape {keep.shape} differs from x shape {values.shape}")
    flat = values.reshape(-1)
    return flat[[i for i, k in enumerate(keep.reshape(-1).tolist()) if k]]


def reference_partition(x: Any, mask: Any) -> tuple[np.ndarray, int]:
    """``prefixscan.partition``: ``(values, count)``, the elements of ``x`` whose
    ``mask`` is True, then the others, each in C order, as a 1-D array; ``count``
    the number of True elements."""
    values = as_numpy(x)[0]
    keep = as_numpy(mask)[0]
    if keep.shape != values.shape:
        raise ValueError(f"mask shape {keep.shape} differs from x shape {values.shape}")
    flat = values.reshape(-1)
    kept, rejected = [], []
    for i, k in enumerate(keep.reshape(-1).tolist()):
        (kept if k else rejected).append(i)
    return flat[kept + rejected], len(kept)


# ---------------------------------------------------------------------------
# Delta coding and linear recurrences.

def _map_lanes(x: Any, axis: int, fn: Callable[[list, Callable], list]) -> np.ndarray:
    """``fn(lane_values, convert)`` applied to every lane of ``x`` along ``axis``;
    results rounded once to x's dtype."""
    values, name = as_numpy(x)
    ax = operator.index(axis) % values.ndim
    moved = np.moveaxis(values, ax, -1)
    convert = scalar_converter(storage_dtype(name))
    flat = moved.reshape(int(np.prod(moved.shape[:-1], dtype=np.int64)), moved.shape[-1])
    results: list = []
    for lane in flat:
        results.extend(fn([convert(v) for v in lane.tolist()], convert))
    return np.ascontiguousarray(np.moveaxis(from_scalars(results, moved.shape, name), -1, ax))


def reference_delta_encode(x: Any, order: int = 1, tuple_size: int = 1, *, axis: int = -1) -> np.ndarray:
    """``prefixscan.delta_encode``: ``order`` times ``d[j] = d[j] - d[j-s]`` for
    ``j >= s`` (each pass reads the previous pass; the first s elements are kept).
    Integers wrap; floats are computed in double and rounded once."""
    s = operator.index(tuple_size)

    def encode(d, convert):
        for _ in range(order):
            d = [d[j] if j < s else convert(d[j] - d[j - s]) for j in range(len(d))]
        return d

    return _map_lanes(x, axis, encode)


def reference_delta_decode(d: Any, order: int = 1, tuple_size: int = 1, *, axis: int = -1) -> np.ndarray:
    """``prefixscan.delta_decode``, the inverse of :func:`reference_delta_encode`:
    ``order`` times ``d[j] += d[j-s]`` in increasing ``j``."""
    s = operator.index(tuple_size)

    def decode(values, convert):
        values = list(values)
        for _ in range(order):
            for j in range(s, len(values)):
                values[j] = convert(values[j] + values[j - s])
        return values

    return _map_lanes(d, axis, decode)


def reference_linear_recurrence(a: Any, b: Any, *, init: Any = None, axis: int = -1, reverse: bool = False,
                                dtype: Any = None) -> np.ndarray:
    """``prefixscan.linear_recurrence``: ``h[t] = a[t]*h[t-1] + b[t]`` with
    ``h[-1] = init`` (0 when None); reverse: ``h[t] = a[t]*h[t+1] + b[t]`` with
    ``h[n] = init``.  ``init`` broadcasts to the lane shape.  Computed in double
    precision, rounded once to ``dtype`` (default: ``numpy.result_type(a, b)``)."""
    a, b = as_numpy(a)[0], as_numpy(b)[0]
    shape = np.broadcast_shapes(a.shape, b.shape)
    dt = np.dtype(dtype) if dtype is not None else np.result_type(a.dtype, b.dtype)
    ax = operator.index(axis) % len(shape)
    lane_shape = shape[:ax] + shape[ax + 1:]
    count, n = int(np.prod(lane_shape, dtype=np.int64)), shape[ax]
    a_lanes = np.moveaxis(np.broadcast_to(a, shape), ax, -1).reshape(count, n).tolist()
    b_lanes = np.moveaxis(np.broadcast_to(b, shape), ax, -1).reshape(count, n).tolist()
    inits = np.zeros(count, dt) if init is None else np.broadcast_to(as_numpy(init)[0], lane_shape).reshape(-1)
    convert = scalar_converter(dt)
    results: list = []
    for lane in range(count):
        h = convert(inits[lane])
        row = [None] * n
        for t in (range(n - 1, -1, -1) if reverse else range(n)):
            h = convert(convert(a_lanes[lane][t]) * h + convert(b_lanes[lane][t]))
            row[t] = h
        results.extend(row)
    return np.ascontiguousarray(np.moveaxis(from_scalars(results, lane_shape + (n,), dt.name), -1, ax))


# ---------------------------------------------------------------------------
# Sorting and grouping.

def _order_key(v: Any) -> tuple:
    """A Python scalar's place in the sort order: NaNs after every number; -0.0 and
    0.0 compare equal (Python's ``==``)."""
    return (1, 0) if v != v else (0, v)


def reference_argsort(x: Any, *, axis: int | None = -1, descending: bool = False) -> np.ndarray:
    """``prefixscan.argsort``: the stable permutation (int64) that sorts ``x`` along
    ``axis`` (None: the flattened array), NaNs last; ``descending``: largest first
    and NaNs first, equal keys still in input order.  Python's ``sorted`` per row
    (stable, also with ``reverse=True``)."""
    a = as_numpy(x)[0]
    if axis is None:
        a, axis = a.reshape(-1), 0
    ax = operator.index(axis) % a.ndim
    moved = np.moveaxis(a, ax, -1)
    n = moved.shape[-1]
    count = int(np.prod(moved.shape[:-1], dtype=np.int64))
    rows = moved.reshape(count, n).tolist()
    out = np.empty((count, n), np.int64)
    for r, row in enumerate(rows):
        out[r] = sorted(range(n), key=lambda i: _order_key(row[i]), reverse=descending)
    return np.ascontiguousarray(np.moveaxis(out.reshape(moved.shape), -1, ax))


def reference_unique(x: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``prefixscan.unique`` of 1-D ``x`` with every output: ``(values, index, inverse,
    counts)``.  Equal as by ``==``, and every NaN equal to every other; each value
    is its first occurrence in ``x``."""
    a = as_numpy(x)[0]
    items = a.tolist()
    index: list = []
    counts: list = []
    inverse = [0] * len(items)
    for i in reference_argsort(a).tolist():
        first = items[index[-1]] if index else None
        if not index or not (items[i] == first or (items[i] != items[i] and first != first)):
            index.append(i)
            counts.append(0)
        counts[-1] += 1
        inverse[i] = len(index) - 1
    take = np.array(index, np.int64)
    return a[take], take, np.array(inverse, np.int64), np.array(counts, np.int64)


def reference_run_length_encode(x: Any) -> tuple[np.ndarray, np.ndarray]:
    """``prefixscan.run_length_encode`` of 1-D ``x``: ``(values, counts)`` of the runs
    of consecutive elements equal by ``==`` (a NaN equals nothing); each run's value
    is its first element."""
    a = as_numpy(x)[0]
    items = a.tolist()
    starts = [i for i in range(len(items)) if i == 0 or not items[i] == items[i - 1]]
    counts = [end - start for start, end in zip(starts, starts[1:] + [len(items)])]
    return a[np.array(starts, np.int64)], np.array(counts, np.int64)
