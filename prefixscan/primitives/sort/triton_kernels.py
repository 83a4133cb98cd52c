"""Onesweep on the engine: the GPU radix sort's kernels.

Adinets & Merrill 2022 ("Onesweep: A Faster Least Significant Digit Radix Sort
for GPUs") sort in one histogram pass plus one pass per digit, each digit pass a
single-pass scan of the digits' counts with decoupled look-back (Merrill &
Garland 2016, section 4).  Here, over lanes of ``L`` keys (the rows of a sort
along an axis; one lane for a 1-D sort), with digits of ``DIGIT_BITS`` = 4 bits:

* :func:`histogram_kernel` reads the keys once and adds every pass's digit counts
  to a ``[lanes, passes, 16]`` table (a program's histogram of a span of its lane,
  then 16 atomics per pass);
* :func:`digit_pass_kernel` is one pass on the engine
  (:mod:`prefixscan.backends.triton.engine`): a tile takes its id in start order,
  loads its keys (and payload), computes each key's digit from the keys' original
  bits (:func:`ordered_key`, the mapping of :mod:`.keys`), counts its digits and
  ranks each key stably among the tile's keys of the same digit, carries the 16
  counts to its successors through ``carry_columns`` (one status column per
  digit: the look-back per digit), and scatters key and payload to
  ``lane * L + base[digit] + prefix[digit] + rank``, ``base`` the exclusive scan of
  the lane's histogram row for the pass.

The stable rank is 16 exclusive cumulative sums of one-hot digit masks over the
tile, packed two 16-bit counters to a 32-bit word (8 cumulative sums over the
tile; a tile holds at most 2^15 keys).  Wider digits would need another ranking
(CUB ranks 8-bit digits by warp-level match and shared-memory counters, which
Triton does not expose), so an int32 key takes 8 passes where CUB takes 4.
"""

from __future__ import annotations

import triton
import triton.language as tl

from ...backends.triton.engine.pipeline import carry_columns, tile_id

__all__ = ["DIGIT_BITS", "RADIX", "ordered_key", "histogram_kernel", "digit_pass_kernel", "MAX_BLOCK"]

DIGIT_BITS = 4
RADIX = 1 << DIGIT_BITS
#: Most keys per tile: the packed counters hold 16 bits.
MAX_BLOCK = 1 << 15


@triton.jit
def ordered_key(raw, KEY: tl.constexpr):
    """The order-preserving unsigned key of the raw bits ``raw`` (a tensor of the
    keys' storage type), as :func:`prefixscan.primitives.sort.keys.ordered_keys`:
    uint32 for keys of up to 32 bits, uint64 for wider.  ``KEY`` = (KIND, WIDTH,
    MASK, FLIP, INF): the kind's index in ``keys.KINDS``, the storage bits, the
    sorted bits' mask, the descending flip, +inf's bits."""
    KIND: tl.constexpr = KEY[0]
    WIDTH: tl.constexpr = KEY[1]
    if WIDTH == 64:
        k = raw.to(tl.uint64, bitcast=True)
    elif WIDTH == 32:
        k = raw.to(tl.uint32, bitcast=True)
    elif WIDTH == 16:
        k = raw.to(tl.uint16, bitcast=True).to(tl.uint32)
    else:
        k = raw.to(tl.uint8, bitcast=True).to(tl.uint32)
    one = tl.full((), 1, k.dtype)
    sign = one << (WIDTH - 1)
    ones = (sign - one) | sign
    if KIND == 1:  # signed: offset binary
        k = k ^ sign
    elif KIND == 2:  # float: negatives flipped, positives' sign set, -0.0 as +0.0, NaN on top
        magnitude = k & (sign - one)
        k = tl.where((k & sign) != 0, k ^ ones, k | sign)
        k = tl.where(magnitude == 0, sign, k)
        k = tl.where(magnitude > tl.full((), KEY[4], k.dtype), ones, k)
    elif KIND == 3:  # bool
        k = (k != 0).to(k.dtype)
    if KEY[2] != (1 << WIDTH) - 1:
        k = k & tl.full((), KEY[2], k.dtype)
    if KEY[3] != 0:
        k = k ^ tl.full((), KEY[3], k.dtype)
    return k


@triton.jit
def _digit(k, shift):
    """The ``DIGIT_BITS``-bit digit of ordered keys ``k`` at bit ``shift`` (int32)."""
    return ((k >> shift.to(k.dtype)) & 15).to(tl.int32)


