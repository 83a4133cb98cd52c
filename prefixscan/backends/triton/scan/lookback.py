"""The scan on the engine: single-pass scans with a decoupled look-back, and the chained hand-off.

Merrill & Garland 2016, "Single-pass Parallel Prefix Scan with Decoupled
Look-back" (section 4); with ``CHAINED`` the serial hand-off of Yan et al. 2013
(StreamScan), a look-back with a window of one.  The tile ids, the status words and
the look-back are the engine's (:mod:`..engine`); a scan tile loads its values,
carries the monoid's aggregate to its successors, scans the tile in registers
(``tl.associative_scan``: per-thread serial, warp Kogge-Stone, cross-warp) and
writes it: each element is read once and written once (2n bytes).

Lanes are ``(B, M, K)`` row-major views scanned along M (:mod:`.job`): ``K == 1``
takes the 1-D kernel; ``K > 1`` (a lane along a non-last axis, or ``tuple_size``
interleaved streams) takes the 2-D kernel whose tiles are ``[ROWS, KB]``
blocks, one status entry per column, or, for one 4-byte field and K <= 3, the
masked-columns kernel (1-D tiles of the lane, :func:`scan_cols_kernel`;
docs/design/tuple-sizes.md).

Orders (the higher-order prefix sums of SAM, Maleki, Yang & Burtscher, PLDI
2016, section 2.4): order q runs q scans of the tile in registers, each with its
own look-back (status entries of order k at ``k * order_stride``); order 2 of a
sum publishes both orders' tile sums at once and needs one look-back
(:func:`_order2_1d`, the binomial shift; docs/design/orders.md).

:func:`launch_lookback` is the launcher of the ``decoupled_lookback`` and
``chained`` strategies: it picks the kernel, its tile (:mod:`..planning.planner`), the
look-back window and the register cap, and reserves the status entries.
"""

from __future__ import annotations

import dataclasses
import functools
import math

import triton
import triton.language as tl

from ..planning import planner
from ..runtime import launch as runtime
from .columns import scan_cols_kernel
from ..device.tiles import (_as_rows, _count, _load_at, _ordered_reduce, _scalars, _scan_tile, _store_at, _total,
                            _where, _within)
from ..engine.pipeline import carry, carry_columns, tile_id
from ..engine.protocol import FLAG_AGGREGATE, FLAG_PREFIX, lookback, publish
from ..engine.state import single_pass, status_words, window_entries
from .job import ScanJob
from ..planning.planner import lookback_config
from ..planning.policy import current_policy
from ..runtime.replay import Launched, StatusRenewal
from ..runtime.launch import Launch
from ..planning.tiles import lane_tiles, raking_rows, register_cap

@triton.jit
def _order_1d(values, scan_in, k, seed, vid, tile, lane, tiles_per_lane, order_stride, ident, status, epoch,
              MONOID: tl.constexpr, PROTOCOL: tl.constexpr, REVERSE: tl.constexpr, SINGLE_TILE: tl.constexpr,
              RAKE: tl.constexpr):
    """One order of the 1-D scan: the tile's aggregate of ``values`` (order k-1's
    result), its carry by the engine (status entries of order k from ``k * order_stride``),
    and the scan of ``scan_in`` seeded with it."""
    if SINGLE_TILE:
        prefix = seed
    else:
        agg = _ordered_reduce(values, MONOID[1], MONOID[2])
        prefix = carry(status, vid + k * order_stride, lane * tiles_per_lane + k * order_stride, tile, agg, seed,
                       False, ident, epoch, MONOID, PROTOCOL)
    return MONOID[0](prefix, _scan_tile(scan_in, ident, MONOID[0], MONOID[1], REVERSE and MONOID[2], RAKE))


@triton.jit
def _order_2d(values, scan_in, k, seed, vid, tile, group, tiles_per_lane, order_stride, ident, status, epoch,
              MONOID: tl.constexpr, PROTOCOL: tl.constexpr, SINGLE_TILE: tl.constexpr, KB: tl.constexpr,
              RAKE: tl.constexpr):
    """One order of the 2-D scan (see :func:`_order_1d`), per column of the tile."""
    if SINGLE_TILE:
        prefix = seed
    else:
        prefix = carry_columns(status, (vid + k * order_stride) * KB + tl.arange(0, KB),
                               group * tiles_per_lane + k * order_stride, tile,
                               _ordered_reduce(values, MONOID[1], MONOID[2]), seed, ident, epoch, MONOID, PROTOCOL, KB)
    return MONOID[0](_as_rows(prefix), _scan_tile(scan_in, ident, MONOID[0], MONOID[1], False, RAKE))


