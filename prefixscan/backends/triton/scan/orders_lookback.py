"""The orders kernel's carry vector and its decoupled look-back (Gluon).

For one column, a segment of L rows is summarised by its q local sums t_1..t_q at
its last row (order r of the segment alone).  Segment A followed by segment B (L
rows) is the segment with ``(A . B)_r = B_r + sum_{p <= r} C(L + r - p - 1, r - p)
* A_p``: each order-p value of A is carried through the r - p further summations
over B's L rows (the binomial shift; the multiset coefficient C(L + k - 1, k)
counts them; SAM, Maleki, Yang & Burtscher, PLDI 2016, section 2.4, carries the
same sums order by order).  The shift is associative, so the decoupled look-back
of Merrill & Garland 2016 (section 4) works on these q x s vectors as on single
sums: a tile publishes its local vector at once (flag A), folds the window's
entries up to the nearest inclusive prefix (flag P) with shifts of whole tiles,
and publishes its inclusive vector.  Coefficients are computed exactly modulo
2^64 (:func:`_coefficients`), which is what integer wrap-around needs.

Status: an entry is ``q * s * WPV`` 64-bit words, each a tag (``epoch * 4 +
flag``) and 32 bits of a value (WPV = 2 words for 64-bit values), written by
relaxed exchanges and accepted only when all carry one tag of the current epoch:
the engine's protocol (:mod:`..engine.protocol`: its tags and its acceptance rule;
docs/design/status-words.md).  What is the kernel's own is the data movement of such
wide entries (16-byte vector reads of an entry's words, a shared-memory stash to
publish them) and the window folded nearest first with binomial shifts.  Entries lie
a power of two of words apart, so that a reader loads an entry's words of one order
as 16-byte vectors (H100, 2^27: int64 order 8 0.67 -> 0.78 of copy, order 5 0.85 -> 0.87).
"""

import triton
import triton.language as tl

from ..device.gluon import gl, jit
from ..engine.protocol import FLAG_AGGREGATE, FLAG_PREFIX, state_of
#: Widest status entry (words) published one word per lane through a shared-memory stash of
#: [T, words] (8 KB at 16 words and 128 threads); wider entries go out from one thread.
STASH_WORDS = tl.constexpr(16)


@triton.constexpr_function
def _words_padded(words):
    """Status words per entry rounded up to a power of two."""
    return 1 << (words - 1).bit_length()


@jit
def _add(a, b):
    return a + b


@jit
def _odd_factorial_inverse(K: tl.constexpr):
    """The inverse modulo 2^64 of k!'s odd part (1, 1, 3, 3, 15, 45, 315 for k = 1..7)."""
    if K == 3 or K == 4:
        return -6148914691236517205
    elif K == 5:
        return -1229782938247303441
    elif K == 6:
        return 5738987045154082725
    elif K == 7:
        return 3455104445551947763
    else:
        return 1


@jit
def _factorial_twos(K: tl.constexpr):
    """How many times 2 divides k! (k <= 7)."""
    if K >= 6:
        return 4
    elif K >= 4:
        return 3
    elif K >= 2:
        return 1
    else:
        return 0


@jit
def _coefficients(L, Q: tl.constexpr):
    """``(C(L - 1, 0), C(L, 1), .., C(L + Q - 2, Q - 1))`` modulo 2^64 for int64 ``L >= 0``
    (any shape): the binomial shift across L rows.  Exact: C(L + k - 1, k) is the product
    L (L + 1) .. (L + k - 1) over k!; the factors' odd parts are multiplied (wrapping),
    their powers of two counted, and k! divided out as the inverse of its odd part and a
    shift (k! divides the product, so the count covers k!'s twos)."""
    nonzero = L != 0
    base = gl.where(nonzero, L, 1)
    one = base * 0 + 1
    out = (one,)
    odd = one
    twos = base * 0
    for i in gl.static_range(Q - 1):
        f = base + i
        lowest = f & (0 - f)  # 2^(trailing zeros), exact as a double
        e = (lowest.to(gl.float64).to(gl.int64, bitcast=True) >> 52) - 1023
        odd = odd * (f >> e)
        twos = twos + e
        shift = twos - _factorial_twos(i + 1)
        c = (odd * _odd_factorial_inverse(i + 1)) << gl.minimum(shift, 63)
        out = out + (gl.where(nonzero & (shift < 64), c, 0),)
    return out