@triton.jit(do_not_specialize=["L", "spans"])
def histogram_kernel(keys_ptr, hist_ptr, L, spans, KEY: tl.constexpr, PASSES: tl.constexpr, PB: tl.constexpr,
                     BLOCK: tl.constexpr, ITEMS: tl.constexpr):
    """Add the digit counts of every pass to ``hist[lane, pass, digit]``: program
    ``lane * spans + s`` counts the ``ITEMS`` blocks of BLOCK keys of span ``s`` of its
    lane (of ``L`` keys) in registers, then adds them with 16 atomics per pass
    (``PB``: PASSES rounded up to a power of two)."""
    pid = tl.program_id(0).to(tl.int64)
    lane = pid // spans
    span = pid % spans
    rank = tl.arange(0, BLOCK)
    bins = tl.arange(0, 16)
    passes = tl.arange(0, PB)
    counts = tl.zeros([PB, 16], dtype=tl.int32)
    for item in tl.static_range(ITEMS):
        local = (span * ITEMS + item) * BLOCK + rank
        inside = local < L
        k = ordered_key(tl.load(keys_ptr + lane * L + local, mask=inside, other=0), KEY)
        for p in tl.static_range(PASSES):
            h = tl.histogram(_digit(k, tl.full((), p * 4, tl.int32)), 16, mask=inside)
            counts += tl.where(passes[:, None] == p, h[None, :], 0)
    row = hist_ptr + (lane * PASSES + passes[:, None]) * 16 + bins[None, :]
    mask = (passes[:, None] < PASSES) & (bins[None, :] < 16)  # full shape: the interpreter does not broadcast it
    tl.atomic_add(row, counts.to(hist_ptr.dtype.element_ty), mask=mask, sem="relaxed")


@triton.jit
def _digit_bits(d, inside):
    """``(field, pair, bit)`` of digits ``d``: two 16-bit counters share a uint32 word,
    digit d counts in word ``pair = d >> 1`` at bit ``field`` (0 or 16); ``bit`` is the
    one to add there (0 for keys outside the lane, ``inside`` False)."""
    field = ((d & 1) * 16).to(tl.uint32)
    bit = tl.full((), 1, tl.uint32) << field
    if inside is not None:
        bit = tl.where(inside, bit, 0)
    return field, d >> 1, bit


@triton.jit
def _ranks(d, inside, BLOCK: tl.constexpr):
    """``(rank, counts)``: each key's rank among the tile's keys of its digit ``d``
    (before it), and the tile's count of every digit ([16] int32); keys outside the
    lane (``inside`` False) count for nothing.  Two 16-bit counters per uint32, one
    cumulative sum over the tile per pair of digits (a [BLOCK, 8] sum along the
    tile compiled to 255 registers at 2048 keys on 8 warps, eight 1-D sums to 80)."""
    field, pair, bit = _digit_bits(d, inside)
    mine = tl.zeros_like(bit)
    digits = tl.arange(0, 16)
    counts = tl.zeros([16], dtype=tl.int32)
    for c in tl.static_range(8):
        column = tl.where(pair == c, bit, 0)
        mine = tl.where(pair == c, tl.cumsum(column, 0), mine)
        total = tl.sum(column, 0)
        counts = tl.where(digits == 2 * c, (total & 0xFFFF).to(tl.int32), counts)
        counts = tl.where(digits == 2 * c + 1, (total >> 16).to(tl.int32), counts)
    rank = ((mine >> field) & 0xFFFF).to(tl.int32) - 1
    return rank, counts


@triton.jit
def _add8(a0, a1, a2, a3, a4, a5, a6, a7, b0, b1, b2, b3, b4, b5, b6, b7):
    return a0 + b0, a1 + b1, a2 + b2, a3 + b3, a4 + b4, a5 + b5, a6 + b6, a7 + b7


@triton.jit
def _ranks_fused(d, inside, BLOCK: tl.constexpr):
    """:func:`_ranks` (``SortTile.rank`` "fused"): the eight words scanned over the tile
    together (one block-wide scan of eight operands:
    eight separate ``tl.cumsum`` and ``tl.sum`` each paid their own barriers, about
    14 us a tile on an H200; a [BLOCK, 8] sum along the tile compiled to 255
    registers at 2048 keys on 8 warps); the counts from ``tl.histogram``."""
    field, pair, bit = _digit_bits(d, inside)
    zero = tl.zeros_like(bit)
    s0, s1, s2, s3, s4, s5, s6, s7 = tl.associative_scan(
        (tl.where(pair == 0, bit, zero), tl.where(pair == 1, bit, zero), tl.where(pair == 2, bit, zero),
         tl.where(pair == 3, bit, zero), tl.where(pair == 4, bit, zero), tl.where(pair == 5, bit, zero),
         tl.where(pair == 6, bit, zero), tl.where(pair == 7, bit, zero)), 0, _add8)
    mine = tl.where(pair == 0, s0, tl.where(pair == 1, s1, tl.where(pair == 2, s2, tl.where(pair == 3, s3, s4))))
    mine = tl.where(pair == 5, s5, tl.where(pair == 6, s6, tl.where(pair == 7, s7, mine)))
    rank = ((mine >> field) & 0xFFFF).to(tl.int32) - 1
    if inside is None:
        counts = tl.histogram(d, 16)
    else:
        counts = tl.histogram(d, 16, mask=inside)
    return rank, counts.to(tl.int32)


