"""Segmented scans in one pass on the engine: the segment heads ride on the look-back's states.

A segmented scan is an ordinary scan of the operator lifted to (head flag,
value) pairs, ``(fa, a) ⊕' (fb, b) = (fa | fb, b if fb else a ⊕ b)`` (Schwartz
1980; Blelloch 1990, "Prefix sums and their applications", section 1.5), and
the engine's decoupled look-back (Merrill & Garland 2016, section 4) runs any
monoid.  The flag of a tile's lifted aggregate is not stored beside its value: it
*is* the status word's state.  A tile holding a segment head has an inclusive
prefix that no predecessor changes (the values after its last head), so it is
*closed*: it publishes that at once as an inclusive prefix, before any look-back
(:func:`prefixscan.backends.triton.engine.pipeline.carry`); a tile without a head publishes its aggregate and
looks back as usual.  A look-back therefore stops at the nearest tile with a head,
every entry it folds is head-free, and the fold is the plain operator.  A tile that
starts with a head does not look back at all; one with a head further in looks back
only for the carry of the elements before it, after it has published.

Per tile (``BLOCK`` elements, scan order; reverse scans mirror the indices):

1. load x and the head flags in scan order: ``flags`` read as bytes (reverse: the
   flag of the element after, since a reverse segment starts at its end); ``keys``
   compared with the neighbour in scan order; ``offsets`` as bits: a small launch
   first sets bit ``o`` of an n-bit mask for every offset ``o`` (the bits of a word
   ORed in registers, one atomic ``or`` per word touched, into zeroed words: n / 8
   bytes), and a forward tile reads its BLOCK / 32 words and spreads them over its
   elements (a reverse tile, which does not start on a word, reads each element's);
2. ``init`` seeds every segment: folded into each head's value (the left operand,
   or the right one in reverse: the seed sits after a reverse segment's last
   element, as in :func:`prefixscan.scan`);
3. the aggregate is the reduction from the tile's last head to its end; closed when
   there is a head; the engine's carry;
4. one ``tl.associative_scan`` of (head, value) with the lifted operator; the
   elements before the tile's first head take the carry on their left.  For
   exclusive scans the scanned values are shifted by one in scan order (read again
   from memory) and a head takes the seed.

Traffic: x read once, y written once, plus the segment description (flags or keys:
n more elements; offsets: the offsets and n / 8 bytes of bits, written once and
read once).  :func:`run_segmented` is the host side; :func:`segmented_scan` the backend's
entry (:data:`prefixscan.primitives.segmented.IMPLEMENTATIONS`).
"""

from __future__ import annotations

import contextlib
import contextvars
from dataclasses import dataclass

import triton
import triton.language as tl

from ..._arrays import as_torch
from ..._environment import interpreter_mode
from ...backends.triton.device.combine import combine_functions, generated_jit
from ...backends.triton.device.tiles import _fn, _load_at, _ordered_reduce, _scalars, _store_at, _where, _within
from ...backends.triton.engine.pipeline import carry, tile_id
from ...backends.triton.engine.state import identity_tensor, single_pass, status_words, window_entries
from ...backends.triton.planning import planner
from ...backends.triton.planning.planner import choose_config
from ...backends.triton.planning.tiles import single_tile_block
from ...backends.triton.runtime import launch as runtime
from ...backends.triton.runtime.launch import Launch, current_stream
from ...backends.triton.scan.job import SeedLayout
from ...caches import register_cache

__all__ = ["segmented_scan", "run_segmented", "segmented_kernel", "segmented_combine", "SEGMENT_KINDS",
           "SegmentedTile", "DEFAULT_TILE", "forced_tile", "capped_block", "plan_tile"]

#: The ``KIND`` constexpr of each segment description.
SEGMENT_KINDS = {"flags": 0, "offsets": 1, "keys": 2}
#: Elements per thread in a tile, for fields of up to 4 bytes (wider ones: as many
#: 4-byte words); the scan's tile is capped to it unless a tile is forced.  The lifted
#: scan keeps a head flag, the seeded values and the scanned pairs per element: on the
#: H200 (int32 sums, 2^27, mean segment 32 and 1000) 16 per thread at 4 warps ran
#: flags in 0.445 / 0.487 ms, 32 per thread 0.54-0.56, 64 per thread 0.56 (ptxas:
#: 137 registers at 32, 254 at 64).
ELEMENTS_PER_THREAD = 16
#: Offsets marked per program of the bit-setting launch.
MARK_BLOCK = 1024