@triton.jit
def _order2_1d(x, seed, vid, tile, lane, tiles_per_lane, ident, status, epoch, MONOID: tl.constexpr,
               PROTOCOL: tl.constexpr, BACKWARD: tl.constexpr, SINGLE_TILE: tl.constexpr, RAKE: tl.constexpr,
               BLOCK: tl.constexpr):
    """Order 2 of a sum with one look-back (the general path runs one per order).

    A segment's status is its local (order 1, order 2) sums at its last element,
    (T1, T2).  Segments A then B combine as (A1 + B1, A2 + B2 + len(B) * A1): the
    binomial shift, C(len(B), 1) for order 2 (the order-1 carry of A adds A1 to each
    of B's order-1 values, hence len(B) * A1 to B's order-2 sum).  So a tile
    publishes (T1, T2) at once, reads one prefix (c1, c2) (the lane's seed counts
    as (seed, seed): seeded scans add it at each order), and writes
    c2 + scan(c1 + scan(x)).  Tile-local work: 3 scans and 2 reductions instead of
    2 scans, 2 reductions and 2 look-backs in sequence (H200, 2^27, docs/design/orders.md:
    the order-1 look-backs in sequence are what int32 orders lose to).  The fold of
    whole tiles is the protocol's (:func:`..engine.protocol.lookback` with ``ORDER2_BLOCK``)."""
    FLAT: tl.constexpr = MONOID[1]
    u1 = _scan_tile(x, ident, MONOID[0], FLAT, BACKWARD, RAKE)
    c1 = seed[0]
    c2 = seed[0]
    if not SINGLE_TILE:
        agg = (_total(x[0], FLAT), _total(u1[0], FLAT))
        if tile > 0:
            if not PROTOCOL[2]:
                publish(status, vid, agg, FLAG_AGGREGATE, epoch, PROTOCOL[0])
            c1, c2 = lookback(status, lane * tiles_per_lane, tile, (ident[0], ident[0]), epoch, MONOID, PROTOCOL,
                              BLOCK)
        publish(status, vid, (c1 + agg[0], c2 + agg[1] + _count(BLOCK, c1) * c1), FLAG_PREFIX, epoch, PROTOCOL[0])
    v1 = (u1[0] + c1,)
    v2 = _scan_tile(v1, ident, MONOID[0], FLAT, BACKWARD, RAKE)
    return (v2[0] + c2,)


