"""``@triton.jit`` building blocks of the scan kernels: tiles, status words, look-back.

Everything here is inlined into the kernels of :mod:`.lookback` and of the
other strategies (:mod:`.strategy_blocks`); nothing launches on its own.

* Tiles: loads and stores of field tuples (:func:`_load_at`, :func:`_store_at`),
  exact selections by xor reductions, ordered reductions, and the in-tile scan
  (:func:`_scan_tile`: ``tl.associative_scan``, or raking after Merrill &
  Grimshaw 2009's SRTS, section 4.3.2).
* Status words (Merrill & Garland 2016, section 4; Yan et al. 2013 for the
  chained hand-off): an entry is ``WORDS`` 64-bit words, each holding 32 bits of
  the value (a field of <= 32 bits takes one word, a 64-bit field two) next to
  the tag ``epoch * 4 + flag``, written by relaxed atomic exchanges and read by
  relaxed atomics (:func:`_read_word`).  A reader accepts an entry only when
  every word carries the same tag: each word of an entry is written once per
  state and call, so equal tags mean the parts come from one publication (a
  flag packed next to a value of one word generalised to several; CUB packs 16
  bytes).  No fences, and all words of a
  window come back from one atomic (:func:`_load_window`).  Wider values
  (``WORDS == 0``) publish a flag with release semantics after value arrays and
  read it with acquire.  On the H200 at 2^27, int64 went from 0.67 of copy (flags)
  to 0.90 (words; docs/design/status-words.md).
* Look-back windows (:func:`_lookback_1d`, :func:`_lookback`,
  :func:`_columns_prefix`): fold the predecessors' entries up to the nearest
  inclusive prefix; with ``CHAINED`` only the predecessor's prefix.

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
    prefixes, now and then (the H200 chained 2-D failure, docs/design/status-words.md).  An atomic
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
def _count(N: tl.constexpr, like):
    """The element count N in ``like``'s dtype, wrapping for narrow integers: compiled
    Triton refuses a constexpr that does not fit the other operand's type (16384 * an
    int8), where the scan's wrapping arithmetic wants N modulo 2^bits."""
    return tl.full([], N, tl.int32).to(like.dtype)


@triton.jit
def _tile_id(counter_ptr, tile_base, tiles_per_lane, length, BLOCK: tl.constexpr, SINGLE_TILE: tl.constexpr):
    """(tile id, whether the tile is full) of this program, for tiles of BLOCK elements
    over lanes of ``length``.  Ids come from the counter (``tile_base`` is where this
    launch's start), so tiles start in id order; one tile per lane: the program id.

    Full tiles (all but a lane's last) take a copy of the tile code without masks:
    masked 64-bit loads next to the carry predicates of 64-bit adds made ptxas
    issue a thread's loads in many small batches, each waiting on memory
    (int64 tiles on the H100)."""
    if SINGLE_TILE:
        vid = tl.program_id(0).to(tl.int64)  # one program per lane, no status
        full = False
    else:
        vid = tl.atomic_add(counter_ptr, 1, sem="relaxed") - tile_base  # an id, nothing to order
        full = (vid % tiles_per_lane + 1) * BLOCK <= length
    return vid, full

