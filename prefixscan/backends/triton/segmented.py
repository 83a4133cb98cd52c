"""Segmented scans in one pass: the segment heads ride on the decoupled look-back's states.

A segmented scan is an ordinary scan of the operator lifted to (head flag,
value) pairs, ``(fa, a) ⊕' (fb, b) = (fa | fb, b if fb else a ⊕ b)`` (Schwartz
1980; Blelloch 1990, "Prefix sums and their applications", section 1.5), and
the decoupled look-back (Merrill & Garland 2016, section 4) runs any monoid.
The flag of a tile's lifted aggregate is not stored beside its value: it *is*
the status word's state.  A tile holding a segment head has an inclusive
prefix that no predecessor changes (the values after its last head), so it
publishes that at once as an inclusive prefix (P, "closed"), before any
look-back; a tile without a head publishes its aggregate (A) and looks back
as usual.  A look-back therefore stops at the nearest tile with a head, every
entry it folds is head-free, and the fold is the plain operator: the status
words, the window and the fold of :mod:`.blocks` are reused unchanged
(:func:`.blocks._publish`, :func:`.blocks._lookback_1d`).  A tile that starts
with a head does not look back at all; one with a head further in looks back
only for the carry of the elements before it, after it has published.

Per tile (``BLOCK`` elements, scan order; reverse scans mirror the indices):

1. load x and the head flags in scan order: ``flags`` read as bytes (reverse:
   the flag of the element after, since a reverse segment starts at its end);
   ``keys`` compared with the neighbour in scan order; ``offsets`` expanded
   per tile, never as n flags: a k-ary search (``PROBES`` probes per step, about
   four dependent steps for 2^27 offsets) finds the offsets inside the tile's
   range, they are marked as bytes in the tile's own part of the output
   (which the tile overwrites with its results afterwards; a barrier orders the
   marks and their reads within the program), and read back as flags; or, with
   :class:`SegmentedTile` ``offsets="search"``, each element binary-searches the
   tile's window of offsets in registers (no marks, no barriers);
2. ``init`` seeds every segment: folded into each head's value (the left
   operand, or the right one in reverse: the seed sits after a reverse
   segment's last element, as in :func:`prefixscan.scan`);
3. the aggregate is the reduction from the tile's last head to its end, its
   state P when there is a head, else A; publish, and look back when the tile
   does not start with a head;
4. one ``tl.associative_scan`` of (head, value) with the lifted operator; the
   elements before the tile's first head take the carry on their left.  For
   exclusive scans the scanned values are shifted by one in scan order (read
   again from memory, as :mod:`.lookback` does) and a head takes the seed.

Traffic: x read once, y written once, plus the segment description (flags or
keys: n more elements; offsets: the offsets and one byte per element marked and
read back in L2 within the tile).  :func:`run_segmented` is the host side.
"""

from __future__ import annotations

import contextlib
import contextvars
import linecache
import math
from dataclasses import dataclass

import triton
import triton.language as tl

from ..._arrays import as_torch
from ..._environment import interpreter_mode
from ...caches import register_cache
from . import planner, runtime
from .blocks import (FLAG_AGGREGATE, FLAG_PREFIX, _fn, _load_at, _lookback_1d, _ordered_reduce, _publish, _scalars,
                     _store_at, _tile_id, _where, _within)
from .combine import combine_functions
from .job import SeedLayout
from .planner import choose_config
from .runtime import Launch, current_stream
from .status import identity_tensor, state_for, status_words

__all__ = ["run_segmented", "segmented_kernel", "segmented_combine", "SEGMENT_KINDS", "SegmentedTile", "DEFAULT_TILE",
           "forced_tile"]