# Counters that change every call are never specialized: no recompiles, and no
# value turned into a constant when it happens to equal 1.  Neither is M: the 1-D
# kernel learns that 16 divides it from ALIGNED (scan_1d_kernel) where it reaches an
# address.
@triton.jit
def _tile_1d(io, status, M, vid, tiles_per_lane, epoch, order_stride, order, MONOID: tl.constexpr,
             PROTOCOL: tl.constexpr, SCAN: tl.constexpr, TILE: tl.constexpr, FULL: tl.constexpr):
    """Tile ``vid`` of :func:`scan_1d_kernel`; ``FULL``: every element inside the lane,
    so loads and stores carry no mask."""
    x_ptrs, y_ptrs, ident_ptrs, init_ptrs = io
    INCLUSIVE: tl.constexpr = SCAN[0]
    REVERSE: tl.constexpr = SCAN[1]
    HAS_INIT: tl.constexpr = SCAN[2]
    ORDERED: tl.constexpr = SCAN[3]
    DELAYED: tl.constexpr = SCAN[4]
    ORDER2: tl.constexpr = SCAN[5]
    BLOCK: tl.constexpr = TILE[0]
    RAKE: tl.constexpr = TILE[1]
    SINGLE_TILE: tl.constexpr = TILE[2]
    MULTI_LANE: tl.constexpr = TILE[3]
    COMMUTATIVE: tl.constexpr = MONOID[2]
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
    # entries (SAM's iteration, Maleki et al. PLDI 2016, section 2.4): the input is read once and the
    # result written once whatever the order.  Positions outside the lane hold
    # garbage after the first order, but they come after every valid position in
    # scan order and only the lane's last tile has them, whose aggregate nobody reads.
    if ORDER2:
        values = _order2_1d(x, seed, vid, tile, lane, tiles_per_lane, ident, status, epoch, MONOID, PROTOCOL,
                            REVERSE and COMMUTATIVE, SINGLE_TILE, RAKE, BLOCK)
    elif ORDERED:
        values = x
        k = 0
        while k < order:  # not range(order): the interpreter cannot index a runtime int (NumPy >= 2.4)
            values = _order_1d(values, scan_in, k, seed, vid, tile, lane, tiles_per_lane, order_stride, ident,
                               status, epoch, MONOID, PROTOCOL, REVERSE, SINGLE_TILE, RAKE)
            scan_in = values
            k += 1
    else:
        values = _order_1d(x, scan_in, 0, seed, vid, tile, lane, tiles_per_lane, order_stride, ident, status,
                           epoch, MONOID, PROTOCOL, REVERSE, SINGLE_TILE, RAKE)
    _store_at(y_ptrs, base, local, values, inside)


@triton.jit(do_not_specialize=["M", "tiles_per_lane", "tile_base", "epoch", "order_stride", "order"])
def scan_1d_kernel(io, status, counter_ptr, M, tiles_per_lane, tile_base, epoch, order_stride, order,
                   MONOID: tl.constexpr, PROTOCOL: tl.constexpr, SCAN: tl.constexpr, TILE: tl.constexpr):
    """Scan lanes of length M stored back to back (the (B, M, 1) layout), ``order`` times
    (status entries of order k at ``k * order_stride``).  ``io``: the field tuples
    (x, y, identity, seeds); ``status``: the engine's buffers; ``MONOID`` (PAIR, FLAT,
    COMMUTATIVE); ``PROTOCOL`` (WORDS, WINDOW, CHAINED); ``SCAN`` (INCLUSIVE, REVERSE,
    HAS_INIT, ORDERED, DELAYED, ORDER2): with ``DELAYED`` the input is first delayed by
    ``order`` elements, ``order`` is a runtime value, so one compiled kernel serves every
    order > 1 (``ORDERED``; order 1 compiles without the loop, whose loop-carried tile
    would otherwise cost layout conversions); ``TILE`` (BLOCK, RAKE, SINGLE_TILE,
    MULTI_LANE, ALIGNED).  ``M`` is not specialized, so that a forward scan of one lane
    compiles once for every length (a stream of lengths, each seen once, compiled twice
    as many variants); a lane's length reaches an address only through a lane's offset
    or a reverse scan's start, and there, with ``ALIGNED``, the argument is M / 16 and
    the kernel multiplies it back, which tells the compiler that M is a multiple of 16
    (``tl.multiple_of`` does not on a scalar argument): the sm_90 PTX of those variants
    is the one Triton's own specialization gave."""
    if TILE[4]:
        M = M * 16
    vid, full = tile_id(counter_ptr, tile_base, tiles_per_lane, M, TILE[0], TILE[2])
    if full:
        _tile_1d(io, status, M, vid, tiles_per_lane, epoch, order_stride, order, MONOID, PROTOCOL, SCAN, TILE, True)
    else:
        _tile_1d(io, status, M, vid, tiles_per_lane, epoch, order_stride, order, MONOID, PROTOCOL, SCAN, TILE, False)


