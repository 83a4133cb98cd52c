"""GPU meta-strategies other than the single-pass look-back (``strategy=``).

``decoupled_lookback`` (the default) and ``chained`` live in :mod:`.kernels`
(Merrill & Garland 2016, seed 003); this module adds the three strategies the
seeds compare them with.  :func:`.launch._launcher` dispatches ``strategy`` to
:data:`LAUNCHERS`; each launcher scans the ``(B, M, K)`` row-major layout along
M once (``run_scan`` loops over ``order``), with the tiles of ``launch._launch``
(``planner.choose_config``): ``[BLOCK]`` tiles when ``K == 1`` and ``[ROWS, KB]``
tiles (KB interleaved columns) otherwise, so that the strategies differ only in
how carries travel between tiles.  A *group* is one lane and one block of KB
columns; its tiles are numbered in scan order (reverse scans mirror the
indices or, for a commutative operator on one column, take blocks from the end
and scan them backwards in registers).  A lane that fits one tile needs no
carry: every strategy scans it in one pass.  Carries are combined on the left
of the values they precede, so non-commutative operators (affine maps, 2x2
matrices) are scanned in order.

``scan_then_propagate`` (Merrill & Grimshaw 2009, seed 000, section 3.4.1: the
CUDPP scheme of Sengupta et al.): pass 1 scans every tile, writes the local scan
and the tile's total; the totals, a ``(B, tiles, K)`` array in scan order, are
scanned by the same algorithm recursively (exclusive, seeded with ``init``);
pass 3 combines each tile's carry with its local scan.  Traffic ~4n: read x,
write local, read local, write y, plus ~4n/tile per level below.  Auxiliary
memory: n/tile + n/tile^2 + .. totals, and an n-element accumulator-dtype
scratch where the output dtype is narrower (float16, bfloat16), so that local
scans are not rounded twice.  2 log_tile(n) + 1 launches.

``reduce_then_scan`` (seed 000, section 3.4.3, "two-level streaming
reduce-then-scan"): a fixed grid of C blocks, C = SMs x the resident blocks of
the scan kernel (at most ``RTS_BLOCKS_PER_SM``; 3 in the interpreter), block c
owning a contiguous range of the (group, tile) sequence.  Kernel 1 reduces each
range to one partial per column (of the part after the last group start in it)
and a head flag; kernel 2, one program, scans the C partials with a segmented
``tl.associative_scan``; kernel 3 re-reads each range and scans it tile by tile,
seeded with its carry.  Traffic 3n + O(C); auxiliary memory O(C x KB); three
launches whatever n.

``persistent`` (Maleki, Yang & Burtscher 2016, "SAM", seed 002, section 2.2):
G resident programs (SMs x occupancy, at most ``PERSISTENT_BLOCKS_PER_SM``
per SM; 3 in the interpreter); program b scans chunks (tiles) b, b+G, b+2G, ..
in order.  For each chunk it publishes the tile's total into a circular buffer
of ``SLOTS`` = pow2(3G) entries (G: the most programs that fit, whatever
the grid of a smaller scan), tagged with the chunk's sequence number, then
forms its carry from its own previous chunk's inclusive prefix and the totals of
the G - 1 chunks in between that belong to its group, read LOOK at a time in
vector loads, waiting on tags that are not there yet.  Traffic ~2n + G entries
per chunk (L2 hits); auxiliary memory O(G x KB), whatever n.

Slot reuse (persistent).  Every chunk waits until all of its G - 1 predecessors
have published, even those of another group (their values are then masked).
Chunk w publishes only after its program finished chunk w - G, so when chunk y
has passed its wait every chunk <= y - G has finished.  The program publishing
chunk c + S has finished chunk c + S - G, hence all chunks <= c + S - 2G: for
S >= 3G - 1 every reader of chunk c (chunks c+1 .. c+G-1) is done with slot
c mod S before it is overwritten.  The tag (a 31-bit sequence number that grows
across calls on one device and stream) tells a reader the value it waits for
from the one S chunks earlier or from an earlier call, so no memset is needed
between calls.  Tags wrap after 2^31 chunks, and the buffers are zeroed then.

Forward progress (persistent).  Programs wait on one another, so all G must be
resident at once: G is capped by the occupancy estimated from the compiled
kernel (registers, shared memory, warps) and the kernel is launched as a
cooperative grid, which CUDA refuses rather than running part of it (the
launcher then halves G).  A wait gives up after ``SPIN_LIMIT`` polls and counts
the failure in an error word (:func:`persistent_errors`): a bug yields wrong
results and a nonzero count, not a hung GPU.  The other strategies never wait
on another program (the look-back kernels take tile ids from an atomic
counter, seed 003).

Determinism.  The carries of the three strategies here are combined in an
order fixed by the sizes and, for the two fixed-grid ones, by the grid (which
depends only on the device and the kernel): floating-point results are bitwise
reproducible from run to run, so ``deterministic=True`` accepts them.

Raking (``TileConfig.raking``, :func:`.kernels._scan_tile`): every kernel
here and the look-back kernels scan a tile either with ``tl.associative_scan``
or by raking, Merrill & Grimshaw's SRTS (seed 000, section 4.3.2): rows of
RAKE elements scanned serially, then the row totals, then each row combined
with its exclusive prefix.  Triton cannot pin a row to a thread (the layout
after the reshape is the compiler's), see the comment in :mod:`.kernels`.

:func:`traffic_per_element` counts each strategy's device-memory traffic for
``prefixscan bench --strategies``.
"""

