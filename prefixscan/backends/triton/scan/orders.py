"""Higher-order and tuple prefix sums of integers in one pass: thread-contiguous tiles and
one decoupled look-back over the carry vector (Gluon).

What it computes (SAM, Maleki, Yang and Burtscher, PLDI 2016, section 2.4): order q is the
sum scan applied q times; tuple size s makes s interleaved scans (element m belongs to
column m mod s).  Each tile reads and writes every element once, whatever q and s.

**Carry as a monoid (why one look-back suffices).**  For one column, a segment of L rows
is summarised by its q local sums t_1..t_q at its last row (order r of the segment alone).
Segment A followed by segment B (L rows) is the segment with
``(A . B)_r = B_r + sum_{p <= r} C(L + r - p - 1, r - p) * A_p``: each order-p value of A is
carried through the r - p further summations over B's L rows (the binomial shift; the
multiset coefficient C(L + k - 1, k) counts them).  The shift is associative, so the
decoupled look-back of Merrill & Garland 2016 works on these q x s vectors as on
single sums: a tile publishes its local vector at once (flag A), folds the window's
entries up to the nearest inclusive prefix (flag P) with shifts of whole tiles, and
publishes its inclusive vector.  Coefficients are computed exactly modulo 2^64
(:func:`.orders_lookback._coefficients`), which is what integer wrap-around needs; they
are why this kernel takes integer sums only (floats keep the loop over orders, :mod:`.lookback`).

**Thread-contiguous tiles (why Gluon).**  Triton's ``tl.associative_scan`` on the
coalesced layout runs a warp shuffle scan per 16-byte chunk a thread holds, so each order
cost about 5 shuffles per chunk and int64 order 8 ran at 0.37 of copy tile-local (H100,
2^27).  Plain Triton cannot give a thread a contiguous run from coalesced loads
(docs/design/what-did-not-work.md); Gluon's explicit layouts can: the tile is loaded coalesced and converted through
shared memory to ``[T, G, S]`` with one row of G x S consecutive elements per thread.
Orders are then serial scans along G in registers (no shuffles), and only the q x S row
sums cross threads (q scans of one [S] vector per thread).  Tile-local, every order and
power-of-two tuple size ran at 1.00 of copy for int32 and int64 (H100, 2^27).  Registers
per thread hold G x S = R elements whatever s is (SAM's point against tuple structs).
The tile goes to an explicit shared-memory buffer by asynchronous copies (``cp.async``:
no registers hold it in flight) and is read from there again for the output, so x holds no
registers across the look-back (5 tiles per SM instead of 3).  High orders take
rows twice as long, read in two chunks: half the tiles, so half the look-backs.
A tuple size that is not a power of two is padded to the next one, S: a row holds G whole
tuples in G x S slots, the padding columns zero through every order (and absent from the
status entries: their carries are zero).  At order 1 such tuple sizes take flat tiles
instead (``STRIDED``): rows of R consecutive elements, loaded and stored as for tuple size
1, tuples crossing rows and tiles.  Element i of a row belongs to relative column i mod TS,
a constant per register, so TS masked in-thread scans fold to one add per element; a row's
relative column k is absolute column (phase + k) mod TS (phase: the row's first element's
column), which maps its sums out and its seeds in with TS x S selects per row (H100, 2^27:
tuple size 5 int32 0.70 -> 0.94 of copy, int64 0.61 -> 0.87; padded rows load 4-byte
elements on 5 of 8 lanes; docs/design/tuple-sizes.md).

Per tile: q - 1 in-thread scans (each order's row end is its last element) and one
in-thread sum give the row sums; q thread scans give each row's carry inside the tile and
the tile's vector; after the look-back each row's carry gets the tile's prefix shifted by
the rows before it, and q in-thread scans write the output, order r's seed added to the
row's first element only (one add per row, not per element).

Status words, the carry's binomial shift and the look-back: :mod:`.orders_lookback`.
Which scans come here and with which tile: :mod:`.orders_rules`.  Under
``TRITON_INTERPRET=1`` the kernel runs as a ``triton.jit`` function with Gluon's names
mapped onto ``triton.language`` and layouts ignored (:mod:`..device.gluon`), so its
logic is tested on the CPU like the other kernels.
"""

