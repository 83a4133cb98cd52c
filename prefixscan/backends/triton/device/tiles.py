"""``@triton.jit`` building blocks of a tile: loads, stores, selections, reductions, in-tile scans.

Everything here is inlined into the kernels of the engine's primitives (the scan
strategies, the segmented scan, compaction, the recurrence); nothing launches on
its own, and nothing here knows about other tiles (that is :mod:`..engine`).

* Loads and stores of field tuples (:func:`_load_at`, :func:`_store_at`): values
  are tuples of fields throughout (a struct-of-arrays monoid such as the affine map
  has two), every pointer argument that carries values is a tuple of pointers, one
  per field, and the tuples are unrolled at compile time, so a single-field scan
  compiles to the same code as a scalar one.
* Exact selections by xor reductions of the bits (:func:`_select`, :func:`_last`,
  :func:`_pick`: no arithmetic on floats), ordered reductions
  (:func:`_ordered_reduce`: combining in index order, for non-commutative monoids).
* The in-tile scan (:func:`_scan_tile`): ``tl.associative_scan``, or raking after
  Merrill & Grimshaw 2009's SRTS (section 4.3.2).

Each monoid comes as two Triton functions (:mod:`.combine`): ``PAIR(a, b)`` on field
tuples and ``FLAT(a0, .., b0, ..)``, the form ``tl.associative_scan``/``tl.reduce``
call.
"""

from __future__ import annotations

import triton
import triton.language as tl


def _fn(combine, _semantic=None):
    """The function inside a constexpr, for ``tl.reduce``/``tl.associative_scan``
    (which, unlike a call, do not unwrap a constexpr parameter)."""
    return combine.value if isinstance(combine, tl.constexpr) else combine


_fn.__triton_builtin__ = True


@triton.jit
def _where(mask, a, b):
    """Field-wise ``tl.where`` over tuples (b may hold scalars)."""
    out = ()
    for i in tl.static_range(len(a)):
        out = out + (tl.where(mask, a[i], b[i]),)
    return out


@triton.jit
def _load_at(ptrs, start, offsets, mask, ident):
    """Load every field at ``start + offsets``, in the accumulator dtype (that of
    ``ident``), with the identity where ``mask`` is False; ``mask=None``: a full tile,
    unmasked.  ``start`` is a scalar added to the pointer first, so that a tile's
    per-element offsets can stay 32-bit (no 64-bit address math per element)."""
    out = ()
    for i in tl.static_range(len(ptrs)):
        if mask is None:
            out = out + (tl.load((ptrs[i] + start) + offsets).to(ident[i].dtype),)
        else:
            out = out + (tl.where(mask, tl.load((ptrs[i] + start) + offsets, mask=mask).to(ident[i].dtype),
                                  ident[i]),)
    return out


@triton.jit
def _store_at(ptrs, start, offsets, values, mask):
    for i in tl.static_range(len(ptrs)):
        if mask is None:
            tl.store((ptrs[i] + start) + offsets, values[i].to(ptrs[i].dtype.element_ty))
        else:
            tl.store((ptrs[i] + start) + offsets, values[i].to(ptrs[i].dtype.element_ty), mask=mask)


@triton.jit
def _load_fields(ptrs, offsets, mask, ident):
    return _load_at(ptrs, 0, offsets, mask, ident)


@triton.jit
def _store_fields(ptrs, offsets, values, mask):
    _store_at(ptrs, 0, offsets, values, mask)


@triton.jit
def _within(inside, mask):
    """``inside & mask``, where ``inside`` None means everywhere (a full tile)."""
    if inside is None:
        return mask
    else:
        return inside & mask


@triton.jit
def _scalars(ptrs, index):
    out = ()
    for i in tl.static_range(len(ptrs)):
        out = out + (tl.load(ptrs[i] + index),)
    return out


@triton.jit
def _xor(a, b):
    return a ^ b


@triton.jit
def _select(values, keep, AXIS: tl.constexpr):
    """The one entry along ``AXIS`` where ``keep`` is True, of every field, exactly:
    the others zeroed as bits, an xor reduction keeps it (no arithmetic on floats)."""
    out = ()
    for i in tl.static_range(len(values)):
        v = values[i]
        if v.dtype.primitive_bitwidth == 64:
            bits = v.to(tl.int64, bitcast=True)
        elif v.dtype.primitive_bitwidth == 32:
            bits = v.to(tl.int32, bitcast=True)
        elif v.dtype.primitive_bitwidth == 16:
            bits = v.to(tl.int16, bitcast=True)
        else:
            bits = v.to(tl.int8, bitcast=True)
        out = out + (tl.reduce(tl.where(keep, bits, 0), AXIS, _xor).to(v.dtype, bitcast=True),)
    return out


@triton.jit
def _last(values, last_index):
    """Entry ``last_index`` along axis 0 of every field, exactly: the other
    entries are zeroed as bits and an xor reduction keeps the one left."""
    if len(values[0].shape) == 1:
        keep = tl.arange(0, values[0].shape[0]) == last_index
    else:
        keep = (tl.arange(0, values[0].shape[0]) == last_index)[:, None]
    return _select(values, keep, 0)


@triton.jit
def _ordered_reduce(values, FLAT: tl.constexpr, COMMUTATIVE: tl.constexpr):
    """Reduce field tuples along axis 0 combining in index order."""
    if COMMUTATIVE:
        result = tl.reduce(values, 0, _fn(FLAT))
    else:
        result = _last(tl.associative_scan(values, 0, _fn(FLAT)), values[0].shape[0] - 1)
    return result


