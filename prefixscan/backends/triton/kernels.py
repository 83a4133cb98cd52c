"""Single-pass scan kernels: tiles scanned in registers + decoupled look-back.

Merrill & Garland 2016 (seed 003), "Single-pass Parallel Prefix Scan with
Decoupled Look-back":

* Each program takes a tile id from an atomic counter, so tiles start in id
  order and no tile ever waits on one that has not started (forward progress
  without co-scheduling guarantees).
* It loads its tile, reduces it, and publishes the aggregate with flag A at
  once, then inspects a *window* of up to ``WINDOW`` predecessors in one vector
  load: every entry after the nearest inclusive prefix (flag P) must be A; their
  aggregates and that prefix give the tile's exclusive prefix.  Entries still X
  (not ready) make it wait, keeping what it already folded in.  It publishes its
  inclusive prefix with flag P, scans the tile in registers
  (``tl.associative_scan``: per-thread serial, warp Kogge-Stone, cross-warp) and
  writes it: each element is read once and written once (2n bytes).
* Status words (``WORDS > 0``): an entry is ``WORDS`` 64-bit words, each holding
  32 bits of the value (a field of <= 32 bits takes one word, a 64-bit field two)
  next to the tag, written by relaxed atomic exchanges and read by relaxed atomics
  (:func:`_read_word`).  A reader accepts an entry only when every word carries
  the same tag: each word of an entry is written once per state and call, so equal
  tags mean the parts come from one publication (seed 004, section 3.2, packs one
  word; CUB packs 16 bytes).  No fences, and all words of a window come back from
  one atomic (:func:`_load_window`).  Wider values (``WORDS == 0``) publish a flag
  with release semantics after value arrays and read it with acquire.  On the
  H200, int64 went from 0.67 of copy (flags) to 0.90 (words; NOTES.md, run e).
* Flags carry the call's epoch (``epoch * 4 + flag``), so the status buffer is
  reused across calls without a memset: a word from an earlier call reads as X.

Lanes are ``(B, M, K)`` row-major views scanned along M: ``K == 1`` takes the
1-D kernel; ``K > 1`` (a lane along a non-last axis, or ``tuple_size``
interleaved streams) takes the 2-D kernel whose tiles are ``[ROWS, KB]``
blocks, one status entry per column, or, for one 4-byte field and K <= 3, the
masked-columns kernel (1-D tiles of the lane, :func:`scan_cols_kernel`).

Orders (SAM's higher-order prefix sums, seed 002): order q runs q scans of the
tile in registers, each with its own look-back (status entries of order k at
``k * order_stride``); order 2 of a sum publishes both orders' tile sums at once
and needs one look-back (:func:`_order2_1d`, the binomial shift).

Values are tuples of fields throughout (a struct-of-arrays monoid such as the
affine map has two); every pointer argument that carries values is a tuple of
pointers, one per field.  The tuples are unrolled at compile time, so a
single-field scan compiles to the same code as a scalar one.  Each monoid comes
as two Triton functions (:mod:`.combine`): ``PAIR(a, b)`` on field tuples and
``FLAT(a0, .., b0, ..)``, the form ``tl.associative_scan``/``tl.reduce`` call.
"""

from __future__ import annotations

import triton
import triton.language as tl

FLAG_AGGREGATE = tl.constexpr(1)
FLAG_PREFIX = tl.constexpr(2)


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
def _bits32(value):
    """The bits of a value of <= 32 bits as uint32 (zero-extended)."""
    if value.dtype.primitive_bitwidth == 32:
        bits = value.to(tl.uint32, bitcast=True)
    elif value.dtype.primitive_bitwidth == 16:
        bits = value.to(tl.uint16, bitcast=True).to(tl.uint32)
    else:
        bits = value.to(tl.uint8, bitcast=True).to(tl.uint32)
    return bits


@triton.jit
def _from_bits32(bits, ACC: tl.constexpr):
    """Inverse of :func:`_bits32`: the ``ACC`` value (<= 32 bits) in the low bits of uint32 ``bits``."""
    if ACC.primitive_bitwidth == 32:
        value = bits.to(ACC, bitcast=True)
    elif ACC.primitive_bitwidth == 16:
        value = bits.to(tl.uint16).to(ACC, bitcast=True)
    else:
        value = bits.to(tl.uint8).to(ACC, bitcast=True)
    return value


@triton.jit
def _pack_word(value, tag):
    """``tag`` in the high 32 bits of an int64 word, the bits of ``value`` (<= 32) in the low ones."""
    return (tag.to(tl.int64) << 32) | _bits32(value).to(tl.int64)


@triton.jit
def _word_value(word, ACC: tl.constexpr):
    """The value of ``ACC`` type in the low bits of a packed word (see :func:`_pack_word`)."""
    return _from_bits32((word & 0xFFFFFFFF).to(tl.uint32), ACC)


@triton.jit
def _read_word(ptrs, mask):
    """Read status words with a relaxed atomic (adding 0), not a volatile load.

    Why: a load is something Triton's layout pass may rematerialize.  It duplicated
    the volatile window load of the 2-D look-back into two loads in two layouts,
    one feeding the flags and the other the values, so that one word read twice
    while it changed gave a prefix flag next to a value from before it: wrong
    prefixes, now and then (the H200 chained 2-D failure, NOTES.md).  An atomic
    has side effects and is never duplicated, and it is served by L2 as a
    volatile load is."""
    return tl.atomic_add(ptrs, 0, mask=mask, sem="relaxed")