from __future__ import annotations

import linecache
import math
from dataclasses import dataclass, field

import triton
import triton.language as tl

from .kernels import (_as_rows, _fn, _load_fields, _ordered_reduce, _pack_word, _read_word, _scalars, _scan_tile,
                      _store_fields, _where, _word_value)
from .planner import choose_config
from .registry import STRATEGY_NAMES
from .tiles import raking_rows


# Upper bounds on the programs per SM of the two fixed-grid strategies; the
# kernel's occupancy (registers, shared memory, threads) may allow fewer.
# Merrill & Grimshaw tuned C to the resident blocks of their GPU (C = 150 on 30
# SMs, seed 000 section 4.3.2); SAM launches exactly the resident blocks.
RTS_BLOCKS_PER_SM = 8
RTS_MAX_PARTIALS = 8192  # C x KB: the partials one program of kernel 2 scans in registers
PERSISTENT_BLOCKS_PER_SM = 8
INTERPRETER_BLOCKS = 3  # C and G in the interpreter
# Polls of a missing ring entry before the persistent kernel gives up on it
# (counted in the ring's error word; see persistent_errors).  All G programs are
# co-resident (cooperative launch) and a predecessor publishes its total right
# after loading its tile, so a legitimate wait lasts microseconds; 2^20 polls
# of up to 512 entries from L2 take about a second.  Polls only count while the
# program runs, so a GPU shared by time slicing does not trip it.
SPIN_LIMIT = 1 << 20
INTERPRETER_SPIN_LIMIT = 4  # the interpreter runs programs in order: never needs to wait
_TAG_LIMIT = (1 << 31) - 1  # tags are int32 sequence numbers

#: What the last launch of each strategy used: {"grid": C or G (programs),
#: "tile": elements per tile, "tiles": tiles in all, "levels"/"launches"}; for the bench.
last_plan: dict = {}


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
def _publish_slot(word_ptr, flag_ptr, slot_ptrs, v, agg, tag, PACKED: tl.constexpr, SLOTS: tl.constexpr,
                  KB: tl.constexpr):
    """Chunk v's total into slot v mod SLOTS, with its tag."""
    slot = v % SLOTS
    entry = _entries(slot, KB)
    if PACKED:  # one field of <= 32 bits: tag and value in one word per column
        tl.atomic_xchg(word_ptr + entry, _pack_word(agg[0], tag), sem="relaxed")
    else:
        for i in tl.static_range(len(slot_ptrs)):
            tl.store(slot_ptrs[i] + entry, agg[i])
        tl.debug_barrier()  # every thread's value stores before the one release below
        tl.atomic_xchg(flag_ptr + slot, tag.to(tl.int32), sem="release")


