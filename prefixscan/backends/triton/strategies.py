"""GPU meta-strategies other than the single-pass look-back (``strategy=``).

Every strategy scans the ``(B, M, K)`` row-major layout along M, as
:func:`.launch._launch` does, with the same tiles (``tuning.choose_config``):
``[BLOCK]`` tiles when ``K == 1`` and ``[ROWS, KB]`` tiles (KB interleaved
columns) otherwise.  A *group* is one lane and one block of KB columns; its
tiles are numbered in scan order (reverse scans mirror the indices, or, for a
commutative operator on one column, take the blocks from the end).  A lane
that fits in one tile needs no carries: every strategy scans it in one pass.

``scan_then_propagate`` (CUDPP; Sengupta, Harris, Zhang & Owens 2007, and the
"scan-then-propagate" family in Merrill & Grimshaw 2009, seed 000, section 3.4):
  pass 1 scans every tile locally, writes the local scan and the tile's total;
  the totals, a ``(B, tiles, K)`` array, are scanned by the same algorithm,
  recursively (exclusive, seeded with ``init``); pass 3 combines each tile's
  carry with its local scan.  Traffic ~4n (read x, write local, read local,
  write y) plus ~2n/tile per level.  Auxiliary memory: n/tile + n/tile^2 + ..
  totals, plus an n-element accumulator-dtype scratch where the output dtype
  is narrower than the accumulator (float16/bfloat16), so that the local scans
  are not rounded twice.

``reduce_then_scan`` (Merrill & Grimshaw 2009, seed 000, "two-level streaming
reduce-then-scan"): a fixed grid of C blocks (C = SMs x ``RTS_BLOCKS_PER_SM``;
3 in the interpreter), block c owning a contiguous range of the tiles of all
groups.  Kernel 1 reduces each range to one partial per column (the part of
the range after the last group start) and a head flag; kernel 2, one program,
scans the C partials with a segmented ``tl.associative_scan``; kernel 3
re-reads each range and scans it seeded with its carry.  Traffic ~3n + O(C);
auxiliary memory O(C x KB).

``persistent`` (SAM, Maleki, Yang & Burtscher 2016, seed 002, section 2.2):
G = SMs x blocks per SM resident programs (3 in the interpreter); program b
scans chunks b, b+G, b+2G, .. in order.  For each chunk it publishes the tile
total into a circular buffer of ``SLOTS`` >= 3G entries, tagged with the
chunk's sequence number, then forms its carry from its own previous chunk's
inclusive prefix plus the totals of the G-1 chunks in between (those of its
group), read in vector loads, waiting on tags that are not there yet.
Traffic ~2n + G words per chunk; auxiliary memory O(G x KB).

The carries of every strategy are combined in an order fixed by the sizes
(and, for the two fixed-grid strategies, by the grid): results are bitwise
reproducible from run to run, so ``deterministic=True`` allows all three.

Slot reuse (persistent).  Every chunk waits until all of its G-1 predecessors
have published, even those of another group (their values are then masked).
So when chunk y has passed its wait, every chunk <= y - G has finished (each
published only after its block's previous chunk finished), and a block that
publishes chunk c + S has finished chunk c + S - G, hence all chunks
<= c + S - 2G: for S >= 3G - 1 all readers of chunk c (c+1 .. c+G-1) are done
with slot c mod S before it is overwritten.  The tag (a 31-bit sequence
number that grows across calls) lets a reader tell the value it waits for from
the one S chunks earlier or from an earlier call, so no memset is needed.

Persistent programs wait on one another: all G must be resident at once.  On
CUDA G is capped by the occupancy computed from the compiled kernel's
registers, shared memory and warps, and the kernel is launched as a
cooperative grid, so that a G that cannot be co-resident is an error rather
than a hang.  The interpreter runs programs one after the other in program-id
order, so within one launch program 0 could never see chunk G-1 before its
chunk G: there each round (chunks rG .. rG+G-1) is one launch, and each
program's running carry is kept in a G-entry buffer between launches.  A
program then waits only on chunks of earlier rounds or of lower program ids
in its round, which have run, and it checks rather than spins (a missing tag
fails an assertion instead of hanging).

Raking (``RAKE`` constexpr, :func:`_raking_scan`): instead of
``tl.associative_scan`` over the tile, the tile is reshaped to rows of RAKE
elements, each row scanned (serially within a thread when a row is one
thread's registers, Merrill & Grimshaw's SRTS), the row totals scanned, and
each row combined with the exclusive prefix of the rows before it (in that
order, so non-commutative operators are fine).  ``set_raking`` or a tuning
config's ``raking`` field selects it; 0 keeps ``tl.associative_scan``.
"""

from __future__ import annotations

import linecache
import math
from dataclasses import dataclass, field

import triton
import triton.language as tl

from .kernels import _as_rows, _fn, _load_fields, _ordered_reduce, _scalars, _store_fields, _where
from .tuning import choose_config

STRATEGY_NAMES = ("decoupled_lookback", "chained", "reduce_then_scan", "scan_then_propagate", "persistent")

RTS_BLOCKS_PER_SM = 2  # reduce_then_scan: C = SMs x this
PERSISTENT_BLOCKS_PER_SM = 2  # persistent: at most this many resident programs per SM
INTERPRETER_BLOCKS = 3  # C and G in the interpreter
_TAG_LIMIT = (1 << 31) - 1  # tags are int32 sequence numbers

_raking_override: int | None = None


def set_raking(cols: int | None) -> None:
    """Force the in-tile raking scan with rows of ``cols`` elements (0: off,
    None: the tuning config's choice) for every strategy kernel; for tests and tuners."""
    global _raking_override
    _raking_override = cols