@triton.jit
def _parts(values):
    """The 32-bit parts of a field tuple, in order: one per field of <= 32 bits,
    two (low, high) per 64-bit field; ``WORDS`` is their count."""
    out = ()
    for i in tl.static_range(len(values)):
        v = values[i]
        if v.dtype.primitive_bitwidth == 64:
            bits = v.to(tl.uint64, bitcast=True)
            out = out + ((bits & 0xFFFFFFFF).to(tl.uint32), (bits >> 32).to(tl.uint32))
        else:
            out = out + (_bits32(v),)
    return out


@triton.jit
def _from_parts(parts, ident):
    """Inverse of :func:`_parts`: fields of the types of ``ident``."""
    out = ()
    rest = parts  # the parts of the fields not yet rebuilt
    for i in tl.static_range(len(ident)):
        acc = ident[i].dtype
        if acc.primitive_bitwidth == 64:
            bits = rest[0].to(tl.uint64) | (rest[1].to(tl.uint64) << 32)
            out = out + (bits.to(acc, bitcast=True),)
            rest = rest[2:]
        else:
            out = out + (_from_bits32(rest[0], acc),)
            rest = rest[1:]
    return out


@triton.jit
def _join_words(base, WORDS: tl.constexpr):
    """Word indices ``base + k`` for k < ``WORDS`` (1, 2 or 4), joined along new
    trailing axes: Triton keeps joined axes in one thread."""
    if WORDS == 1:
        out = base
    elif WORDS == 2:
        out = tl.join(base, base + 1)
    else:
        out = tl.join(tl.join(base, base + 1), tl.join(base + 2, base + 3))
    return out


@triton.jit
def _join_copies(x, WORDS: tl.constexpr):
    """``x`` repeated as :func:`_join_words` lays out its indices."""
    if WORDS == 1:
        out = x
    elif WORDS == 2:
        out = tl.join(x, x)
    else:
        out = tl.join(tl.join(x, x), tl.join(x, x))
    return out


@triton.jit
def _split_words(words, WORDS: tl.constexpr):
    """Inverse of :func:`_join_words`: a tuple of ``WORDS`` tensors."""
    if WORDS == 1:
        out = (words,)
    elif WORDS == 2:
        a, b = tl.split(words)
        out = (a, b)
    else:
        lo, hi = tl.split(words)
        a, b = tl.split(lo)
        c, d = tl.split(hi)
        out = (a, b, c, d)
    return out


@triton.jit
def _publish(status_ptr, flag_ptr, value_ptrs, index, value, state, epoch, WORDS: tl.constexpr):
    """Publish field tuple ``value`` with ``state`` at status entries ``index`` (scalar or [KB])."""
    if WORDS:  # tag and 32 bits of the value in each of the entry's words
        parts = _parts(value)
        tag = (epoch * 4 + state).to(tl.int64) << 32
        for j in tl.static_range(WORDS):
            tl.atomic_xchg(status_ptr + index * WORDS + j, tag | parts[j].to(tl.int64), sem="relaxed")
    else:
        for i in tl.static_range(len(value_ptrs)):
            tl.store(value_ptrs[i] + index, value[i])
        tl.atomic_xchg(flag_ptr + index, epoch * 4 + state, sem="release")


@triton.jit
def _load_window(status_ptr, flag_ptr, agg_ptrs, incl_ptrs, index, valid, epoch, ident,
                 WORDS: tl.constexpr):
    """(state, field tuple) of status entries ``index``; state 0 where not valid, and
    where the entry's words do not all carry one tag yet (a publication half seen)."""
    if WORDS:
        # Every word of the window in one atomic: Triton broadcasts each atomic's
        # result through shared memory behind a barrier, so word-by-word reads
        # cost one L2 round trip per word, in sequence.  Joined, an entry's words
        # sit in one thread and split back without data movement.
        inside = _join_copies(valid, WORDS)
        words = _split_words(tl.where(inside, _read_word(status_ptr + _join_words(index * WORDS, WORDS), inside), 0),
                             WORDS)
        tag = (words[0] >> 32).to(tl.int32)
        same = valid
        parts = ()
        for k in tl.static_range(WORDS):
            if k > 0:
                same = same & ((words[k] >> 32).to(tl.int32) == tag)
            parts = parts + ((words[k] & 0xFFFFFFFF).to(tl.uint32),)
        state = tl.where(same & ((tag >> 2) == epoch), tag & 3, 0)
        values = _from_parts(parts, ident)
    else:
        tag = tl.atomic_add(flag_ptr + index, 0, mask=valid, sem="acquire")
        state = tl.where(valid & ((tag >> 2) == epoch), tag & 3, 0)
        is_prefix = state == FLAG_PREFIX
        values = ()
        for i in tl.static_range(len(agg_ptrs)):
            values = values + (tl.where(is_prefix,
                                        tl.load(incl_ptrs[i] + index, mask=valid & is_prefix, volatile=True),
                                        tl.load(agg_ptrs[i] + index, mask=valid & (state == FLAG_AGGREGATE),
                                                volatile=True)),)
    return state, values