@triton.jit
def _wait_slots(word_ptr, flag_ptr, slot_ptrs, err_ptr, idx, valid, tag_base, spin_limit, ident,
                PACKED: tl.constexpr, SLOTS: tl.constexpr, KB: tl.constexpr):
    """Totals of chunks ``idx`` ([LOOK]) where ``valid``, waiting until each slot holds
    that chunk's tag.  Returns a field tuple of [LOOK] or [LOOK, KB].

    After ``spin_limit`` polls it stops waiting and adds 1 to the error word: the
    result is then wrong, but the kernel ends (a bug must not hang the GPU)."""
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
        # Tag and value in one 64-bit word: one read sees both or neither.
        word = _read_word(word_ptr + entry, vmask)
        ready = ~vmask | ((word >> 32).to(tl.int32) == want)
        while (tl.min(ready.to(tl.int32)) == 0) & (spins < spin_limit):
            word = _read_word(word_ptr + entry, vmask)
            ready = ~vmask | ((word >> 32).to(tl.int32) == want)
            spins += 1
        values = (tl.where(vmask, _word_value(word, ident[0].dtype), ident[0]),)
    else:
        # One tag per slot, read with acquire semantics; the values after it.
        tag = tl.atomic_add(flag_ptr + slot, 0, mask=valid, sem="acquire")
        ready = ~valid | (tag == expected)
        while (tl.min(ready.to(tl.int32)) == 0) & (spins < spin_limit):
            tag = tl.atomic_add(flag_ptr + slot, 0, mask=valid, sem="acquire")
            ready = ~valid | (tag == expected)
            spins += 1
        values = ()
        for i in tl.static_range(len(slot_ptrs)):
            values = values + (tl.where(vmask, tl.load(slot_ptrs[i] + entry, mask=vmask, volatile=True), ident[i]),)
    if tl.min(ready.to(tl.int32)) == 0:
        tl.atomic_add(err_ptr, 1)
    return values


@triton.jit(do_not_specialize=["col_blocks", "tiles", "total", "G", "round0", "rounds", "tag_base",
                               "spin_limit"])