@jit
def _publish(entry_ptr, values, col, last_thread, stash, tag, publishes, Q: tl.constexpr, TS: tl.constexpr,
             WPV: tl.constexpr, T: tl.constexpr, WARPS: tl.constexpr):
    """Write the q vectors ``values`` ([T, S] each) of the last thread (``last_thread``) as
    tagged words at ``entry_ptr`` (columns below TS only: padding columns are zero), one word
    per lane: every thread puts its words in a row of ``stash`` and the lanes of one
    instruction take the last row's, so an entry's words go out in one request per line, not one atomic
    after another from one thread (H100, 2^27: int64 order 8 0.61 -> 0.67 of copy).
    Entries too wide for a stash (``stash`` None) go out from the last thread."""
    if stash is None:
        for r in gl.static_range(Q):
            v = values[r].to(gl.int64)
            for h in gl.static_range(WPV):
                bits = (v >> (32 * h)) & 0xFFFFFFFF
                gl.atomic_xchg(entry_ptr + (r * TS + col) * WPV + h, tag | bits,
                               mask=last_thread & (col < TS) & publishes, sem="relaxed")
    else:
        _publish_lanes(entry_ptr, values, col, stash, tag, publishes, Q, TS, WPV, T, WARPS)


@jit
def _publish_lanes(entry_ptr, values, col, stash, tag, publishes, Q: tl.constexpr, TS: tl.constexpr,
                   WPV: tl.constexpr, T: tl.constexpr, WARPS: tl.constexpr):
    """:func:`_publish` through ``stash``."""
    NWP: tl.constexpr = stash.shape[1]
    rows: tl.constexpr = gl.BlockedLayout([1, NWP], [32, 1], [WARPS, 1], [1, 0])
    at = gl.expand_dims(gl.arange(0, NWP, layout=gl.SliceLayout(0, rows)), 0)
    words = gl.full([T, NWP], 0, gl.int32, layout=rows)
    for r in gl.static_range(Q):
        v = values[r].to(gl.int64)
        for c in gl.static_range(TS):
            vc = gl.convert_layout(gl.reduce(gl.where(col == c, v, 0), 1, _add), gl.SliceLayout(1, rows))
            for h in gl.static_range(WPV):
                bits = (gl.expand_dims(vc, 1) >> (32 * h)).to(gl.int32)
                words = gl.where(at == (r * TS + c) * WPV + h, bits, words)
    gl.thread_barrier()  # the stash's last readers are done
    stash.store(words)
    gl.thread_barrier()
    lanes: tl.constexpr = gl.BlockedLayout([1, 1], [1, 32], [1, WARPS], [1, 0])
    last = stash.slice(T - 1, 1, 0).load(lanes)
    word = gl.expand_dims(gl.arange(0, NWP, layout=gl.SliceLayout(0, lanes)), 0)
    gl.atomic_xchg(entry_ptr + word, tag | (last.to(gl.int64) & 0xFFFFFFFF), mask=(word < Q * TS * WPV) & publishes,
                   sem="relaxed")


@jit
def _shift_into(base, values, coefs, r: tl.constexpr, UPTO: tl.constexpr):
    """``base + sum_{p < UPTO} coefs[r - p] * values[p]``: order r of the binomial shift of
    ``values`` (coefficients from :func:`_coefficients`, in the values' dtype and
    broadcastable to them) added to ``base``.  UPTO = r + 1 shifts every order; UPTO = r
    leaves order r itself out (coefs[0] is 1)."""
    out = base
    for p in gl.static_range(UPTO):
        out = out + coefs[r - p] * values[p]
    return out


@jit
def _cast(coefs, ACC: tl.constexpr, AXIS: tl.constexpr):
    """Coefficients in the accumulator dtype, with a unit axis at AXIS (-1: none)."""
    out = ()
    for k in gl.static_range(len(coefs)):
        c = coefs[k].to(ACC)
        if AXIS >= 0:
            c = gl.expand_dims(c, AXIS)
        out = out + (c,)
    return out


@jit
def _fold_extent(state, j, WINDOW: tl.constexpr):
    """(whether the window holds the prefix to stop at, how many entries fold): entries
    up to the nearest inclusive prefix if no entry before it is not ready, else the
    entries before the first one not ready.  One reduction (a cross-warp one costs two
    barriers): the first entry that is not an aggregate, coded 2j for a prefix and 2j + 1
    for an entry not ready (2 x WINDOW + 1 if every entry is an aggregate: fold them all)."""
    code = gl.where(state == FLAG_PREFIX, 2 * j, gl.where(state == FLAG_AGGREGATE, 2 * WINDOW + 1, 2 * j + 1))
    first = gl.min(code, 0)
    found = (first & 1) == 0
    return found, first // 2 + found.to(first.dtype)