# ---------------------------------------------------------------------------
# Tile helpers.


@triton.jit
def _place(tile, cblock, M, stride, ROWS: tl.constexpr, KB: tl.constexpr, REVERSE: tl.constexpr,
           BACKWARD: tl.constexpr):
    """Offsets within the lane of tile ``tile`` of column block ``cblock``, their mask,
    and the offsets and mask of each element's predecessor in scan order (exclusive scans).

    ``BACKWARD`` (one column, reverse, commutative): tile t is the t-th block from
    the end, loaded in ascending order and scanned backwards in registers.
    """
    if KB == 1:
        rank = tl.arange(0, ROWS)
        if BACKWARD:
            pos = M - (tile + 1) * ROWS + rank
            inside = pos >= 0
            prev = pos + 1
            prev_ok = inside & (rank != ROWS - 1)
        else:
            offs = tile * ROWS + rank
            inside = offs < M
            pos = (M - 1 - offs) if REVERSE else offs
            prev = (pos + 1) if REVERSE else (pos - 1)
            prev_ok = inside & (rank != 0)
    else:
        local = tl.arange(0, ROWS)[:, None]
        rows = tile * ROWS + local
        cols = cblock * KB + tl.arange(0, KB)[None, :]
        inside = (rows < M) & (cols < stride)
        rpos = (M - 1 - rows) if REVERSE else rows
        rprev = (rpos + 1) if REVERSE else (rpos - 1)
        pos = rpos * stride + cols
        prev = rprev * stride + cols
        prev_ok = inside & (local != 0)
    return pos, inside, prev, prev_ok


@triton.jit
def _load_tile(x_ptrs, base, tile, cblock, M, stride, ident, INCLUSIVE: tl.constexpr, REVERSE: tl.constexpr,
               BACKWARD: tl.constexpr, ROWS: tl.constexpr, KB: tl.constexpr):
    """(x, scan input, offsets, mask): the scan input is x shifted by one element in
    scan order (identity first) for exclusive scans."""
    pos, inside, prev, prev_ok = _place(tile, cblock, M, stride, ROWS, KB, REVERSE, BACKWARD)
    x = _load_fields(x_ptrs, base + pos, inside, ident)
    if INCLUSIVE:
        scan_in = x
    else:
        scan_in = _load_fields(x_ptrs, base + prev, prev_ok, ident)
    return x, scan_in, pos, inside


@triton.jit
def _bits_xor(a, b):
    return a ^ b


@triton.jit
def _pick(values, index, AXIS: tl.constexpr):
    """Entry ``index`` along ``AXIS`` (1, of a 2-D or 3-D tensor) of every field,
    exactly: the other entries are zeroed as bits and an xor reduction keeps it."""
    n: tl.constexpr = values[0].shape[AXIS]
    if len(values[0].shape) == 2:
        keep = (tl.arange(0, n) == index)[None, :]
    else:
        keep = (tl.arange(0, n) == index)[None, :, None]
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
        out = out + (tl.reduce(tl.where(keep, bits, 0), AXIS, _bits_xor).to(v.dtype, bitcast=True),)
    return out


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
    if RAKE == 0:
        scanned = tl.associative_scan(scan_in, 0, _fn(FLAT), reverse=BACKWARD)
    else:
        scanned = _raking_scan(scan_in, ident, PAIR, FLAT, RAKE, BACKWARD)
    return scanned


@triton.jit
def _bcast(prefix, KB: tl.constexpr):
    """A per-column prefix (scalar, or [KB]) shaped to combine with a tile."""
    if KB == 1:
        out = prefix
    else:
        out = _as_rows(prefix)
    return out


@triton.jit
def _seed(init_ptrs, lane, cblock, K, ident, need, HAS_INIT: tl.constexpr, KB: tl.constexpr):
    """The group's init (identity without one, or where ``need`` is False): scalar or [KB]."""
    if KB == 1:
        if HAS_INIT:
            out = _load_fields(init_ptrs, lane, need, ident)
        else:
            out = ident
    else:
        col = cblock * KB + tl.arange(0, KB)
        if HAS_INIT:
            out = _load_fields(init_ptrs, lane * K + col, need & (col < K), ident)
        else:
            out = _where(col >= 0, ident, ident)
    return out


@triton.jit
def _entries(index, KB: tl.constexpr):
    """Auxiliary entries of ``index`` (one per column): scalar, or [KB]."""
    if KB == 1:
        out = index
    else:
        out = index * KB + tl.arange(0, KB)
    return out


# ---------------------------------------------------------------------------
# scan_then_propagate


