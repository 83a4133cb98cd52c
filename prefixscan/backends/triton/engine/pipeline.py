"""The engine's pipeline: tile ids in start order, and the carry a tile receives.

Every single-pass primitive on the GPU runs the same four steps per tile (Merrill &
Garland 2016, "Single-pass Parallel Prefix Scan with Decoupled Look-back",
section 4):

1. take a tile id from an atomic counter (:func:`tile_id`), so tiles start in id
   order and none waits on one that has not started (forward progress without
   co-scheduling guarantees);
2. load the tile and reduce it to the monoid value it carries to its successors:
   its aggregate (the primitive's part: values, a count, a segment's tail, a
   carry vector);
3. publish the aggregate, look back for the exclusive prefix, publish the
   inclusive prefix (:func:`carry`, :func:`carry_columns`; the status words and
   the look-back are :mod:`.protocol`'s);
4. apply the prefix and store (the primitive's part again: a scan's values, kept
   elements scattered as one run, a segment-aware scan, ...).

A tile whose aggregate does not depend on its predecessors (a segmented scan's
tile holding a segment head: nothing before it reaches past its last head) is
*closed*: it publishes its aggregate as an inclusive prefix at once, and looks
back only if it needs the carry for elements before its first head.
"""

from __future__ import annotations

import triton
import triton.language as tl

from .protocol import FLAG_AGGREGATE, FLAG_PREFIX, lookback, lookback_columns, publish

__all__ = ["tile_id", "carry", "carry_columns"]


@triton.jit
def tile_id(counter_ptr, tile_base, tiles_per_lane, length, BLOCK: tl.constexpr, SINGLE_TILE: tl.constexpr):
    """``(tile id, whether the tile is full)`` of this program, for tiles of BLOCK elements
    over lanes of ``length``.  Ids come from the counter (``tile_base``: where this
    launch's start); with one tile per lane (``SINGLE_TILE``), the program id.

    Full tiles (all but a lane's last) take a copy of the tile code without masks:
    masked 64-bit loads next to the carry predicates of 64-bit adds made ptxas issue a
    thread's loads in many small batches, each waiting on memory (int64 on the H100)."""
    if SINGLE_TILE:
        vid = tl.program_id(0).to(tl.int64)  # one program per lane, no status
        full = False
    else:
        vid = tl.atomic_add(counter_ptr, 1, sem="relaxed") - tile_base  # an id, nothing to order
        full = (vid % tiles_per_lane + 1) * BLOCK <= length
    return vid, full


@triton.jit
def carry(status, entry, lane_base, tile, agg, seed, closed, ident, epoch, MONOID: tl.constexpr,
          PROTOCOL: tl.constexpr, NEEDED=True):
    """The exclusive prefix of tile ``tile`` of a lane (``seed`` for the lane's first tile)
    whose aggregate is ``agg``, publishing at status entry ``entry`` (the lane's tile t
    is entry ``lane_base + t``).

    An open tile publishes ``agg`` (A; not with ``CHAINED``), looks back and publishes
    ``prefix . agg`` (P).  A ``closed`` tile publishes ``agg`` as its inclusive prefix at
    once and looks back only when ``NEEDED`` (else its prefix is ``seed``).  ``closed``
    may be a constant False (plain scans: compiled away)."""
    if closed:
        publish(status, entry, agg, FLAG_PREFIX, epoch, PROTOCOL[0])
        prefix = seed
        if NEEDED:
            if tile > 0:
                prefix = lookback(status, lane_base, tile, ident, epoch, MONOID, PROTOCOL)
    else:
        if tile == 0:
            prefix = seed
        else:
            if not PROTOCOL[2]:
                publish(status, entry, agg, FLAG_AGGREGATE, epoch, PROTOCOL[0])
            prefix = lookback(status, lane_base, tile, ident, epoch, MONOID, PROTOCOL)
        publish(status, entry, MONOID[0](prefix, agg), FLAG_PREFIX, epoch, PROTOCOL[0])
    return prefix


@triton.jit
def carry_columns(status, entry, lane_base, tile, agg, seed, ident, epoch, MONOID: tl.constexpr,
                  PROTOCOL: tl.constexpr, KB: tl.constexpr):
    """:func:`carry` per column of a [rows, KB] tile: ``agg`` and ``seed`` tuples of [KB]
    tensors, ``entry`` the KB entries of this tile (column c of the lane's tile t is
    entry ``(lane_base + t) * KB + c``)."""
    if tile == 0:
        prefix = seed
    else:
        if not PROTOCOL[2]:
            publish(status, entry, agg, FLAG_AGGREGATE, epoch, PROTOCOL[0])
        prefix = lookback_columns(status, lane_base, tile, ident, epoch, MONOID, PROTOCOL, KB)
    publish(status, entry, MONOID[0](prefix, agg), FLAG_PREFIX, epoch, PROTOCOL[0])
    return prefix