@triton.jit
def _lookback_1d(status_ptr, flag_ptr, agg_ptrs, incl_ptrs, lane_base, tile, ident, epoch,
                 PAIR: tl.constexpr, FLAT: tl.constexpr, COMMUTATIVE: tl.constexpr,
                 WORDS: tl.constexpr, CHAINED: tl.constexpr, WINDOW: tl.constexpr, ORDER2_BLOCK: tl.constexpr = 0):
    """Exclusive prefix of ``tile`` (> 0) of one lane; status entry of tile t: lane_base + t.

    A 1-D window, so that each entry is loaded by one thread, not by all.  With
    ``CHAINED`` (run with WINDOW = 1) it waits for the predecessor's inclusive
    prefix and uses nothing else: the chained scan, bitwise reproducible.
    ``ORDER2_BLOCK`` > 0: entries are the (order 1, order 2) sums of tiles of that
    many elements, folded with the binomial shift (see :func:`_order2_1d`).
    """
    rows = tl.arange(0, WINDOW)
    end = tile  # the window is [end - WINDOW, end)
    acc = ident
    done = 0
    while done == 0:
        widx = end - WINDOW + rows
        valid = widx >= 0
        state, value = _load_window(status_ptr, flag_ptr, agg_ptrs, incl_ptrs, lane_base + widx, valid, epoch,
                                    ident, WORDS)
        # One reduction finds the last entry that stops the fold (a prefix, or
        # not ready yet) and whether it is a prefix: key = 2 * row + is_prefix.
        # CHAINED (deterministic): every entry stops the fold, so only the
        # predecessor's inclusive prefix is ever used, in a fixed order.
        stops = (state != FLAG_AGGREGATE) | ~valid | CHAINED
        key = tl.max(tl.where(stops, rows * 2 + (valid & (state == FLAG_PREFIX)).to(tl.int32), -2), 0)
        stop = key >> 1
        found = (key & 1) == 1
        take = valid & ((rows > stop) | ((rows == stop) & found))
        if ORDER2_BLOCK:
            acc = _fold_order2(value, take, acc, rows, tile - end, FLAT, WINDOW, ORDER2_BLOCK)
        else:
            acc = PAIR(_ordered_reduce(_where(take, value, ident), FLAT, COMMUTATIVE), acc)
        end = tl.where(stop >= 0, end - WINDOW + stop + 1, end - WINDOW)
        done = found.to(tl.int32)
    return acc


@triton.jit
def _lookback(status_ptr, flag_ptr, agg_ptrs, incl_ptrs, lane_base, tile, ident, epoch,
              PAIR: tl.constexpr, FLAT: tl.constexpr, COMMUTATIVE: tl.constexpr,
              WORDS: tl.constexpr, CHAINED: tl.constexpr, WINDOW: tl.constexpr, KB: tl.constexpr):
    """Exclusive prefix of ``tile`` (> 0) from its predecessors' status, per column (2-D kernel).

    Status entry of tile t, column c: ``(lane_base + t) * KB + c``.
    Returns a tuple of [KB] tensors.
    """
    rows = tl.arange(0, WINDOW)[:, None]
    cols = tl.arange(0, KB)[None, :]
    zero_cols = tl.zeros([KB], dtype=tl.int64)
    end = zero_cols + tile  # per column: the window is [end - WINDOW, end)
    acc = _where(zero_cols == 0, ident, ident)
    done = zero_cols == 1
    while tl.min(done.to(tl.int32)) == 0:
        widx = end[None, :] - WINDOW + rows  # [WINDOW, KB]
        valid = (widx >= 0) & (~done)[None, :]
        index = (lane_base + widx) * KB + cols
        state, value = _load_window(status_ptr, flag_ptr, agg_ptrs, incl_ptrs, index, valid, epoch, ident,
                                    WORDS)
        # Per column, the last entry that stops the fold (a prefix, or not
        # ready yet) and whether it is a prefix, in one reduction (see _lookback_1d).
        # CHAINED (deterministic): every entry stops the fold, so only the
        # predecessor's inclusive prefix is ever used, in a fixed order.
        stops = (state != FLAG_AGGREGATE) | ~valid | CHAINED
        key = tl.max(tl.where(stops, rows * 2 + (valid & (state == FLAG_PREFIX)).to(tl.int32), -2), 0)  # [KB]
        stop = key >> 1
        found = (key & 1) == 1
        take = valid & ((rows > stop[None, :]) | ((rows == stop[None, :]) & found[None, :]))
        part = _ordered_reduce(_where(take, value, ident), FLAT, COMMUTATIVE)
        acc = _where(done, acc, PAIR(part, acc))
        end = tl.where(done | found, end, tl.where(stop >= 0, end - WINDOW + stop + 1, end - WINDOW))
        done = done | found
    return acc


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
# ``RAKE > 0``: raking, after Merrill & Grimshaw's SRTS kernel (seed 000,
# section 4.3.2): the tile is cut into rows of RAKE consecutive elements, every
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
def _order_1d(values, scan_in, k, seed, vid, tile, lane, tiles_per_lane, order_stride, ident,
              status_ptr, flag_ptr, agg_ptrs, incl_ptrs, epoch,
              PAIR: tl.constexpr, FLAT: tl.constexpr, COMMUTATIVE: tl.constexpr, REVERSE: tl.constexpr,
              WORDS: tl.constexpr, SINGLE_TILE: tl.constexpr, CHAINED: tl.constexpr, WINDOW: tl.constexpr,
              RAKE: tl.constexpr):
    """One order of the 1-D scan: the tile's aggregate of ``values`` (order k-1's
    result), the look-back over order k's status entries (from ``k * order_stride``),
    and the scan of ``scan_in`` seeded with the prefix."""
    if SINGLE_TILE:
        prefix = seed
    else:
        agg = _ordered_reduce(values, FLAT, COMMUTATIVE)
        entry = vid + k * order_stride
        if tile == 0:
            prefix = seed
        else:
            if not CHAINED:
                _publish(status_ptr, flag_ptr, agg_ptrs, entry, agg, FLAG_AGGREGATE, epoch, WORDS)
            prefix = _lookback_1d(status_ptr, flag_ptr, agg_ptrs, incl_ptrs,
                                  lane * tiles_per_lane + k * order_stride, tile,
                                  ident, epoch, PAIR, FLAT, COMMUTATIVE, WORDS, CHAINED, WINDOW)
        _publish(status_ptr, flag_ptr, incl_ptrs, entry, PAIR(prefix, agg), FLAG_PREFIX, epoch, WORDS)
    return PAIR(prefix, _scan_tile(scan_in, ident, PAIR, FLAT, REVERSE and COMMUTATIVE, RAKE))


