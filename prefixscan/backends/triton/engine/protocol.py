"""The engine's status protocol: how a tile publishes its state and how the next ones read it.

Merrill & Garland 2016 ("Single-pass Parallel Prefix Scan with Decoupled
Look-back", section 4) give every tile a status entry: a state (X: not ready,
A: its aggregate, P: its inclusive prefix) next to a value of the monoid carried
between tiles.  Here:

* An entry is ``WORDS`` 64-bit words (up to :data:`.state.MAX_STATUS_WORDS`, 4), each
  a **tag** (``epoch * 4 + state``, :func:`tag_of`) in the high 32 bits and 32 bits of
  the value in the low ones: a field of <= 32 bits takes one word, a 64-bit field two.  Words are written
  by relaxed atomic exchanges and read by relaxed atomics, with no fences; a reader
  accepts an entry only when every word carries one tag of the current epoch
  (:func:`state_of`): each word is written once per state and launch, so equal tags
  mean one publication, and a word left by an earlier launch reads as not ready.
  A CUB-style flag next to value arrays (release after the values, acquire before
  them) serves entries of more than four words (``WORDS == 0``).  Measured on the H200 at
  2^27: int64 sums 0.67 of copy with flags, 0.90 with words
  (docs/design/status-words.md).
* Reads are atomics, never loads: Triton's layout pass once duplicated a volatile
  window load into two loads whose values disagreed (docs/design/status-words.md).
* The look-back (:func:`lookback`, :func:`lookback_columns`) reads a window of
  predecessors in one vector of atomics, folds every entry after the nearest
  inclusive prefix, and reads again where an entry is not ready, keeping what it
  folded.  The stop rule (:func:`fold_stop`) is written with elementwise operations
  and one reduction only, so the Gluon orders kernel (:mod:`..scan.orders_lookback`),
  whose entries are carry vectors read as 16-byte vectors, applies the same rule.

Kernels name the status buffers as one tuple ``status = (words_ptr, flags_ptr,
agg_ptrs, incl_ptrs)`` (:func:`.state.DeviceState.begin` returns it), the monoid as
the constexpr tuple ``MONOID = (PAIR, FLAT, COMMUTATIVE)`` (:mod:`..device.combine`)
and the protocol as ``PROTOCOL = (WORDS, WINDOW, CHAINED)``: words per entry, entries
per look-back step, and the chained hand-off of Yan et al. 2013 (StreamScan), a
window of one whose fold never skips the predecessor's prefix (bitwise
reproducible).
"""

from __future__ import annotations

import triton
import triton.language as tl

from ..device.tiles import _ordered_reduce, _total, _where

__all__ = ["FLAG_AGGREGATE", "FLAG_PREFIX", "tag_of", "state_of", "fold_stop", "publish", "read_entries",
           "lookback", "lookback_columns", "read_word", "bits32", "from_bits32"]

FLAG_AGGREGATE = tl.constexpr(1)
FLAG_PREFIX = tl.constexpr(2)


@triton.jit
def tag_of(epoch, state):
    """The high 32 bits every word of an entry published with ``state`` carries (as int64)."""
    return (epoch * 4 + state).to(tl.int64) << 32


@triton.jit
def state_of(tag, valid, epoch):
    """The state of entries whose words carried int32 ``tag`` (0, not ready, where not
    ``valid``, or where the tag is of another launch)."""
    return tl.where(valid & ((tag >> 2) == epoch), tag & 3, 0)


@triton.jit
def fold_stop(state, rows, valid, CHAINED: tl.constexpr):
    """The fold rule of one window step along axis 0 of ``state`` (rows ``rows``, oldest
    first): ``(stop, found, take)``, ``stop`` the last row that stops the fold (a prefix,
    or an entry not ready yet; -1 for none), ``found`` whether it is a prefix, ``take``
    the rows folded in this step.  One reduction of the key ``2 * row + is_prefix``.
    ``CHAINED``: every entry stops the fold, so only the predecessor's prefix is used."""
    stops = (state != FLAG_AGGREGATE) | ~valid | CHAINED
    key = tl.max(tl.where(stops, rows * 2 + (valid & (state == FLAG_PREFIX)).to(tl.int32), -2), 0)
    stop = key >> 1
    found = (key & 1) == 1
    if len(rows.shape) == 1:
        take = valid & ((rows > stop) | ((rows == stop) & found))
    else:
        take = valid & ((rows > stop[None, :]) | ((rows == stop[None, :]) & found[None, :]))
    return stop, found, take


