"""Which scans the orders kernel (:mod:`.orders`) takes, and its tile.

The orders kernel does integer sums of order q and tuple size s in one pass with
one look-back over the carry vector (SAM, Maleki, Yang & Burtscher, PLDI 2016,
section 2.4, for the orders; Merrill & Garland 2016, section 4, for the
look-back).  The rules below were measured, not modelled: ratios are to a copy
of the same bytes on an H100 at 2^27 elements unless said otherwise
(docs/design/orders.md, docs/design/tuple-sizes.md).  Nothing here imports
torch or triton.
"""

from __future__ import annotations

from ..planning.policy import current_policy

__all__ = ["blocked_applies", "blocked_tile", "blocked_block", "blocked_strided", "blocked_register_cap",
           "blocked_chunks", "blocked_reader", "BLOCKED_ROW_BYTES", "BLOCKED_LONG_ROWS_ORDER",
           "BLOCKED_LONG_ROWS_COLUMNS", "BLOCKED_WINDOW_PER_WARP"]

_BLOCKED_ACCS = ("torch.int32", "torch.int64")


def blocked_applies(config, accs, B: int, K: int, has_init: bool, x_itemsize: int | None = None) -> bool:
    """Whether the orders kernel takes the scan.  It can take an inclusive forward
    integer sum of order 1..8 with a tuple size (K streams) up to 32, one lane, no
    init, inputs of ``x_itemsize`` bytes (default: the accumulator's) that its tile
    copies to shared memory in pieces of 4 bytes at least (cp.async: 1-byte inputs
    of a 64-bit sum, two to a 16-byte accumulator vector, do not compile),
    strategy auto or decoupled look-back (``RoutingPolicy.blocked_orders``
    "always": wherever it can; "never": nowhere).  By default it does where it
    measured faster than the general kernels (ratio to copy, orders kernel /
    general kernels): every order >= 2 (int32 order 5: 0.92 against 0.65, int64
    order 8: 0.47 / 0.28) but int32 order 2 of one stream (0.97 / 0.99) and int64
    with tuple sizes >= 8 (order 5 tuple 8: 0.11 / 0.23); order 1 with int32 tuple
    sizes 2 to 16 (0.98 / 0.95 at 2, 0.94 / 0.74 at 8, 0.71 / 0.59 at 16) and int64
    tuple sizes 2, 4 and 8 (0.96 / 0.88, 0.90 / 0.85, and with vector reads of its
    16-word entries 0.85 / 0.83); elsewhere the general kernels (int64 tuple size
    16: 0.68 against 0.79, int32 32: 0.54 / 0.57).  Tuple sizes that are not powers
    of two up to 15 int32 and 7 int64 (order 1 in flat tiles: int32 3 / 5 / 7 at
    0.90 / 0.89 / 0.90 of copy, int64 0.94 / 0.87 / 0.85, the general kernels 0.51 /
    0.29 / 0.38 and 0.20 / 0.18 / 0.23; higher orders padded to the next power of
    two in a thread's row)."""
    monoid = config.monoid
    order = config.order
    choice = current_policy().blocked_orders
    possible = (choice != "never" and (order > 1 or K > 1) and order <= 8 and B == 1 and K <= 32
                and len(accs) == 1 and str(accs[0]) in _BLOCKED_ACCS
                and getattr(monoid, "builtin", False) and monoid.name == "add" and config.inclusive
                and not config.reverse and not has_init and config.strategy in ("auto", "decoupled_lookback")
                and (x_itemsize or accs[0].itemsize) * (16 // accs[0].itemsize) >= 4)
    if not possible or choice == "always":
        return possible
    wide = accs[0].itemsize == 8
    if K & (K - 1):  # flat or padded tiles: tuple size 5 int32 0.89 against 0.29, int64 0.87 / 0.18
        return K < (8 if wide else 16)
    if order > 1:
        return (K > 1 or wide or order >= 3) and not (wide and K >= 8)
    return K in ((2, 4, 8) if wide else (2, 4, 8, 16))


def blocked_tile(itemsize: int, tuple_size: int, interpreter: bool, order: int = 1,
                 strided: bool = False) -> tuple[int, int]:
    """(R elements per thread, warps) of the orders kernel's tiles.  Tile-local, every
    R/warps tried ran at 1.00 of copy except int64 order 8 at 8 warps (0.91-0.93); with
    the look-back rows of 64 int32 / 32 int64 elements at 4 warps won: int32 rows of 64
    against 32 took order 5 from 0.66 to 0.81 of copy, int64 rows of 32 against 16 order
    2 from 0.80 to 0.94; 8 warps lost.  High orders take rows twice as long (half the
    tiles, so half the look-backs): int32 order 8 0.80 -> 0.87, int64 order 5 0.77 ->
    0.85, order 8 0.46 -> 0.61; so do int64 rows of 8 columns or more, and flat
    (``strided``) tiles' rows.  The interpreter: one warp and short rows, so small tests
    span many tiles."""
    vector = 16 // itemsize
    if interpreter:
        return max(tuple_size, vector), 1
    rows = BLOCKED_ROW_BYTES // itemsize
    if strided:  # int32 tuple size 5 0.94 at 128 against 0.89 at 64, int64 0.87 at 64 / 0.69 at 32
        return rows * 2, 4
    if ((tuple_size <= 2 and order >= BLOCKED_LONG_ROWS_ORDER[itemsize])
            or tuple_size >= BLOCKED_LONG_ROWS_COLUMNS.get(itemsize, 64)):
        rows *= 2
    return max(tuple_size, rows), 4


#: A thread's row in bytes, and the lowest order at which blocked_tile doubles it, by item
#: size (int32 order 3 0.97 at 64 elements against 0.95 at 128, order 5 0.93 either way,
#: order 5 tuple size 2 0.91 against 0.83; int64 order 3 0.93 either way, order 2 0.97
#: against 0.96).
BLOCKED_ROW_BYTES = 256
BLOCKED_LONG_ROWS_ORDER = {4: 5, 8: 3}
#: The fewest (padded) columns from which blocked_tile doubles a row, by item size (int64
#: order 1 rows of 64 against 32, tuple size 8 0.85 / 0.75; int32 tuple sizes 8 and 16
#: gained nothing).
BLOCKED_LONG_ROWS_COLUMNS = {8: 8}


def blocked_block(itemsize: int, tuple_size: int, interpreter: bool, tile: tuple | None = None,
                  order: int = 1, strided: bool | None = None) -> tuple[int, int, int, int]:
    """(elements per tile, columns, R, warps) of the orders kernel (``tile`` = (R,
    warps) instead of :func:`blocked_tile`'s): a tuple size that is not a power of two
    is padded to ``columns`` (the next one), and a tile holds whole tuples, 32 x warps x
    R / columns of them; a flat tile (``strided``, :func:`blocked_strided`'s choice if
    None) 32 x warps x R elements."""
    columns = 1 << (tuple_size - 1).bit_length()
    strided = blocked_strided(order, tuple_size) if strided is None else strided
    rows, warps = tile or blocked_tile(itemsize, columns, interpreter, order, strided)
    if strided:
        return 32 * warps * rows, columns, rows, warps
    return 32 * warps * rows // columns * tuple_size, columns, rows, warps


def blocked_strided(order: int, tuple_size: int) -> bool:
    """Whether the orders kernel takes a flat tile of rows of R consecutive elements,
    each element's column told by its position (``STRIDED``), instead of padding each
    tuple to a power of two: order 1 with a tuple size that is not a power of two
    (int32 tuple sizes 5 / 3 / 7 0.94 / 0.96 / 0.95 of copy against 0.70 / 0.80 / 0.77
    padded, int64 0.87 / 0.95 / 0.86 against 0.61 / 0.78 / 0.71), unless
    ``RoutingPolicy.blocked_strided`` is off.  Higher orders keep padded rows (a flat
    row's relative columns would need a shift per order)."""
    return current_policy().blocked_strided and order == 1 and bool(tuple_size & (tuple_size - 1))


def blocked_register_cap(itemsize: int, order: int, tuple_size: int) -> int | None:
    """``maxnreg`` of the orders kernel.  Since the tile goes to shared memory by
    asynchronous copies (no registers), caps change little (int32 order 8 0.80
    uncapped, 0.82 at 128; order 5 0.92 either way) but for padded int32 tuples (tuple
    size 5: 0.70 at 128 against 0.66, 3: 0.79 / 0.76) and flat tiles (168: three tiles
    per SM without spills, 139-167 registers)."""
    if blocked_strided(order, tuple_size):  # flat tiles: 3 per SM without spills (141-168 registers)
        return 168
    if itemsize == 4 and (tuple_size & (tuple_size - 1) or tuple_size == 16):  # 16: 0.74 against 0.71
        return 128
    return None


def blocked_chunks(itemsize: int, rows: int) -> int:
    """Chunks the orders kernel scans a thread's row of ``rows`` elements in: two for
    the long rows (int64 order 2 tuple size 2 0.92 against 0.88 in one, order 8 0.61
    either way, int32 order 8 0.87 either way)."""
    return 2 if rows * itemsize > BLOCKED_ROW_BYTES else 1


#: Look-back window: 32 entries per warp, spread over the tile's warps (128 entries over
#: 4 warps against 32 in one warp took int32 order 5 from 0.74 to 0.81 of copy, int64
#: order 2 from 0.87 to 0.93, int64 order 8 from 0.31 to 0.42).
BLOCKED_WINDOW_PER_WARP = 32


def blocked_reader(itemsize: int, order: int, tuple_size: int) -> bool:
    """Whether the orders kernel's look-back reads entries' words as 16-byte vectors
    (``VECTORS``; int64 order 5 0.87 against 0.81 one word at a time, tuple size 8 0.85
    / 0.76, int32 orders alike), but for int32 padded tuples, whose vector reads (of the
    padding columns' words too) spill under their register cap."""
    return not (itemsize == 4 and tuple_size & (tuple_size - 1) and not blocked_strided(order, tuple_size))