@triton.jit
def _columns_prefix(agg, seed, entry, tile, lane_base, ident, status_ptr, flag_ptr, agg_ptrs, incl_ptrs, epoch,
                    PAIR: tl.constexpr, FLAT: tl.constexpr, COMMUTATIVE: tl.constexpr, WORDS: tl.constexpr,
                    CHAINED: tl.constexpr, WINDOW: tl.constexpr, KB: tl.constexpr):
    """Exclusive prefix of a tile's KB columns (fields of [KB]) from its aggregate
    ``agg``: published, the look-back (:func:`_lookback`, predecessors' entries
    from ``lane_base``), then the inclusive prefix published at ``entry``; the
    lane's first tile starts from ``seed``."""
    if tile == 0:
        prefix = seed
    else:
        if not CHAINED:
            _publish(status_ptr, flag_ptr, agg_ptrs, entry, agg, FLAG_AGGREGATE, epoch, WORDS)
        prefix = _lookback(status_ptr, flag_ptr, agg_ptrs, incl_ptrs, lane_base, tile, ident, epoch, PAIR, FLAT,
                           COMMUTATIVE, WORDS, CHAINED, WINDOW, KB)
    _publish(status_ptr, flag_ptr, incl_ptrs, entry, PAIR(prefix, agg), FLAG_PREFIX, epoch, WORDS)
    return prefix


@triton.jit
def _order_2d(values, scan_in, k, seed, vid, tile, group, tiles_per_lane, order_stride, ident,
              status_ptr, flag_ptr, agg_ptrs, incl_ptrs, epoch,
              PAIR: tl.constexpr, FLAT: tl.constexpr, COMMUTATIVE: tl.constexpr, WORDS: tl.constexpr,
              SINGLE_TILE: tl.constexpr, CHAINED: tl.constexpr, WINDOW: tl.constexpr, KB: tl.constexpr,
              RAKE: tl.constexpr):
    """One order of the 2-D scan (see :func:`_order_1d`), per column of the tile."""
    if SINGLE_TILE:
        prefix = seed
    else:
        prefix = _columns_prefix(_ordered_reduce(values, FLAT, COMMUTATIVE), seed,
                                 (vid + k * order_stride) * KB + tl.arange(0, KB), tile,
                                 group * tiles_per_lane + k * order_stride, ident, status_ptr, flag_ptr, agg_ptrs,
                                 incl_ptrs, epoch, PAIR, FLAT, COMMUTATIVE, WORDS, CHAINED, WINDOW, KB)
    return PAIR(_as_rows(prefix), _scan_tile(scan_in, ident, PAIR, FLAT, False, RAKE))


@triton.jit
def _total(v, FLAT: tl.constexpr):
    """Sum along axis 0 with the add monoid's combine: in ``v``'s dtype, wrapping as
    the scans do (``tl.sum`` widens small integers, and the interpreter's does not wrap)."""
    return _ordered_reduce((v,), FLAT, True)[0]


@triton.jit
def _fold_order2(value, take, acc, rows, acc_tiles, FLAT: tl.constexpr, WINDOW: tl.constexpr, BLOCK: tl.constexpr):
    """``acc`` (the (order 1, order 2) sums of the ``acc_tiles`` tiles after the
    window) with the window's taken entries before it, each a whole tile of BLOCK
    elements: a segment A then B combine as (A1 + B1, A2 + B2 + len(B) * A1), so the
    taken entries fold to (sum T1, sum T2 + BLOCK * tiles after each * T1), the
    taken entries being the window's last ones."""
    t1 = tl.where(take, value[0], 0)
    after = ((WINDOW - 1 - rows) * BLOCK).to(t1.dtype)
    part1 = _total(t1, FLAT)
    part2 = _total(tl.where(take, value[1], 0) + after * t1, FLAT)
    return part1 + acc[0], acc[1] + part2 + (acc_tiles * BLOCK).to(t1.dtype) * part1


@triton.jit
def _order2_1d(x, seed, vid, tile, lane, tiles_per_lane, ident, status_ptr, flag_ptr, agg_ptrs, incl_ptrs, epoch,
               PAIR: tl.constexpr, FLAT: tl.constexpr, BACKWARD: tl.constexpr, WORDS: tl.constexpr,
               SINGLE_TILE: tl.constexpr, CHAINED: tl.constexpr, WINDOW: tl.constexpr, RAKE: tl.constexpr,
               BLOCK: tl.constexpr):
    """Order 2 of a sum with one look-back (issue 4; the general path runs one per order).

    A segment's status is its local (order 1, order 2) sums at its last element,
    (T1, T2).  Segments A then B combine as (A1 + B1, A2 + B2 + len(B) * A1): the
    binomial shift, C(len(B), 1) for order 2 (the order-1 carry of A adds A1 to each
    of B's order-1 values, hence len(B) * A1 to B's order-2 sum).  So a tile
    publishes (T1, T2) at once, reads one prefix (c1, c2) (the lane's seed counts
    as (seed, seed): seeded scans add it at each order), and writes
    c2 + scan(c1 + scan(x)).  Tile-local work: 3 scans and 2 reductions instead of
    2 scans, 2 reductions and 2 look-backs in sequence (bench/tile_study.py, run f:
    the order-1 look-backs in sequence are what int32 orders lose to)."""
    u1 = _scan_tile(x, ident, PAIR, FLAT, BACKWARD, RAKE)
    c1 = seed[0]
    c2 = seed[0]
    if not SINGLE_TILE:
        agg = (_total(x[0], FLAT), _total(u1[0], FLAT))
        if tile > 0:
            if not CHAINED:
                _publish(status_ptr, flag_ptr, agg_ptrs, vid, agg, FLAG_AGGREGATE, epoch, WORDS)
            c1, c2 = _lookback_1d(status_ptr, flag_ptr, agg_ptrs, incl_ptrs, lane * tiles_per_lane, tile,
                                  (ident[0], ident[0]), epoch, PAIR, FLAT, True, WORDS, CHAINED, WINDOW, BLOCK)
        _publish(status_ptr, flag_ptr, incl_ptrs, vid, (c1 + agg[0], c2 + agg[1] + BLOCK * c1), FLAG_PREFIX, epoch,
                 WORDS)
    v1 = (u1[0] + c1,)
    v2 = _scan_tile(v1, ident, PAIR, FLAT, BACKWARD, RAKE)
    return (v2[0] + c2,)