@triton.jit
def read_word(ptrs, mask):
    """Status words read with a relaxed atomic (adding 0): never duplicated by the
    compiler, served by L2 as a volatile load is."""
    return tl.atomic_add(ptrs, 0, mask=mask, sem="relaxed")


@triton.jit
def bits32(value):
    """The bits of a value of <= 32 bits as uint32 (zero-extended)."""
    if value.dtype.primitive_bitwidth == 32:
        bits = value.to(tl.uint32, bitcast=True)
    elif value.dtype.primitive_bitwidth == 16:
        bits = value.to(tl.uint16, bitcast=True).to(tl.uint32)
    else:
        bits = value.to(tl.uint8, bitcast=True).to(tl.uint32)
    return bits


@triton.jit
def from_bits32(bits, ACC: tl.constexpr):
    """Inverse of :func:`bits32`: the ``ACC`` value (<= 32 bits) in the low bits of uint32 ``bits``."""
    if ACC.primitive_bitwidth == 32:
        value = bits.to(ACC, bitcast=True)
    elif ACC.primitive_bitwidth == 16:
        value = bits.to(tl.uint16).to(ACC, bitcast=True)
    else:
        value = bits.to(tl.uint8).to(ACC, bitcast=True)
    return value


@triton.jit
def _parts(values):
    """The 32-bit parts of a field tuple, in order: one per field of <= 32 bits, two
    (low, high) per 64-bit field; ``WORDS`` is their count."""
    out = ()
    for i in tl.static_range(len(values)):
        v = values[i]
        if v.dtype.primitive_bitwidth == 64:
            bits = v.to(tl.uint64, bitcast=True)
            out = out + ((bits & 0xFFFFFFFF).to(tl.uint32), (bits >> 32).to(tl.uint32))
        else:
            out = out + (bits32(v),)
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
            out = out + (from_bits32(rest[0], acc),)
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
def publish(status, index, value, STATE: tl.constexpr, epoch, WORDS: tl.constexpr):
    """Publish the field tuple ``value`` with ``STATE`` at status entries ``index``
    (a scalar or a tensor of entries)."""
    if WORDS:  # the tag and 32 bits of the value in each of the entry's words
        parts = _parts(value)
        tag = tag_of(epoch, STATE)
        for j in tl.static_range(WORDS):
            tl.atomic_xchg(status[0] + index * WORDS + j, tag | parts[j].to(tl.int64), sem="relaxed")
    else:  # values first, then the flag with release semantics
        if STATE == FLAG_PREFIX:
            value_ptrs = status[3]
        else:
            value_ptrs = status[2]
        for i in tl.static_range(len(value_ptrs)):
            tl.store(value_ptrs[i] + index, value[i])
        tl.atomic_xchg(status[1] + index, epoch * 4 + STATE, sem="release")


@triton.jit
def read_entries(status, index, valid, epoch, ident, WORDS: tl.constexpr):
    """``(state, field tuple)`` of the status entries ``index``: state 0 where not
    ``valid`` and where the entry's words do not all carry one tag of this epoch yet
    (a publication half seen)."""
    if WORDS:
        # Every word of the window in one atomic: Triton broadcasts each atomic's
        # result through shared memory behind a barrier, so word-by-word reads cost
        # one L2 round trip per word, in sequence.  Joined, an entry's words sit in
        # one thread and split back without data movement.
        inside = _join_copies(valid, WORDS)
        words = _split_words(tl.where(inside, read_word(status[0] + _join_words(index * WORDS, WORDS), inside), 0),
                             WORDS)
        tag = (words[0] >> 32).to(tl.int32)
        same = valid
        parts = ()
        for k in tl.static_range(WORDS):
            if k > 0:
                same = same & ((words[k] >> 32).to(tl.int32) == tag)
            parts = parts + ((words[k] & 0xFFFFFFFF).to(tl.uint32),)
        state = state_of(tag, same, epoch)
        values = _from_parts(parts, ident)
    else:
        tag = tl.atomic_add(status[1] + index, 0, mask=valid, sem="acquire")
        state = state_of(tag, valid, epoch)
        is_prefix = state == FLAG_PREFIX
        values = ()
        for i in tl.static_range(len(status[2])):
            values = values + (tl.where(is_prefix,
                                        tl.load(status[3][i] + index, mask=valid & is_prefix, volatile=True),
                                        tl.load(status[2][i] + index, mask=valid & (state == FLAG_AGGREGATE),
                                                volatile=True)),)
    return state, values