def persistent_kernel(x_ptrs, y_ptrs, ident_ptrs, init_ptrs, word_ptr, flag_ptr, slot_ptrs, carry_ptrs, err_ptr,
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
                totals = _wait_slots(word_ptr, flag_ptr, slot_ptrs, err_ptr, idx, valid, tag_base, spin_limit, ident,
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
    kb: int  # columns per tile (1: the 1-D layout)
    col_blocks: int
    rows: int  # tile extent along the scanned axis
    tiles: int  # tiles per group
    num_warps: int
    rake: int  # raking row length, 0: tl.associative_scan
    packed: bool  # ring entries: tag and value in one 64-bit word


def _geometry(device, accs, M: int, K: int, interpreter: bool, strategy: str, monoid=None) -> _Geometry:
    """The tiles of launch._launch (same shapes; the tuned table's tile for
    ``strategy``, else the same defaults), so that strategies differ only in how
    carries travel."""
    nbytes = sum(a.itemsize for a in accs)
    tune = choose_config(device, nbytes, any(a.is_floating_point for a in accs), M, K, interpreter,
                         accs=accs, monoid=monoid, strategy=strategy)
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
    return _Geometry(kb, col_blocks, rows, -(-M // rows), tune.num_warps, raking_rows(tune, rows), packed)


def _common(pair, flat, commutative, config, B, K, g: _Geometry) -> dict:
    return dict(PAIR=pair, FLAT=flat, COMMUTATIVE=commutative, INCLUSIVE=config.inclusive,
                REVERSE=config.reverse, BACKWARD=bool(config.reverse and commutative and K == 1),
                HAS_INIT=False, MULTI_LANE=B > 1, EXACT_K=K == g.kb, ROWS=g.rows, KB=g.kb, RAKE=g.rake)


def _pick_keys(d: dict, *names) -> dict:
    return {k: d[k] for k in names}


def _launch_kernel(kernel, grid: int, num_warps: int, stream: int, interpreter: bool, args: tuple,
                   constexprs: dict, specialized: tuple):
    # Looked up at call time, so that tests can watch every launch through launch._run.
    from . import launch

    launch._run(kernel, grid, num_warps, stream, interpreter, args, constexprs, specialized)


def _multiprocessors(device) -> int:
    import torch

    return torch.cuda.get_device_properties(device).multi_processor_count


_occupancy: dict = {}


def _resident_blocks(kernel, args, constexprs, num_warps: int, device) -> int:
    """Programs of ``kernel`` that fit on one SM at once (registers, shared memory,
    threads, 32 blocks), from the compiled kernel; 1 when that cannot be read.
    An estimate of cudaOccupancyMaxActiveBlocksPerMultiprocessor, which Triton
    does not expose."""
    key = (kernel, num_warps, tuple(constexprs.items()), device)
    if key in _occupancy:
        return _occupancy[key]
    import torch

    try:
        compiled = kernel.warmup(*args, grid=(1,), num_warps=num_warps, **constexprs)
        compiled._init_handles()
        p = torch.cuda.get_device_properties(device)
        regs_sm = getattr(p, "regs_per_multiprocessor", 0) or 65536
        threads_sm = getattr(p, "max_threads_per_multi_processor", 0) or 2048
        smem_sm = getattr(p, "shared_memory_per_multiprocessor", 0) or 228 * 1024
        regs_warp = -(-max(compiled.n_regs, 1) * 32 // 256) * 256  # allocated per warp, 256 at a time
        by_regs = (regs_sm // regs_warp) // num_warps
        by_threads = threads_sm // (num_warps * 32)
        by_smem = smem_sm // (compiled.metadata.shared + 1024)  # 1 KiB reserved per block
        blocks = max(1, min(by_regs, by_threads, by_smem, 32))
    except Exception:  # noqa: BLE001 - one block per SM always fits
        blocks = 1
    _occupancy[key] = blocks
    return blocks


_LOCAL_KEYS = ("PAIR", "FLAT", "COMMUTATIVE", "INCLUSIVE", "REVERSE", "BACKWARD", "HAS_INIT", "SEED", "MULTI_LANE",
               "EXACT_K", "ROWS", "KB", "RAKE")


def _scan_one_tile(xs, ys, idents, inits, pair, flat, commutative, B, M, K, config, g, stream, interpreter):
    """Lanes that fit one tile: one program per (lane, column block), no carries."""
    c = _common(pair, flat, commutative, config, B, K, g)
    c.update(HAS_INIT=inits is not None, SEED=True)
    args = (tuple(xs), tuple(ys), idents, inits if inits is not None else idents, idents, M, K, g.col_blocks, 1)
    _launch_kernel(stp_local_kernel, B * g.col_blocks, g.num_warps, stream, interpreter, args,
                   _pick_keys(c, *_LOCAL_KEYS), (M, K))


def _single_tile(name, xs, ys, idents, inits, pair, flat, commutative, B, M, K, config, g, stream,
                 interpreter) -> bool:
    """Lanes that fit one tile take :func:`_scan_one_tile` (plan recorded as ``name``'s);
    False when there are several tiles per lane."""
    if g.tiles > 1:
        return False
    _scan_one_tile(xs, ys, idents, inits, pair, flat, commutative, B, M, K, config, g, stream, interpreter)
    total = B * g.col_blocks
    last_plan[name] = dict(grid=total, tile=g.rows * g.kb, tiles=total, launches=1)
    return True


def launch_scan_then_propagate(xs, ys, idents, inits, pair, flat, commutative, accs, B, M, K, config, torch,
                               stream: int, interpreter: bool):
    """Recursive scan-then-propagate (CUDPP): local tile scans and tile totals, the
    totals scanned recursively (exclusive, seeded), carries combined in a last pass."""
    g = _geometry(xs[0].device, accs, M, K, interpreter, "scan_then_propagate", config.monoid)
    levels = _stp(tuple(xs), tuple(ys), idents, inits, pair, flat, commutative, accs, B, M, K, config.inclusive,
                  config.reverse, torch, stream, interpreter, config.monoid)
    last_plan["scan_then_propagate"] = dict(grid=B * g.col_blocks * g.tiles, tile=g.rows * g.kb,
                                            tiles=B * g.col_blocks * g.tiles, levels=levels)


@dataclass(frozen=True)
class _Flags:
    inclusive: bool
    reverse: bool


def _stp(xs, ys, idents, inits, pair, flat, commutative, accs, B, M, K, inclusive, reverse, torch, stream,
         interpreter, monoid=None) -> int:
    """One level (and the levels below it); returns the number of levels."""
    config = _Flags(inclusive, reverse)
    g = _geometry(xs[0].device, accs, M, K, interpreter, "scan_then_propagate", monoid)
    if g.tiles == 1:
        _scan_one_tile(xs, ys, idents, inits, pair, flat, commutative, B, M, K, config, g, stream, interpreter)
        return 1
    device = xs[0].device
    # Local scans stay in the accumulator dtype: a float16 output is rounded once,
    # after the carry, not twice.
    locs = tuple(y if y.dtype == a else torch.empty(y.shape, dtype=a, device=device) for y, a in zip(ys, accs))
    sums = tuple(torch.empty(B * g.tiles * K, dtype=a, device=device) for a in accs)
    c = _common(pair, flat, commutative, config, B, K, g)
    c.update(SEED=False)
    grid = B * g.col_blocks * g.tiles
    _launch_kernel(stp_local_kernel, grid, g.num_warps, stream, interpreter,
                   (xs, locs, idents, idents, sums, M, K, g.col_blocks, g.tiles),
                   _pick_keys(c, *_LOCAL_KEYS), (M, K))
    # The totals form a (B, tiles, K) array in scan order: their exclusive scan,
    # seeded with the inits, is every tile's carry.  In place, forwards (the
    # totals are already in scan order, whatever the direction of the scan).
    levels = _stp(sums, sums, idents, inits, pair, flat, commutative, accs, B, g.tiles, K, False, False, torch,
                  stream, interpreter, monoid)
    _launch_kernel(stp_add_kernel, grid, g.num_warps, stream, interpreter,
                   (locs, tuple(ys), idents, sums, M, K, g.col_blocks, g.tiles),
                   _pick_keys(c, "PAIR", "REVERSE", "BACKWARD", "MULTI_LANE", "EXACT_K", "ROWS", "KB"), (M, K))
    return levels + 1


_segmented_cache: dict = {}
_segmented_counter = 0


def segmented(flat, nfields: int):
    """``SEG(ha, a0.., hb, b0..)``: the segmented form of ``flat`` for
    ``tl.associative_scan`` (a set head flag hb restarts the scan at b), generated
    like combine.py's adapters because the number of fields varies."""
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
    namespace = {"FLAT": flat, "tl": tl, "__name__": __name__}  # a module for Triton
    exec(compile(source, filename, "exec"), namespace)  # noqa: S102 - fixed generated adapter
    fn = _segmented_cache[key] = triton.jit(namespace[name])
    return fn


def launch_reduce_then_scan(xs, ys, idents, inits, pair, flat, commutative, accs, B, M, K, config, torch,
                            stream: int, interpreter: bool):
    """Merrill & Grimshaw's two-level streaming reduce-then-scan over a fixed grid of C blocks."""
    g = _geometry(xs[0].device, accs, M, K, interpreter, "reduce_then_scan", config.monoid)
    xs, ys = tuple(xs), tuple(ys)
    if _single_tile("reduce_then_scan", xs, ys, idents, inits, pair, flat, commutative, B, M, K, config, g, stream,
                    interpreter):
        return
    total = B * g.col_blocks * g.tiles
    device = xs[0].device
    c = _common(pair, flat, commutative, config, B, K, g)
    c.update(HAS_INIT=inits is not None)
    init_arg = inits if inits is not None else idents
    scan_keys = _pick_keys(c, "PAIR", "FLAT", "COMMUTATIVE", "INCLUSIVE", "REVERSE", "BACKWARD", "HAS_INIT",
                           "MULTI_LANE", "EXACT_K", "ROWS", "KB", "RAKE")
    if interpreter:
        C = INTERPRETER_BLOCKS
    else:
        # C = SMs x the blocks of the scan kernel (the heavier of the two) that fit
        # on an SM: the grid saturates the GPU in one wave.
        probe = (xs, ys, idents, init_arg, idents, M, K, g.col_blocks, g.tiles, total, 1)
        per_sm = min(RTS_BLOCKS_PER_SM, _resident_blocks(rts_scan_kernel, probe, scan_keys, g.num_warps, device))
        C = _multiprocessors(device) * per_sm
    C = max(1, min(C, total, RTS_MAX_PARTIALS // g.kb))
    parts = tuple(torch.empty(C * g.kb, dtype=a, device=device) for a in accs)
    heads = torch.empty(C, dtype=torch.int32, device=device)
    _launch_kernel(rts_reduce_kernel, C, g.num_warps, stream, interpreter,
                   (xs, idents, parts, heads, M, K, g.col_blocks, g.tiles, total, C),
                   _pick_keys(c, "PAIR", "FLAT", "COMMUTATIVE", "REVERSE", "BACKWARD", "MULTI_LANE", "EXACT_K",
                              "ROWS", "KB"), (M, K))
    _launch_kernel(rts_carry_kernel, 1, 1 if interpreter else 8, stream, interpreter, (parts, heads, idents, C),
                   dict(SEG=segmented(flat, len(accs)), CP=_pow2(C), KB=g.kb), ())
    _launch_kernel(rts_scan_kernel, C, g.num_warps, stream, interpreter,
                   (xs, ys, idents, init_arg, parts, M, K, g.col_blocks, g.tiles, total, C), scan_keys, (M, K))
    last_plan["reduce_then_scan"] = dict(grid=C, tile=g.rows * g.kb, tiles=total, launches=3)


@dataclass
class _Ring:
    """The persistent scan's circular buffers on one (device, stream): launches on
    a stream run in order, so consecutive calls may reuse them."""

    device: object
    tag_base: int = 1  # tag of the next call's chunk 0; 0 never matches (buffers start zeroed)
    words: object = None  # int64: tag << 32 | value bits (packed mode)
    flags: object = None  # int32 tags (split mode)
    values: dict = field(default_factory=dict)  # (field, dtype) -> value buffer (split mode)
    errors: object = None  # int32[1]: waits that gave up (see SPIN_LIMIT)

    def reserve(self, entries: int, chunks: int, torch, accs, packed: bool):
        """Buffers of at least ``entries`` entries, and the first tag of ``chunks``
        new chunks: tags grow across calls, so an entry left by an earlier call
        (or S chunks earlier) never matches, and no memset is needed."""
        if chunks >= _TAG_LIMIT - 1:
            raise ValueError(f"persistent scan: {chunks} chunks exceed the 31-bit tags; use larger tiles "
                             "or another strategy")
        if self.errors is None:
            self.errors = torch.zeros(1, dtype=torch.int32, device=self.device)
        if self.tag_base + chunks >= _TAG_LIMIT:
            self.tag_base = 1  # wrap: clear, so that no stale tag can repeat
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
_persistent_grids: dict = {}  # (device, warps, constexprs) -> the most co-resident programs


def persistent_errors() -> int:
    """Ring waits that gave up after SPIN_LIMIT polls, over all devices and streams
    (synchronizes).  Nonzero means a persistent scan returned wrong results: a
    bug, or programs that were not all resident.  Tests on the GPU check it."""
    return sum(int(r.errors.sum().item()) for r in _rings.values() if r.errors is not None)


def launch_persistent(xs, ys, idents, inits, pair, flat, commutative, accs, B, M, K, config, torch, stream: int,
                      interpreter: bool):
    """SAM-style persistent scan: G resident programs, carries through a ring of totals."""
    g = _geometry(xs[0].device, accs, M, K, interpreter, "persistent", config.monoid)
    xs, ys = tuple(xs), tuple(ys)
    if _single_tile("persistent", xs, ys, idents, inits, pair, flat, commutative, B, M, K, config, g, stream,
                    interpreter):
        return
    total = B * g.col_blocks * g.tiles
    device = xs[0].device
    c = _common(pair, flat, commutative, config, B, K, g)
    c.update(HAS_INIT=inits is not None, PACKED=g.packed)
    ring = _rings.get((device, stream))
    if ring is None:
        ring = _rings[(device, stream)] = _Ring(device)
    init_arg = inits if inits is not None else idents

    def constexprs(G: int, save: bool) -> dict:
        # SAM: a little over 3G slots, a power of two (seed 002, section 2.2); the
        # G - 1 predecessors are read LOOK at a time (fewer rows when KB is wide).
        return dict(c, SAVE_CARRY=save, SLOTS=_pow2(3 * G), LOOK=min(_pow2(max(G - 1, 1)), max(1, 512 // g.kb)))

    if interpreter:
        G = max(1, min(INTERPRETER_BLOCKS, total))
        # Ring and window sized for INTERPRETER_BLOCKS even when G is smaller, as on a GPU.
        k = constexprs(max(1, INTERPRETER_BLOCKS), G > 1)
        _persistent_interpreted(ring, G, k, xs, ys, idents, init_arg, accs, M, K, g, total, torch, stream)
        return
    # Every program waits on others: all G must be resident at once.  G is capped
    # at the occupancy of the kernel (computed once per variant, with the largest
    # ring and window, which need the most registers) and the grid is launched
    # cooperatively, which CUDA refuses (an error, not a hang) when it cannot be
    # co-resident: G is then halved and the launch retried.
    key = (device, g.num_warps, tuple(c.items()))
    G_max = _persistent_grids.get(key)
    if G_max is None:
        sms = _multiprocessors(device)
        G_max = sms * PERSISTENT_BLOCKS_PER_SM
        for _ in range(3):
            k = dict(constexprs(G_max, False), launch_cooperative_grid=True)
            words, flags, vals, _ = ring.reserve(k["SLOTS"] * g.kb, 0, torch, accs, g.packed)
            probe = (xs, ys, idents, init_arg, words, flags, vals, idents, ring.errors, M, K, g.col_blocks,
                     g.tiles, total, G_max, 0, 1, 1, 1)
            fit = sms * min(PERSISTENT_BLOCKS_PER_SM, _resident_blocks(persistent_kernel, probe, k, g.num_warps,
                                                                       device))
            if fit >= G_max:
                break
            G_max = max(1, fit)
        _persistent_grids[key] = G_max
    # The ring and window sized for G_max serve every smaller grid too (slots
    # >= 3G - 1 is all reuse needs; window lanes past G - 1 are masked): one
    # compiled variant whatever the number of chunks.
    while True:
        G = max(1, min(G_max, total))
        rounds = -(-total // G)
        k = dict(constexprs(G_max, False), launch_cooperative_grid=True)
        words, flags, vals, tag_base = ring.reserve(k["SLOTS"] * g.kb, total, torch, accs, g.packed)
        try:
            _launch_kernel(persistent_kernel, G, g.num_warps, stream, False,
                           (xs, ys, idents, init_arg, words, flags, vals, idents, ring.errors, M, K, g.col_blocks,
                            g.tiles, total, G, 0, rounds, tag_base, SPIN_LIMIT), k, (M, K))
            break
        except RuntimeError:
            # The occupancy estimate was too generous (the cooperative launch
            # checks the real one).
            if G == 1:
                raise
            G_max = _persistent_grids[key] = max(1, G // 2)
    last_plan["persistent"] = dict(grid=G, tile=g.rows * g.kb, tiles=total, launches=1, slots=k["SLOTS"])


def _persistent_interpreted(ring, G, k, xs, ys, idents, init_arg, accs, M, K, g, total, torch, stream):
    """The interpreter runs a grid's programs one after another in program-id
    order: within one launch program 0 could never see chunk G - 1 before its own
    chunk G.  So each round (chunks rG .. rG + G - 1) is one launch and every
    program's running carry waits in a G-entry buffer between launches; a
    program then only waits on chunks of earlier rounds or of lower program ids
    in its round, which have run.  With G == 1 there is nothing to wait for, and
    one launch runs every round in the kernel's own loop, as on a GPU."""
    device = xs[0].device
    words, flags, vals, tag_base = ring.reserve(k["SLOTS"] * g.kb, total, torch, accs, g.packed)
    carries = tuple(torch.empty(G * g.kb, dtype=a, device=device) for a in accs) if G > 1 else idents
    rounds = -(-total // G)
    batches = [(r, 1) for r in range(rounds)] if G > 1 else [(0, rounds)]
    before = int(ring.errors.item())
    for round0, count in batches:
        _launch_kernel(persistent_kernel, G, g.num_warps, stream, True,
                       (xs, ys, idents, init_arg, words, flags, vals, carries, ring.errors, M, K, g.col_blocks,
                        g.tiles, total, G, round0, count, tag_base, INTERPRETER_SPIN_LIMIT), k, (M, K))
        if int(ring.errors.item()) != before:
            raise RuntimeError(f"persistent scan: a ring entry was missing in round {round0} (a bug)")
    last_plan["persistent"] = dict(grid=G, tile=g.rows * g.kb, tiles=total, launches=len(batches), slots=k["SLOTS"])


LAUNCHERS = {
    "reduce_then_scan": launch_reduce_then_scan,
    "scan_then_propagate": launch_scan_then_propagate,
    "persistent": launch_persistent,
}


def plan(strategy: str, n: int, K: int, acc, device, interpreter: bool, order: int = 1) -> dict:
    """How ``strategy`` scans ``n`` elements as ``n // K`` rows of K columns in the
    accumulator dtype ``acc`` (a torch dtype): programs, tile, columns per tile and
    the device-memory traffic per element of ``order`` passes.  The grids of the
    fixed-grid strategies are those of their last launch (run one first)."""
    if strategy not in STRATEGY_NAMES:
        raise ValueError(f"strategy: unknown strategy {strategy!r}; choose from {', '.join(STRATEGY_NAMES)}")
    g = _geometry(device, (acc,), max(1, n // K), K, interpreter, strategy)
    tile, tiles = g.rows * g.kb, g.tiles * g.col_blocks
    grid = last_plan.get(strategy, {}).get("grid", tiles) if strategy in ("reduce_then_scan", "persistent") else tiles
    return dict(strategy=strategy, grid=grid, tile=tile, columns=g.kb, raking=g.rake,
                traffic_per_element=order * traffic_per_element(strategy, n, tile, blocks=grid, columns=g.kb))


# ---------------------------------------------------------------------------
# Traffic model.


def traffic_per_element(strategy: str, n: int, tile: int, *, blocks: int = 264, columns: int = 1) -> float:
    """Elements read + written in device memory per input element by ``strategy``
    scanning one lane of ``n`` elements in tiles of ``tile`` elements, counted from
    the algorithm: input and output, local scans, tile totals and carries
    (recursively), partials, status and ring entries (one per column of a tile:
    ``columns`` is KB of the 2-D layout).  Flags and tags are not counted.
    ``blocks``: C of reduce_then_scan, G of persistent (default: an H100's 132
    SMs x 2).  At large n: scan_then_propagate ~4, reduce_then_scan ~3, the
    single-pass strategies ~2 (seed 000, sections 3.4.1-3.4.3; seed 003)."""
    if strategy not in STRATEGY_NAMES:
        raise ValueError(f"strategy: unknown strategy {strategy!r}; choose from {', '.join(STRATEGY_NAMES)}")
    n, tile, kb = int(n), max(1, int(tile)), max(1, int(columns))
    if n <= 0:
        return 0.0
    tiles = -(-n // tile)
    if tiles == 1:
        return 2.0  # one pass whatever the strategy
    if strategy == "decoupled_lookback":
        # Per tile: aggregate and inclusive prefix published, about one predecessor read.
        moved = 2 * n + 3 * tiles * kb
    elif strategy == "chained":
        moved = 2 * n + 2 * tiles * kb  # one inclusive prefix written and read per tile
    elif strategy == "scan_then_propagate":
        def stp(m: int) -> int:  # m elements of which m / kb per column
            t = -(-m // tile)
            if t == 1:
                return 2 * m
            # read x, write the local scan and t totals; scan the totals; read the
            # local scan and t carries, write y
            return 2 * m + t * kb + stp(t * kb) + 2 * m + t * kb
        moved = stp(n)
    elif strategy == "reduce_then_scan":
        c = min(blocks, tiles)
        # reduce (read n, write C), scan the partials (read C, write C), scan
        # (read C carries and n, write n): 3n + 4C (seed 000's O(3n + 3C))
        moved = 3 * n + 4 * c * kb
    else:  # persistent
        g = min(blocks, tiles)
        # per chunk: its total written, the G - 1 between it and its block's last
        # chunk read (from a ring of 3G entries: L2 hits, SAM's point)
        moved = 2 * n + tiles * g * kb
    return moved / n