@triton.jit
def _pass_tile(io, status, hist_ptr, L, vid, tiles_per_lane, shift, pass_index, passes, epoch,
               MONOID: tl.constexpr, PROTOCOL: tl.constexpr, KEY: tl.constexpr, TILE: tl.constexpr,
               FULL: tl.constexpr):
    """Tile ``vid`` of :func:`digit_pass_kernel`; ``FULL``: every key inside the lane."""
    keys_in, keys_out, pay_in, pay_out = io
    BLOCK: tl.constexpr = TILE[0]
    SINGLE: tl.constexpr = TILE[1]
    PAYLOAD: tl.constexpr = TILE[2]  # 0 none, 1 the index in the lane, 2 copied
    WRITE_KEYS: tl.constexpr = TILE[3]
    CT: tl.constexpr = tl.int64 if TILE[4] else tl.int32
    FUSED: tl.constexpr = TILE[5]  # the ranking: _ranks_fused, else _ranks
    lane = vid // tiles_per_lane
    tile = vid % tiles_per_lane
    rank_in = tl.arange(0, BLOCK)
    local = tile * BLOCK + rank_in  # position in the lane (64-bit: vid is)
    base = lane * L
    if FULL:
        inside = None
        raw = tl.load(keys_in + base + local)
    else:
        inside = local < L
        raw = tl.load(keys_in + base + local, mask=inside, other=0)
    d = _digit(ordered_key(raw, KEY), shift)
    if FUSED:
        rank, counts = _ranks_fused(d, inside, BLOCK)
    else:
        rank, counts = _ranks(d, inside, BLOCK)
    digits = tl.arange(0, 16)
    counts = counts.to(CT)
    zero = tl.sum(counts, 0) * 0
    if SINGLE:
        prefix = counts * 0
    else:
        prefix = carry_columns(status, vid * 16 + digits, lane * tiles_per_lane, tile, (counts,), (counts * 0,),
                               (zero,), epoch, MONOID, PROTOCOL, 16)[0]
    lane_counts = tl.load(hist_ptr + (lane * passes + pass_index) * 16 + digits).to(tl.int64)
    offsets = tl.cumsum(lane_counts, 0) - lane_counts + prefix.to(tl.int64)  # where each digit's keys go
    dst = base + tl.gather(offsets, d, 0) + rank
    if WRITE_KEYS:
        tl.store(keys_out + dst, raw, mask=inside)
    if PAYLOAD == 1:
        tl.store(pay_out + dst, local.to(pay_out.dtype.element_ty), mask=inside)
    elif PAYLOAD == 2:
        if FULL:
            tl.store(pay_out + dst, tl.load(pay_in + base + local))
        else:
            tl.store(pay_out + dst, tl.load(pay_in + base + local, mask=inside), mask=inside)


@triton.jit(do_not_specialize=["L", "tiles_per_lane", "shift", "pass_index", "tile_base", "epoch"])
def digit_pass_kernel(io, status, counter_ptr, hist_ptr, L, tiles_per_lane, shift, pass_index, passes, tile_base,
                      epoch, MONOID: tl.constexpr, PROTOCOL: tl.constexpr, KEY: tl.constexpr, TILE: tl.constexpr):
    """One digit pass (the digit at bit ``shift``, histogram row ``pass_index`` of
    ``passes``) over lanes of ``L`` keys in tiles of BLOCK: ``io`` = (keys in, keys
    out, payload in, payload out).  ``MONOID``: the counts' (add); ``PROTOCOL``
    (WORDS, WINDOW, CHAINED); ``KEY`` as :func:`ordered_key`; ``TILE`` (BLOCK, SINGLE:
    one tile per lane, PAYLOAD, WRITE_KEYS, WIDE: int64 counts, FUSED: the ranking)."""
    vid, full = tile_id(counter_ptr, tile_base, tiles_per_lane, L, TILE[0], TILE[1])
    if full:
        _pass_tile(io, status, hist_ptr, L, vid, tiles_per_lane, shift, pass_index, passes, epoch, MONOID, PROTOCOL,
                   KEY, TILE, True)
    else:
        _pass_tile(io, status, hist_ptr, L, vid, tiles_per_lane, shift, pass_index, passes, epoch, MONOID, PROTOCOL,
                   KEY, TILE, False)
