"""``linear_recurrence`` on dask arrays.

The linear recurrence is a scan of the affine monoid, so it takes the graph of
:mod:`prefixscan.dask.graph` with its own totals and carries: a chunk's total is
its affine map ``h -> A h + B`` (A the product of its ``a``, B the last state of
its recurrence from a zero start); the carry is the state entering the chunk,
which becomes the ``init`` of the chunk's own recurrence (Blelloch 1990,
"Prefix sums and their applications", section 1.4).  With log decays
(``log_space``) a chunk's A is the sum of its log decays and the totals compose
under the affine monoid over log decays, so no product of decays underflows
between chunks.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import dask.array as da
import numpy as np
from dask.array.utils import meta_from_array

from ..._arrays import as_torch, from_torch, inspect_array
from ..._axes import AxisError
from ..._normalize import check_axis, check_flag, check_init_shape, check_init_value
from ..._request import np_dtype
from ...dask.chunks import check_known_chunks, combine_fields, host_fields, refuse_lazy, same_chunks
from ...dask.graph import scan_chunks
from ...monoid import Monoid, accumulator_dtype_name
from .affine import affine_monoid
from .checks import check_log_space_dtype
from .in_memory import linear_recurrence_total as recurrence_total
from .in_memory import recurrence_in_memory

__all__ = ["linear_recurrence", "RecurrencePieces"]


@dataclass(frozen=True)
class RecurrencePieces:
    """h[t] = a[t] h[t-1] + b[t] over chunks: totals are affine maps (A, B) (A a log
    decay with ``log_space``)."""

    monoid: Monoid  # the affine monoid of the direction
    axis: int
    acc: str
    reverse: bool
    backend: str | None
    rounds: int = 1
    log_space: bool = False

    def total(self, fields: tuple, offset: int, lower: Sequence) -> tuple:
        # The chunk's map (A, B): B its last state (first, in reverse) from a zero start,
        # in one read of a and b on the compiled CPU backend, never a tree of compositions.
        a, b = _one_library(*fields)
        product, state = recurrence_total(a, b, axis=self.axis, reverse=self.reverse, backend=self.backend,
                                          log_space=self.log_space)
        return host_fields((product, state), (self.acc, self.acc))

    def combine(self, left, right):
        return combine_fields(self.monoid, (self.acc, self.acc), left, right)

    def scan(self, fields: tuple, offset: int, carries: Sequence) -> tuple:
        a, b = _one_library(*fields)
        carry = carries[0]
        h = recurrence_in_memory(a, b, init=None if carry is None else carry[1], axis=self.axis,
                                 reverse=self.reverse, backend=self.backend, log_space=self.log_space)
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


def linear_recurrence(a, b, *, init=None, axis=-1, reverse=False, offsets=None, return_final=False, backend=None,
                      log_space=False):
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
    if check_flag(log_space, "log_space"):
        check_log_space_dtype(a.dtype.name)
    acc = accumulator_dtype_name(a.dtype.name)
    lanes = a.shape[:axis] + a.shape[axis + 1:]
    seed = None
    if init is not None:
        check_init_shape(init, lanes)
        value = check_init_value(init, acc)
        value = np.broadcast_to(np.asarray(value.cpu() if hasattr(value, "cpu") else value, dtype=np_dtype(acc)),
                                lanes)
        # The constant map h -> init before the first step (decay 0, log decay -inf): composing it
        # first yields init's state.
        seed = (np.full(lanes, -np.inf if log_space else 0, np_dtype(acc)), np.array(value))
    a, b = same_chunks([a, b]) if a_first else same_chunks([b, a])[::-1]
    pieces = RecurrencePieces(affine_monoid(bool(reverse), log_space=bool(log_space)), axis, acc, bool(reverse),
                              backend, log_space=bool(log_space))
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
