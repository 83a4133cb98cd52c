"""``linear_recurrence``, ``delta_encode`` and ``segmented_scan`` on dask arrays.

The linear recurrence and the segmented scan are scans of other monoids, so
they take the graph of :mod:`.graph` with their own totals and carries:

* ``linear_recurrence``: a chunk's total is its affine map ``h -> A h + B``
  (A the product of its ``a``, B its state from a zero start), reduced by a tree
  of compositions; the carry is the state entering the chunk, which becomes
  the ``init`` of the chunk's own recurrence (Blelloch 1990, "Prefix sums and
  their applications", section 1.4);
* ``segmented_scan``: a chunk's total is the operator lifted to (head flag,
  value) pairs (Schwartz 1980; Blelloch 1990, section 1.5): whether a segment
  starts in the chunk and the total of its last (first, in reverse) partial
  segment; the carry joins the chunk's first (last) partial segment.

``delta_encode`` needs no carry: each chunk's differences reach ``order *
tuple_size`` elements back, so every chunk is encoded together with that many
elements before it (a halo) and the halo dropped.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import dask.array as da
import numpy as np
from dask.array.utils import meta_from_array
from dask.base import tokenize
from dask.graph_manipulation import clone
from dask.highlevelgraph import HighLevelGraph

from .._arrays import from_native, inspect_array
from .._normalize import check_axis, check_init_shape, check_init_value, check_segments
from .._request import np_dtype
from ..algorithms.reduction import reduce as reduce_lanes
from ..differentiable.affine import affine_monoid
from ..differentiable.recurrence import linear_recurrence as recurrence_in_memory
from ..dispatch import select_backend
from ..monoid import Monoid, accumulator_dtype_name
from .chunked import check_known_chunks, refuse_lazy, same_chunks
from .graph import scan_chunks

__all__ = ["linear_recurrence", "delta_encode", "segmented_scan", "RecurrencePieces", "SegmentedPieces"]


def _host_tuple(values, dtypes) -> tuple:
    return tuple(np.asarray(v if not hasattr(v, "get") else v.get(), dtype=np_dtype(d))
                 for v, d in zip(values, dtypes))


def _combine(monoid: Monoid, dtypes: tuple, left, right):
    if left is None or right is None:
        return right if left is None else left
    with np.errstate(**monoid.numpy_errstate):
        merged = monoid.combine(tuple(left), tuple(right)) if len(left) > 1 else (monoid.combine(left[0], right[0]),)
    return _host_tuple(merged, dtypes)


# ---------------------------------------------------------------------------
# linear_recurrence

@dataclass(frozen=True)
class RecurrencePieces:
    """h[t] = a[t] h[t-1] + b[t] over chunks: totals are affine maps (A, B)."""

    monoid: Monoid  # the affine monoid of the direction
    axis: int
    acc: str
    reverse: bool
    backend: str | None
    rounds: int = 1

    def total(self, fields: tuple, offset: int, lower: Sequence) -> tuple:
        a, b = fields
        return _host_tuple(reduce_lanes((a, b), self.monoid, axis=self.axis, dtype=None), (self.acc, self.acc))

    def combine(self, left, right):
        return _combine(self.monoid, (self.acc, self.acc), left, right)

    def scan(self, fields: tuple, offset: int, carries: Sequence) -> tuple:
        a, b = fields
        carry = carries[0]
        h = recurrence_in_memory(a, b, init=None if carry is None else carry[1], axis=self.axis,
                                 reverse=self.reverse, backend=self.backend)
        return (h,)


def linear_recurrence(a, b, *, init=None, axis=-1, reverse=False, offsets=None, return_final=False, backend=None):
    """:func:`prefixscan.linear_recurrence` of dask arrays ``a``, ``b`` (one of them
    may be a NumPy array or a number): a lazy dask array of the broadcast shape,
    chunked as ``a`` and ``b`` broadcast together."""
    if offsets is not None:
        raise NotImplementedError("offsets: packed sequences are not supported on dask arrays; scan each "
                                  "sequence's slice, or use NumPy arrays")
    refuse_lazy(init, "init")
    a, b = da.asarray(a), da.asarray(b)
    check_known_chunks((a, b), "a")
    if a.dtype != b.dtype:
        raise TypeError(f"b has dtype {b.dtype} but a has dtype {a.dtype}")
    try:
        a, b = da.broadcast_arrays(a, b)
    except ValueError:
        raise ValueError(f"b has shape {b.shape}, which does not broadcast against a's shape {a.shape}") from None
    if a.ndim == 0:
        raise ValueError("a must have at least one dimension (a and b broadcast to a 0-d shape)")
    axis = check_axis(inspect_array(a, "a"), axis, "a")
    if not isinstance(reverse, (bool, np.bool_)) or not isinstance(return_final, (bool, np.bool_)):
        raise TypeError("reverse and return_final must be True or False")
    acc = accumulator_dtype_name(a.dtype.name)
    lanes = a.shape[:axis] + a.shape[axis + 1:]
    seed = None
    if init is not None:
        check_init_shape(init, lanes)
        value = check_init_value(init, acc)
        value = np.broadcast_to(np.asarray(value.cpu() if hasattr(value, "cpu") else value, dtype=np_dtype(acc)),
                                lanes)
        # The constant map h -> init before the first step: composing it first yields init's state.
        seed = (np.zeros(lanes, np_dtype(acc)), np.array(value))
    a, b = same_chunks([a, b])
    pieces = RecurrencePieces(affine_monoid(bool(reverse)), axis, acc, bool(reverse), backend)
    meta = meta_from_array(a, a.ndim, dtype=a.dtype)
    (h,) = scan_chunks(pieces, [a, b], axis=axis, seed=seed, metas=[meta])
    if not return_final:
        return h
    n = a.shape[axis]
    if n:
        final = h[(slice(None),) * axis + (0 if reverse else n - 1,)]
    else:
        final = da.from_array(np.zeros(lanes, a.dtype) if seed is None else seed[1].astype(a.dtype))
    return h, final


# ---------------------------------------------------------------------------
# delta_encode

def _delta_block(block, halo, *, order: int, tuple_size: int, axis: int, backend: str | None):
    """One chunk's differences, with the ``halo`` of elements before it."""
    m, h = block.shape[axis], halo.shape[axis]
    joined = np.concatenate([halo, block], axis=axis) if h else block
    pad = -joined.shape[axis] % tuple_size
    if pad:  # differences look back only: zeros after the chunk change nothing in it
        shape = list(joined.shape)
        shape[axis] = pad
        joined = np.concatenate([joined, np.zeros_like(joined, shape=tuple(shape))], axis=axis)
    ref = inspect_array(joined)
    chosen = select_backend(backend, ref.device)
    d = from_native(chosen.delta_encode(ref, order, tuple_size, axis), ref, chosen.NATIVE_LIBRARY, ref.dtype)
    return d[(slice(None),) * axis + (slice(h, h + m),)]