@triton.jit
def _tile_2d(io, status, M, K, col_blocks, vid, tiles_per_lane, epoch, order_stride, order, MONOID: tl.constexpr,
             PROTOCOL: tl.constexpr, SCAN: tl.constexpr, TILE: tl.constexpr, FULL: tl.constexpr):
    """Tile ``vid`` of :func:`scan_2d_kernel`; ``FULL``: all rows and columns inside."""
    x_ptrs, y_ptrs, ident_ptrs, init_ptrs = io
    INCLUSIVE: tl.constexpr = SCAN[0]
    REVERSE: tl.constexpr = SCAN[1]
    HAS_INIT: tl.constexpr = SCAN[2]
    ORDERED: tl.constexpr = SCAN[3]
    DELAYED: tl.constexpr = SCAN[4]
    ROWS: tl.constexpr = TILE[0]
    RAKE: tl.constexpr = TILE[1]
    SINGLE_TILE: tl.constexpr = TILE[2]
    MULTI_LANE: tl.constexpr = TILE[3]
    KB: tl.constexpr = TILE[4]
    EXACT_K: tl.constexpr = TILE[5]
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
                               status, epoch, MONOID, PROTOCOL, SINGLE_TILE, KB, RAKE)
            scan_in = values
            k += 1
    else:
        values = _order_2d(x, scan_in, 0, seed, vid, tile, group, tiles_per_lane, order_stride, ident, status,
                           epoch, MONOID, PROTOCOL, SINGLE_TILE, KB, RAKE)
    _store_at(y_ptrs, base, rpos * stride + cols, values, inside)