@triton.jit(do_not_specialize=["col_blocks", "tiles"])
def stp_local_kernel(x_ptrs, y_ptrs, ident_ptrs, init_ptrs, sum_ptrs, M, K, col_blocks, tiles,
                     PAIR: tl.constexpr, FLAT: tl.constexpr, COMMUTATIVE: tl.constexpr,
                     INCLUSIVE: tl.constexpr, REVERSE: tl.constexpr, BACKWARD: tl.constexpr,
                     HAS_INIT: tl.constexpr, SEED: tl.constexpr, MULTI_LANE: tl.constexpr,
                     EXACT_K: tl.constexpr, ROWS: tl.constexpr, KB: tl.constexpr, RAKE: tl.constexpr):
    """Scan one tile locally.  ``SEED`` (lanes of one tile): combine with the init
    and write the result.  Otherwise write the local scan and the tile's total at
    ``(lane, tile, column)`` of the ``(B, tiles, K)`` totals."""
    vid = tl.program_id(0).to(tl.int64)
    group = vid // tiles
    tile = vid % tiles
    lane = group // col_blocks
    cblock = group % col_blocks
    ident = _scalars(ident_ptrs, 0)
    stride = KB if EXACT_K else K
    base = lane * M * stride if MULTI_LANE else 0
    x, scan_in, pos, inside = _load_tile(x_ptrs, base, tile, cblock, M, stride, ident, INCLUSIVE, REVERSE,
                                         BACKWARD, ROWS, KB)
    scanned = _scan_tile(scan_in, ident, PAIR, FLAT, BACKWARD, RAKE)
    if SEED:
        seed = _seed(init_ptrs, lane, cblock, K, ident, lane >= 0, HAS_INIT, KB)
        _store_fields(y_ptrs, base + pos, PAIR(_bcast(seed, KB), scanned), inside)
    else:
        _store_fields(y_ptrs, base + pos, scanned, inside)
        total = _ordered_reduce(x, FLAT, COMMUTATIVE)
        if KB == 1:
            _store_fields(sum_ptrs, lane * tiles + tile, total, lane >= 0)
        else:
            col = cblock * KB + tl.arange(0, KB)
            _store_fields(sum_ptrs, (lane * tiles + tile) * K + col, total, col < K)


@triton.jit(do_not_specialize=["col_blocks", "tiles"])
def stp_add_kernel(loc_ptrs, y_ptrs, ident_ptrs, carry_ptrs, M, K, col_blocks, tiles,
                   PAIR: tl.constexpr, REVERSE: tl.constexpr, BACKWARD: tl.constexpr,
                   MULTI_LANE: tl.constexpr, EXACT_K: tl.constexpr, ROWS: tl.constexpr, KB: tl.constexpr):
    """y = carry of the tile (exclusive scan of the tile totals) combined with its local scan."""
    vid = tl.program_id(0).to(tl.int64)
    group = vid // tiles
    tile = vid % tiles
    lane = group // col_blocks
    cblock = group % col_blocks
    ident = _scalars(ident_ptrs, 0)
    stride = KB if EXACT_K else K
    base = lane * M * stride if MULTI_LANE else 0
    pos, inside, prev, prev_ok = _place(tile, cblock, M, stride, ROWS, KB, REVERSE, BACKWARD)
    local = _load_fields(loc_ptrs, base + pos, inside, ident)
    if KB == 1:
        carry = _scalars(carry_ptrs, lane * tiles + tile)
    else:
        col = cblock * KB + tl.arange(0, KB)
        carry = _load_fields(carry_ptrs, (lane * tiles + tile) * K + col, col < K, ident)
    _store_fields(y_ptrs, base + pos, PAIR(_bcast(carry, KB), local), inside)


# ---------------------------------------------------------------------------
# reduce_then_scan


@triton.jit(do_not_specialize=["col_blocks", "tiles", "total", "C"])
def rts_reduce_kernel(x_ptrs, ident_ptrs, part_ptrs, head_ptr, M, K, col_blocks, tiles, total, C,
                      PAIR: tl.constexpr, FLAT: tl.constexpr, COMMUTATIVE: tl.constexpr,
                      REVERSE: tl.constexpr, BACKWARD: tl.constexpr, MULTI_LANE: tl.constexpr,
                      EXACT_K: tl.constexpr, ROWS: tl.constexpr, KB: tl.constexpr):
    """Kernel 1: block c reduces tiles [c*total/C, (c+1)*total/C) of the (group, tile)
    sequence: its partial is the reduction of the range after the last group start
    in it (head flag set when there is one)."""
    c = tl.program_id(0).to(tl.int64)
    start = c * total // C
    end = (c + 1) * total // C
    ident = _scalars(ident_ptrs, 0)
    stride = KB if EXACT_K else K
    acc = _seed(ident_ptrs, 0, 0, K, ident, c < 0, False, KB)  # identity, scalar or [KB]
    head = c < 0
    v = start
    while v < end:
        group = v // tiles
        tile = v - group * tiles
        lane = group // col_blocks
        cblock = group - lane * col_blocks
        base = lane * M * stride if MULTI_LANE else 0
        pos, inside, prev, prev_ok = _place(tile, cblock, M, stride, ROWS, KB, REVERSE, BACKWARD)
        x = _load_fields(x_ptrs, base + pos, inside, ident)
        agg = _ordered_reduce(x, FLAT, COMMUTATIVE)
        acc = PAIR(_where(tile == 0, ident, acc), agg)
        head = head | (tile == 0)
        v += 1
    _store_fields(part_ptrs, _entries(c, KB), acc, c >= 0)
    tl.store(head_ptr + c, head.to(tl.int32))


@triton.jit(do_not_specialize=["C"])
def rts_carry_kernel(part_ptrs, head_ptr, ident_ptrs, C, SEG: tl.constexpr, CP: tl.constexpr, KB: tl.constexpr):
    """Kernel 2 (one program): segmented inclusive scan of the C partials, restarting
    at every block whose range holds a group start, in place."""
    ident = _scalars(ident_ptrs, 0)
    idx = tl.arange(0, CP)
    valid = idx < C
    head = tl.load(head_ptr + idx, mask=valid, other=0)
    if KB == 1:
        entry = idx
        mask = valid
    else:
        entry = idx[:, None] * KB + tl.arange(0, KB)[None, :]
        mask = valid[:, None] & (entry >= 0)
        head = tl.broadcast_to(head[:, None], [CP, KB])
    parts = _load_fields(part_ptrs, entry, mask, ident)
    scanned = tl.associative_scan((head,) + parts, 0, _fn(SEG))
    out = ()
    for i in tl.static_range(len(parts)):
        out = out + (scanned[i + 1],)
    _store_fields(part_ptrs, entry, out, mask)