def delta_encode(x, order: int, tuple_size: int, *, axis: int, backend=None):
    """:func:`prefixscan.delta_encode` of a dask array (arguments checked): lazy, x's chunks."""
    check_known_chunks((x,), "x")
    reach = order * tuple_size
    sizes = x.chunks[axis]
    starts = np.cumsum((0,) + sizes)[:-1]
    source = clone(x, assume_layers=True)  # the halos' own reads, not held for the chunks' tasks
    halos = []
    for start in starts:
        lo = max(0, int(start) - reach)
        halos.append(source[(slice(None),) * axis + (slice(lo, int(start)),)])
    halo = da.concatenate(halos, axis=axis).rechunk({axis: tuple(h.shape[axis] for h in halos)})
    halo = halo.rechunk({i: c for i, c in enumerate(x.chunks) if i != axis})
    index = tuple(range(x.ndim))
    encoded = da.blockwise(_delta_block, index, x, index, halo, index, order=order, tuple_size=tuple_size,
                           axis=axis, backend=backend, align_arrays=False, meta=meta_from_array(x),
                           token="prefixscan-delta-encode")
    return da.Array(encoded.dask, encoded.name, x.chunks, meta=meta_from_array(x))


# ---------------------------------------------------------------------------
# segmented_scan with offsets