@triton.jit
def _as_rows(values):
    out = ()
    for i in tl.static_range(len(values)):
        out = out + (values[i][None, :],)
    return out


# ---------------------------------------------------------------------------
# In-tile scans.  ``RAKE == 0``: ``tl.associative_scan`` over the whole tile
# (Triton lowers it as a serial scan of each thread's contiguous elements, a
# warp shuffle scan and a scan across warps through shared memory).
# ``RAKE > 0``: raking, after the SRTS kernel of Merrill & Grimshaw 2009
# (section 4.3.2): the tile is cut into rows of RAKE consecutive elements, every
# row is scanned along its own axis, the row totals are scanned, and each row is
# combined with the exclusive prefix of the rows before it.  Triton does not let
# a kernel pin a row to one thread: the reshape leaves the layout to the
# compiler, which keeps a row in one thread's registers when RAKE matches the
# elements a thread holds; otherwise the reshape costs a shuffle through shared
# memory.  Whether it beats the plain scan is for the tuner to measure.


@triton.jit
def _pick(values, index, AXIS: tl.constexpr):
    """Entry ``index`` along axis 1 (``AXIS``) of a 2-D or 3-D field tuple, exactly
    (as :func:`_last`: the other entries zeroed as bits, an xor reduction keeps it)."""
    n: tl.constexpr = values[0].shape[AXIS]
    if len(values[0].shape) == 2:
        keep = (tl.arange(0, n) == index)[None, :]
    else:
        keep = (tl.arange(0, n) == index)[None, :, None]
    return _select(values, keep, AXIS)


@triton.jit
def _raking_scan(values, ident, PAIR: tl.constexpr, FLAT: tl.constexpr, RAKE: tl.constexpr,
                 BACKWARD: tl.constexpr):
    """Inclusive scan of a ``[BLOCK]`` or ``[ROWS, KB]`` tile (field tuple) along axis 0
    by raking: rows of RAKE consecutive elements are scanned, then the row totals,
    and each row is combined with the exclusive prefix of the rows before it
    (after it for ``BACKWARD``), that prefix on the left: order is kept, so
    non-commutative operators are fine (``BACKWARD`` is only used for commutative ones)."""
    n: tl.constexpr = values[0].shape[0]
    R: tl.constexpr = n // RAKE
    two_d: tl.constexpr = len(values[0].shape) == 2
    rows = ()
    for i in tl.static_range(len(values)):
        if two_d:
            rows = rows + (tl.reshape(values[i], [R, RAKE, values[i].shape[1]]),)
        else:
            rows = rows + (tl.reshape(values[i], [R, RAKE]),)
    rows = tl.associative_scan(rows, 1, _fn(FLAT), reverse=BACKWARD)
    totals = _pick(rows, 0 if BACKWARD else RAKE - 1, 1)  # [R] or [R, KB]
    incl = tl.associative_scan(totals, 0, _fn(FLAT), reverse=BACKWARD)
    r = tl.arange(0, R)
    if BACKWARD:
        src = tl.minimum(r + 1, R - 1)
        first = r == R - 1
    else:
        src = tl.maximum(r - 1, 0)
        first = r == 0
    if two_d:
        src = tl.broadcast_to(src[:, None], incl[0].shape)
        first = first[:, None]
    excl = ()
    for i in tl.static_range(len(values)):
        excl = excl + (tl.where(first, ident[i], tl.gather(incl[i], src, 0)),)
    if two_d:
        combined = PAIR(_as_rows_3d(excl), rows)
    else:
        combined = PAIR(_as_cols(excl), rows)
    out = ()
    for i in tl.static_range(len(values)):
        out = out + (tl.reshape(combined[i], values[i].shape),)
    return out


@triton.jit
def _as_cols(values):
    out = ()
    for i in tl.static_range(len(values)):
        out = out + (values[i][:, None],)
    return out


@triton.jit
def _as_rows_3d(values):
    out = ()
    for i in tl.static_range(len(values)):
        out = out + (values[i][:, None, :],)
    return out


@triton.jit
def _scan_tile(scan_in, ident, PAIR: tl.constexpr, FLAT: tl.constexpr, BACKWARD: tl.constexpr,
               RAKE: tl.constexpr):
    """Inclusive scan of a tile along axis 0 (backwards with ``BACKWARD``): raking
    with rows of ``RAKE`` elements, or ``tl.associative_scan`` when it is 0."""
    if RAKE == 0:
        scanned = tl.associative_scan(scan_in, 0, _fn(FLAT), reverse=BACKWARD)
    else:
        scanned = _raking_scan(scan_in, ident, PAIR, FLAT, RAKE, BACKWARD)
    return scanned


@triton.jit
def _total(v, FLAT: tl.constexpr):
    """Sum along axis 0 with the add monoid's combine: in ``v``'s dtype, wrapping as
    the scans do (``tl.sum`` widens small integers, and the interpreter's does not wrap)."""
    return _ordered_reduce((v,), FLAT, True)[0]


@triton.jit
def _count(N: tl.constexpr, like):
    """The element count N in ``like``'s dtype, wrapping for narrow integers: compiled
    Triton refuses a constexpr that does not fit the other operand's type (16384 * an
    int8), where the scan's wrapping arithmetic wants N modulo 2^bits."""
    return tl.full([], N, tl.int32).to(like.dtype)