@triton.jit
def _tile_id(counter_ptr, tile_base, tiles_per_lane, length, BLOCK: tl.constexpr, SINGLE_TILE: tl.constexpr):
    """(tile id, whether the tile is full) of this program, for tiles of BLOCK elements
    over lanes of ``length``.  Ids come from the counter (``tile_base`` is where this
    launch's start), so tiles start in id order; one tile per lane: the program id.

    Full tiles (all but a lane's last) take a copy of the tile code without masks:
    masked 64-bit loads next to the carry predicates of 64-bit adds made ptxas
    issue a thread's loads in many small batches, each waiting on memory
    (bench/int64_study/REPORT.md)."""
    if SINGLE_TILE:
        vid = tl.program_id(0).to(tl.int64)  # one program per lane, no status
        full = False
    else:
        vid = tl.atomic_add(counter_ptr, 1, sem="relaxed") - tile_base  # an id, nothing to order
        full = (vid % tiles_per_lane + 1) * BLOCK <= length
    return vid, full


# Counters that change every call are never specialized: no recompiles, and no
# value turned into a constant when it happens to equal 1.  M keeps Triton's
# divisibility-by-16 specialization (at most two variants) for vector loads.
@triton.jit
def _tile_1d(x_ptrs, y_ptrs, ident_ptrs, init_ptrs, status_ptr, flag_ptr, agg_ptrs, incl_ptrs, M, vid,
             tiles_per_lane, epoch, order_stride, order,
             PAIR: tl.constexpr, FLAT: tl.constexpr, COMMUTATIVE: tl.constexpr,
             INCLUSIVE: tl.constexpr, REVERSE: tl.constexpr, HAS_INIT: tl.constexpr,
             WORDS: tl.constexpr, SINGLE_TILE: tl.constexpr, MULTI_LANE: tl.constexpr,
             CHAINED: tl.constexpr, BLOCK: tl.constexpr, WINDOW: tl.constexpr,
             ORDERED: tl.constexpr, DELAYED: tl.constexpr, FULL: tl.constexpr, RAKE: tl.constexpr,
             ORDER2: tl.constexpr):
    """Tile ``vid`` of :func:`scan_1d_kernel`; ``FULL``: every element inside the lane,
    so loads and stores carry no mask."""
    lane = vid // tiles_per_lane
    tile = vid % tiles_per_lane
    ident = _scalars(ident_ptrs, 0)
    rank = tl.arange(0, BLOCK)
    # Element i of the tile is at lane position start + local[i]: a 64-bit scalar
    # plus 32-bit offsets.
    if REVERSE and COMMUTATIVE:
        # Tile t holds the t-th block from the end, loaded in ascending order
        # (16-byte vectors) and scanned backwards in registers.
        start = M - (tile + 1) * BLOCK
        local = rank
        inside = None if FULL else start + rank >= 0
        neighbour = rank + 1
        first = BLOCK - 1
    else:
        # Forward scans; reverse scans of non-commutative operators mirror the
        # indices so that the swapped combine sees operands in index order.
        inside = None if FULL else tile * BLOCK + rank < M
        if REVERSE:
            start = M - 1 - tile * BLOCK
            local = -rank
            neighbour = local + 1
        else:
            start = tile * BLOCK
            local = rank
            neighbour = rank - 1
        first = 0
    # One lane: no lane offset, so the loads vectorize whatever M is.
    base = (lane * M + start) if MULTI_LANE else start
    if not DELAYED:
        x = _load_at(x_ptrs, base, local, inside, ident)
    else:
        # The input delayed by `order` elements in scan order, identity first
        # (unaligned loads: only exclusive scans of order > 1 come here).
        src = (local + order) if REVERSE else (local - order)
        x = _load_at(x_ptrs, base, src, _within(inside, (start + src >= 0) & (start + src < M)), ident)
    if INCLUSIVE:
        scan_in = x
    else:
        # Exclusive: scan the tile shifted by one element (identity first in scan order).
        scan_in = _load_at(x_ptrs, base, neighbour, _within(inside, rank != first), ident)
    if HAS_INIT:
        seed = _scalars(init_ptrs, lane)
    else:
        seed = ident
    # Order k scans order k-1's result, still in registers, with its own status
    # entries (SAM's iteration, seed 002 section 2.4): the input is read once and the
    # result written once whatever the order.  Positions outside the lane hold
    # garbage after the first order, but they come after every valid position in
    # scan order and only the lane's last tile has them, whose aggregate nobody reads.
    if ORDER2:
        values = _order2_1d(x, seed, vid, tile, lane, tiles_per_lane, ident, status_ptr, flag_ptr, agg_ptrs,
                            incl_ptrs, epoch, PAIR, FLAT, REVERSE and COMMUTATIVE, WORDS, SINGLE_TILE, CHAINED,
                            WINDOW, RAKE, BLOCK)
    elif ORDERED:
        values = x
        k = 0
        while k < order:  # not range(order): the interpreter cannot index a runtime int (NumPy >= 2.4)
            values = _order_1d(values, scan_in, k, seed, vid, tile, lane, tiles_per_lane, order_stride, ident,
                               status_ptr, flag_ptr, agg_ptrs, incl_ptrs, epoch, PAIR, FLAT, COMMUTATIVE, REVERSE,
                               WORDS, SINGLE_TILE, CHAINED, WINDOW, RAKE)
            scan_in = values
            k += 1
    else:
        values = _order_1d(x, scan_in, 0, seed, vid, tile, lane, tiles_per_lane, order_stride, ident,
                           status_ptr, flag_ptr, agg_ptrs, incl_ptrs, epoch, PAIR, FLAT, COMMUTATIVE, REVERSE,
                           WORDS, SINGLE_TILE, CHAINED, WINDOW, RAKE)
    _store_at(y_ptrs, base, local, values, inside)