@triton.jit(do_not_specialize=["col_blocks", "tiles", "total", "C"])
def rts_scan_kernel(x_ptrs, y_ptrs, ident_ptrs, init_ptrs, part_ptrs, M, K, col_blocks, tiles, total, C,
                    PAIR: tl.constexpr, FLAT: tl.constexpr, COMMUTATIVE: tl.constexpr,
                    INCLUSIVE: tl.constexpr, REVERSE: tl.constexpr, BACKWARD: tl.constexpr,
                    HAS_INIT: tl.constexpr, MULTI_LANE: tl.constexpr, EXACT_K: tl.constexpr,
                    ROWS: tl.constexpr, KB: tl.constexpr, RAKE: tl.constexpr):
    """Kernel 3: block c re-reads its range and scans it tile by tile, seeded with the
    init of its first group combined with the scanned partial of block c - 1
    when its range starts inside a group."""
    c = tl.program_id(0).to(tl.int64)
    start = c * total // C
    end = (c + 1) * total // C
    ident = _scalars(ident_ptrs, 0)
    stride = KB if EXACT_K else K
    inner = (start % tiles) != 0  # the range starts inside a group: carry from block c - 1
    entry = _entries(c - 1, KB)
    if KB == 1:
        carried = _load_fields(part_ptrs, entry, inner, ident)
    else:
        carried = _load_fields(part_ptrs, entry, inner & (entry >= 0), ident)
    group0 = start // tiles
    lane0 = group0 // col_blocks
    prefix = PAIR(_seed(init_ptrs, lane0, group0 - lane0 * col_blocks, K, ident, inner, HAS_INIT, KB), carried)
    v = start
    while v < end:
        group = v // tiles
        tile = v - group * tiles
        lane = group // col_blocks
        cblock = group - lane * col_blocks
        base = lane * M * stride if MULTI_LANE else 0
        prefix = _where(tile == 0, _seed(init_ptrs, lane, cblock, K, ident, tile == 0, HAS_INIT, KB), prefix)
        x, scan_in, pos, inside = _load_tile(x_ptrs, base, tile, cblock, M, stride, ident, INCLUSIVE, REVERSE,
                                             BACKWARD, ROWS, KB)
        agg = _ordered_reduce(x, FLAT, COMMUTATIVE)
        scanned = _scan_tile(scan_in, ident, PAIR, FLAT, BACKWARD, RAKE)
        _store_fields(y_ptrs, base + pos, PAIR(_bcast(prefix, KB), scanned), inside)
        prefix = PAIR(prefix, agg)
        v += 1


# ---------------------------------------------------------------------------
# persistent


@triton.jit
def _pack(value, tag):
    """Tag in the high 32 bits, the value's bits (<= 32) in the low ones."""
    if value.dtype.primitive_bitwidth == 32:
        bits = value.to(tl.uint32, bitcast=True)
    elif value.dtype.primitive_bitwidth == 16:
        bits = value.to(tl.uint16, bitcast=True).to(tl.uint32)
    else:
        bits = value.to(tl.uint8, bitcast=True).to(tl.uint32)
    return (tag.to(tl.int64) << 32) | bits.to(tl.int64)


@triton.jit
def _unpack(word, ACC: tl.constexpr):
    bits = (word & 0xFFFFFFFF).to(tl.uint32)
    if ACC.primitive_bitwidth == 32:
        value = bits.to(ACC, bitcast=True)
    elif ACC.primitive_bitwidth == 16:
        value = bits.to(tl.uint16).to(ACC, bitcast=True)
    else:
        value = bits.to(tl.uint8).to(ACC, bitcast=True)
    return value


@triton.jit
def _publish_slot(word_ptr, flag_ptr, slot_ptrs, v, agg, tag, PACKED: tl.constexpr, SLOTS: tl.constexpr,
                  KB: tl.constexpr):
    """Chunk v's total into slot v mod SLOTS, with its tag."""
    slot = v % SLOTS
    entry = _entries(slot, KB)
    if PACKED:  # one field of <= 32 bits: tag and value in one word per column
        tl.atomic_xchg(word_ptr + entry, _pack(agg[0], tag), sem="relaxed")
    else:
        for i in tl.static_range(len(slot_ptrs)):
            tl.store(slot_ptrs[i] + entry, agg[i])
        tl.debug_barrier()  # every thread's value stores before the one release below
        tl.atomic_xchg(flag_ptr + slot, tag.to(tl.int32), sem="release")