@dataclass(frozen=True)
class SegmentedTile:
    """A tile of the segmented kernel.  ``block`` / ``num_warps``: the tile (None: the
    planner's, its block capped at ``elements_per_thread`` per thread unless a tile is
    forced with :func:`prefixscan.tuning.override`); ``maxnreg``: a register cap for
    ptxas (None: its choice)."""

    block: int | None = None
    num_warps: int | None = None
    elements_per_thread: int = ELEMENTS_PER_THREAD
    maxnreg: int | None = None

    def __post_init__(self):
        if self.block is not None and (self.block < 16 or self.block & (self.block - 1)):
            raise ValueError(f"block must be a power of two >= 16, got {self.block}")
        if self.elements_per_thread < 1:
            raise ValueError(f"elements_per_thread must be >= 1, got {self.elements_per_thread}")

    def __str__(self) -> str:
        tile = f"{self.block or 'auto'}x{self.num_warps or 'auto'}"
        cap = "" if self.block or self.elements_per_thread == ELEMENTS_PER_THREAD else \
            f" {self.elements_per_thread}/thread"
        regs = f" maxnreg {self.maxnreg}" if self.maxnreg else ""
        return f"{tile}{cap}{regs}"


#: The planner's choice.
DEFAULT_TILE = SegmentedTile()
_forced_tile: contextvars.ContextVar = contextvars.ContextVar("prefixscan_segmented_tile", default=None)


@contextlib.contextmanager
def forced_tile(tile: SegmentedTile):
    """Run the segmented scans inside the block with the tile ``tile`` (benchmarks and
    tests compare tiles through the public function)."""
    token = _forced_tile.set(tile)
    try:
        yield tile
    finally:
        _forced_tile.reset(token)


# ---------------------------------------------------------------------------
# The lifted operator as a Triton function (tl.associative_scan's flat form).

_lifted: dict = {}  # (PAIR, fields) -> the lifted FLAT
register_cache("prefixscan.primitives.segmented.triton.lifted", _lifted.clear)


def segmented_combine(pair, nfields: int):
    """``FLAT(fa, a0, .., fb, b0, ..)`` of the lifted operator over ``pair`` (a
    :func:`~prefixscan.backends.triton.device.combine.combine_functions` PAIR): ``(fa | fb, b if fb else a ⊕ b)``.
    Generated once per (pair, fields), named after its content
    (:func:`~prefixscan.backends.triton.device.combine.generated_jit`)."""
    key = (pair, nfields)
    fn = _lifted.get(key)
    if fn is None:
        a = [f"a{i}" for i in range(nfields)]
        b = [f"b{i}" for i in range(nfields)]
        picks = ", ".join(f"tl.where(fb != 0, {b[i]}, merged[{i}])" for i in range(nfields))
        body = (f"    merged = PAIR(({', '.join(a)},), ({', '.join(b)},))\n"
                f"    return fa | fb, {picks}")
        fn = _lifted[key] = generated_jit("segmented_combine", f"fa, {', '.join(a)}, fb, {', '.join(b)}", body,
                                          {"PAIR": pair})
    return fn


# ---------------------------------------------------------------------------
# Kernels.

@triton.jit
def _same_word_or(w1, b1, w2, b2):
    """The OR of the bits of a run of equal words (offsets are sorted, so equal words
    are adjacent): ``(w2, b2 | (b1 if w1 == w2))``, associative for non-decreasing words."""
    return w2, tl.where(w1 == w2, b1 | b2, b2)