@jit
def _take_word(value, lo, hi, word, real, h: tl.constexpr):
    """Word ``h`` of each value ([WINDOW, S] int64 words, tag above its 32 bits): its bits
    into ``value``, its tag into each entry's lowest and highest tag (real columns only)."""
    tag = (word >> 32).to(gl.int32)
    lo = gl.minimum(lo, gl.min(gl.where(real, tag, 2147483647), 1))
    hi = gl.maximum(hi, gl.max(gl.where(real, tag, -2147483648), 1))
    return value | gl.where(real, (word & 0xFFFFFFFF) << (32 * h), 0), lo, hi


@jit
def _fetch_vectors(status_ptr, tile, wanted, ES: tl.constexpr, Q: tl.constexpr, S: tl.constexpr, TS: tl.constexpr,
                   WPV: tl.constexpr, WINDOW: tl.constexpr, win: tl.constexpr, reads: tl.constexpr):
    """An entry's words of each order, read as 16-byte vectors (entries ES words apart, ES a
    power of two, so that they stay aligned; S x WPV words per order, those past TS x WPV
    read and ignored; ``reads`` lays out [WINDOW, S x WPV] words as ``win`` lays out
    entries): (q values of [WINDOW, S] as int64, lowest tag, highest tag of each entry)."""
    col = gl.arange(0, S, layout=gl.SliceLayout(0, win))
    real = gl.expand_dims(col < TS, 0)
    words_at = gl.expand_dims(gl.arange(0, S * WPV, layout=gl.SliceLayout(0, reads)), 0)
    ptrs = status_ptr + gl.expand_dims(gl.convert_layout(tile, gl.SliceLayout(1, reads)) * ES, 1) + words_at
    fetch = gl.expand_dims(gl.convert_layout(wanted, gl.SliceLayout(1, reads)), 1)
    lo = gl.full([WINDOW], 2147483647, gl.int32, layout=gl.SliceLayout(1, win))
    hi = gl.full([WINDOW], -2147483648, gl.int32, layout=gl.SliceLayout(1, win))
    vals = ()
    for r in gl.static_range(Q):
        w = gl.load(ptrs + r * TS * WPV, mask=fetch, other=0, volatile=True)
        if WPV == 2:
            halves = gl.split(gl.reshape(w, [WINDOW, S, 2]))
        else:
            halves = (w,)
        value = gl.full([WINDOW, S], 0, gl.int64, layout=win)
        for h in gl.static_range(WPV):
            value, lo, hi = _take_word(value, lo, hi, gl.convert_layout(halves[h], win), real, h)
        vals = vals + (value,)
    return vals, lo, hi


@jit
def _fetch_words(status_ptr, tile, wanted, ES: tl.constexpr, Q: tl.constexpr, S: tl.constexpr, TS: tl.constexpr,
                 WPV: tl.constexpr, WINDOW: tl.constexpr, win: tl.constexpr):
    """:func:`_fetch_vectors` one 8-byte word at a time (only the TS x WPV real words)."""
    col = gl.arange(0, S, layout=gl.SliceLayout(0, win))
    real = gl.expand_dims(col < TS, 0)
    ptrs = status_ptr + gl.expand_dims(tile * ES, 1) + gl.expand_dims(col * WPV, 0)
    mask = gl.expand_dims(wanted, 1) & real
    lo = gl.full([WINDOW], 2147483647, gl.int32, layout=gl.SliceLayout(1, win))
    hi = gl.full([WINDOW], -2147483648, gl.int32, layout=gl.SliceLayout(1, win))
    vals = ()
    for r in gl.static_range(Q):
        value = gl.full([WINDOW, S], 0, gl.int64, layout=win)
        for h in gl.static_range(WPV):
            w = gl.load(ptrs + (r * TS * WPV + h), mask=mask, other=0, volatile=True)
            value, lo, hi = _take_word(value, lo, hi, w, real, h)
        vals = vals + (value,)
    return vals, lo, hi