@triton.jit(do_not_specialize=["tiles_per_lane", "tile_base", "epoch", "order_stride", "order"])
def scan_1d_kernel(x_ptrs, y_ptrs, ident_ptrs, init_ptrs, status_ptr, flag_ptr, agg_ptrs, incl_ptrs,
                   counter_ptr, M, tiles_per_lane, tile_base, epoch, order_stride, order,
                   PAIR: tl.constexpr, FLAT: tl.constexpr, COMMUTATIVE: tl.constexpr,
                   INCLUSIVE: tl.constexpr, REVERSE: tl.constexpr, HAS_INIT: tl.constexpr,
                   WORDS: tl.constexpr, SINGLE_TILE: tl.constexpr, MULTI_LANE: tl.constexpr,
                   CHAINED: tl.constexpr, BLOCK: tl.constexpr, WINDOW: tl.constexpr,
                   ORDERED: tl.constexpr, DELAYED: tl.constexpr, RAKE: tl.constexpr, ORDER2: tl.constexpr):
    """Scan lanes of length M stored back to back (the (B, M, 1) layout), ``order`` times
    (status entries of order k at ``k * order_stride``); with ``DELAYED`` the input is
    first delayed by ``order`` elements.  ``order`` is a runtime value, so one compiled
    kernel serves every order > 1 (``ORDERED``); order 1 compiles without the loop,
    whose loop-carried tile would otherwise cost layout conversions."""
    vid, full = _tile_id(counter_ptr, tile_base, tiles_per_lane, M, BLOCK, SINGLE_TILE)
    if full:
        _tile_1d(x_ptrs, y_ptrs, ident_ptrs, init_ptrs, status_ptr, flag_ptr, agg_ptrs, incl_ptrs, M, vid,
                 tiles_per_lane, epoch, order_stride, order, PAIR, FLAT, COMMUTATIVE, INCLUSIVE, REVERSE,
                 HAS_INIT, WORDS, SINGLE_TILE, MULTI_LANE, CHAINED, BLOCK, WINDOW, ORDERED, DELAYED, True, RAKE,
                 ORDER2)
    else:
        _tile_1d(x_ptrs, y_ptrs, ident_ptrs, init_ptrs, status_ptr, flag_ptr, agg_ptrs, incl_ptrs, M, vid,
                 tiles_per_lane, epoch, order_stride, order, PAIR, FLAT, COMMUTATIVE, INCLUSIVE, REVERSE,
                 HAS_INIT, WORDS, SINGLE_TILE, MULTI_LANE, CHAINED, BLOCK, WINDOW, ORDERED, DELAYED, False, RAKE,
                 ORDER2)


@triton.jit
def _tile_2d(x_ptrs, y_ptrs, ident_ptrs, init_ptrs, status_ptr, flag_ptr, agg_ptrs, incl_ptrs, M, K, col_blocks,
             vid, tiles_per_lane, epoch, order_stride, order,
             PAIR: tl.constexpr, FLAT: tl.constexpr, COMMUTATIVE: tl.constexpr,
             INCLUSIVE: tl.constexpr, REVERSE: tl.constexpr, HAS_INIT: tl.constexpr,
             WORDS: tl.constexpr, SINGLE_TILE: tl.constexpr, MULTI_LANE: tl.constexpr,
             CHAINED: tl.constexpr, EXACT_K: tl.constexpr, ROWS: tl.constexpr, KB: tl.constexpr,
             WINDOW: tl.constexpr, ORDERED: tl.constexpr, DELAYED: tl.constexpr, FULL: tl.constexpr,
             RAKE: tl.constexpr):
    """Tile ``vid`` of :func:`scan_2d_kernel`; ``FULL``: all rows and columns inside."""
    group = vid // tiles_per_lane  # (lane, column block)
    tile = vid % tiles_per_lane
    lane = group // col_blocks
    cblock = group % col_blocks
    ident = _scalars(ident_ptrs, 0)
    rows = tile * ROWS + tl.arange(0, ROWS)[:, None]
    cols = cblock * KB + tl.arange(0, KB)[None, :]
    stride = KB if EXACT_K else K
    inside = None if FULL else (rows < M) & (cols < stride)
    rpos = (M - 1 - rows) if REVERSE else rows
    base = lane * M * stride if MULTI_LANE else 0
    if not DELAYED:
        x = _load_at(x_ptrs, base, rpos * stride + cols, inside, ident)
    else:
        src = (rpos + order) if REVERSE else (rpos - order)
        x = _load_at(x_ptrs, base, src * stride + cols, _within(inside, (src >= 0) & (src < M)), ident)
    if INCLUSIVE:
        scan_in = x
    else:
        prev = (rpos + 1) if REVERSE else (rpos - 1)
        scan_in = _load_at(x_ptrs, base, prev * stride + cols, _within(inside, (rows % ROWS) != 0), ident)
    col_in = cblock * KB + tl.arange(0, KB)
    if HAS_INIT:
        seed = _load_at(init_ptrs, lane * K, col_in, col_in < K, ident)
    else:
        seed = _where(col_in >= 0, ident, ident)  # [KB] copies of the identity
    if ORDERED:  # orders as in scan_1d_kernel
        values = x
        k = 0
        while k < order:  # see scan_1d_kernel
            values = _order_2d(values, scan_in, k, seed, vid, tile, group, tiles_per_lane, order_stride, ident,
                               status_ptr, flag_ptr, agg_ptrs, incl_ptrs, epoch, PAIR, FLAT, COMMUTATIVE, WORDS,
                               SINGLE_TILE, CHAINED, WINDOW, KB, RAKE)
            scan_in = values
            k += 1
    else:
        values = _order_2d(x, scan_in, 0, seed, vid, tile, group, tiles_per_lane, order_stride, ident,
                           status_ptr, flag_ptr, agg_ptrs, incl_ptrs, epoch, PAIR, FLAT, COMMUTATIVE, WORDS,
                           SINGLE_TILE, CHAINED, WINDOW, KB, RAKE)
    _store_at(y_ptrs, base, rpos * stride + cols, values, inside)