import triton
import triton.language as tl
from triton.experimental.gluon import language as _gluon_language

from . import orders_rules as blocked_rules
from ..runtime import launch as runtime
from .orders_lookback import (FLAG_AGGREGATE, FLAG_PREFIX, STASH_WORDS, _add, _cast, _coefficients, _lookback, _publish,
                              _shift_into, _words_padded)
from ..device.gluon import async_copy, gl, jit
from ..planning.policy import current_policy
from ..runtime.launch import Launch
from ..engine.protocol import tag_of
from ..engine.state import identity_tensor, single_pass


@triton.constexpr_function
def _staged_layout(V, R):
    """Shared layout of a staged tile ([T, R]): rows of R elements swizzled in vectors of V
    so that the 8 threads of a shared-memory phase, each reading a vector of its own row,
    hit 8 different bank groups (a row of 16 vectors would otherwise put them all in one)."""
    chunks = R // V
    return _gluon_language.SwizzledSharedLayout(V, max(1, 8 // chunks), min(8, chunks), [1, 0])


@triton.constexpr_function
def _stash_layout(T, NWP):
    """Shared layout of a [T, NWP] stash of 32-bit words: rows padded by four words (16
    bytes, so that rows stay aligned for vector accesses), which spreads a warp's rows over
    the banks (rows of 2^k words would put them all in one)."""
    return _gluon_language.PaddedSharedLayout.with_identity_for([[NWP, 4]], [T, NWP], [1, 0])


@triton.constexpr_function
def _padded_io(S, G, WARPS):
    """Layout of a tile of padded tuples ([T, G, S], S a power of two above the tuple size):
    one element per thread, a warp over consecutive tuples, so that the unmasked lanes of a
    load read consecutive addresses."""
    tuples = min(G, 32 // S)
    return _gluon_language.BlockedLayout([1, 1, 1], [32 // (S * tuples), tuples, S], [WARPS, 1, 1], [2, 1, 0])


@jit
def _padded_offsets(T: tl.constexpr, G: tl.constexpr, S: tl.constexpr, TS: tl.constexpr, layout: tl.constexpr):
    """(offsets, column < TS) in a tile of T rows of G tuples of TS elements, each tuple
    padded to S columns ([T, G, S] in ``layout``)."""
    t = gl.arange(0, T, layout=gl.SliceLayout(1, gl.SliceLayout(2, layout)))
    g = gl.arange(0, G, layout=gl.SliceLayout(0, gl.SliceLayout(2, layout)))
    c = gl.expand_dims(gl.expand_dims(gl.arange(0, S, layout=gl.SliceLayout(0, gl.SliceLayout(1, layout))), 0), 1)
    offs = gl.expand_dims(gl.expand_dims(t * (G * TS), 1), 2) + gl.expand_dims(gl.expand_dims(g * TS, 0), 2) + c
    return offs, c < TS


@jit
def _wrap(column, TS: tl.constexpr):
    """``column`` mod TS for 0 <= column < 2 TS."""
    return gl.where(column >= TS, column - TS, column)


@jit
def _strided_phase(start, T: tl.constexpr, R: tl.constexpr, TS: tl.constexpr, layout: tl.constexpr):
    """Column (mod TS) of each thread's first element in a flat tile of T rows of R
    elements starting at element ``start`` ([T] int32 in ``layout``)."""
    t = gl.arange(0, T, layout=layout)
    return _wrap((start % TS).to(gl.int32) + (t * R) % TS, TS)


@jit
def _strided_scan(x, seeds, TS: tl.constexpr, R: tl.constexpr, layout: tl.constexpr):
    """Stride-TS inclusive sums along each thread's row of ``x`` ([T, R] in ``layout``):
    element i adds the elements i - TS, i - 2 TS, .. of its row, and relative column k =
    i mod TS starts from ``seeds[k]`` ([T]).  A column's mask is a constant per
    register (i is), so the selects and the adds of zeros fold away: the TS masked scans
    cost one add per element in all."""
    i = gl.expand_dims(gl.arange(0, R, layout=gl.SliceLayout(0, layout)), 0)
    k_of = i % TS
    y = x
    for k in gl.static_range(TS):
        xk = gl.where(k_of == k, x, 0)
        xk = gl.where(i == k, xk + gl.expand_dims(seeds[k], 1), xk)
        y = gl.where(k_of == k, gl.associative_scan(xk, 1, _add), y)
    return y


@jit
def _strided_sums(x, TS: tl.constexpr, R: tl.constexpr, layout: tl.constexpr):
    """Sums of each relative column k (elements i = k mod TS) of each thread's row of
    ``x`` ([T, R] in ``layout``): TS tensors of [T]."""
    k_of = gl.expand_dims(gl.arange(0, R, layout=gl.SliceLayout(0, layout)), 0) % TS
    sums = ()
    for k in gl.static_range(TS):
        sums = sums + (gl.reduce(gl.where(k_of == k, x, 0), 1, _add),)
    return sums


@jit
def _to_absolute(relative, phase, ACC: tl.constexpr, T: tl.constexpr, S: tl.constexpr, TS: tl.constexpr,
                 cols: tl.constexpr):
    """A row's TS relative columns (tensors of [T]) as its absolute columns ([T, S] in
    ``cols``): relative column k is absolute column (phase + k) mod TS; padding columns
    zero.  TS x S selects per row."""
    c = gl.expand_dims(gl.arange(0, S, layout=gl.SliceLayout(0, cols)), 0)
    p = gl.convert_layout(phase, gl.SliceLayout(1, cols))
    out = gl.full([T, S], 0, ACC, layout=cols)
    for k in gl.static_range(TS):
        a = gl.expand_dims(_wrap(p + k, TS), 1)
        out = gl.where(c == a, gl.expand_dims(gl.convert_layout(relative[k], gl.SliceLayout(1, cols)), 1), out)
    return out


@jit
def _to_relative(absolute, phase, S: tl.constexpr, TS: tl.constexpr, cols: tl.constexpr, layout: tl.constexpr):
    """:func:`_to_absolute` backwards: TS tensors of [T] in ``layout``."""
    c = gl.expand_dims(gl.arange(0, S, layout=gl.SliceLayout(0, cols)), 0)
    p = gl.convert_layout(phase, gl.SliceLayout(1, cols))
    out = ()
    for k in gl.static_range(TS):
        a = gl.expand_dims(_wrap(p + k, TS), 1)
        out = out + (gl.convert_layout(gl.reduce(gl.where(c == a, absolute, 0), 1, _add), layout),)
    return out


@jit
def _row_pointers(base, start, length, T: tl.constexpr, R: tl.constexpr, layout: tl.constexpr):
    """(pointers, mask) of a partial tile's elements from ``base`` + ``start``, each thread
    its own row of R ([T, R] in ``layout``, a row per thread): the mask compares each
    element's place in its row, a constant per register, with the row's remaining length,
    one register per thread.  Masks of the coalesced layout compare every element's offset
    and, for a length not a multiple of 16 (no vector-wide masks), kept 100-odd offsets live
    from the tile's start to its store (int32 tuple size 5: 408 bytes of spills;
    docs/design/tuple-sizes.md)."""
    t = gl.arange(0, T, layout=gl.SliceLayout(1, layout))
    i = gl.expand_dims(gl.arange(0, R, layout=gl.SliceLayout(0, layout)), 0)
    rows = gl.expand_dims(t * R, 1)
    return base + start + rows + i, i < gl.expand_dims((length - start - t * R).to(gl.int32), 1)


@jit
def _tile_offsets(T: tl.constexpr, R: tl.constexpr, layout: tl.constexpr):
    """Offsets in a tile of T rows of R elements ([T, R] in ``layout``)."""
    return (gl.expand_dims(gl.arange(0, T, layout=gl.SliceLayout(1, layout)) * R, 1)
            + gl.expand_dims(gl.arange(0, R, layout=gl.SliceLayout(0, layout)), 0))


@jit
def _row_chunk(buf, k: tl.constexpr, flat: tl.constexpr, rows: tl.constexpr, T: tl.constexpr, GC: tl.constexpr,
               S: tl.constexpr, ACC: tl.constexpr):
    """Chunk k of each thread's row in the staged tile: GC x S elements per thread
    ([T, GC, S] in ``rows``; ``flat`` lays [T, GC x S] out as ``rows`` does)."""
    return gl.convert_layout(gl.reshape(buf.slice(k * GC * S, GC * S, 1).load(flat), [T, GC, S]), rows,
                             assert_trivial=True).to(ACC)


@jit
def _seeded_scans(y, seeds, first, last, UPTO: tl.constexpr, Q: tl.constexpr):
    """Orders 1..UPTO of ``y``'s scan along a row (axis 1), order r seeded with ``seeds[r]``
    (the order-r value before the row: it enters the row's first element only, one add
    instead of one per element); returns the last order's scan and every order's value at
    the row's end (picked, not summed: ``first``/``last`` are constants per register, so
    the selects fold away)."""
    ends = ()
    for r in gl.static_range(UPTO):
        y = gl.associative_scan(gl.where(first, y + gl.expand_dims(seeds[r], 1), y), 1, _add)
        ends = ends + (gl.reduce(gl.where(last, y, 0), 1, _add),)
    for r in gl.static_range(UPTO, Q):
        ends = ends + (seeds[r],)
    return y, ends



@jit
def _thread_scan(values, flat: tl.constexpr, cols: tl.constexpr):
    """Inclusive sum over threads of a [T, S] tensor (one row per thread); Triton scans
    blocked layouts only, and ``flat`` lays rows out as ``cols`` does (no data moves)."""
    return gl.convert_layout(gl.associative_scan(gl.convert_layout(values, flat), 0, _add), cols)



@jit(do_not_specialize=["tile_base", "epoch", "lookback"])
def orders_kernel(x_ptr, y_ptr, status_ptr, counter_ptr, length, tiles, tile_base, epoch, lookback,
                  ACC: tl.constexpr, Q: tl.constexpr, S: tl.constexpr, R: tl.constexpr, V: tl.constexpr,
                  TS: tl.constexpr, WARPS: tl.constexpr, WINDOW: tl.constexpr, WIN_WARPS: tl.constexpr,
                  WPV: tl.constexpr, CH: tl.constexpr, PREFIXES: tl.constexpr, VECTORS: tl.constexpr,
                  STRIDED: tl.constexpr):
    """Order Q, tuple size TS inclusive sums of ``length`` elements; each tuple padded to S
    columns (TS itself if a power of two; S divides R), a thread's row of R slots holds G =
    R / S tuples, a tile 32 * WARPS * G tuples; ``tiles`` tiles, ids from ``counter_ptr``
    minus ``tile_base``; V elements per 16-byte vector.  ``PREFIXES=False`` (tests only)
    publishes no inclusive prefix but tile 0's, so every look-back folds aggregates
    through windows down to tile 0: the interpreter runs tiles in order and would
    otherwise only ever fold one inclusive predecessor.  ``lookback=0`` (studies
    only: wrong results) takes every tile's prefix as zero, to time the rest."""
    T: tl.constexpr = 32 * WARPS
    G: tl.constexpr = R // S
    BLOCK: tl.constexpr = T * R if STRIDED else T * G * TS
    ROWS: tl.constexpr = T * G
    PADDED: tl.constexpr = TS < S and not STRIDED
    NW: tl.constexpr = Q * TS * WPV  # status words per entry
    ES: tl.constexpr = _words_padded(NW)  # entries' spacing (aligned for vector reads)
    io: tl.constexpr = gl.BlockedLayout([1, V], [32 * V // R, R // V], [WARPS, 1], [1, 0])  # coalesced
    GC: tl.constexpr = G // CH  # tuples of a row chunk
    chunk: tl.constexpr = gl.BlockedLayout([1, GC * S], [32, 1], [WARPS, 1], [1, 0])  # a row chunk per thread
    rows: tl.constexpr = gl.BlockedLayout([1, GC, S], [32, 1, 1], [WARPS, 1, 1], [2, 1, 0])
    cols: tl.constexpr = gl.SliceLayout(1, rows)  # [T, S]: a thread's columns
    flat_cols: tl.constexpr = gl.BlockedLayout([1, S], [32, 1], [WARPS, 1], [1, 0])
    flat_rows: tl.constexpr = gl.BlockedLayout([1, R], [32, 1], [WARPS, 1], [1, 0])  # a partial tile's rows
    # See _lookback: the window's entries, orders and columns, and the words read.
    win3: tl.constexpr = gl.BlockedLayout([1, _words_padded(Q), S], [32, 1, 1], [WIN_WARPS, 1, WARPS // WIN_WARPS],
                                          [2, 1, 0])
    reads: tl.constexpr = gl.BlockedLayout([1, S * WPV], [32, 1], [WIN_WARPS, WARPS // WIN_WARPS], [1, 0])

    if tiles == 1:
        vid = gl.program_id(0).to(gl.int64)
    else:
        vid = gl.atomic_add(counter_ptr, 1, sem="relaxed") - tile_base
    start = vid * BLOCK
    offs = _tile_offsets(T, R, io)
    full = start + BLOCK <= length
    # The tile goes through shared memory (coalesced in, a row per thread out) and is read
    # from there again for the output, so that x holds no registers across the look-back.
    buf = gl.allocate_shared_memory(x_ptr.dtype.element_ty, [T, R], _staged_layout(V, R))
    if PADDED:
        # Tuples of TS elements land in rows of S columns; the padding columns stay zero.
        io3: tl.constexpr = _padded_io(S, G, WARPS)
        offs3, real = _padded_offsets(T, G, S, TS, io3)
        # (Written out here: through a helper's mask argument ptxas kept 28 registers more,
        # int32 tuple size 5 166 -> 194, the column masks no longer folding per register.)
        if full:
            buf.reshape([T, G, S]).store(gl.load(x_ptr + start + offs3, mask=real, other=0))
        else:
            buf.reshape([T, G, S]).store(gl.load(x_ptr + start + offs3, mask=real & (offs3 < length - start), other=0))
    elif full:
        async_copy.async_copy_global_to_shared(buf, x_ptr + start + offs)
    else:
        ptrs, inside = _row_pointers(x_ptr, start, length, T, R, flat_rows)
        buf.store(gl.load(ptrs, mask=inside, other=0))
    async_copy.commit_group()
    async_copy.wait_group(0)
    gl.thread_barrier()

    if STRIDED:
        # A flat row of R elements (order 1): its relative columns' sums, then absolute ones.
        gl.static_assert(Q == 1 and CH == 1, "strided tiles take order 1 in one chunk")
        phase = _strided_phase(start, T, R, TS, gl.SliceLayout(1, chunk))
        sums = (_to_absolute(_strided_sums(buf.load(chunk).to(ACC), TS, R, chunk), phase, ACC, T, S, TS, cols),)
    else:
        # Row sums of orders 1..Q, chunk by chunk (a chunk's registers only): orders 1..Q-1 are
        # the ends of the row's scans, order Q the sum of order Q - 1's.
        g = gl.expand_dims(gl.expand_dims(gl.arange(0, GC, layout=gl.SliceLayout(0, gl.SliceLayout(2, rows))), 0), 2)
        first = g == 0
        last = g == GC - 1
        sums = ()
        for r in gl.static_range(Q):
            sums = sums + (gl.full([T, S], 0, ACC, layout=cols),)
        for k in gl.static_range(CH):
            y, ends = _seeded_scans(_row_chunk(buf, k, chunk, rows, T, GC, S, ACC), sums, first, last, Q - 1, Q)
            sums = ()
            for r in gl.static_range(Q - 1):
                sums = sums + (ends[r],)
            sums = sums + (ends[Q - 1] + gl.reduce(y, 1, _add),)

    # Each row's carry inside the tile (exclusive over threads), order by order: a row's
    # order-r vector, shifted across its G rows, enters the next row's.
    cg = _cast(_coefficients(vid * 0 + G, Q), ACC, -1)
    excl = ()
    incl = ()
    for r in gl.static_range(Q):
        term = _shift_into(sums[r], excl, cg, r, r)
        scanned = _thread_scan(term, flat_cols, cols)
        excl = excl + (scanned - term,)
        incl = incl + (scanned,)

    thread = gl.arange(0, T, layout=gl.SliceLayout(1, cols))
    col = gl.expand_dims(thread * 0, 1) + gl.expand_dims(gl.arange(0, S, layout=gl.SliceLayout(0, cols)), 0)
    last_thread = gl.expand_dims(thread == T - 1, 1)
    publishes = vid < tiles - 1
    if NW <= STASH_WORDS:
        stash = gl.allocate_shared_memory(gl.int32, [T, _words_padded(NW)], _stash_layout(T, _words_padded(NW)))
    else:
        stash = None
    # Tile 0's aggregate is its inclusive prefix.
    flag = gl.where(vid == 0, FLAG_PREFIX, FLAG_AGGREGATE)
    _publish(status_ptr + vid * ES, incl, col, last_thread, stash, tag_of(epoch, flag), publishes,
             Q, TS, WPV, T, WARPS)

    prefix = _lookback(status_ptr, vid * lookback, epoch, ACC, Q, S, TS, WPV, ES, ROWS, WINDOW, win3, reads, VECTORS)
    carried = ()
    for r in gl.static_range(Q):
        carried = carried + (gl.expand_dims(gl.convert_layout(prefix[r], gl.SliceLayout(0, cols)), 0),)
    if vid > 0 and PREFIXES:
        ct = _cast(_coefficients(vid * 0 + ROWS, Q), ACC, -1)
        inclusive = ()
        for r in gl.static_range(Q):
            inclusive = inclusive + (_shift_into(incl[r], carried, ct, r, r + 1),)
        _publish(status_ptr + vid * ES, inclusive, col, last_thread, stash,
                 tag_of(epoch, FLAG_PREFIX), publishes, Q, TS, WPV, T, WARPS)

    # Seeds: each row's carry plus the tile's prefix shifted across the rows before it.
    cv = _cast(_coefficients(thread.to(gl.int64) * G, Q), ACC, 1)
    seeds = ()
    for r in gl.static_range(Q):
        seeds = seeds + (_shift_into(excl[r], carried, cv, r, r + 1),)
    # The output goes back to coalesced through the tile's buffer, chunk by chunk (each
    # thread overwrites only the row it read), or through a buffer of its own dtype.
    if y_ptr.dtype.element_ty == x_ptr.dtype.element_ty:
        out_buf = buf
    else:
        out_buf = gl.allocate_shared_memory(y_ptr.dtype.element_ty, [T, R], _staged_layout(V, R))
    if STRIDED:
        y = _strided_scan(buf.load(chunk).to(ACC), _to_relative(seeds[0], phase, S, TS, cols, gl.SliceLayout(1, chunk)),
                          TS, R, chunk)
        out_buf.store(y.to(y_ptr.dtype.element_ty))
    else:
        for k in gl.static_range(CH):
            y, seeds = _seeded_scans(_row_chunk(buf, k, chunk, rows, T, GC, S, ACC), seeds, first, last, Q, Q)
            y = gl.convert_layout(gl.reshape(y, [T, GC * S]), chunk, assert_trivial=True)
            out_buf.slice(k * GC * S, GC * S, 1).store(y.to(y_ptr.dtype.element_ty))
    gl.thread_barrier()
    if PADDED:
        out = out_buf.reshape([T, G, S]).load(io3)
        offs3, real = _padded_offsets(T, G, S, TS, io3)  # again: not held across the look-back
        if full:
            gl.store(y_ptr + start + offs3, out, mask=real)
        else:
            gl.store(y_ptr + start + offs3, out, mask=real & (offs3 < length - start))
    elif full:
        gl.store(y_ptr + start + offs, out_buf.load(io))
    else:
        ptrs, inside = _row_pointers(y_ptr, start, length, T, R, flat_rows)
        gl.store(ptrs, out_buf.load(flat_rows), mask=inside)


def launch_blocked(x, y, acc, length: int, order: int, tuple_size: int, stream: int, interpreter: bool, *,
                   window: int | None = None, lookback: bool = True, tile: tuple | None = None,
                   window_warps: int = 1, maxnreg: int | None = None, chunks: int | None = None,
                   vectors: bool | None = None, strided: bool | None = None) -> Launch:
    """One launch of :func:`orders_kernel` over ``length`` elements of ``x`` into ``y``
    (order ``order``, tuple size ``tuple_size``, accumulator torch dtype ``acc``).
    Studies may pass ``window`` entries spread over ``window_warps`` warps and a
    register cap ``maxnreg`` instead of the defaults, ``tile`` = (rows, warps),
    ``lookback=False`` for wrong results without the look-back, ``vectors`` (see
    :func:`.orders_rules.blocked_reader`) and ``strided`` (see
    :func:`.orders_rules.blocked_strided`).  Returns the launch made."""
    import torch

    itemsize = acc.itemsize
    strided = blocked_rules.blocked_strided(order, tuple_size) if strided is None else strided
    block, columns, rows, warps = blocked_rules.blocked_block(itemsize, tuple_size, interpreter, tile, order, strided)
    tiles = -(-length // block)
    words = order * tuple_size * (itemsize // 4)  # status words per entry (no padding columns)
    spacing = 1 << (words - 1).bit_length()  # entries lie a power of two apart (aligned vector reads)
    if interpreter:
        window, window_warps, maxnreg = 2, 1, None
    elif window is None:
        window, window_warps = blocked_rules.BLOCKED_WINDOW_PER_WARP * warps, warps
        maxnreg = blocked_rules.blocked_register_cap(itemsize, order, tuple_size)
    if strided:  # flat rows are scanned in one chunk
        chunks = 1
    elif chunks is None:
        chunks = blocked_rules.blocked_chunks(itemsize, rows)
    if vectors is None:
        vectors = blocked_rules.blocked_reader(itemsize, order, tuple_size)
    constexprs = dict(ACC=gl.int32 if itemsize == 4 else gl.int64, Q=order, S=columns, R=rows,
                      V=16 // itemsize, TS=tuple_size, WARPS=warps, WINDOW=window, WIN_WARPS=min(window_warps, warps),
                      WPV=itemsize // 4, CH=chunks, STRIDED=strided, PREFIXES=current_policy().blocked_prefixes,
                      VECTORS=vectors)
    # The engine's status reservation (one entry more: a read of an entry's last order
    # runs up to S x WPV words past its start); a single tile takes no ticket from the
    # counter and reads no status.
    single = tiles == 1
    with single_pass(x.device, stream, tiles, tiles + 1, (acc,), spacing, single=single,
                     placeholder=identity_tensor(0, torch.int64, x.device) if single else None) as status:
        args = (x, y, status.buffers[0], status.counter, length, tiles, status.tile_base, status.epoch, int(lookback))
        launch = Launch(orders_kernel, tiles, warps, stream, interpreter, args, constexprs, (length, tiles), maxnreg)
        runtime.launch_kernel(launch)
    return launch