@triton.jit
def _wait_slots(word_ptr, flag_ptr, slot_ptrs, idx, valid, tag_base, spin_limit, ident,
                PACKED: tl.constexpr, SLOTS: tl.constexpr, KB: tl.constexpr):
    """Totals of chunks ``idx`` ([LOOK]) where ``valid``, waiting until each slot holds
    that chunk's tag.  Returns a field tuple of [LOOK] or [LOOK, KB]."""
    slot = idx % SLOTS
    expected = (tag_base + idx).to(tl.int32)
    if KB == 1:
        entry = slot
        vmask = valid
        want = expected
    else:
        entry = slot[:, None] * KB + tl.arange(0, KB)[None, :]
        vmask = valid[:, None] & (entry >= 0)
        want = expected[:, None]
    spins = 0
    if PACKED:
        word = tl.load(word_ptr + entry, mask=vmask, other=0, volatile=True)
        ready = ~vmask | ((word >> 32).to(tl.int32) == want)
        while (tl.min(ready.to(tl.int32)) == 0) & (spins < spin_limit):
            word = tl.load(word_ptr + entry, mask=vmask, other=0, volatile=True)
            ready = ~vmask | ((word >> 32).to(tl.int32) == want)
            spins += 1
        tl.device_assert(tl.min(ready.to(tl.int32)) == 1, "persistent scan: a predecessor's total is missing")
        values = (tl.where(vmask, _unpack(word, ident[0].dtype), ident[0]),)
    else:
        tag = tl.atomic_add(flag_ptr + slot, 0, mask=valid, sem="acquire")
        ready = ~valid | (tag == expected)
        while (tl.min(ready.to(tl.int32)) == 0) & (spins < spin_limit):
            tag = tl.atomic_add(flag_ptr + slot, 0, mask=valid, sem="acquire")
            ready = ~valid | (tag == expected)
            spins += 1
        tl.device_assert(tl.min(ready.to(tl.int32)) == 1, "persistent scan: a predecessor's total is missing")
        values = ()
        for i in tl.static_range(len(slot_ptrs)):
            values = values + (tl.where(vmask, tl.load(slot_ptrs[i] + entry, mask=vmask, volatile=True), ident[i]),)
    return values


@triton.jit(do_not_specialize=["col_blocks", "tiles", "total", "G", "round0", "rounds", "tag_base",
                               "spin_limit"])
def persistent_kernel(x_ptrs, y_ptrs, ident_ptrs, init_ptrs, word_ptr, flag_ptr, slot_ptrs, carry_ptrs,
                      M, K, col_blocks, tiles, total, G, round0, rounds, tag_base, spin_limit,
                      PAIR: tl.constexpr, FLAT: tl.constexpr, COMMUTATIVE: tl.constexpr,
                      INCLUSIVE: tl.constexpr, REVERSE: tl.constexpr, BACKWARD: tl.constexpr,
                      HAS_INIT: tl.constexpr, PACKED: tl.constexpr, MULTI_LANE: tl.constexpr,
                      EXACT_K: tl.constexpr, SAVE_CARRY: tl.constexpr, ROWS: tl.constexpr, KB: tl.constexpr,
                      SLOTS: tl.constexpr, LOOK: tl.constexpr, RAKE: tl.constexpr):
    """Program b scans chunks b + rG, r in [round0, round0 + rounds), of the (group,
    tile) sequence; its carry is its previous chunk's inclusive prefix (when in the
    same group) plus the totals of the chunks in between, read from the ring."""
    b = tl.program_id(0).to(tl.int64)
    ident = _scalars(ident_ptrs, 0)
    stride = KB if EXACT_K else K
    mine = _entries(b, KB)
    # Inclusive prefix of this program's last chunk (kept in memory between the
    # interpreter's one-round launches).
    prev = _seed(ident_ptrs, 0, 0, K, ident, b < 0, False, KB)
    if SAVE_CARRY:
        prev = _load_fields(carry_ptrs, mine, (mine >= 0) & (round0 > 0), ident)
    r = round0
    while r < round0 + rounds:
        v = r.to(tl.int64) * G + b
        if v < total:
            group = v // tiles
            tile = v - group * tiles
            lane = group // col_blocks
            cblock = group - lane * col_blocks
            base = lane * M * stride if MULTI_LANE else 0
            x, scan_in, pos, inside = _load_tile(x_ptrs, base, tile, cblock, M, stride, ident, INCLUSIVE,
                                                 REVERSE, BACKWARD, ROWS, KB)
            agg = _ordered_reduce(x, FLAT, COMMUTATIVE)
            _publish_slot(word_ptr, flag_ptr, slot_ptrs, v, agg, tag_base + v, PACKED, SLOTS, KB)
            # Chunk v - G is this program's previous one: when in the same group its
            # inclusive prefix starts the fold, else the group's init does.
            acc = _where(tile >= G, prev, _seed(init_ptrs, lane, cblock, K, ident, tile < G, HAS_INIT, KB))
            first = v - tile  # the group's first chunk
            s = tl.maximum(v - G + 1, 0)
            while s < v:  # from the oldest predecessor on, LOOK at a time
                idx = s + tl.arange(0, LOOK)
                valid = idx < v
                totals = _wait_slots(word_ptr, flag_ptr, slot_ptrs, idx, valid, tag_base, spin_limit, ident,
                                     PACKED, SLOTS, KB)
                take = valid & (idx >= first)
                if KB != 1:
                    take = take[:, None]
                acc = PAIR(acc, _ordered_reduce(_where(take, totals, ident), FLAT, COMMUTATIVE))
                s += LOOK
            scanned = _scan_tile(scan_in, ident, PAIR, FLAT, BACKWARD, RAKE)
            _store_fields(y_ptrs, base + pos, PAIR(_bcast(acc, KB), scanned), inside)
            prev = PAIR(acc, agg)
        r += 1
    if SAVE_CARRY:
        _store_fields(carry_ptrs, mine, prev, mine >= 0)


# ---------------------------------------------------------------------------
# Launchers.


def _pow2(n: int) -> int:
    return 1 << max(0, math.ceil(math.log2(max(n, 1))))


@dataclass
class _Geometry:
    kb: int
    col_blocks: int
    rows: int
    tiles: int
    num_warps: int
    rake: int
    packed: bool


