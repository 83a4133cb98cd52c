"""``linear_recurrence`` and ``delta_encode`` on dask arrays.

The linear recurrence is a scan of the affine monoid, so it takes the graph of
:mod:`.graph` with its own totals and carries: a chunk's total is its affine
map ``h -> A h + B`` (A the product of its ``a``, B the last state of its
recurrence from a zero start); the carry is the state entering the chunk, which becomes the ``init`` of the chunk's own recurrence (Blelloch 1990,
"Prefix sums and their applications", section 1.4).

``delta_encode`` needs no carry: each chunk's differences reach ``order *
tuple_size`` elements back, so every chunk is encoded together with that many
elements before it (a halo) and the halo dropped.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import dask.array as da
import numpy as np
from dask.array.utils import meta_from_array
from dask.graph_manipulation import clone

from .._arrays import as_torch, from_native, from_torch, inspect_array
from .._axes import AxisError
from .._normalize import check_axis, check_init_shape, check_init_value
from .._request import np_dtype
from ..algorithms.pieces import to_host
from ..differentiable.affine import affine_monoid
from ..differentiable.recurrence import linear_recurrence as recurrence_in_memory
from ..differentiable.recurrence import linear_recurrence_total as recurrence_total
from ..dispatch import select_backend
from ..monoid import Monoid, accumulator_dtype_name
from .chunked import check_known_chunks, refuse_lazy, same_chunks
from .graph import scan_chunks

__all__ = ["linear_recurrence", "delta_encode", "RecurrencePieces", "host_fields", "combine_fields"]


def host_fields(values, dtypes) -> tuple:
    """Small arrays (one per field; NumPy or CuPy) as host NumPy arrays of the given dtypes."""
    return tuple(np.asarray(to_host(v), dtype=np_dtype(d)) for v, d in zip(values, dtypes))


def combine_fields(monoid: Monoid, dtypes: tuple, left, right):
    """``left ⊕ right`` of host field tuples (``left`` the earlier); None is the identity."""
    if left is None or right is None:
        return right if left is None else left
    with np.errstate(**monoid.numpy_errstate):
        merged = monoid.combine(tuple(left), tuple(right)) if len(left) > 1 else (monoid.combine(left[0], right[0]),)
    return host_fields(merged, dtypes)


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
        # The chunk's map (A, B): B its last state (first, in reverse) from a zero start,
        # in one read of a and b on the compiled CPU backend, never a tree of compositions.
        a, b = _one_library(*fields)
        product, state = recurrence_total(a, b, axis=self.axis, reverse=self.reverse, backend=self.backend)
        return host_fields((product, state), (self.acc, self.acc))

    def combine(self, left, right):
        return combine_fields(self.monoid, (self.acc, self.acc), left, right)

    def scan(self, fields: tuple, offset: int, carries: Sequence) -> tuple:
        a, b = _one_library(*fields)
        carry = carries[0]
        h = recurrence_in_memory(a, b, init=None if carry is None else carry[1], axis=self.axis,
                                 reverse=self.reverse, backend=self.backend)
        return (h,)


def _one_library(a, b) -> tuple:
    """A chunk of ``a`` and one of ``b`` in one library: dask keeps the chunks of a NumPy
    argument (a decay broadcast against CuPy chunks) NumPy, so the host piece is copied
    to the other's device and type."""
    ra, rb = inspect_array(a, "a"), inspect_array(b, "b")
    if (ra.library == "numpy") == (rb.library == "numpy"):
        return a, b
    host, device = (ra, rb) if ra.library == "numpy" else (rb, ra)
    moved = from_torch(as_torch(host).to(as_torch(device).device), device)
    return (moved, b) if host is ra else (a, moved)


def linear_recurrence(a, b, *, init=None, axis=-1, reverse=False, offsets=None, return_final=False, backend=None):
    """:func:`prefixscan.linear_recurrence` of dask arrays ``a``, ``b`` (one of them
    may be a NumPy array or a number): a lazy dask array of the broadcast shape, on
    the chunks of ``a`` (of ``b`` when only ``b`` is a dask array)."""
    if offsets is not None:
        raise NotImplementedError("offsets: packed sequences are not supported on dask arrays; scan each "
                                  "sequence's slice, or use NumPy arrays")
    refuse_lazy(init, "init")
    a_first = isinstance(a, da.Array)  # the dask argument sets the chunks (a's when both are)
    a, b = da.asarray(a), da.asarray(b)
    check_known_chunks((a, b), "a")
    if a.dtype != b.dtype:
        raise TypeError(f"b has dtype {b.dtype} but a has dtype {a.dtype}")
    try:
        shape = np.broadcast_shapes(a.shape, b.shape)
    except ValueError:
        raise ValueError(f"b has shape {b.shape}, which does not broadcast against a's shape {a.shape}") from None
    if not shape:
        raise AxisError("a must have at least one dimension (a and b broadcast to a 0-d shape)")
    a, b = da.broadcast_to(a, shape), da.broadcast_to(b, shape)
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
    a, b = same_chunks([a, b]) if a_first else same_chunks([b, a])[::-1]
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