@triton.jit(do_not_specialize=["tiles_per_lane", "tile_base", "epoch", "col_blocks", "order_stride", "order"])
def scan_2d_kernel(x_ptrs, y_ptrs, ident_ptrs, init_ptrs, status_ptr, flag_ptr, agg_ptrs, incl_ptrs,
                   counter_ptr, M, K, col_blocks, tiles_per_lane, tile_base, epoch, order_stride, order,
                   PAIR: tl.constexpr, FLAT: tl.constexpr, COMMUTATIVE: tl.constexpr,
                   INCLUSIVE: tl.constexpr, REVERSE: tl.constexpr, HAS_INIT: tl.constexpr,
                   WORDS: tl.constexpr, SINGLE_TILE: tl.constexpr, MULTI_LANE: tl.constexpr,
                   CHAINED: tl.constexpr, EXACT_K: tl.constexpr, ROWS: tl.constexpr, KB: tl.constexpr,
                   WINDOW: tl.constexpr, ORDERED: tl.constexpr, DELAYED: tl.constexpr, RAKE: tl.constexpr):
    """Scan the (B, M, K) layout along M: K interleaved streams per lane; ``order``
    and ``DELAYED`` as in :func:`scan_1d_kernel` (status entries of order k start at
    ``k * order_stride`` tiles).

    With ``EXACT_K`` (K == KB) the row stride is a constant, so a tile is one
    contiguous block and its loads and stores are 16-byte vectors.
    """
    if SINGLE_TILE:
        vid = tl.program_id(0).to(tl.int64)
    else:
        vid = tl.atomic_add(counter_ptr, 1, sem="relaxed") - tile_base  # an id, nothing to order
    # Full tiles without masks, as in scan_1d_kernel.
    if SINGLE_TILE:
        full = False
    elif EXACT_K:
        full = (vid % tiles_per_lane + 1) * ROWS <= M
    else:
        full = ((vid % tiles_per_lane + 1) * ROWS <= M) & ((vid // tiles_per_lane % col_blocks + 1) * KB <= K)
    if full:
        _tile_2d(x_ptrs, y_ptrs, ident_ptrs, init_ptrs, status_ptr, flag_ptr, agg_ptrs, incl_ptrs, M, K, col_blocks,
                 vid, tiles_per_lane, epoch, order_stride, order, PAIR, FLAT, COMMUTATIVE, INCLUSIVE, REVERSE,
                 HAS_INIT, WORDS, SINGLE_TILE, MULTI_LANE, CHAINED, EXACT_K, ROWS, KB, WINDOW, ORDERED,
                 DELAYED, True, RAKE)
    else:
        _tile_2d(x_ptrs, y_ptrs, ident_ptrs, init_ptrs, status_ptr, flag_ptr, agg_ptrs, incl_ptrs, M, K, col_blocks,
                 vid, tiles_per_lane, epoch, order_stride, order, PAIR, FLAT, COMMUTATIVE, INCLUSIVE, REVERSE,
                 HAS_INIT, WORDS, SINGLE_TILE, MULTI_LANE, CHAINED, EXACT_K, ROWS, KB, WINDOW, ORDERED,
                 DELAYED, False, RAKE)


# ---------------------------------------------------------------------------
# Interleaved columns on a 1-D tile (the (B, M, K) layout for small K: tuple
# sizes, a short last axis scanned along axis 0).  The lane is read as one
# contiguous run of M * K elements in 1-D tiles (16-byte vectors, as the 1-D
# kernel), and element i belongs to column i % K.  Column c is scanned as the
# tile with every other column's elements replaced by the identity: K masked
# scans of the tile instead of one scan of a [ROWS, KB] tile, whose strided
# columns cost a warp shuffle scan per row (0.55-0.66 of copy for tuple sizes
# 2-8 on the H200, and 0.18 for 5, whose 20-byte rows cannot be vectors).
# Masked elements are identities, so the order of the operands is kept and any
# monoid works.  Tile-local, K reductions and scans cost 0.98 / 0.94 / 0.63 of
# copy for K = 2 / 5 / 8 (int32, bench/tile_study.py, run f), but with the
# look-back the kernel measured (H200, 2^27, bench/columns_study.py): int32 K = 2
# 0.80 (2-D kernel 0.66), 3 0.31 (0.23), 4 0.58 (0.59), 5 0.21 (0.18), 8 0.33
# (0.55); int64 worse than the 2-D kernel at every K.  So the dispatch
# (launch.COLUMNS_MAX) takes it for one 4-byte field and K <= 3 only.  Status
# entries are per (tile, column), as in the 2-D kernel, and the look-back is that
# kernel's (:func:`_lookback`).


@triton.jit
def _tile_cols(x_ptrs, y_ptrs, ident_ptrs, init_ptrs, status_ptr, flag_ptr, agg_ptrs, incl_ptrs, L, vid,
               tiles_per_lane, epoch,
               PAIR: tl.constexpr, FLAT: tl.constexpr, COMMUTATIVE: tl.constexpr,
               INCLUSIVE: tl.constexpr, REVERSE: tl.constexpr, HAS_INIT: tl.constexpr,
               WORDS: tl.constexpr, SINGLE_TILE: tl.constexpr, MULTI_LANE: tl.constexpr,
               CHAINED: tl.constexpr, BLOCK: tl.constexpr, WINDOW: tl.constexpr, K: tl.constexpr,
               KB: tl.constexpr, FULL: tl.constexpr, RAKE: tl.constexpr):
    """Tile ``vid`` of :func:`scan_cols_kernel`; ``FULL``: every element inside the lane."""
    lane = vid // tiles_per_lane
    tile = vid % tiles_per_lane
    ident = _scalars(ident_ptrs, 0)
    rank = tl.arange(0, BLOCK)
    inside = None if FULL else tile * BLOCK + rank < L
    # Scan order runs backwards through memory for reverse scans (mirrored indices,
    # as the 1-D kernel does for non-commutative ones): position p is element L-1-p.
    if REVERSE:
        start = L - 1 - tile * BLOCK
        local = -rank
        step = K
        col = ((start % K).to(tl.int32) + K * BLOCK - rank) % K
    else:
        start = tile * BLOCK
        local = rank
        step = -K
        col = ((start % K).to(tl.int32) + rank) % K
    base = (lane * L + start) if MULTI_LANE else start
    x = _load_at(x_ptrs, base, local, inside, ident)
    if INCLUSIVE:
        scan_in = x
    else:
        # The element before in the same column, when it is in this tile (earlier
        # tiles' elements come with the look-back's prefix).
        scan_in = _load_at(x_ptrs, base, local + step, _within(inside, rank >= K), ident)
    kcols = tl.arange(0, KB)
    if HAS_INIT:
        seed = _load_at(init_ptrs, lane * K, kcols, kcols < K, ident)
    else:
        seed = _where(kcols >= 0, ident, ident)  # [KB] copies of the identity
    if SINGLE_TILE:
        prefix = seed
    else:
        agg = _where(kcols >= 0, ident, ident)  # columns >= K keep the identity
        for c in tl.static_range(K):
            agg = _where(kcols == c, _ordered_reduce(_where(col == c, x, ident), FLAT, COMMUTATIVE), agg)
        prefix = _columns_prefix(agg, seed, vid * KB + kcols, tile, lane * tiles_per_lane, ident, status_ptr,
                                 flag_ptr, agg_ptrs, incl_ptrs, epoch, PAIR, FLAT, COMMUTATIVE, WORDS, CHAINED,
                                 WINDOW, KB)
    y = x
    for c in tl.static_range(K):
        scanned = _scan_tile(_where(col == c, scan_in, ident), ident, PAIR, FLAT, False, RAKE)
        y = _where(col == c, PAIR(_select(prefix, kcols == c, 0), scanned), y)
    _store_at(y_ptrs, base, local, y, inside)


@triton.jit(do_not_specialize=["tiles_per_lane", "tile_base", "epoch"])
def scan_cols_kernel(x_ptrs, y_ptrs, ident_ptrs, init_ptrs, status_ptr, flag_ptr, agg_ptrs, incl_ptrs,
                     counter_ptr, L, tiles_per_lane, tile_base, epoch,
                     PAIR: tl.constexpr, FLAT: tl.constexpr, COMMUTATIVE: tl.constexpr,
                     INCLUSIVE: tl.constexpr, REVERSE: tl.constexpr, HAS_INIT: tl.constexpr,
                     WORDS: tl.constexpr, SINGLE_TILE: tl.constexpr, MULTI_LANE: tl.constexpr,
                     CHAINED: tl.constexpr, BLOCK: tl.constexpr, WINDOW: tl.constexpr, K: tl.constexpr,
                     KB: tl.constexpr, RAKE: tl.constexpr):
    """Scan the (B, M, K) layout along M as lanes of ``L = M * K`` elements in 1-D
    tiles, element i of a lane in column i % K (see :func:`_tile_cols`); status
    entries ``tile * KB + column``."""
    vid, full = _tile_id(counter_ptr, tile_base, tiles_per_lane, L, BLOCK, SINGLE_TILE)
    if full:
        _tile_cols(x_ptrs, y_ptrs, ident_ptrs, init_ptrs, status_ptr, flag_ptr, agg_ptrs, incl_ptrs, L, vid,
                   tiles_per_lane, epoch, PAIR, FLAT, COMMUTATIVE, INCLUSIVE, REVERSE, HAS_INIT, WORDS,
                   SINGLE_TILE, MULTI_LANE, CHAINED, BLOCK, WINDOW, K, KB, True, RAKE)
    else:
        _tile_cols(x_ptrs, y_ptrs, ident_ptrs, init_ptrs, status_ptr, flag_ptr, agg_ptrs, incl_ptrs, L, vid,
                   tiles_per_lane, epoch, PAIR, FLAT, COMMUTATIVE, INCLUSIVE, REVERSE, HAS_INIT, WORDS,
                   SINGLE_TILE, MULTI_LANE, CHAINED, BLOCK, WINDOW, K, KB, False, RAKE)