def _geometry(xs, accs, M: int, K: int, interpreter: bool) -> _Geometry:
    nbytes = sum(a.itemsize for a in accs)
    tune = choose_config(xs[0].device, nbytes, any(a.is_floating_point for a in accs), M, K, interpreter)
    packed = (len(accs) == 1 and nbytes <= 4) if tune.packed is None else (tune.packed and len(accs) == 1)
    if K == 1:
        kb, col_blocks, rows = 1, 1, tune.block
        if M <= rows:
            rows = max(16, _pow2(M))
    else:
        kb = min(_pow2(K), tune.max_kb)
        col_blocks = -(-K // kb)
        rows = max(1, tune.block // kb)
        if M <= rows:
            rows = _pow2(M)
    rake = _raking_override if _raking_override is not None else int(getattr(tune, "raking", 0) or 0)
    rake = min(rake, rows) if rake > 0 and rake & (rake - 1) == 0 else 0
    return _Geometry(kb, col_blocks, rows, -(-M // rows), tune.num_warps, rake, packed)


def _common(pair, flat, commutative, config, B, K, g: _Geometry) -> dict:
    return dict(PAIR=pair, FLAT=flat, COMMUTATIVE=commutative, INCLUSIVE=config.inclusive,
                REVERSE=config.reverse, BACKWARD=bool(config.reverse and commutative and K == 1),
                HAS_INIT=False, MULTI_LANE=B > 1, EXACT_K=K == g.kb, ROWS=g.rows, KB=g.kb, RAKE=g.rake)


def _pick_keys(d: dict, *names) -> dict:
    return {k: d[k] for k in names}


def _launch_kernel(kernel, grid: int, num_warps: int, stream: int, interpreter: bool, args: tuple,
                   constexprs: dict, specialized: tuple):
    from .launch import _run

    _run(kernel, grid, num_warps, stream, interpreter, args, constexprs, specialized)


def _multiprocessors(device, interpreter: bool) -> int:
    if interpreter or getattr(device, "type", "cuda") != "cuda":
        return INTERPRETER_BLOCKS
    import torch

    return torch.cuda.get_device_properties(device).multi_processor_count


def _scan_one_tile(xs, ys, idents, inits, pair, flat, commutative, B, M, K, config, g, stream, interpreter):
    """Lanes that fit one tile: one program per (lane, column block), no carries."""
    c = _common(pair, flat, commutative, config, B, K, g)
    c.update(HAS_INIT=inits is not None, SEED=True)
    args = (tuple(xs), tuple(ys), idents, inits if inits is not None else idents, idents, M, K, g.col_blocks, 1)
    _launch_kernel(stp_local_kernel, B * g.col_blocks, g.num_warps, stream, interpreter, args,
                   _pick_keys(c, *_LOCAL_KEYS), (M, K))


_LOCAL_KEYS = ("PAIR", "FLAT", "COMMUTATIVE", "INCLUSIVE", "REVERSE", "BACKWARD", "HAS_INIT", "SEED", "MULTI_LANE",
               "EXACT_K", "ROWS", "KB", "RAKE")


def launch_scan_then_propagate(xs, ys, idents, inits, pair, flat, commutative, accs, B, M, K, config, torch,
                               stream: int, interpreter: bool):
    """Recursive scan-then-propagate (CUDPP): local tile scans and tile totals, the
    totals scanned recursively (exclusive, seeded), carries combined in a last pass."""
    _stp(tuple(xs), tuple(ys), idents, inits, pair, flat, commutative, accs, B, M, K, config.inclusive,
         config.reverse, torch, stream, interpreter)


@dataclass(frozen=True)
class _Flags:
    inclusive: bool
    reverse: bool


def _stp(xs, ys, idents, inits, pair, flat, commutative, accs, B, M, K, inclusive, reverse, torch, stream,
         interpreter):
    config = _Flags(inclusive, reverse)
    g = _geometry(xs, accs, M, K, interpreter)
    if g.tiles == 1:
        _scan_one_tile(xs, ys, idents, inits, pair, flat, commutative, B, M, K, config, g, stream, interpreter)
        return
    device = xs[0].device
    # Local scans stay in the accumulator dtype (no double rounding of float16).
    locs = tuple(y if y.dtype == a else torch.empty(y.shape, dtype=a, device=device) for y, a in zip(ys, accs))
    sums = tuple(torch.empty(B * g.tiles * K, dtype=a, device=device) for a in accs)
    c = _common(pair, flat, commutative, config, B, K, g)
    c.update(SEED=False)
    grid = B * g.col_blocks * g.tiles
    _launch_kernel(stp_local_kernel, grid, g.num_warps, stream, interpreter,
                   (xs, locs, idents, idents, sums, M, K, g.col_blocks, g.tiles),
                   _pick_keys(c, *_LOCAL_KEYS), (M, K))
    # The totals, a (B, tiles, K) array in scan order: their exclusive scan seeded
    # with the inits is every tile's carry.  In place.
    _stp(sums, sums, idents, inits, pair, flat, commutative, accs, B, g.tiles, K, False, False, torch, stream,
         interpreter)
    _launch_kernel(stp_add_kernel, grid, g.num_warps, stream, interpreter,
                   (locs, tuple(ys), idents, sums, M, K, g.col_blocks, g.tiles),
                   _pick_keys(c, "PAIR", "REVERSE", "BACKWARD", "MULTI_LANE", "EXACT_K", "ROWS", "KB"), (M, K))


_segmented_cache: dict = {}
_segmented_counter = 0


def segmented(flat, nfields: int):
    """``SEG(ha, a0.., hb, b0..)``: the segmented form of ``flat`` for
    ``tl.associative_scan`` (a set head flag hb restarts the scan at b)."""
    global _segmented_counter
    key = (flat, nfields)
    fn = _segmented_cache.get(key)
    if fn is not None:
        return fn
    _segmented_counter += 1
    name = f"_segmented_{_segmented_counter}"
    filename = f"<prefixscan-segmented-{_segmented_counter}>"
    a = [f"a{i}" for i in range(nfields)]
    b = [f"b{i}" for i in range(nfields)]
    picks = [f"tl.where(hb != 0, b{i}, r{f'[{i}]' if nfields > 1 else ''})" for i in range(nfields)]
    source = (f"def {name}(ha, {', '.join(a)}, hb, {', '.join(b)}):\n"
              f"    r = FLAT({', '.join(a + b)})\n"
              f"    return ha | hb, {', '.join(picks)}\n")
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace = {"FLAT": flat, "tl": tl}
    exec(compile(source, filename, "exec"), namespace)  # noqa: S102 - fixed generated adapter
    fn = _segmented_cache[key] = triton.jit(namespace[name])
    return fn


def launch_reduce_then_scan(xs, ys, idents, inits, pair, flat, commutative, accs, B, M, K, config, torch,
                            stream: int, interpreter: bool):
    """Merrill & Grimshaw's reduce-then-scan over a fixed grid of C blocks."""
    g = _geometry(xs, accs, M, K, interpreter)
    xs, ys = tuple(xs), tuple(ys)
    if g.tiles == 1:
        _scan_one_tile(xs, ys, idents, inits, pair, flat, commutative, B, M, K, config, g, stream, interpreter)
        return
    device = xs[0].device
    total = B * g.col_blocks * g.tiles
    blocks = INTERPRETER_BLOCKS if interpreter else _multiprocessors(device, False) * RTS_BLOCKS_PER_SM
    C = max(1, min(blocks, total))
    parts = tuple(torch.empty(C * g.kb, dtype=a, device=device) for a in accs)
    heads = torch.empty(C, dtype=torch.int32, device=device)
    c = _common(pair, flat, commutative, config, B, K, g)
    c.update(HAS_INIT=inits is not None)
    _launch_kernel(rts_reduce_kernel, C, g.num_warps, stream, interpreter,
                   (xs, idents, parts, heads, M, K, g.col_blocks, g.tiles, total, C),
                   _pick_keys(c, "PAIR", "FLAT", "COMMUTATIVE", "REVERSE", "BACKWARD", "MULTI_LANE", "EXACT_K",
                              "ROWS", "KB"), (M, K))
    _launch_kernel(rts_carry_kernel, 1, 1 if interpreter else 4, stream, interpreter, (parts, heads, idents, C),
                   dict(SEG=segmented(flat, len(accs)), CP=_pow2(C), KB=g.kb), ())
    _launch_kernel(rts_scan_kernel, C, g.num_warps, stream, interpreter,
                   (xs, ys, idents, inits if inits is not None else idents, parts, M, K, g.col_blocks, g.tiles,
                    total, C),
                   _pick_keys(c, "PAIR", "FLAT", "COMMUTATIVE", "INCLUSIVE", "REVERSE", "BACKWARD", "HAS_INIT",
                              "MULTI_LANE", "EXACT_K", "ROWS", "KB", "RAKE"), (M, K))


@dataclass
class _Ring:
    """The persistent scan's circular buffer on one (device, stream)."""

    device: object
    tag_base: int = 1
    words: object = None  # int64 packed tag + value
    flags: object = None  # int32 tags (split mode)
    values: dict = field(default_factory=dict)

    def reserve(self, entries: int, chunks: int, torch, accs, packed: bool):
        """Buffers of ``entries`` slots x columns and the first tag of ``chunks`` new ones."""
        if self.tag_base + chunks >= _TAG_LIMIT:
            if chunks >= _TAG_LIMIT - 1:
                raise ValueError(f"persistent scan: {chunks} chunks exceed the 31-bit tags")
            self.tag_base = 1  # stale tags could repeat: clear
            for buf in (self.words, self.flags):
                if buf is not None:
                    buf.zero_()
        if packed:
            if self.words is None or self.words.numel() < entries:
                self.words = torch.zeros(_pow2(max(entries, 1024)), dtype=torch.int64, device=self.device)
            words, flags, vals = self.words, self.words, (self.words,)
        else:
            if self.flags is None or self.flags.numel() < entries:
                self.flags = torch.zeros(_pow2(max(entries, 1024)), dtype=torch.int32, device=self.device)
            vals = []
            for i, a in enumerate(accs):
                buf = self.values.get((i, a))
                if buf is None or buf.numel() < entries:
                    buf = self.values[(i, a)] = torch.empty(_pow2(max(entries, 1024)), dtype=a, device=self.device)
                vals.append(buf)
            words, flags, vals = self.flags, self.flags, tuple(vals)
        base = self.tag_base
        self.tag_base += chunks
        return words, flags, vals, base


_rings: dict = {}
_occupancy: dict = {}


def _resident_blocks(kernel, args, constexprs, num_warps: int, device) -> int:
    """Programs of ``kernel`` that fit on one SM at once (registers, shared memory,
    threads), from the compiled kernel; 1 when that cannot be read."""
    key = (kernel, num_warps, tuple(constexprs.items()), device)
    if key in _occupancy:
        return _occupancy[key]
    import torch

    blocks = 1
    try:
        compiled = kernel.warmup(*args, grid=(1,), num_warps=num_warps, **constexprs)
        compiled._init_handles()
        p = torch.cuda.get_device_properties(device)
        threads = num_warps * 32
        regs_sm = getattr(p, "regs_per_multiprocessor", 65536) or 65536
        threads_sm = getattr(p, "max_threads_per_multi_processor", 2048) or 2048
        smem_sm = getattr(p, "shared_memory_per_multiprocessor", 228 * 1024) or 228 * 1024
        regs_warp = -(-max(compiled.n_regs, 1) * 32 // 256) * 256  # allocated per warp in units of 256
        by_regs = (regs_sm // regs_warp) // num_warps
        by_threads = threads_sm // threads
        by_smem = smem_sm // (compiled.metadata.shared + 1024)  # 1 KiB reserved per block
        blocks = max(1, min(by_regs, by_threads, by_smem, 32))
    except Exception:  # noqa: BLE001 - one per SM always fits
        blocks = 1
    _occupancy[key] = blocks
    return blocks


def launch_persistent(xs, ys, idents, inits, pair, flat, commutative, accs, B, M, K, config, torch, stream: int,
                      interpreter: bool):
    """SAM-style persistent scan: G resident programs, carries through a ring of totals."""
    g = _geometry(xs, accs, M, K, interpreter)
    xs, ys = tuple(xs), tuple(ys)
    if g.tiles == 1:
        _scan_one_tile(xs, ys, idents, inits, pair, flat, commutative, B, M, K, config, g, stream, interpreter)
        return
    device = xs[0].device
    total = B * g.col_blocks * g.tiles
    c = _common(pair, flat, commutative, config, B, K, g)
    c.update(HAS_INIT=inits is not None, PACKED=g.packed, SAVE_CARRY=interpreter)
    G = INTERPRETER_BLOCKS if interpreter else _multiprocessors(device, False) * PERSISTENT_BLOCKS_PER_SM
    G = max(1, min(G, total))
    ring = _rings.get((device, stream))
    if ring is None:
        ring = _rings[(device, stream)] = _Ring(device)
    init_arg = inits if inits is not None else idents

    def constexprs(G):
        slots = _pow2(3 * G)
        look = min(_pow2(max(G - 1, 1)), max(1, 512 // g.kb))
        return dict(c, SLOTS=slots, LOOK=look)

    if not interpreter:
        # Cap G at what is resident at once.  The ring's size and window are
        # constexprs that depend on G: check the variant that will run.
        sms = _multiprocessors(device, False)
        for _ in range(3):
            words, flags, vals, _ = ring.reserve(_pow2(3 * G) * g.kb, 0, torch, accs, g.packed)
            probe = (xs, ys, idents, init_arg, words, flags, vals, idents, M, K, g.col_blocks, g.tiles, total, G,
                     0, 1, 1, 1)
            fit = sms * _resident_blocks(persistent_kernel, probe,
                                         dict(constexprs(G), launch_cooperative_grid=True), g.num_warps, device)
            if fit >= G:
                break
            G = max(1, fit)
    k = constexprs(G)
    words, flags, vals, tag_base = ring.reserve(k["SLOTS"] * g.kb, total, torch, accs, g.packed)
    rounds = -(-total // G)
    if interpreter:
        carries = tuple(torch.empty(G * g.kb, dtype=a, device=device) for a in accs)
        for r in range(rounds):  # programs run one after another: one round per launch
            _launch_kernel(persistent_kernel, G, g.num_warps, stream, True,
                           (xs, ys, idents, init_arg, words, flags, vals, carries, M, K, g.col_blocks, g.tiles,
                            total, G, r, 1, tag_base, 4), k, (M, K))
    else:
        k["launch_cooperative_grid"] = True  # all G resident, or an error instead of a hang
        _launch_kernel(persistent_kernel, G, g.num_warps, stream, False,
                       (xs, ys, idents, init_arg, words, flags, vals, idents, M, K, g.col_blocks, g.tiles, total, G,
                        0, rounds, tag_base, 1 << 62), k, (M, K))


LAUNCHERS = {
    "reduce_then_scan": launch_reduce_then_scan,
    "scan_then_propagate": launch_scan_then_propagate,
    "persistent": launch_persistent,
}


# ---------------------------------------------------------------------------
# Traffic model.


def traffic_per_element(strategy: str, n: int, tile: int, *, blocks: int = 264) -> float:
    """Elements read + written per input element by ``strategy`` scanning ``n``
    elements in tiles of ``tile``, counted from the algorithm: the input and
    output, local scans, tile totals and carries (recursively), partials and
    ring entries.  Flags and tags are not counted.  ``blocks``: C of
    reduce_then_scan and G of persistent (default: an H100's 132 SMs x 2)."""
    n, tile = int(n), max(1, int(tile))
    if n <= 0:
        return 0.0
    tiles = -(-n // tile)
    if tiles == 1:
        return 2.0  # one pass whatever the strategy
    if strategy == "decoupled_lookback":
        # Aggregate and inclusive prefix published, about one predecessor read.
        moved = 2 * n + 3 * (tiles - 1)
    elif strategy == "chained":
        moved = 2 * n + 2 * (tiles - 1)  # one inclusive prefix written and read per tile
    elif strategy == "scan_then_propagate":
        def stp(m: int) -> int:
            t = -(-m // tile)
            if t == 1:
                return 2 * m
            # read x, write local + totals; scan totals; read local + carry, write y
            return 2 * m + t + stp(t) + 2 * m + t
        moved = stp(n)
    elif strategy == "reduce_then_scan":
        c = min(blocks, tiles)
        # reduce (read n, write C), scan the partials (read C, write C), re-read and scan (read C + n, write n)
        moved = 3 * n + 4 * c
    elif strategy == "persistent":
        g = min(blocks, tiles)
        moved = 2 * n + tiles * g  # per chunk: its total written, G - 1 totals read
    else:
        raise ValueError(f"unknown strategy {strategy!r}; choose from {', '.join(STRATEGY_NAMES)}")
    return moved / n