@triton.jit(do_not_specialize=["tiles_per_lane", "tile_base", "epoch", "col_blocks", "order_stride", "order"])
def scan_2d_kernel(io, status, counter_ptr, M, K, col_blocks, tiles_per_lane, tile_base, epoch, order_stride, order,
                   MONOID: tl.constexpr, PROTOCOL: tl.constexpr, SCAN: tl.constexpr, TILE: tl.constexpr):
    """Scan the (B, M, K) layout along M: K interleaved streams per lane; ``order``,
    ``DELAYED`` and the grouped arguments as in :func:`scan_1d_kernel`, ``TILE`` (ROWS,
    RAKE, SINGLE_TILE, MULTI_LANE, KB, EXACT_K) (status entries of order k start at
    ``k * order_stride`` tiles).

    With ``EXACT_K`` (K == KB) the row stride is a constant, so a tile is one
    contiguous block and its loads and stores are 16-byte vectors.
    """
    KB: tl.constexpr = TILE[4]
    # Full tiles without masks, as in scan_1d_kernel: all rows inside, and all columns
    # unless the column blocks tile K exactly (EXACT_K).
    vid, full = tile_id(counter_ptr, tile_base, tiles_per_lane, M, TILE[0], TILE[2])
    if not TILE[2]:
        if not TILE[5]:
            full = full & ((vid // tiles_per_lane % col_blocks + 1) * KB <= K)
    if full:
        _tile_2d(io, status, M, K, col_blocks, vid, tiles_per_lane, epoch, order_stride, order, MONOID, PROTOCOL,
                 SCAN, TILE, True)
    else:
        _tile_2d(io, status, M, K, col_blocks, vid, tiles_per_lane, epoch, order_stride, order, MONOID, PROTOCOL,
                 SCAN, TILE, False)


# ---------------------------------------------------------------------------
# The launcher.

#: Resident tiles per SM (TileConfig.occupancy) for the kernel variants that the
#: tuned table does not measure (it tunes the plain 1-D and 2-D kernels, whose
#: tile these variants borrow), by (variant, accumulator bytes, 32-bit words of
#: tile data per thread): measured on the H100 at 2^27 at those tiles
#: (docs/design/lookback.md).  ptxas gives the order-2 tile 168 registers (3 tiles
#: of 4 warps per SM); capped for 4 tiles, int32 order 2 went from 0.94 to 0.98 of
#: copy and float32 from 0.93 to 0.96; int32 order 5 (the loop over orders) 0.56 ->
#: 0.66 at 5 tiles; masked columns K = 3 (196 registers, 2 tiles) 0.43 -> 0.51 at 3.
#: Elsewhere (other tiles, int64 order 5: 0.41 -> 0.38 at 5) the compiler's choice stands.
VARIANT_OCCUPANCY = {("order2", 4, 64): 4, ("ordered", 4, 64): 5, ("columns3", 4, 32): 3}


def _occupancy(tune, variant: str | None, nbytes: int) -> int:
    """Resident tiles per SM to cap registers for: the tile's own (the table's, or a
    forced tile's for any kernel) for the plain kernels, else :data:`VARIANT_OCCUPANCY`."""
    if variant is None or planner.overridden():
        return tune.occupancy
    words = tune.block * nbytes // 4 // (32 * tune.num_warps)
    return VARIANT_OCCUPANCY.get((variant, nbytes, words), 0)


def launch_lookback(job: ScanJob, *, chained: bool = False, order: int = 1, delayed: bool = False,
                    inclusive: bool | None = None) -> Launched:
    """Decoupled look-back (or, with ``chained``, for strategy "chained" and for
    deterministic=True, the chained hand-off) over the (B, M, K) layout: one
    launch, one pass, ``order`` scans of the input (``delayed``: first delayed by
    ``order`` elements; ``inclusive`` overrides the config's)."""
    config, accs, B, M, K = job.config, job.accs, job.B, job.M, job.K
    policy = current_policy()
    chained = chained or config.deterministic or config.strategy == "chained"

    # Order 2 of a 1-D sum: one look-back over (order 1, order 2) sums
    # (_order2_1d), so the status entry holds two fields.  Not for 64-bit
    # integers, where the extra in-tile scan costs more than the look-back saves
    # (H200, 2^27, docs/design/orders.md: int32 0.70 -> 0.81 of copy, float32
    # 0.68 -> 0.79, float64 0.46 -> 0.51, int64 0.58 -> 0.41).
    order2 = (order == 2 and K == 1 and len(accs) == 1 and policy.order2_one_lookback
              and (accs[0].itemsize < 8 or accs[0].is_floating_point or policy.order2_int64)
              and getattr(config.monoid, "builtin", False) and config.monoid.name == "add")
    nbytes = sum(a.itemsize for a in accs)
    tune = lookback_config(job.device, accs, M, K, job.interpreter, monoid=config.monoid, chained=chained)
    status_accs = tuple(accs) * 2 if order2 else tuple(accs)
    words = status_words(status_accs, tune.packed)
    idents = job.idents
    io = (job.xs, job.ys, idents, job.inits if job.inits is not None else idents)
    # The tile's window counts status words per look-back step (each read by an
    # atomic); an entry has ``words`` of them.  H200, 2^27: int64 (two words) at
    # 32 entries per step 0.78 of copy, at 16 0.90.
    window = 1 if chained else window_entries(tune.window, words)  # chained: only the predecessor matters
    monoid = (job.pair, job.flat, job.commutative)
    scan = (config.inclusive if inclusive is None else inclusive, config.reverse, job.inits is not None)
    ordered = order > 1 and not order2  # the 1-D and 2-D kernels' loop over orders
    columns = (1 < K <= policy.columns_max and order == 1 and not delayed and len(accs) == 1
               and nbytes in policy.columns_itemsizes)
    if K == 1 or columns:
        # Columns: lanes of M * K elements in 1-D tiles (scan_cols_kernel).
        length = M * K
        block, single, tiles, rake = lane_tiles(tune, length)  # as the ahead-of-time loader cuts it (aot)
        grid_size = entries = B * tiles
        if columns:
            kb = 1 << math.ceil(math.log2(K))
            entries = grid_size * kb
    else:
        kb = min(1 << math.ceil(math.log2(K)), tune.max_kb)
        col_blocks = -(-K // kb)
        rows = max(1, tune.block // kb)
        single = M <= rows
        if single:
            rows = max(1, 1 << math.ceil(math.log2(M)))
        tiles = 1 if single else -(-M // rows)
        grid_size = B * col_blocks * tiles
        entries = grid_size * kb
        rake = raking_rows(tune, rows)
    if K > 1 and not chained:
        # A per-column step reads KB entries per window row (H200, 2^26 x 4 axis-0: at
        # 32 rows 0.49 of copy, at 8 0.57; tuple size 2: 0.38 -> 0.63).
        window = window_entries(window, kb)
    protocol = (words, window, chained)
    variant = ("order2" if order2 else ("ordered" if K == 1 else "ordered-2d") if ordered
               else f"columns{K}" if columns else None)
    maxnreg = register_cap(dataclasses.replace(tune, occupancy=_occupancy(tune, variant, nbytes)))
    status_entries = entries * (1 if order2 else order)  # order 2 of a sum: one entry of two fields
    with single_pass(job.device, job.stream, grid_size, status_entries, status_accs, words, single=single,
                     placeholder=idents[0]) as status:
        if columns:
            kernel = scan_cols_kernel
            args = (io, status.buffers, status.counter, length, tiles, status.tile_base, status.epoch)
            tile = (block, rake, single, B > 1, kb, K)
            specialized = (length,)
        elif K == 1:
            kernel = scan_1d_kernel
            # M / 16 goes as a 32-bit argument below 2^35 whatever M: M * 16 would wrap
            # in the kernel for M >= 2^31, so such lanes go unaligned, as M itself.
            aligned = M % 16 == 0 and M < (1 << 31) and (B > 1 or bool(scan[1]))
            args = (io, status.buffers, status.counter, M // 16 if aligned else M, tiles, status.tile_base,
                    status.epoch, grid_size, order)
            scan = scan + (ordered, delayed, order2)
            tile = (block, rake, single, B > 1, aligned)
            specialized = ()
        else:
            kernel = scan_2d_kernel
            args = (io, status.buffers, status.counter, M, K, col_blocks, tiles, status.tile_base, status.epoch,
                    grid_size, order)
            scan = scan + (ordered, delayed)
            tile = (rows, rake, single, B > 1, kb, K == kb)
            specialized = (M, K)
        constexprs = dict(MONOID=monoid, PROTOCOL=protocol, SCAN=scan, TILE=tile)
        launch = Launch(kernel, grid_size, tune.num_warps, job.stream, job.interpreter, args, constexprs,
                        specialized, maxnreg)
        compiled = runtime.launch_kernel(launch)
    renewal = None
    if not single:
        # What a replay must renew per call: the status reservation it launched with (a
        # capture's own one-shot state), and the tile base and epoch (argument positions
        # ``at`` and ``at + 1``).
        renewal = StatusRenewal(status.state, status_entries, status_accs, words, job.stream,
                                kernel.arg_names.index("tile_base"))
    return Launched(launch, compiled, renewal)


#: The chained hand-off (strategy "chained", deterministic=True).
launch_chained = functools.partial(launch_lookback, chained=True)


#: The names inside each scan kernel's grouped constexprs (MONOID and PROTOCOL are the
#: engine's), for the tools and tests that speak of a variant by name.
CONSTEXPR_NAMES = {
    "MONOID": ("PAIR", "FLAT", "COMMUTATIVE"),
    "PROTOCOL": ("WORDS", "WINDOW", "CHAINED"),
    "scan_1d_kernel": dict(SCAN=("INCLUSIVE", "REVERSE", "HAS_INIT", "ORDERED", "DELAYED", "ORDER2"),
                           TILE=("BLOCK", "RAKE", "SINGLE_TILE", "MULTI_LANE", "ALIGNED")),
    "scan_2d_kernel": dict(SCAN=("INCLUSIVE", "REVERSE", "HAS_INIT", "ORDERED", "DELAYED"),
                           TILE=("ROWS", "RAKE", "SINGLE_TILE", "MULTI_LANE", "KB", "EXACT_K")),
    "scan_cols_kernel": dict(SCAN=("INCLUSIVE", "REVERSE", "HAS_INIT"),
                             TILE=("BLOCK", "RAKE", "SINGLE_TILE", "MULTI_LANE", "KB", "K")),
}


def _groups(kernel) -> dict:
    name = getattr(kernel, "fn", kernel).__name__
    return dict(MONOID=CONSTEXPR_NAMES["MONOID"], PROTOCOL=CONSTEXPR_NAMES["PROTOCOL"], **CONSTEXPR_NAMES[name])


def named_constexprs(kernel, constexprs: dict) -> dict:
    """A scan kernel's grouped constexprs spelled out by name (``BLOCK``, ``WINDOW``, ...)."""
    out = {}
    for group, names in _groups(kernel).items():
        out.update(zip(names, constexprs[group]))
    return out


def grouped_constexprs(kernel, named: dict) -> dict:
    """Inverse of :func:`named_constexprs`: a scan kernel's constexprs from their names."""
    return {group: tuple(named[name] for name in names) for group, names in _groups(kernel).items()}