@dataclass(frozen=True)
class SegmentedPieces:
    """A segmented scan over chunks: totals are (a segment starts here, the value of
    the chunk's last partial segment, or its first in reverse)."""

    monoid: Monoid
    accs: tuple
    inclusive: bool
    reverse: bool
    chunk_scan: Any  # prefixscan.segmented_scan, on one chunk
    rounds: int = 1

    def total(self, fields: tuple, offset: int, lower: Sequence) -> tuple:
        *values, heads = fields
        m = values[0].shape[0]
        if self.reverse:
            part = slice(0, int(heads[0]) if len(heads) else m)
        else:
            part = slice(int(heads[-1]) if len(heads) else 0, m)
        total = reduce_lanes(tuple(v[part] for v in values) if len(values) > 1 else values[0][part], self.monoid)
        return (bool(len(heads)), _host_tuple(total if len(values) > 1 else (total,), self.accs))

    def combine(self, left, right):
        if left is None or right is None:
            return right if left is None else left
        (fa, va), (fb, vb) = left, right
        if self.reverse:  # a segment head in the left part keeps its leading value
            value = va if fa else _combine(self.monoid, self.accs, va, vb)
        else:
            value = vb if fb else _combine(self.monoid, self.accs, va, vb)
        return (fa or fb, value)

    def scan(self, fields: tuple, offset: int, carries: Sequence) -> tuple:
        *values, heads = fields
        m = values[0].shape[0]
        starts = np.union1d([0], heads).astype(np.int64) if m else np.zeros(1, np.int64)
        x = tuple(values) if len(values) > 1 else values[0]
        local = self.chunk_scan(x, self.monoid, offsets=starts, inclusive=self.inclusive, reverse=self.reverse)
        local = list(local) if len(values) > 1 else [local]
        carry = carries[0]
        if carry is None or not m:
            return tuple(local)
        if self.reverse:  # the carry joins the chunk's last segment, from its right
            part = slice(int(heads[-1]) if len(heads) else 0, m)
        else:  # ... or its first segment, from its left
            part = slice(0, int(heads[0]) if len(heads) else m)
        fields_acc = tuple(y[part].astype(np_dtype(a)) for y, a in zip(local, self.accs))
        with np.errstate(**self.monoid.numpy_errstate):
            merged = _apply(self.monoid, fields_acc, carry[1], self.reverse)
        for y, v in zip(local, merged):
            y[part] = v
        return tuple(local)


def _apply(monoid: Monoid, fields: tuple, carry: tuple, reverse: bool) -> tuple:
    """``carry ⊕ y`` (or ``y ⊕ carry`` in reverse) elementwise over a part of a chunk."""
    if len(fields) == 1:
        return (monoid.combine(fields[0], carry[0]) if reverse else monoid.combine(carry[0], fields[0]),)
    return tuple(monoid.combine(fields, carry) if reverse else monoid.combine(carry, fields))


def _heads_array(heads: np.ndarray, chunks: tuple) -> da.Array:
    """Each chunk's segment heads, local to the chunk, as a dask array aligned with
    the chunks (its blocks are 1-D index arrays)."""
    bounds = np.cumsum((0,) + chunks[0])
    name = "prefixscan-heads-" + tokenize(heads, chunks)
    dsk = {}
    for k in range(len(chunks[0])):
        lo, hi = np.searchsorted(heads, [bounds[k], bounds[k + 1]])
        dsk[(name, k)] = heads[lo:hi] - bounds[k]
    graph = HighLevelGraph.from_collections(name, dsk, dependencies=[])
    return da.Array(graph, name, chunks, meta=np.empty(0, np.int64))


def _heads(n: int, kind: str, given: np.ndarray) -> np.ndarray:
    """Sorted positions where segments start, from checked flags, offsets or keys."""
    if kind == "flags":
        heads = np.flatnonzero(given)
    elif kind == "offsets":
        heads = np.unique(given[given < n])
    else:
        heads = np.flatnonzero(given[1:] != given[:-1]) + 1 if n else np.zeros(0, np.int64)
    return np.union1d([0], heads).astype(np.int64) if n else heads.astype(np.int64)


def segmented_scan(x, monoid: Monoid, *, flags=None, offsets=None, keys=None, inclusive=True, reverse=False,
                   chunk_scan=None):
    """:func:`prefixscan.segmented_scan` of a 1-D dask array (or tuple of them; values
    checked) with host ``flags``, ``offsets`` or ``keys``: lazy, x's chunks.
    ``chunk_scan`` is ``prefixscan.segmented_scan`` itself, run on every chunk."""
    for value, name in ((flags, "flags"), (offsets, "offsets"), (keys, "keys")):
        refuse_lazy(value, name)
    values = list(x) if isinstance(x, tuple) else [x]
    check_known_chunks(values, "x")
    n = values[0].shape[0]
    heads = _heads(n, *check_segments(n, flags, offsets, keys))
    values = same_chunks(values)
    accs = tuple(accumulator_dtype_name(v.dtype.name) for v in values)
    pieces = SegmentedPieces(monoid, accs, bool(inclusive), bool(reverse), chunk_scan)
    metas = [meta_from_array(v, 1, dtype=v.dtype) for v in values]
    results = scan_chunks(pieces, values + [_heads_array(heads, values[0].chunks)], axis=0, seed=None,
                          metas=metas)
    return tuple(results) if isinstance(x, tuple) else results[0]

