"""Launching the scan kernels: layout, status buffers, tile sizes.

Every scan is a ``(B, M, K)`` row-major view scanned along M (see
:mod:`.kernels`).  Status buffers live per device and stream and are reused
across calls: each launch bumps an epoch that its flags carry and advances the
tile counter by its grid size, so no memset is needed between calls.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from dataclasses import dataclass, field

from . import planner
from .planner import choose_config
from .tiles import raking_rows, register_cap

_EPOCH_LIMIT = 1 << 29  # flags hold epoch * 4 + state in 32 bits


@dataclass
class _DeviceState:
    device: object
    counter: object = None  # int64[1]: tiles handed out so far
    tiles_issued: int = 0
    epoch: int = 0
    status: object = None  # int64 tagged words (kernels: WORDS > 0)
    flags: object = None  # int32 flags (WORDS == 0)
    values: dict = field(default_factory=dict)  # (field, dtype) -> (agg, incl)

    def begin(self, entries: int, torch, accs, words: int):
        """Reserve status for ``entries`` entries of ``words`` tagged words each (0: a
        flag and one value per field); returns (status, flags, aggs, incls), the last
        two tuples of one value buffer per field (unused with words)."""
        if self.counter is None:
            self.counter = torch.zeros(1, dtype=torch.int64, device=self.device)
        self.epoch += 1
        if self.epoch >= _EPOCH_LIMIT:  # wrap: clear so old words cannot match
            self.epoch = 1
            for buf in (self.status, self.flags):
                if buf is not None:
                    buf.zero_()
        if words:
            if self.status is None or self.status.numel() < entries * words:
                self.status = torch.zeros(_grow(entries * words), dtype=torch.int64, device=self.device)
            return self.status, self.status, (self.status,), (self.status,)
        if self.flags is None or self.flags.numel() < entries:
            self.flags = torch.zeros(_grow(entries), dtype=torch.int32, device=self.device)
        aggs, incls = [], []
        for field, acc in enumerate(accs):
            vals = self.values.get((field, acc))
            if vals is None or vals[0].numel() < entries:
                n = _grow(entries)
                vals = (torch.empty(n, dtype=acc, device=self.device), torch.empty(n, dtype=acc, device=self.device))
                self.values[(field, acc)] = vals
            aggs.append(vals[0])
            incls.append(vals[1])
        return self.flags, self.flags, tuple(aggs), tuple(incls)


def _grow(n: int) -> int:
    return 1 << max(10, math.ceil(math.log2(max(n, 1))))


_states: dict = {}


def _state_for(device, stream: int) -> _DeviceState:
    """Status buffers of one (device, stream): launches on it are ordered."""
    key = (device, stream)
    state = _states.get(key)
    if state is None:
        state = _states[key] = _DeviceState(device)
    return state


_identities: dict = {}


def _identity_tensor(value, dtype, device, torch):
    """The identity as a one-element device tensor, made once (no copy per call)."""
    key = (value, dtype, device)
    t = _identities.get(key)
    if t is None:
        t = _identities[key] = torch.tensor([value], dtype=dtype, device=device)
    return t


def _launch(xs, ys, idents, inits, pair, flat, commutative, accs, B, M, K, config, torch, stream: int,
            interpreter: bool, chained: bool = False, order: int = 1, delayed: bool = False,
            inclusive: bool | None = None):
    """Decoupled look-back (or, with ``chained``, for strategy "chained" and for
    deterministic=True, the chained hand-off) over the (B, M, K) layout: one
    launch, one pass, ``order`` scans of the input (``delayed``: first delayed by
    ``order`` elements; ``inclusive`` overrides the config's)."""
    from . import kernels

    chained = chained or config.deterministic or config.strategy == "chained"

    # Order 2 of a 1-D sum: one look-back over (order 1, order 2) sums
    # (kernels._order2_1d), so the status entry holds two fields.  Not for 64-bit
    # integers, where the extra in-tile scan costs more than the look-back saves
    # (H200, 2^27, bench/order2_study.py, run f: int32 0.70 -> 0.81 of copy, float32
    # 0.68 -> 0.79, float64 0.46 -> 0.51, int64 0.58 -> 0.41).
    order2 = (order == 2 and K == 1 and len(accs) == 1 and ORDER2_ONE_LOOKBACK
              and (accs[0].itemsize < 8 or accs[0].is_floating_point or ORDER2_INT64)
              and getattr(config.monoid, "builtin", False) and config.monoid.name == "add")
    nbytes = sum(a.itemsize for a in accs)
    tune = choose_config(xs[0].device, nbytes, any(a.is_floating_point for a in accs), M, K, interpreter,
                         accs=accs, monoid=config.monoid, strategy="chained" if chained else "decoupled_lookback")
    status_accs = tuple(accs) * 2 if order2 else tuple(accs)
    words = status_words(status_accs, tune.packed)
    init_arg = inits if inits is not None else idents
    # The tile's window counts status words per look-back step (each read by an
    # atomic); an entry has ``words`` of them.  H200, run e: int64 (two words) at
    # 32 entries per step 0.78 of copy, at 16 0.90.
    window = 1 if chained else max(2, tune.window // max(words, 1))  # chained: only the predecessor matters
    common = dict(PAIR=pair, FLAT=flat, COMMUTATIVE=commutative,
                  INCLUSIVE=config.inclusive if inclusive is None else inclusive,
                  REVERSE=config.reverse, HAS_INIT=inits is not None, WORDS=words, CHAINED=chained)
    orders = dict(ORDERED=order > 1 and not order2, DELAYED=delayed)  # the 1-D and 2-D kernels' loop over orders
    columns = (1 < K <= COLUMNS_MAX and order == 1 and not delayed and len(accs) == 1
               and nbytes in COLUMNS_ITEMSIZES)
    if K == 1 or columns:
        # Columns: lanes of M * K elements in 1-D tiles (kernels.scan_cols_kernel).
        length = M * K
        block = tune.block
        single = length <= block
        if single:
            block = max(16, 1 << math.ceil(math.log2(length)))
        tiles = 1 if single else -(-length // block)
        grid_size = entries = B * tiles
        rake = raking_rows(tune, block)
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
        # A per-column step reads KB entries per window row (H200, run d: at 32 rows a
        # (2^26, 4) axis-0 scan reached 0.49 of copy, at 8 0.57; tuple size 2: 0.38 -> 0.63).
        window = max(2, window // kb)
    variant = ("order2" if order2 else ("ordered" if K == 1 else "ordered-2d") if orders["ORDERED"]
               else f"columns{K}" if columns else None)
    maxnreg = register_cap(dataclasses.replace(tune, occupancy=_occupancy(tune, variant, nbytes)))
    status_entries = entries * (1 if order2 else order)  # order 2 of a sum: one entry of two fields
    state = None
    if single:  # no look-back: no status buffers, no counter
        status = flags = counter = idents[0]
        aggs = incls = idents
        base = epoch = 0
    else:
        state = _state_for(xs[0].device, stream)
        status, flags, aggs, incls = state.begin(status_entries, torch, status_accs, words)
        base, epoch, counter = state.tiles_issued, state.epoch, state.counter
    if columns:
        kernel = kernels.scan_cols_kernel
        args = (xs, ys, idents, init_arg, status, flags, aggs, incls, counter, length, tiles, base, epoch)
        constexprs = dict(common, SINGLE_TILE=single, MULTI_LANE=B > 1, BLOCK=block, WINDOW=window, K=K, KB=kb,
                          RAKE=rake)
        compiled = _run(kernel, grid_size, tune.num_warps, stream, interpreter, args, constexprs, (length,), maxnreg)
    elif K == 1:
        kernel = kernels.scan_1d_kernel
        args = (xs, ys, idents, init_arg, status, flags, aggs, incls, counter, M, tiles, base, epoch, grid_size,
                order)
        constexprs = dict(common, **orders, SINGLE_TILE=single, MULTI_LANE=B > 1, BLOCK=block, WINDOW=window,
                          RAKE=rake, ORDER2=order2)
        compiled = _run(kernel, grid_size, tune.num_warps, stream, interpreter, args, constexprs, (M,), maxnreg)
    else:
        kernel = kernels.scan_2d_kernel
        args = (xs, ys, idents, init_arg, status, flags, aggs, incls, counter, M, K, col_blocks, tiles, base, epoch,
                grid_size, order)
        constexprs = dict(common, **orders, SINGLE_TILE=single, MULTI_LANE=B > 1, EXACT_K=K == kb, ROWS=rows,
                          KB=kb, WINDOW=window, RAKE=rake)
        compiled = _run(kernel, grid_size, tune.num_warps, stream, interpreter, args, constexprs, (M, K), maxnreg)
    replay = None
    if state is not None:
        state.tiles_issued += grid_size
        # What a replay must renew per call: the status reservation, and the tile
        # base and epoch (argument positions ``at`` and ``at + 1``).
        replay = (state, status_entries, status_accs, words, stream, 11 if K == 1 or columns else 13)
    return compiled, grid_size, kernel, args, constexprs, replay  # the tail is built only for a plan


_launch_chained = functools.partial(_launch, chained=True)

#: Which scans take :func:`_launch_blocked`: "measured" (where it measured faster, see
#: :func:`blocked_applies`), "always" (wherever it can: tests, studies) or "never".
BLOCKED_ORDERS = "measured"
#: Test switch: tiles publish aggregates only (tile 0 its prefix), so that look-backs
#: in the interpreter, which runs tiles in order, fold windows of aggregates.
BLOCKED_PREFIXES = True
_BLOCKED_ACCS = ("torch.int32", "torch.int64")


def blocked_applies(config, accs, B: int, K: int, has_init: bool) -> bool:
    """Whether :func:`_launch_blocked` takes the scan.  It can take an inclusive forward
    integer sum of order 1..8 with a tuple size (K streams) up to 32, one
    lane, no init, strategy auto or decoupled look-back.  It does where it measured
    faster than the general kernels (H100, 2^27, ratio to copy, run j call 4): every
    order >= 2 (int32 order 5: 0.92 against 0.65, int64 order 8: 0.47 / 0.28) but int32
    order 2 of one stream (0.97 / 0.99) and int64 with tuple sizes >= 8 (order 5 tuple 8:
    0.11 / 0.23); order 1 with int32 tuple sizes 2 to 16 (0.98 / 0.95 at 2, 0.94 / 0.74
    at 8, 0.71 / 0.59 at 16) and int64 tuple sizes 2 and 4 (0.96 / 0.88, 0.90 / 0.85).
    Since run n also int64 tuple size 8 (vector reads of its 16-word entries: 0.85 against
    0.83); elsewhere the general kernels (int64 tuple size 16: 0.68 against 0.79, int32 32:
    0.54 / 0.57).  Tuple sizes that are not powers of two up to 15 int32 and 7 int64 (order
    1 in flat tiles, run n call 4: int32 3 / 5 / 7 at 0.90 / 0.89 / 0.90 of copy, int64 0.94 /
    0.87 / 0.85, the general kernels 0.51 / 0.29 / 0.38 and 0.20 / 0.18 / 0.23; higher
    orders padded to the next power of two in a thread's row)."""
    monoid = config.monoid
    order = config.order
    possible = (BLOCKED_ORDERS != "never" and (order > 1 or K > 1) and order <= 8 and B == 1 and K <= 32
                and len(accs) == 1 and str(accs[0]) in _BLOCKED_ACCS
                and getattr(monoid, "builtin", False) and monoid.name == "add" and config.inclusive
                and not config.reverse and not has_init and config.strategy in ("auto", "decoupled_lookback"))
    if not possible or BLOCKED_ORDERS == "always":
        return possible
    wide = accs[0].itemsize == 8
    if K & (K - 1):  # flat or padded tiles: tuple size 5 int32 0.89 against 0.29, int64 0.87 / 0.18 (run n)
        return K < (8 if wide else 16)
    if order > 1:
        return (K > 1 or wide or order >= 3) and not (wide and K >= 8)
    return K in ((2, 4, 8) if wide else (2, 4, 8, 16))  # int64 8: run n, call 1


def blocked_tile(itemsize: int, tuple_size: int, interpreter: bool, order: int = 1,
                 strided: bool = False) -> tuple[int, int]:
    """(R elements per thread, warps) of :func:`.blocked.orders_kernel`'s tiles.  Tile-local
    (H100, run h, call 1), every R/warps tried ran at 1.00 of copy except int64 order 8
    at 8 warps (0.91-0.93); with the look-back (run h call 5, run j call 2) rows of 64
    int32 / 32 int64 elements at 4 warps won: int32 rows of 64 against 32 took order 5
    from 0.66 to 0.81 of copy, int64 rows of 32 against 16 order 2 from 0.80 to 0.94; 8
    warps lost.  High orders take rows twice as long (half the tiles, so half the
    look-backs; run k, call 1): int32 order 8 0.80 -> 0.87, int64 order 5 0.77 -> 0.85,
    order 8 0.46 -> 0.61; so do int64 rows of 8 columns or more (run l), and flat
    (``strided``) tiles' rows (run n, call 2).  The interpreter: one warp and short rows, so
    small tests span many tiles."""
    vector = 16 // itemsize
    if interpreter:
        return max(tuple_size, vector), 1
    rows = BLOCKED_ROW_BYTES // itemsize
    if strided:  # run n, call 2: int32 tuple size 5 0.94 at 128 against 0.89 at 64, int64 0.87 at 64 / 0.69 at 32
        return rows * 2, 4
    if ((tuple_size <= 2 and order >= BLOCKED_LONG_ROWS_ORDER[itemsize])
            or tuple_size >= BLOCKED_LONG_ROWS_COLUMNS.get(itemsize, 64)):
        rows *= 2
    return max(tuple_size, rows), 4


#: A thread's row in bytes, and the lowest order at which blocked_tile doubles it, by item
#: size (run k, call 2: int32 order 3 0.97 at 64 elements against 0.95 at 128, order 5 0.93
#: either way, order 5 tuple size 2 0.91 against 0.83; int64 order 3 0.93 either way, order
#: 2 0.97 against 0.96).
BLOCKED_ROW_BYTES = 256
BLOCKED_LONG_ROWS_ORDER = {4: 5, 8: 3}
#: The fewest (padded) columns from which blocked_tile doubles a row, by item size (the
#: lost run l, numbers from its code: int64 order 1 rows of 64 against 32, tuple size 8
#: 0.85 / 0.75; int32 tuple sizes 8 and 16 gained nothing; run n call 1: tuple size 8 0.85).
BLOCKED_LONG_ROWS_COLUMNS = {8: 8}


def blocked_block(itemsize: int, tuple_size: int, interpreter: bool, tile: tuple | None = None,
                  order: int = 1, strided: bool | None = None) -> tuple[int, int, int, int]:
    """(elements per tile, columns, R, warps) of :func:`.blocked.orders_kernel` (``tile`` =
    (R, warps) instead of :func:`blocked_tile`'s): a tuple size that is not a power of two
    is padded to ``columns`` (the next one), and a tile holds whole tuples, 32 x warps x R
    / columns of them; a flat tile (``strided``, :func:`blocked_strided`'s choice if None)
    32 x warps x R elements."""
    columns = 1 << (tuple_size - 1).bit_length()
    strided = blocked_strided(order, tuple_size) if strided is None else strided
    rows, warps = tile or blocked_tile(itemsize, columns, interpreter, order, strided)
    if strided:
        return 32 * warps * rows, columns, rows, warps
    return 32 * warps * rows // columns * tuple_size, columns, rows, warps


#: Order-1 tuple sizes that are not powers of two take flat tiles (see blocked_strided);
#: False: padded tiles (studies).
BLOCKED_STRIDED = True


def blocked_strided(order: int, tuple_size: int) -> bool:
    """Whether :func:`.blocked.orders_kernel` takes a flat tile of rows of R consecutive
    elements, each element's column told by its position (``STRIDED``), instead of padding
    each tuple to a power of two: order 1 with a tuple size that is not a power of two
    (run n, call 2, 2^27: int32 tuple sizes 5 / 3 / 7 0.94 / 0.96 / 0.95 of copy against
    0.70 / 0.80 / 0.77 padded, int64 0.87 / 0.95 / 0.86 against 0.61 / 0.78 / 0.71).  Higher
    orders keep padded rows (a flat row's relative columns would need a shift per order)."""
    return BLOCKED_STRIDED and order == 1 and bool(tuple_size & (tuple_size - 1))


def blocked_register_cap(itemsize: int, order: int, tuple_size: int) -> int | None:
    """``maxnreg`` of :func:`.blocked.orders_kernel`.  Since the tile goes to shared memory
    by asynchronous copies (no registers), caps change little (run k, call 1: int32 order 8
    0.80 uncapped, 0.82 at 128; order 5 0.92 either way) but for padded int32 tuples
    (tuple size 5: 0.70 at 128 against 0.66, 3: 0.79 / 0.76) and flat tiles (168: three
    tiles per SM without spills, 139-167 registers; run n, call 2)."""
    if blocked_strided(order, tuple_size):  # flat tiles: 3 per SM without spills (141-168 registers)
        return 168
    if itemsize == 4 and (tuple_size & (tuple_size - 1) or tuple_size == 16):  # 16: 0.74 against 0.71
        return 128
    return None


def blocked_chunks(itemsize: int, rows: int) -> int:
    """Chunks :func:`.blocked.orders_kernel` scans a thread's row of ``rows`` elements in:
    two for the long rows (run k, call 2: int64 order 2 tuple size 2 0.92 against 0.88 in
    one, order 8 0.61 either way, int32 order 8 0.87 either way)."""
    return 2 if rows * itemsize > BLOCKED_ROW_BYTES else 1


#: Look-back window: 32 entries per warp, spread over the tile's warps (run j, calls 1-2:
#: 128 entries over 4 warps against 32 in one warp took int32 order 5 from 0.74 to 0.81 of
#: copy, int64 order 2 from 0.87 to 0.93, int64 order 8 from 0.31 to 0.42).
BLOCKED_WINDOW_PER_WARP = 32


def blocked_reader(itemsize: int, order: int, tuple_size: int) -> bool:
    """Whether :func:`.blocked._lookback` reads entries' words as 16-byte vectors (VECTORS;
    run n, call 2: int64 order 5 0.87 against 0.81 one word at a time, tuple size 8 0.85 /
    0.76, int32 orders alike), but for int32 padded tuples, whose vector reads (of the
    padding columns' words too) spill under their register cap."""
    return not (itemsize == 4 and tuple_size & (tuple_size - 1) and not blocked_strided(order, tuple_size))


def _launch_blocked(x, y, acc, length: int, order: int, tuple_size: int, torch, stream: int, interpreter: bool,
                    window: int | None = None, lookback: bool = True, tile: tuple | None = None,
                    window_warps: int = 1, maxnreg: int | None = None, chunks: int | None = None,
                    vectors: bool | None = None, strided: bool | None = None):
    """One launch of :func:`.blocked.orders_kernel` over ``length`` elements (studies:
    ``window`` entries spread over ``window_warps`` warps and a register cap ``maxnreg``
    instead of the defaults, ``tile`` = (rows, warps), and ``lookback=False`` for wrong
    results without the look-back; ``vectors``: see :func:`blocked_reader`;
    ``strided``: see :func:`blocked_strided`)."""
    from . import blocked

    itemsize = acc.itemsize
    strided = blocked_strided(order, tuple_size) if strided is None else strided
    block, columns, rows, warps = blocked_block(itemsize, tuple_size, interpreter, tile, order, strided)
    tiles = -(-length // block)
    words = order * tuple_size * (itemsize // 4)  # status words per entry (no padding columns)
    spacing = 1 << (words - 1).bit_length()  # entries lie a power of two apart (aligned vector reads)
    if interpreter:
        window, window_warps, maxnreg = 2, 1, None
    elif window is None:
        window, window_warps = BLOCKED_WINDOW_PER_WARP * warps, warps
        maxnreg = blocked_register_cap(itemsize, order, tuple_size)
    state = _state_for(x.device, stream)
    # One entry more: a read of an entry's last order runs up to S x WPV words past its start.
    status, _, _, _ = state.begin(tiles + 1, torch, (acc,), spacing)
    args = (x, y, status, state.counter, length, tiles, state.tiles_issued, state.epoch, int(lookback))
    constexprs = dict(ACC=blocked.gl.int32 if itemsize == 4 else blocked.gl.int64, Q=order, S=columns, R=rows,
                      V=16 // itemsize, TS=tuple_size, WARPS=warps, WINDOW=window, WIN_WARPS=min(window_warps, warps),
                      WPV=itemsize // 4, CH=1 if strided else blocked_chunks(itemsize, rows) if chunks is None else chunks,
                      STRIDED=strided, PREFIXES=BLOCKED_PREFIXES,
                      VECTORS=blocked_reader(itemsize, order, tuple_size) if vectors is None else vectors)
    _run(blocked.orders_kernel, tiles, warps, stream, interpreter, args, constexprs, (length, tiles), maxnreg)
    if tiles > 1:  # a single tile takes no ticket from the counter
        state.tiles_issued += tiles
    return None, tiles, blocked.orders_kernel, args, constexprs, None

#: Largest K (interleaved streams: tuple size, or the extent after the scanned
#: axis) scanned as masked columns of 1-D tiles (kernels.scan_cols_kernel), for one
#: 4-byte field; above it, for other types, or with order > 1, the 2-D kernel.
#: Measured on the H200 at 2^27 (bench/columns_study.py, run f), columns vs 2-D,
#: ratio to copy: int32 K = 2 0.80 vs 0.66, 3 0.31 vs 0.23, 4 0.58 vs 0.59, 5 0.21
#: vs 0.18, 7 0.16 vs 0.24, 8 0.33 vs 0.55; int64 worse at every K (0.03-0.55 vs
#: 0.13-0.67).  The study sets it to 1 to measure the 2-D kernel on the same cases.
COLUMNS_MAX = 3
COLUMNS_ITEMSIZES = (4,)

#: Order 2 of a 1-D sum with one look-back (kernels._order2_1d); False: one
#: look-back per order, as every other order.  64-bit integers only with
#: ORDER2_INT64 (slower, see _launch).  bench/order2_study.py measures both paths.
ORDER2_ONE_LOOKBACK = True
ORDER2_INT64 = False

#: Resident tiles per SM (TileConfig.occupancy) for the kernel variants that the
#: tuned table does not measure (it tunes the plain 1-D and 2-D kernels, whose
#: tile these variants borrow), by (variant, accumulator bytes, 32-bit words of
#: tile data per thread): measured on the H100 at those tiles, bench/occupancy_study.py,
#: run g.  ptxas gives the order-2 tile 168 registers (3 tiles of 4 warps per SM);
#: capped for 4 tiles, int32 order 2 went from 0.94 to 0.98 of copy and float32 from
#: 0.93 to 0.96; int32 order 5 (the loop over orders) 0.56 -> 0.66 at 5 tiles;
#: masked columns K = 3 (196 registers, 2 tiles) 0.43 -> 0.51 at 3.  Elsewhere
#: (other tiles, int64 order 5: 0.41 -> 0.38 at 5) the compiler's choice stands.
VARIANT_OCCUPANCY = {("order2", 4, 64): 4, ("ordered", 4, 64): 5, ("columns3", 4, 32): 3}


def _occupancy(tune, variant: str | None, nbytes: int) -> int:
    """Resident tiles per SM to cap registers for: the tile's own (the table's, or a
    forced tile's for any kernel) for the plain kernels, else :data:`VARIANT_OCCUPANCY`."""
    if variant is None or planner.overridden():
        return tune.occupancy
    words = tune.block * nbytes // 4 // (32 * tune.num_warps)
    return VARIANT_OCCUPANCY.get((variant, nbytes, words), 0)


#: Most tagged words per status entry (kernels.WORDS): wider values (four 64-bit
#: fields and up) use a flag and value arrays, so that a look-back step does not
#: issue a window of atomics per word.
MAX_STATUS_WORDS = 4


def status_words(accs, packed: bool | None) -> int:
    """Tagged 64-bit words per status entry for fields ``accs`` (torch dtypes): one
    per 32 bits of each field; 0 for the flag protocol (``packed`` False, or more
    than :data:`MAX_STATUS_WORDS` words with ``packed`` None)."""
    words = sum(2 if a.itemsize == 8 else 1 for a in accs)
    if packed is False or (packed is None and words > MAX_STATUS_WORDS):
        return 0
    return words

_compiled: dict = {}


def _run(kernel, grid_size: int, num_warps: int, stream: int, interpreter: bool, args: tuple, constexprs: dict,
         specialized_ints: tuple, maxnreg: int | None = None):
    """Launch ``kernel``; after the first launch of a variant, skip Triton's
    argument binding and go straight to the compiled kernel's launcher.

    The cache key holds everything Triton specializes on: tensor dtypes and
    16-byte alignment, the specialized integers' divisibility by 16 and
    equality with 1, the constexprs, the warps and the register cap
    (``maxnreg``, :func:`.tiles.register_cap`; the interpreter has no registers).
    """
    if interpreter:
        kernel[(grid_size,)](*args, num_warps=num_warps, **constexprs)
        return None
    import torch
    from triton import knobs

    tensors = [t for a in args for t in (a if isinstance(a, tuple) else (a,)) if isinstance(t, torch.Tensor)]
    key = (kernel, num_warps, maxnreg, tuple(constexprs.items()),
           tuple((t.dtype, t.data_ptr() % 16 == 0) for t in tensors),
           tuple((v % 16 == 0, v == 1) for v in specialized_ints))
    compiled = _compiled.get(key)
    if compiled is None:
        options = {} if maxnreg is None else {"maxnreg": maxnreg}
        compiled = _compiled[key] = kernel[(grid_size,)](*args, num_warps=num_warps, **options, **constexprs)
        return compiled
    full = args + _constexpr_tail(kernel, len(args), constexprs)
    if _hooks_active(knobs.runtime):
        hook = knobs.runtime.launch_enter_hook
        metadata = compiled.launch_metadata((grid_size, 1, 1), stream, *full)
        compiled.run(grid_size, 1, 1, stream, compiled.function, compiled.packed_metadata, metadata,
                     hook, knobs.runtime.launch_exit_hook, *full)
    else:
        compiled.run(grid_size, 1, 1, stream, compiled.function, compiled.packed_metadata, None, None, None, *full)
    return compiled


def _hooks_active(runtime) -> bool:
    """Whether a profiler registered launch hooks (Triton 3.6 keeps an empty
    ``HookChain`` there by default; calling it and building its metadata costs
    microseconds per launch)."""
    for hook in (runtime.launch_enter_hook, runtime.launch_exit_hook):
        if hook is not None and getattr(hook, "calls", True):
            return True
    return False


def _constexpr_tail(kernel, nargs: int, constexprs: dict) -> tuple:
    return tuple(constexprs[name] for name in kernel.arg_names[nargs:])


def current_stream(device) -> int:
    """The raw CUDA stream of ``device`` (torch's public accessor costs ~10 us a call)."""
    import torch

    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    if raw is not None:
        return raw(device.index if device.index is not None else torch.cuda.current_device())
    return torch.cuda.current_stream(device).cuda_stream


class FastScan:
    """Replays a one-launch GPU scan on new tensors of the same signature (cuda.compute's
    reusable-object idea taken down to the launch): the kernel, grid and every
    argument but the input and output pointers are fixed; multi-tile scans renew
    their status reservation, tile base and epoch.  Returns None where the replay
    does not apply (non-contiguous, misaligned or aliased tensors, another stream,
    launch hooks), and the caller takes the full path."""

    __slots__ = ("compiled", "grid", "shape", "dtype", "device", "index", "args", "tail", "rest", "replay",
                 "torch", "knobs", "generation")

    def __init__(self, compiled, grid: int, shape, dtype, device, args: tuple, tail: tuple, replay):
        import torch
        from triton import knobs

        self.compiled, self.grid, self.shape, self.dtype, self.device = compiled, grid, shape, dtype, device
        self.index = device.index if device.index is not None else torch.cuda.current_device()
        self.args, self.tail, self.replay = args, tail, replay
        self.rest = args[2:] + tail
        self.torch, self.knobs = torch, knobs
        self.generation = planner.generation

    def expired(self) -> bool:
        """Whether the tile this replay launches may no longer be the one a scan gets
        (an override or a new table since it was planned): the caller plans again
        instead of calling the replay."""
        return self.generation != planner.generation

    def __call__(self, x, out):
        if not x.is_contiguous() or x.data_ptr() % 16:
            return None
        if out is None:
            y = self.torch.empty(self.shape, dtype=self.dtype, device=self.device)
        elif out.is_contiguous() and not out.data_ptr() % 16 and out.data_ptr() != x.data_ptr():
            y = out
        else:
            return None
        if _hooks_active(self.knobs.runtime):
            return None
        c = self.compiled
        stream = self.torch._C._cuda_getCurrentRawStream(self.index)
        if self.replay is None:
            c.run(self.grid, 1, 1, stream, c.function, c.packed_metadata, None, None, None, (x,), (y,), *self.rest)
            return y
        state, entries, accs, words, recorded_stream, at = self.replay
        if stream != recorded_stream:  # status buffers belong to one stream
            return None
        status, flags, aggs, incls = state.begin(entries, self.torch, accs, words)
        a = self.args
        c.run(self.grid, 1, 1, stream, c.function, c.packed_metadata, None, None, None,
              (x,), (y,), a[2], a[3], status, flags, aggs, incls, *a[8:at], state.tiles_issued, state.epoch,
              *a[at + 2:], *self.tail)
        state.tiles_issued += self.grid
        return y