@jit
def _lookback(status_ptr, vid, epoch, ACC: tl.constexpr, Q: tl.constexpr, S: tl.constexpr, TS: tl.constexpr,
              WPV: tl.constexpr, ES: tl.constexpr, ROWS: tl.constexpr, WINDOW: tl.constexpr, win3: tl.constexpr,
              reads: tl.constexpr, VECTORS: tl.constexpr):
    """The carry vector before tile ``vid`` (q tensors of [S]).

    Each step reads a window of WINDOW entries, nearest first, in two round trips: a
    probe of each entry's first word (its state: how far the fold can go: up to the
    nearest inclusive prefix, or up to the first entry not ready) and then every word of
    the entries worth folding.  An entry of q x TS x WPV words would otherwise shrink the
    window to a few entries per step (H100, 2^27: int64 tuple size 8 at 0.33 of
    copy, 0.91 without the look-back).  The fetched words decide (one tag in all of an
    entry's words); the probe only limits what is read.  ``win3`` ([WINDOW, QP, S], QP
    the orders rounded up to a power of two) holds an entry's S columns of every order in
    one thread and spreads the window's entries over WIN_WARPS warps (one entry per lane;
    H100, 2^27: wider windows beat one warp's despite reductions across warps).  Entries' words
    are read as 16-byte vectors (``VECTORS``, :func:`_fetch_vectors`) or one word at a time
    (:func:`.orders_rules.blocked_reader` chooses, from measurements), and the window's orders
    are summed in one reduction across warps (one pair of barriers per step instead of one
    per order; H100, 2^27: never slower, int64 order 8 0.78 against 0.76)."""
    QP: tl.constexpr = _words_padded(Q)
    win: tl.constexpr = gl.SliceLayout(1, win3)  # [WINDOW, S]
    j = gl.arange(0, WINDOW, layout=gl.SliceLayout(1, win))
    order_at = gl.expand_dims(gl.expand_dims(gl.arange(0, QP, layout=gl.SliceLayout(0, gl.SliceLayout(2, win3))), 0), 2)
    picks = gl.expand_dims(gl.arange(0, QP, layout=gl.SliceLayout(1, gl.SliceLayout(0, win3))), 1)
    # Shifts of the window's entries (j tiles between entry j and the window's end).
    cj = _cast(_coefficients(j.to(gl.int64) * ROWS, Q), ACC, 1)
    acc = ()
    for r in gl.static_range(Q):
        acc = acc + (gl.full([S], 0, ACC, layout=gl.SliceLayout(0, win)),)
    folded = vid * 0  # tiles folded so far (int64)
    done = vid <= 0
    while not done:
        tile = vid - 1 - folded - j
        valid = tile >= 0
        probe = (gl.load(status_ptr + tile * ES, mask=valid, other=0, volatile=True) >> 32).to(gl.int32)
        seen = state_of(probe, valid, epoch)
        _, extent = _fold_extent(seen, j, WINDOW)
        wanted = j < extent
        if VECTORS:
            words, lo, hi = _fetch_vectors(status_ptr, tile, wanted, ES, Q, S, TS, WPV, WINDOW, win, reads)
        else:
            words, lo, hi = _fetch_words(status_ptr, tile, wanted, ES, Q, S, TS, WPV, WINDOW, win)
        vals = ()
        for r in gl.static_range(Q):
            vals = vals + (words[r].to(ACC),)
        state = state_of(lo, wanted & (lo == hi), epoch)  # accepted when every word carries one tag
        done, limit = _fold_extent(state, j, WINDOW)
        take = gl.expand_dims(j < limit, 1)
        # The window's orders, shifted to its end, stacked on axis 1 and summed at once.
        stacked = gl.full([WINDOW, QP, S], 0, ACC, layout=win3)
        for r in gl.static_range(Q):
            shifted = gl.where(take, _shift_into(vals[r], vals, cj, r, r), 0)
            stacked = gl.where(order_at == r, gl.expand_dims(shifted, 1), stacked)
        summed = gl.reduce(stacked, 0, _add)  # [QP, S], each thread all of them
        part = ()
        for r in gl.static_range(Q):
            picked = gl.reduce(gl.where(picks == r, summed, 0), 0, _add)
            part = part + (gl.convert_layout(picked, gl.SliceLayout(0, win)),)
        cm = _cast(_coefficients(folded * ROWS, Q), ACC, -1)  # this window lies before the folded tiles
        total = ()
        for r in gl.static_range(Q):
            total = total + (_shift_into(acc[r], part, cm, r, r + 1),)
        acc = total
        folded = folded + limit
    return acc

