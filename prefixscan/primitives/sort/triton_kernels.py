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

The stable rank counts the keys of the same digit before a key: packed 8-bit
counters (eight digits to a uint64) scanned along chunks of 32 keys, plus the
chunks' totals scanned across the tile (:func:`_ranks_packed`, the default), or 16
exclusive cumulative sums of one-hot digit masks over the tile, packed two 16-bit
counters to a 32-bit word (:func:`_ranks`; a tile holds at most 2^15 keys).  Wider
digits would need another ranking
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
#: Keys per chunk of the packed ranking (8-bit counters: at most 255).
CHUNK = tl.constexpr(32)


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
    for item in tl.range(0, ITEMS):  # a loop, not unrolled: 8 x 8 unrolled histograms overflowed the instruction cache
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
def _ranks(d, inside, BLOCK: tl.constexpr):
    """``(rank, counts)``: each key's rank among the tile's keys of its digit ``d``
    (before it), and the tile's count of every digit ([16] int32); keys outside the
    lane (``inside`` False) count for nothing.  Two 16-bit counters per uint32, one
    cumulative sum over the tile per pair of digits (a [BLOCK, 8] sum along the
    tile compiled to 255 registers at 2048 keys on 8 warps, eight 1-D sums to 80)."""
    field = ((d & 1) * 16).to(tl.uint32)
    pair = d >> 1
    bit = tl.full((), 1, tl.uint32) << field
    if inside is not None:
        bit = tl.where(inside, bit, 0)
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
def _add2(a0, a1, b0, b1):
    return a0 + b0, a1 + b1


@triton.jit
def _ranks_packed(d, inside, BLOCK: tl.constexpr, CHUNK: tl.constexpr):
    """``(rank in its chunk, before, counts)`` (``SortTile.rank`` "packed"): the tile as
    ``[C, CHUNK]`` chunks of consecutive keys, the 16 digits' counters 8 bits wide,
    packed eight to a uint64; one scan of the two words along each chunk ranks every
    key among the keys of its digit before it in its chunk (a count <= CHUNK <= 255
    never carries into the next field), and ``before[c, digit]`` ([C, 16]) counts the
    keys of the digit in the chunks before chunk c.  A chunk of 32 keys is a warp's row
    in the layout Triton picks, so the scan is a warp's shuffles, no barrier (chunks of
    128 spanned four warps).  On an H200 the digit pass ran 244 instructions a key
    (Nsight Compute) where the eight block-wide sums of :func:`_ranks` ran 680."""
    CH: tl.constexpr = CHUNK if BLOCK >= CHUNK else BLOCK
    C: tl.constexpr = BLOCK // CH
    d = tl.reshape(d, [C, CH])
    field = ((d & 7) * 8).to(tl.uint64)
    bit = tl.full((), 1, tl.uint64) << field
    if inside is not None:
        bit = tl.where(tl.reshape(inside, [C, CH]), bit, 0)
    high = d >= 8
    zero = tl.zeros_like(bit)
    low_word = tl.where(high, zero, bit)
    high_word = tl.where(high, bit, zero)
    s0, s1 = tl.associative_scan((low_word, high_word), 1, _add2)
    within = ((tl.where(high, s1, s0) >> field) & 0xFF).to(tl.int32) - 1  # the digit's keys before, in the chunk
    digits = tl.arange(0, 16)
    words = tl.where(digits[None, :] >= 8, tl.sum(high_word, 1)[:, None], tl.sum(low_word, 1)[:, None])
    totals = ((words >> ((digits[None, :] & 7) * 8).to(tl.uint64)) & 0xFF).to(tl.int32)  # [C, 16]
    before = tl.cumsum(totals, 0) - totals  # the digit's keys in earlier chunks
    return tl.reshape(within, [BLOCK]), before, tl.sum(totals, 0)


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
    RANK: tl.constexpr = TILE[5]  # the ranking's index in RANKINGS: 0 _ranks, 1 _ranks_packed
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
    before = tl.zeros([1, 16], dtype=tl.int32)  # keys of each digit in the tile's earlier chunks
    if RANK == 1:
        rank, before, counts = _ranks_packed(d, inside, BLOCK, CHUNK)
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
    CHUNKS: tl.constexpr = before.shape[0]
    table = tl.reshape(offsets[None, :] + before.to(tl.int64), [CHUNKS * 16])  # [chunk, digit] -> its first slot
    dst = base + tl.gather(table, rank_in // (BLOCK // CHUNKS) * 16 + d, 0) + rank
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
    one tile per lane, PAYLOAD, WRITE_KEYS, WIDE: int64 counts, RANK: the ranking's index in RANKINGS)."""
    vid, full = tile_id(counter_ptr, tile_base, tiles_per_lane, L, TILE[0], TILE[1])
    if full:
        _pass_tile(io, status, hist_ptr, L, vid, tiles_per_lane, shift, pass_index, passes, epoch, MONOID, PROTOCOL,
                   KEY, TILE, True)
    else:
        _pass_tile(io, status, hist_ptr, L, vid, tiles_per_lane, shift, pass_index, passes, epoch, MONOID, PROTOCOL,
                   KEY, TILE, False)