#: The ``KIND`` constexpr of each segment description.
SEGMENT_KINDS = {"flags": 0, "offsets": 1, "keys": 2}
#: Probes per step of the search for a tile's offsets.
OFFSET_PROBES = 128
#: Elements per thread in a tile, for fields of up to 4 bytes (wider ones: as many
#: 4-byte words); the scan's tile is capped to it unless a tile is forced.  The lifted scan keeps a head flag, the seeded values and the
#: scanned pairs live per element: ptxas gave the int32 tile of 8192 elements on 4
#: warps (64 per thread) 255 registers, 4096 (32) 205, 2048 (16) 119 (sm_90,
#: flags, inclusive), i.e. 2, 2 and 4 resident tiles per SM to hide the look-back.
ELEMENTS_PER_THREAD = 16
#: How offsets become heads: "marks" (bytes marked in the tile's output and read
#: back across barriers) or "search" (a binary search per element, in registers).
OFFSET_MODES = ("marks", "search")


@dataclass(frozen=True)
class SegmentedTile:
    """A variant of the segmented kernel.  ``block`` / ``num_warps``: the tile (None:
    the planner's, its block capped at ``elements_per_thread`` per thread unless a
    tile is forced with :func:`prefixscan.tuning.override`); ``offsets``: one of
    :data:`OFFSET_MODES`; ``flag_runs``: flags of forward scans read in runs of this
    many bytes per thread (0: as the compiler vectorizes them, 16; 4 keeps x's
    layout for int32 and float32 and spares the results a conversion through shared
    memory); ``maxnreg``: a register cap for ptxas (None: its choice)."""

    block: int | None = None
    num_warps: int | None = None
    offsets: str = "marks"
    elements_per_thread: int = ELEMENTS_PER_THREAD
    flag_runs: int = 0
    maxnreg: int | None = None

    def __post_init__(self):
        if self.offsets not in OFFSET_MODES:
            raise ValueError(f"offsets must be one of {OFFSET_MODES}, got {self.offsets!r}")
        if self.flag_runs not in (0, 1, 2, 4, 8, 16):
            raise ValueError(f"flag_runs must be 0 or a power of two up to 16, got {self.flag_runs}")
        if self.block is not None and (self.block < 16 or self.block & (self.block - 1)):
            raise ValueError(f"block must be a power of two >= 16, got {self.block}")

    def __str__(self) -> str:
        tile = f"{self.block or 'auto'}x{self.num_warps or 'auto'}"
        cap = "" if self.block or self.elements_per_thread == ELEMENTS_PER_THREAD else \
            f" {self.elements_per_thread}/thread"
        runs = f" flag runs {self.flag_runs}" if self.flag_runs else ""
        regs = f" maxnreg {self.maxnreg}" if self.maxnreg else ""
        return f"{self.offsets} {tile}{cap}{runs}{regs}"


#: The planner's choice (the variant measured first on an H100).
DEFAULT_TILE = SegmentedTile()
_forced_tile: contextvars.ContextVar = contextvars.ContextVar("prefixscan_segmented_tile", default=None)


@contextlib.contextmanager
def forced_tile(tile: SegmentedTile):
    """Run the segmented scans inside the block with the kernel variant ``tile``
    (benchmarks and tests compare variants through the public function)."""
    token = _forced_tile.set(tile)
    try:
        yield tile
    finally:
        _forced_tile.reset(token)


# ---------------------------------------------------------------------------
# The lifted operator as a Triton function (tl.associative_scan's flat form).

_lifted: dict = {}  # (PAIR, fields) -> the lifted FLAT
register_cache("prefixscan.backends.triton.segmented.lifted", _lifted.clear)


def segmented_combine(pair, nfields: int):
    """``FLAT(fa, a0, .., fb, b0, ..)`` of the lifted operator over ``pair`` (a
    :func:`.combine.combine_functions` PAIR): ``(fa | fb, b if fb else a ⊕ b)``.
    Generated once per (pair, fields) and registered with ``linecache`` so that
    Triton reads its source, as :mod:`.combine` does for the monoid's own."""
    key = (pair, nfields)
    fn = _lifted.get(key)
    if fn is None:
        a = [f"a{i}" for i in range(nfields)]
        b = [f"b{i}" for i in range(nfields)]
        name = f"_segmented_combine_{len(_lifted) + 1}"
        filename = f"<prefixscan-segmented-{len(_lifted) + 1}>"
        picks = ", ".join(f"tl.where(fb != 0, {b[i]}, merged[{i}])" for i in range(nfields))
        source = (f"def {name}(fa, {', '.join(a)}, fb, {', '.join(b)}):\n"
                  f"    merged = PAIR(({', '.join(a)},), ({', '.join(b)},))\n"
                  f"    return fa | fb, {picks}\n")
        linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
        namespace = {"PAIR": pair, "tl": tl, "_prefixscan_tl": tl, "__name__": __name__}
        exec(compile(source, filename, "exec"), namespace)  # noqa: S102 - fixed generated adapter
        fn = _lifted[key] = triton.jit(namespace[name])
    return fn