@triton.jit(do_not_specialize=["count"])
def mark_offsets_kernel(offsets_ptr, count, bits_ptr, n, BLOCK: tl.constexpr):
    """Set bit ``o`` of the zeroed int32 words ``bits_ptr`` for every offset ``o < n``
    of the ``count`` sorted offsets (repeated offsets, empty segments, set one bit).
    The bits of one word are ORed in registers first (a segmented OR over the runs of
    equal words), so there is one atomic per word a block touches, not one per offset:
    offsets of segments of length 1 (one per element) set 32 bits per atomic."""
    index = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    valid = index < count
    o = tl.load(offsets_ptr + index, mask=valid, other=0).to(tl.int64)
    valid = valid & (o < n)
    word = tl.where(valid, o >> 5, 9223372036854775807)  # past the end: a run of its own, never stored
    bit = tl.where(valid, (1 << (o & 31)).to(tl.int32), 0)
    _, run = tl.associative_scan((word, bit), 0, _same_word_or)
    following = tl.load(offsets_ptr + index + 1, mask=index + 1 < count, other=0).to(tl.int64)
    last = valid & ((index + 1 >= count) | ((following >> 5) != word) | (following >= n) |
                    (tl.arange(0, BLOCK) == BLOCK - 1))
    tl.atomic_or(bits_ptr + word, run, mask=last, sem="relaxed")


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
def _heads(seg_ptr, start, local, neighbour, inside, lane_first, n, KIND: tl.constexpr, REVERSE: tl.constexpr,
           BLOCK: tl.constexpr):
    """Head flags in scan order of the tile's elements at memory ``start + local``: a
    segment starts there (forward), or the element after starts one (reverse, whose
    segments start at their end).  ``lane_first`` (scan position 0 of the lane) is
    left to the caller."""
    VECTOR_BITS: tl.constexpr = KIND == 1 and not REVERSE and BLOCK >= 32
    if KIND == 2:  # keys: a head where the key differs from the one before in scan order
        key = tl.load((seg_ptr + start) + local, mask=inside) if inside is not None else \
            tl.load((seg_ptr + start) + local)
        before = tl.load((seg_ptr + start) + neighbour, mask=_within(inside, ~lane_first))
        heads = _keys_differ(key, before)
    else:
        # flags (bytes) or bits set from offsets; reverse: the element after in memory
        at = neighbour if REVERSE else local
        if REVERSE:
            where = _within(inside, ~lane_first)
        else:
            where = inside  # a full forward tile: unmasked loads, 16-byte vectors for flags
        if KIND == 0:
            if where is None:
                heads = tl.load((seg_ptr + start) + at) != 0
            else:
                heads = tl.load((seg_ptr + start) + at, mask=where, other=0) != 0
        elif VECTOR_BITS:
            # A forward tile starts on a word: its BLOCK / 32 words, each spread over 32 flags.
            lanes = tl.arange(0, BLOCK // 32)
            words = tl.load(seg_ptr + (start // 32 + lanes), mask=start + lanes * 32 < n, other=0)
            bits = (words[:, None] >> tl.arange(0, 32)[None, :]) & 1
            heads = tl.reshape(bits, (BLOCK,)) != 0
        else:
            position = start + at
            if where is None:
                word = tl.load(seg_ptr + (position >> 5))
            else:
                word = tl.load(seg_ptr + (position >> 5), mask=where & (position < n), other=0)
            heads = ((word >> (position & 31).to(tl.int32)) & 1) != 0
    return heads


@triton.jit
def _tile(io, seg_ptr, status, n, vid, epoch, MONOID: tl.constexpr, PROTOCOL: tl.constexpr, SCAN: tl.constexpr,
          SEGFLAT: tl.constexpr, BLOCK: tl.constexpr, SINGLE_TILE: tl.constexpr, KIND: tl.constexpr,
          FULL: tl.constexpr):
    """Tile ``vid``: heads, aggregate and carry, segmented scan."""
    x_ptrs, y_ptrs, ident_ptrs, init_ptrs = io
    INCLUSIVE: tl.constexpr = SCAN[0]
    REVERSE: tl.constexpr = SCAN[1]
    HAS_INIT: tl.constexpr = SCAN[2]
    PAIR: tl.constexpr = MONOID[0]
    ident = _scalars(ident_ptrs, 0)
    rank = tl.arange(0, BLOCK)
    inside = None if FULL else vid * BLOCK + rank < n
    if REVERSE:  # mirrored: scan position r is memory start - r
        start = n - 1 - vid * BLOCK
        local = -rank
        neighbour = local + 1
    else:
        start = vid * BLOCK
        local = rank
        neighbour = rank - 1
    lane_first = (vid == 0) & (rank == 0)  # scan position 0 of the lane: always a head
    x = _load_at(x_ptrs, start, local, inside, ident)
    heads = _heads(seg_ptr, start, local, neighbour, inside, lane_first, n, KIND, REVERSE, BLOCK) | lane_first
    if inside is not None:
        heads = heads & inside
    if HAS_INIT:
        seed = _scalars(init_ptrs, 0)
        seeded = _where(heads, PAIR(seed, x), x)  # every segment starts from the seed
    else:
        seed = ident
        seeded = x
    head_int = heads.to(tl.int32)
    prefix = ident
    if not SINGLE_TILE:
        last = tl.max(tl.where(heads, rank, -1), 0)
        agg = _ordered_reduce(_where(rank >= last, seeded, ident), MONOID[1], MONOID[2])
        # Closed tiles need the carry only for the elements before their first head.
        needed = tl.max(tl.where(rank == 0, head_int, 0), 0) == 0
        prefix = carry(status, vid, 0, vid, agg, ident, last >= 0, ident, epoch, MONOID, PROTOCOL, needed)
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
    _store_at(y_ptrs, start, local, _where(reached, values, PAIR(prefix, values)), inside)


@triton.jit(do_not_specialize=["tiles", "tile_base", "epoch"])
def segmented_kernel(io, seg_ptr, status, counter_ptr, n, tiles, tile_base, epoch, MONOID: tl.constexpr,
                     PROTOCOL: tl.constexpr, SCAN: tl.constexpr, SEGFLAT: tl.constexpr, BLOCK: tl.constexpr,
                     SINGLE_TILE: tl.constexpr, KIND: tl.constexpr):
    """Segmented scan of the ``n`` elements of x into y (``io``: the field tuples x, y,
    identities, seeds), segments given by ``seg_ptr`` as flags (bytes), bits set from
    offsets, or keys (``KIND``); ``tiles`` tiles of ``BLOCK`` taken from the counter from
    ``tile_base``.  ``MONOID`` (PAIR, FLAT, COMMUTATIVE), ``PROTOCOL`` (WORDS, WINDOW,
    CHAINED), ``SCAN`` (INCLUSIVE, REVERSE, HAS_INIT); ``SEGFLAT`` the lifted operator."""
    vid, full = tile_id(counter_ptr, tile_base, tiles, n, BLOCK, SINGLE_TILE)
    if full:
        _tile(io, seg_ptr, status, n, vid, epoch, MONOID, PROTOCOL, SCAN, SEGFLAT, BLOCK, SINGLE_TILE, KIND, True)
    else:
        _tile(io, seg_ptr, status, n, vid, epoch, MONOID, PROTOCOL, SCAN, SEGFLAT, BLOCK, SINGLE_TILE, KIND, False)


# ---------------------------------------------------------------------------
# The host side.

def _overlaps(a, b) -> bool:
    """Whether tensors ``a`` and ``b`` share memory."""
    if a.device != b.device or a.numel() == 0 or b.numel() == 0:
        return False
    a0, b0 = a.data_ptr(), b.data_ptr()
    return a0 < b0 + b.numel() * b.element_size() and b0 < a0 + a.numel() * a.element_size()


def segmented_scan(request, segments: tuple) -> list:
    """The single-pass segmented scan kernel (:func:`run_segmented`): the segment heads
    ride on the decoupled look-back's states; torch tensors out."""
    return run_segmented(request, segments)


def run_segmented(request, segments: tuple) -> list:
    """Segmented scan of the checked 1-D ``request`` (:func:`.checks.check_segmented_request`)
    with ``segments`` = (kind, torch tensor on x's device) as
    :func:`prefixscan._segments.check_segments` returns them; one torch result per
    field (``out``'s tensors when the request has them)."""
    import torch

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
        if u is None or not u.is_contiguous() or u.dtype != getattr(torch, d) or any(_overlaps(u, t) for t in inputs):
            u = torch.empty(n, dtype=getattr(torch, d), device=device)
        ys.append(u)
    if n:
        _launch(request, kind, given.contiguous(), xs, ys, accs, device, n)
    if users is None:
        return ys
    for u, y in zip(users, ys):
        if u is not y:
            u.copy_(y)
    return users


def _offset_bits(offsets, n: int, device, stream: int, interpreter: bool):
    """The n-bit mask of segment starts (int32 words, bit o of word o // 32 set for
    every offset o < n): zeroed words and one launch of :func:`mark_offsets_kernel`."""
    import torch

    bits = torch.zeros(n // 32 + 1, dtype=torch.int32, device=device)
    count = offsets.numel()
    block = 64 if interpreter else MARK_BLOCK
    runtime.launch_kernel(Launch(mark_offsets_kernel, -(-count // block), 1 if interpreter else 4, stream,
                                 interpreter, (offsets, count, bits, n), dict(BLOCK=block), (n,)))
    return bits


def capped_block(block: int, elements_per_thread: int, num_warps: int, nbytes: int) -> int:
    """``block`` capped at ``elements_per_thread`` elements of ``nbytes`` bytes (counted
    as at least 4) per thread of ``num_warps`` warps, as a power of two of at least 16
    (``tl.arange`` takes powers of two only: 12-, 6- or 24-byte structs would otherwise
    give tiles of 682 or 1365 elements)."""
    cap = max(1, elements_per_thread * 32 * num_warps * 4 // max(nbytes, 4))
    return max(16, min(block, 1 << (cap.bit_length() - 1)))


def plan_tile(device, accs: tuple, monoid, n: int, interpreter: bool):
    """``(tune, variant, block, num_warps, single)`` of a segmented scan of ``n``
    elements with accumulators ``accs`` (torch dtypes): the forced tile's, else the
    planner's with its block capped by :func:`capped_block`; a single tile
    (:func:`~prefixscan.backends.triton.planning.tiles.single_tile_block`) when n fits in one."""
    nbytes = sum(a.itemsize for a in accs)
    variant = _forced_tile.get() or DEFAULT_TILE
    tune = choose_config(device, nbytes, any(a.is_floating_point for a in accs), n, 1, interpreter, accs=accs,
                         monoid=monoid, strategy="decoupled_lookback")
    num_warps = variant.num_warps or tune.num_warps
    block = variant.block or tune.block
    if variant.block is None and not planner.overridden():
        block = capped_block(block, variant.elements_per_thread, num_warps, nbytes)
    single = n <= block
    if single:
        block = single_tile_block(n, block)
    return tune, variant, block, num_warps, single


def _launch(request, kind: str, given, xs: list, ys: list, accs: list, device, n: int) -> None:
    import torch

    config = request.config
    monoid = config.monoid
    interpreter = interpreter_mode()
    stream = current_stream(device) if device.type == "cuda" else 0
    ys_kernel = list(ys)
    for i, acc in enumerate(accs):
        if acc == torch.bool:  # bool scans are the same scans on 0/1 bytes
            xs[i], ys_kernel[i], accs[i] = xs[i].view(torch.uint8), ys[i].view(torch.uint8), torch.uint8
    if given.dtype == torch.bool:
        given = given.view(torch.uint8)
    if kind == "offsets":
        given = _offset_bits(given, n, device, stream, interpreter)
    idents = tuple(identity_tensor(v.item(), acc, device) for v, acc in zip(request.identity, accs))
    inits = idents
    if request.init is not None:
        # One seed per field (a 1-D scan), laid out as scan's seeds are.
        inits = tuple(SeedLayout(acc, request.init_shape, 1, 1, 1, device).columns(v).reshape(1)
                      for v, acc in zip(request.init, accs))
    swapped = config.reverse and not monoid.commutative
    pair, flat = combine_functions(monoid, len(xs), swapped)
    tune, variant, block, num_warps, single = plan_tile(device, tuple(accs), monoid, n, interpreter)
    tiles = -(-n // block)
    words = status_words(tuple(accs), tune.packed)
    protocol = (words, window_entries(tune.window, words), False)
    io = (tuple(xs), tuple(ys_kernel), idents, inits)
    scan = (config.inclusive, config.reverse, request.init is not None)
    with single_pass(device, stream, tiles, tiles, tuple(accs), words, single=single, placeholder=idents[0]) as status:
        args = (io, given, status.buffers, status.counter, n, tiles, status.tile_base, status.epoch)
        constexprs = dict(MONOID=(pair, flat, monoid.commutative), PROTOCOL=protocol, SCAN=scan,
                          SEGFLAT=segmented_combine(pair, len(xs)), BLOCK=block, SINGLE_TILE=single,
                          KIND=SEGMENT_KINDS[kind])
        runtime.launch_kernel(Launch(segmented_kernel, tiles, num_warps, stream, interpreter, args, constexprs, (n,),
                                     None if interpreter else variant.maxnreg))