@triton.jit
def _fold_order2(value, take, acc, rows, acc_tiles, ident, FLAT: tl.constexpr, WINDOW: tl.constexpr,
                 BLOCK: tl.constexpr):
    """``acc`` (the (order 1, order 2) sums of the ``acc_tiles`` tiles after the window)
    with the window's taken entries before it, each a whole tile of BLOCK elements:
    segments A then B combine as (A1 + B1, A2 + B2 + len(B) * A1), so the taken entries
    fold to (sum T1, sum T2 + BLOCK * tiles after each * T1) (SAM's binomial carry,
    Maleki, Yang & Burtscher, PLDI 2016, section 2.4).  Entries not taken count as the
    identity ``ident`` (-0.0 for floats: a +0.0 would turn sums of -0.0 positive)."""
    t1 = tl.where(take, value[0], ident[0])
    after = ((WINDOW - 1 - rows) * BLOCK).to(t1.dtype)
    part1 = _total(t1, FLAT)
    part2 = _total(tl.where(take, value[1], ident[1]) + after * t1, FLAT)
    return part1 + acc[0], acc[1] + part2 + (acc_tiles * BLOCK).to(t1.dtype) * part1


@triton.jit
def lookback(status, lane_base, tile, ident, epoch, MONOID: tl.constexpr, PROTOCOL: tl.constexpr,
             ORDER2_BLOCK: tl.constexpr = 0):
    """The exclusive prefix of ``tile`` (> 0) of one lane, whose tile t has status entry
    ``lane_base + t``: the windowed look-back, one entry per thread.

    ``ORDER2_BLOCK`` > 0: entries are the (order 1, order 2) sums of whole tiles of that
    many elements, folded with the binomial shift (:func:`_fold_order2`)."""
    WORDS: tl.constexpr = PROTOCOL[0]
    WINDOW: tl.constexpr = PROTOCOL[1]
    rows = tl.arange(0, WINDOW)
    end = tile  # the window is [end - WINDOW, end)
    acc = ident
    done = 0
    while done == 0:
        widx = end - WINDOW + rows
        valid = widx >= 0
        state, value = read_entries(status, lane_base + widx, valid, epoch, ident, WORDS)
        stop, found, take = fold_stop(state, rows, valid, PROTOCOL[2])
        if ORDER2_BLOCK:
            acc = _fold_order2(value, take, acc, rows, tile - end, ident, MONOID[1], WINDOW, ORDER2_BLOCK)
        else:
            acc = MONOID[0](_ordered_reduce(_where(take, value, ident), MONOID[1], MONOID[2]), acc)
        end = tl.where(stop >= 0, end - WINDOW + stop + 1, end - WINDOW)
        done = found.to(tl.int32)
    return acc


@triton.jit
def lookback_columns(status, lane_base, tile, ident, epoch, MONOID: tl.constexpr, PROTOCOL: tl.constexpr,
                     KB: tl.constexpr):
    """The exclusive prefix of ``tile`` (> 0) per column of a [rows, KB] tile, whose
    column c of tile t has status entry ``(lane_base + t) * KB + c``: a tuple of [KB]
    tensors.  Each column stops at its own nearest prefix."""
    WINDOW: tl.constexpr = PROTOCOL[1]
    rows = tl.arange(0, WINDOW)[:, None]
    cols = tl.arange(0, KB)[None, :]
    zero_cols = tl.zeros([KB], dtype=tl.int64)
    end = zero_cols + tile  # per column: the window is [end - WINDOW, end)
    acc = _where(zero_cols == 0, ident, ident)
    done = zero_cols == 1
    while tl.min(done.to(tl.int32)) == 0:
        widx = end[None, :] - WINDOW + rows  # [WINDOW, KB]
        valid = (widx >= 0) & (~done)[None, :]
        state, value = read_entries(status, (lane_base + widx) * KB + cols, valid, epoch, ident, PROTOCOL[0])
        stop, found, take = fold_stop(state, rows, valid, PROTOCOL[2])
        part = _ordered_reduce(_where(take, value, ident), MONOID[1], MONOID[2])
        acc = _where(done, acc, MONOID[0](part, acc))
        end = tl.where(done | found, end, tl.where(stop >= 0, end - WINDOW + stop + 1, end - WINDOW))
        done = done | found
    return acc