# ---------------------------------------------------------------------------
# Kernel building blocks.

@triton.jit
def _lower_bounds(offsets_ptr, count, targets, PROBES: tl.constexpr):
    """For each of the [2] ``targets``, the first index of the sorted ``offsets`` (of
    ``count``) whose value is >= it (``count`` if none): a ``PROBES``-ary search,
    each step one load of evenly spaced probes per target."""
    low = tl.zeros([2], dtype=tl.int64)
    high = low + count
    probe_rank = tl.arange(0, PROBES).to(tl.int64)[None, :]
    while tl.max(high - low, 0) > 0:
        step = tl.maximum((high - low + PROBES - 1) // PROBES, 1)
        probes = low[:, None] + step[:, None] * probe_rank  # [2, PROBES]
        valid = probes < high[:, None]
        values = tl.load(offsets_ptr + probes, mask=valid, other=0).to(tl.int64)
        below = tl.sum((valid & (values < targets[:, None])).to(tl.int64), 1)
        probed = tl.sum(valid.to(tl.int64), 1)
        # The answer lies after the last probe below the target and at or before the next one.
        new_low = tl.where(below > 0, low + (below - 1) * step + 1, low)
        high = tl.where(below < probed, low + below * step, high)
        low = new_low
    return low


@triton.jit
def _offset_heads(offsets_ptr, count, scratch_ptr, lo, cnt, n, rank, inside, REVERSE: tl.constexpr,
                  ITEMSIZE: tl.constexpr, BLOCK: tl.constexpr, PROBES: tl.constexpr):
    """Head flags (scan order) of a tile covering memory ``[lo, lo + cnt)`` from the
    CSR ``offsets`` (``count`` of them): the offsets in the range are marked as
    bytes of the tile's own output (``scratch_ptr`` at ``lo * ITEMSIZE``) and read
    back per element.  Reverse scans need the head of the element after each one,
    for scan position 0 the element after the tile: an offset equal to ``lo + cnt``."""
    pick = tl.arange(0, 2)
    bounds = _lower_bounds(offsets_ptr, count, tl.where(pick == 0, lo, lo + cnt), PROBES)
    k0 = tl.sum(tl.where(pick == 0, bounds, 0), 0)
    k1 = tl.sum(tl.where(pick == 1, bounds, 0), 0)
    marks = scratch_ptr + lo * ITEMSIZE
    tl.store(marks + rank, tl.zeros([BLOCK], dtype=tl.uint8), mask=rank < cnt)
    tl.debug_barrier()  # the zeros before the marks (threads of one program)
    k = k0
    while k < k1:
        index = k + rank
        starts = tl.load(offsets_ptr + index, mask=index < k1, other=0).to(tl.int64)
        tl.store(marks + (starts - lo), tl.full([BLOCK], 1, tl.uint8), mask=index < k1)
        k += BLOCK
    tl.debug_barrier()  # the marks before their reads
    if REVERSE:
        # Scan position r is memory lo + cnt - 1 - r; its head is the element after it.
        heads = tl.load(marks + (cnt - rank), mask=_within(inside, rank > 0), other=0) != 0
        after = lo + cnt
        following = tl.load(offsets_ptr + tl.minimum(k1, count - 1)).to(tl.int64)
        heads = heads | ((rank == 0) & ((after >= n) | ((k1 < count) & (following == after))))
    else:
        heads = tl.load(marks + rank, mask=_within(inside, rank >= 0), other=0) != 0
    return heads


@triton.jit
def _offset_heads_searched(offsets_ptr, count, lo, cnt, rank, REVERSE: tl.constexpr, BLOCK: tl.constexpr,
                           PROBES: tl.constexpr):
    """Head flags (scan order) of the tile covering memory ``[lo, lo + cnt)`` from the
    CSR ``offsets``, in registers: one search of the tile's window of offsets (those
    its heads can equal), then a branchless binary search of that window per element
    (``log2`` of the offsets in the tile gathers, L1 hits; none when the tile lies
    inside one segment).  No marks, no barriers, nothing written.  Scan position r
    is a head when an offset equals its memory position (reverse: the position
    after it, memory ``lo + cnt - r``)."""
    shift = 1 if REVERSE else 0
    pick = tl.arange(0, 2)
    bounds = _lower_bounds(offsets_ptr, count, tl.where(pick == 0, lo + shift, lo + cnt + shift), PROBES)
    k0 = tl.sum(tl.where(pick == 0, bounds, 0), 0)
    m = tl.sum(tl.where(pick == 1, bounds, 0), 0) - k0
    if REVERSE:
        target = (lo + cnt - rank).to(tl.int64)
    else:
        target = (lo + rank).to(tl.int64)
    half = m * 0 + 1  # the largest power of two <= m (1 when m is 0: one masked-off step)
    while half * 2 <= m:
        half = half * 2
    window = offsets_ptr + k0
    at_most = tl.zeros([BLOCK], dtype=tl.int64)  # window offsets <= target
    while half > 0:
        probe = at_most + half
        valid = probe <= m
        value = tl.load(window + probe - 1, mask=valid, other=0).to(tl.int64)
        at_most = tl.where(valid & (value <= target), probe, at_most)
        half = half // 2
    found = tl.load(window + at_most - 1, mask=at_most > 0, other=-1).to(tl.int64)
    return found == target


@triton.jit
def _load_segment(ptr, offsets, mask):
    """Segment description elements (flags as bytes, keys) at ``ptr + offsets``; 0 where
    ``mask`` is False (None: a full tile, unmasked)."""
    if mask is None:
        values = tl.load(ptr + offsets)
    else:
        values = tl.load(ptr + offsets, mask=mask, other=0)
    return values


@triton.jit
def _keys_differ(key, before):
    """``key != before`` as NumPy's ``!=`` compares (the head of a run of keys):
    floats by value, so -0.0 equals 0.0 and NaN differs from every key, itself
    included (an unordered compare).  Floats of 16 bits compare as float32 (exact):
    the interpreter compares bfloat16 by bit pattern.  The flag goes through a
    select, which the compiler folds away: the interpreter gives a float compare's
    flags the float's type, which the bool operations after it refuse."""
    if key.dtype.is_floating() and key.dtype.primitive_bitwidth < 32:
        key = key.to(tl.float32)
        before = before.to(tl.float32)
    return tl.where(key != before, 1, 0) != 0


@triton.jit
def _tile(x_ptrs, y_ptrs, ident_ptrs, init_ptrs, seg_ptr, scratch_ptr, status_ptr, flag_ptr, agg_ptrs, incl_ptrs,
          n, segs, vid, epoch,
          PAIR: tl.constexpr, FLAT: tl.constexpr, SEGFLAT: tl.constexpr, COMMUTATIVE: tl.constexpr,
          INCLUSIVE: tl.constexpr, REVERSE: tl.constexpr, HAS_INIT: tl.constexpr, WORDS: tl.constexpr,
          SINGLE_TILE: tl.constexpr, BLOCK: tl.constexpr, WINDOW: tl.constexpr, KIND: tl.constexpr,
          ITEMSIZE: tl.constexpr, PROBES: tl.constexpr, SEARCH: tl.constexpr, FLAG_RUN: tl.constexpr,
          FULL: tl.constexpr):
    """Tile ``vid``: heads, aggregate and publication, look-back, segmented scan."""
    ident = _scalars(ident_ptrs, 0)
    rank = tl.arange(0, BLOCK)
    inside = None if FULL else vid * BLOCK + rank < n
    if REVERSE:  # mirrored: scan position r is memory start - r
        start = n - 1 - vid * BLOCK
        local = -rank
        neighbour = local + 1
        lo = tl.maximum(start - BLOCK + 1, 0)
    else:
        start = vid * BLOCK
        local = rank
        neighbour = rank - 1
        lo = start
    cnt = tl.minimum(n - vid * BLOCK, BLOCK)
    lane_first = (vid == 0) & (rank == 0)  # scan position 0 of the lane: always a head
    x = _load_at(x_ptrs, start, local, inside, ident)
    if KIND == 0:  # flags, as bytes; reverse: the flag of the element after (in memory)
        at = neighbour if REVERSE else local
        if FLAG_RUN > 0 and not REVERSE:
            # Runs of FLAG_RUN bytes per thread: the flags then share x's layout
            # (16-byte loads would give them 16 per thread and the results a
            # conversion through shared memory before the 4-per-thread stores).
            at = tl.max_contiguous(tl.multiple_of(at, FLAG_RUN), FLAG_RUN)
        heads = _load_segment(seg_ptr + start, at, _within(inside, ~lane_first)) != 0
    elif KIND == 2:  # keys: a head where the key differs from the one before in scan order
        key = _load_segment(seg_ptr + start, local, inside)
        before = _load_segment(seg_ptr + start, neighbour, _within(inside, ~lane_first))
        heads = _keys_differ(key, before)
    elif SEARCH:  # offsets, searched per element
        heads = _offset_heads_searched(seg_ptr, segs, lo, cnt, rank, REVERSE, BLOCK, PROBES)
    else:  # offsets, marked in the output
        heads = _offset_heads(seg_ptr, segs, scratch_ptr, lo, cnt, n, rank, inside, REVERSE, ITEMSIZE, BLOCK, PROBES)
    heads = heads | lane_first
    if inside is not None:
        heads = heads & inside
    if HAS_INIT:
        seed = _scalars(init_ptrs, 0)
        seeded = _where(heads, PAIR(seed, x), x)  # every segment starts from the seed
    else:
        seed = ident
        seeded = x
    head_int = heads.to(tl.int32)
    carry = ident
    if not SINGLE_TILE:
        last = tl.max(tl.where(heads, rank, -1), 0)
        agg = _ordered_reduce(_where(rank >= last, seeded, ident), FLAT, COMMUTATIVE)
        if last >= 0:
            # Closed: nothing before this tile reaches past its last head.
            _publish(status_ptr, flag_ptr, incl_ptrs, vid, agg, FLAG_PREFIX, epoch, WORDS)
            if tl.sum(tl.where(rank == 0, head_int, 0), 0) == 0:  # elements before the first head
                carry = _lookback_1d(status_ptr, flag_ptr, agg_ptrs, incl_ptrs, 0, vid, ident, epoch, PAIR, FLAT,
                                     COMMUTATIVE, WORDS, False, WINDOW)
        else:
            _publish(status_ptr, flag_ptr, agg_ptrs, vid, agg, FLAG_AGGREGATE, epoch, WORDS)
            carry = _lookback_1d(status_ptr, flag_ptr, agg_ptrs, incl_ptrs, 0, vid, ident, epoch, PAIR, FLAT,
                                 COMMUTATIVE, WORDS, False, WINDOW)
            _publish(status_ptr, flag_ptr, incl_ptrs, vid, PAIR(carry, agg), FLAG_PREFIX, epoch, WORDS)
    if INCLUSIVE:
        scan_in = seeded
    else:
        # The element before in scan order (identity first: the carry covers it), the seed at heads.
        shifted = _load_at(x_ptrs, start, neighbour, _within(inside, rank != 0), ident)
        scan_in = _where(heads, seed, shifted)
    scanned = tl.associative_scan((head_int,) + scan_in, 0, _fn(SEGFLAT))
    reached = scanned[0] != 0
    values = ()
    for i in tl.static_range(len(scan_in)):
        values = values + (scanned[i + 1],)
    _store_at(y_ptrs, start, local, _where(reached, values, PAIR(carry, values)), inside)


@triton.jit(do_not_specialize=["segs", "tiles", "tile_base", "epoch"])
def segmented_kernel(x_ptrs, y_ptrs, ident_ptrs, init_ptrs, seg_ptr, scratch_ptr, status_ptr, flag_ptr, agg_ptrs,
                     incl_ptrs, counter_ptr, n, segs, tiles, tile_base, epoch,
                     PAIR: tl.constexpr, FLAT: tl.constexpr, SEGFLAT: tl.constexpr, COMMUTATIVE: tl.constexpr,
                     INCLUSIVE: tl.constexpr, REVERSE: tl.constexpr, HAS_INIT: tl.constexpr, WORDS: tl.constexpr,
                     SINGLE_TILE: tl.constexpr, BLOCK: tl.constexpr, WINDOW: tl.constexpr, KIND: tl.constexpr,
                     ITEMSIZE: tl.constexpr, PROBES: tl.constexpr, SEARCH: tl.constexpr,
                     FLAG_RUN: tl.constexpr):
    """Segmented scan of the ``n`` elements of x (a tuple of fields) into y, segments
    given by ``seg_ptr`` as flags (bytes), ``segs`` CSR offsets or keys (``KIND``);
    ``tiles`` tiles of ``BLOCK`` taken from the counter from ``tile_base``."""
    vid, full = _tile_id(counter_ptr, tile_base, tiles, n, BLOCK, SINGLE_TILE)
    if full:
        _tile(x_ptrs, y_ptrs, ident_ptrs, init_ptrs, seg_ptr, scratch_ptr, status_ptr, flag_ptr, agg_ptrs,
              incl_ptrs, n, segs, vid, epoch, PAIR, FLAT, SEGFLAT, COMMUTATIVE, INCLUSIVE, REVERSE, HAS_INIT, WORDS,
              SINGLE_TILE, BLOCK, WINDOW, KIND, ITEMSIZE, PROBES, SEARCH, FLAG_RUN, True)
    else:
        _tile(x_ptrs, y_ptrs, ident_ptrs, init_ptrs, seg_ptr, scratch_ptr, status_ptr, flag_ptr, agg_ptrs,
              incl_ptrs, n, segs, vid, epoch, PAIR, FLAT, SEGFLAT, COMMUTATIVE, INCLUSIVE, REVERSE, HAS_INIT, WORDS,
              SINGLE_TILE, BLOCK, WINDOW, KIND, ITEMSIZE, PROBES, SEARCH, FLAG_RUN, False)


# ---------------------------------------------------------------------------
# The host side.

def _overlaps(a, b) -> bool:
    """Whether tensors ``a`` and ``b`` share memory."""
    if a.device != b.device or a.numel() == 0 or b.numel() == 0:
        return False
    a0, b0 = a.data_ptr(), b.data_ptr()
    return a0 < b0 + b.numel() * b.element_size() and b0 < a0 + a.numel() * a.element_size()


def run_segmented(request, segments: tuple) -> list:
    """Segmented scan of the checked 1-D ``request`` (:func:`prefixscan._normalize.check_segmented_request`)
    with ``segments`` = (kind, torch tensor on x's device) as
    :func:`prefixscan._normalize.check_segments` returns them; one torch result per
    field (``out``'s tensors when the request has them)."""
    import torch

    config = request.config
    monoid = config.monoid
    kind, given = segments
    xs = [as_torch(f).contiguous() for f in request.fields]
    accs = [getattr(torch, name) for name in request.acc_dtypes]
    device = xs[0].device
    n = xs[0].shape[0]
    users = [as_torch(o) for o in request.out] if request.out is not None else None
    inputs = xs + [given]
    ys = []
    for i, d in enumerate(request.out_dtypes):
        u = users[i] if users is not None else None
        if u is None or not u.is_contiguous() or any(_overlaps(u, t) for t in inputs):
            u = torch.empty(n, dtype=getattr(torch, d), device=device)
        ys.append(u)
    if n:
        _launch(request, kind, given.contiguous(), xs, ys, accs, monoid, device, n)
    if users is None:
        return ys
    for u, y in zip(users, ys):
        if u is not y:
            u.copy_(y)
    return users


def _launch(request, kind: str, given, xs: list, ys: list, accs: list, monoid, device, n: int) -> None:
    import torch

    config = request.config
    interpreter = interpreter_mode()
    stream = current_stream(device) if device.type == "cuda" else 0
    ys_kernel = list(ys)
    for i, acc in enumerate(accs):
        if acc == torch.bool:  # bool scans are the same scans on 0/1 bytes
            xs[i], ys_kernel[i], accs[i] = xs[i].view(torch.uint8), ys[i].view(torch.uint8), torch.uint8
    if given.dtype == torch.bool:
        given = given.view(torch.uint8)
    idents = tuple(identity_tensor(v.item(), acc, device) for v, acc in zip(request.identity, accs))
    inits = idents
    if request.init is not None:
        # One seed per field (a 1-D scan), laid out as scan's seeds are.
        inits = tuple(SeedLayout(acc, request.init_shape, 1, 1, 1, device).columns(v).reshape(1)
                      for v, acc in zip(request.init, accs))
    swapped = config.reverse and not monoid.commutative
    pair, flat = combine_functions(monoid, len(xs), swapped)
    nbytes = sum(a.itemsize for a in accs)
    variant = _forced_tile.get() or DEFAULT_TILE
    tune = choose_config(device, nbytes, any(a.is_floating_point for a in accs), n, 1, interpreter, accs=tuple(accs),
                         monoid=monoid, strategy="decoupled_lookback")
    num_warps = variant.num_warps or tune.num_warps
    block = variant.block or tune.block
    if variant.block is None and not planner.overridden():
        block = max(16, min(block, variant.elements_per_thread * 32 * num_warps * 4 // max(nbytes, 4)))
    single = n <= block
    if single:
        block = max(16, 1 << math.ceil(math.log2(n)))
    tiles = -(-n // block)
    words = status_words(tuple(accs), tune.packed)
    window = max(2, tune.window // max(words, 1))
    if single:  # no look-back: no status, no counter
        status = flags = counter = idents[0]
        aggs = incls = idents
        base = epoch = 0
        state = None
    else:
        state = state_for(device, stream)
        status, flags, aggs, incls = state.begin(tiles, tuple(accs), words)
        base, epoch, counter = state.tiles_issued, state.epoch, state.counter
    itemsize = ys_kernel[0].element_size()
    # Offsets are marked in the tile's own output bytes.  The interpreter copies
    # each tensor argument to a host buffer and back, so there a byte view of y
    # would be written back over the results: it gets a buffer of its own.
    search = variant.offsets == "search"
    if kind != "offsets" or search:  # nothing marked
        scratch = ys_kernel[0].view(torch.uint8)
    elif interpreter:
        scratch = torch.empty(n * itemsize, dtype=torch.uint8, device=device)
    else:
        scratch = ys_kernel[0].view(torch.uint8)
    args = (tuple(xs), tuple(ys_kernel), idents, inits, given, scratch, status, flags, aggs, incls, counter, n,
            given.numel(), tiles, base, epoch)
    constexprs = dict(PAIR=pair, FLAT=flat, SEGFLAT=segmented_combine(pair, len(xs)), COMMUTATIVE=monoid.commutative,
                      INCLUSIVE=config.inclusive, REVERSE=config.reverse, HAS_INIT=request.init is not None,
                      WORDS=words, SINGLE_TILE=single, BLOCK=block, WINDOW=window, KIND=SEGMENT_KINDS[kind],
                      ITEMSIZE=itemsize, PROBES=OFFSET_PROBES, SEARCH=search,
                      FLAG_RUN=min(variant.flag_runs, block))
    try:
        runtime.launch_kernel(Launch(segmented_kernel, tiles, num_warps, stream, interpreter, args, constexprs,
                                     (n,), None if interpreter else variant.maxnreg))
    except BaseException:
        if state is not None:
            state.launch_failed()
        raise
    if state is not None:
        state.tiles_issued += tiles
