"""Stream compaction and stable partition in one pass on the engine: kernels and their launcher.

The single-pass selection of CUB's ``DeviceSelect::Flagged`` and
``DevicePartition::Flagged`` (Merrill & Garland 2016, "Single-pass Parallel
Prefix Scan with Decoupled Look-back", section 4, applied to the mask's counts),
as a primitive of the engine (:mod:`prefixscan.backends.triton.engine`):

* a tile loads its mask and its values in rows of ``R`` consecutive elements per
  thread (one layout for both: no exchange through shared memory), counts its kept
  elements in registers, and
* carries the count monoid to its successors through the engine (tile ids in start
  order, epoch-tagged status words, the look-back): the count is int32 while the
  array has fewer than 2^31 elements, one status word per tile;
* it writes its kept elements as one contiguous run at ``prefix + (exclusive count
  within the tile)``: from the rows when the tile keeps few (a sector per kept
  element is cheap then), through the one-element-per-thread layout when it keeps at
  least an eighth (each warp's store covers 32 consecutive slots: whole sectors).

Each element is read once and each kept element written once: the traffic of
``x[mask]`` without its separate count and index passes.  Measured on the H200
(docs/design/compaction.md): below CUB's select (cuda.compute) at every kept fraction;
the kernel issues an instruction every 3.6 cycles with 2 warps per scheduler at its
register count (Nsight Compute), latency-bound where the scan keeps 5 tiles per SM.

Partition (stable, kept first) needs the total count up front: a rejected element at
global index i goes to ``total + i - (kept before i)`` (the complementary count), so
the mask is counted first by one read of its bytes (:func:`count_kernel`) and the same
kernel then writes every element.

With a ``limit`` (``compact(size=k)``), kept elements past the first ``limit`` are
dropped and a second small launch writes the fill value after the count (the count is
on the device: nothing waits for the host; a few programs stride over the tail, so a
tail that needs no fill costs one small launch).  :func:`compact` and :func:`partition`
are the backend's entry points (:data:`prefixscan.primitives.compaction.IMPLEMENTATIONS`).

The runs mode (:func:`run_fields`, for ``unique`` and ``run_length_encode``) is the
same kernel with the keep flags computed by the tile from its keys instead of read
from a mask: an element is kept where it differs from the one before (a second,
shifted load of the key), and besides the kept fields each kept element's run length
is written: the tile stores its heads' indices, reads them back and stores the
differences; the runs that go on past their tile are finished by a small add of the
later tiles' elements after the pass.  No heads, positions or starts arrays.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import triton
import triton.language as tl

from ..._arrays import ArrayRef, as_torch
from ..._environment import interpreter_mode
from ...backends.triton.device.combine import combine_functions
from ...backends.triton.device.tiles import _within
from ...backends.triton.engine.pipeline import carry, tile_id
from ...backends.triton.engine.state import single_pass, status_words
from ...backends.triton.runtime import launch as runtime
from ...backends.triton.runtime.launch import Launch, current_stream
from ...monoid import BUILTIN_OPS

__all__ = ["compact", "partition", "CompactionTile", "compact_fields", "partition_fields", "run_fields",
           "default_tile", "STORE_FORMS"]

#: How a tile stores its kept elements: from its rows, through the one-element-per-
#: thread layout, or by its count (``auto``: dense from an eighth kept).
STORE_FORMS = ("rows", "dense", "auto")
#: Mask bytes counted per program of :func:`count_kernel`.
COUNT_BLOCK = 8192
#: Programs of the fill after a fixed-size compaction (each strides over the tail).
FILL_PROGRAMS = 1024
#: Elements of a tile of the runs' selection (:func:`run_fields`) on the GPU.
RUNS_BLOCK = 2048


@dataclass(frozen=True)
class CompactionTile:
    """One program's work: ``block`` elements, ``num_warps`` warps, rows of ``rows``
    consecutive elements per thread (mask and values in one layout), ``window`` status
    entries read per look-back step, and the store form (:data:`STORE_FORMS`)."""

    block: int
    num_warps: int
    rows: int = 8
    window: int = 32
    store: str = "auto"

    def __post_init__(self):
        if self.store not in STORE_FORMS:
            raise ValueError(f"store must be one of {STORE_FORMS}, got {self.store!r}")
        for name in ("block", "rows"):
            value = getattr(self, name)
            if value < 1 or value & (value - 1):
                raise ValueError(f"{name} must be a power of two, got {value}")


#: The interpreter's tile: small, so that tests cross many tile boundaries.
INTERPRETER_TILE = CompactionTile(block=32, num_warps=1, rows=4, window=4)


def default_tile(nbytes: int, interpreter: bool, *, runs: bool = False) -> CompactionTile:
    """The tile for elements of ``nbytes`` bytes over all fields (values only): 4096
    elements on 4 warps, in rows of R elements per thread, R the largest power of two
    of elements in 64 bytes for elements of up to 4 bytes and in 32 bytes for wider
    ones, at least 1 and at most 16 (1-, 2- and 4-byte elements: 16; 8 bytes: 4; 12
    and 16 bytes: 2; wider: 1); int64 at rows of 4 ran 0.63 / 0.75 / 0.85 ms.  Measured
    on the H200 in the engine's kernel (int32, 2^27, ms at 1% / 50% / 99% kept): 4096x4
    rows of 16 0.530 / 0.540 / 0.576, rows of 8 0.536 / 0.663 / 0.696; 8192x4 rows of 8
    0.874 / 0.903 / 1.006 (255 registers: it spills where the prototype without the
    engine's carry, 254 registers, ran 0.389 / 0.446 / 0.535); 8192x8 rows of 8 0.538 /
    0.679 / 0.747 (docs/design/compaction.md).

    The runs' selection (``runs``) keeps a shifted copy of the key and the scans of the
    run lengths per element besides: 2048 elements on 4 warps, 16 per thread, the
    segmented scan's tile (which also compares each key with the one before)."""
    if interpreter:
        return INTERPRETER_TILE
    row_bytes = 64 if nbytes <= 4 else 32  # 8-byte rows of 8: 231 registers (ptxas, sm_90)
    rows = 1 << max(0, (row_bytes // max(nbytes, 1)).bit_length() - 1)  # a power of two <= row_bytes / nbytes
    return CompactionTile(block=RUNS_BLOCK if runs else 4096, num_warps=4, rows=min(rows, 16))


@triton.jit(do_not_specialize=["n"])
def count_kernel(mask_ptr, count_ptr, n, BLOCK: tl.constexpr):
    """Add the number of nonzero bytes of ``mask_ptr[:n]`` to the int64 at ``count_ptr``."""
    index = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    kept = tl.sum((tl.load(mask_ptr + index, mask=index < n, other=0) != 0).to(tl.int32), 0)
    tl.atomic_add(count_ptr, kept.to(tl.int64), sem="relaxed")


@triton.jit
def _store_run(out_ptrs, dst, local, values, keep, BLOCK: tl.constexpr, DENSE: tl.constexpr):
    """Every field's kept ``values`` to ``dst + local`` (rows of the tile); ``DENSE``:
    through the one-element-per-thread layout, so that a warp's store covers 32
    consecutive slots."""
    for i in tl.static_range(len(out_ptrs)):
        if DENSE:
            tl.store((out_ptrs[i] + dst) + tl.reshape(local, (BLOCK,)), tl.reshape(values[i], (BLOCK,)),
                     mask=tl.reshape(keep, (BLOCK,)))
        else:
            tl.store((out_ptrs[i] + dst) + local, values[i], mask=keep)


@triton.jit
def _keys_differ(key, before, RUNS: tl.constexpr, HALF: tl.constexpr):
    """Whether ``key`` starts a new run after ``before``: ``!=`` by value (-0.0 equals
    0.0; a NaN equals nothing), with ``RUNS == 2`` a NaN equal to a NaN.  16-bit floats
    come as their int16 bits (``HALF`` 1: float16, 2: bfloat16) and compare as float32
    (exact; bits would part -0.0 from 0.0 and NaNs of other payloads).  The flags go
    through selects, which the compiler folds away: the interpreter gives a float
    compare's flags the float's type, which the bool operations after it refuse."""
    if HALF == 1:
        key = key.to(tl.float16, bitcast=True).to(tl.float32)
        before = before.to(tl.float16, bitcast=True).to(tl.float32)
    elif HALF == 2:
        key = key.to(tl.bfloat16, bitcast=True).to(tl.float32)
        before = before.to(tl.bfloat16, bitcast=True).to(tl.float32)
    differ = tl.where(key != before, 1, 0)
    if RUNS == 2:
        if key.dtype.is_floating():
            differ = differ & (tl.where(key == key, 1, 0) | tl.where(before == before, 1, 0))
    return differ != 0


@triton.jit
def _lengths_in_place(lens_ptr, kept, end, CHUNK: tl.constexpr):
    """Turn the tile's ``kept`` heads' indices in the tile, stored at ``lens_ptr[:kept]``
    by all its threads, into the lengths of their runs (the last one's up to ``end``,
    the tile's elements); returns the first head's index.  The tile reads its own
    stores back (L1) across barriers: one after the stores, one after each chunk's
    reads, so that no index is overwritten before its neighbour has read it."""
    tl.debug_barrier()
    first = tl.load(lens_ptr)
    done = kept * 0
    while done < kept:
        slot = done + tl.arange(0, CHUNK)
        here = tl.load(lens_ptr + slot, mask=slot < kept)
        after = tl.load(lens_ptr + (slot + 1), mask=slot + 1 < kept, other=end)
        tl.debug_barrier()
        tl.store(lens_ptr + slot, after - here, mask=slot < kept)
        done += CHUNK
    return first


@triton.jit
def _select_tile(io, status, n, limit, vid, tiles, epoch, MONOID: tl.constexpr, PROTOCOL: tl.constexpr,
                 TILE: tl.constexpr, SELECT: tl.constexpr, FULL: tl.constexpr):
    """Tile ``vid`` of :func:`select_kernel`; ``FULL``: every element inside x."""
    x_ptrs, out_ptrs, mask_ptr, count_ptr = io
    BLOCK: tl.constexpr = TILE[0]
    R: tl.constexpr = TILE[1]
    STORE: tl.constexpr = TILE[2]
    SINGLE: tl.constexpr = TILE[3]
    PARTITION: tl.constexpr = SELECT[0]
    LIMITED: tl.constexpr = SELECT[1]
    CT: tl.constexpr = tl.int64 if SELECT[2] else tl.int32
    RUNS: tl.constexpr = SELECT[3]
    LENGTHS: tl.constexpr = len(out_ptrs) > len(x_ptrs)  # runs: the last output takes the run lengths
    start = vid * BLOCK  # 64-bit scalar; per-element offsets stay 32-bit
    rank = tl.arange(0, BLOCK // R)[:, None] * R + tl.arange(0, R)[None, :]
    inside = None if FULL else start + rank < n
    if RUNS == 0:
        if FULL:
            keep = tl.load((mask_ptr + start) + rank) != 0
        else:
            keep = tl.load((mask_ptr + start) + rank, mask=inside, other=0) != 0
    values = ()
    for i in tl.static_range(len(x_ptrs)):
        values = values + (tl.load((x_ptrs[i] + start) + rank, mask=inside),)
    if RUNS != 0:
        # A run starts where the key differs from the element before (a second, shifted
        # load: L1 hits but for the element before the tile) and at x's first element.
        first = (rank == 0) & (vid == 0)
        before = tl.load((x_ptrs[0] + start) + (rank - 1), mask=_within(inside, ~first))
        keep = _keys_differ(values[0], before, RUNS, SELECT[4]) | first
        if not FULL:
            keep = keep & inside
    flags = keep.to(CT)
    row_kept = tl.sum(flags, 1)
    kept = tl.sum(row_kept, 0)
    zero = kept * 0
    if SINGLE:
        prefix = zero
    else:
        prefix = carry(status, vid, 0, vid, (kept,), (zero,), False, (zero,), epoch, MONOID, PROTOCOL)[0]
    local = (tl.cumsum(row_kept, 0) - row_kept)[:, None] + (tl.cumsum(flags, 1) - flags)
    base = prefix.to(tl.int64)
    if LENGTHS:
        values = values + (rank.to(tl.int64),)  # each head's index in the tile, made its run's length below
    if PARTITION:
        # Kept: prefix + local.  Rejected: after all kept ones, in order: total +
        # (rejected before it) = total + start + rank - (prefix + local).
        total = tl.load(count_ptr)
        dst = tl.where(keep, base + local, (total + start - base) + (rank - local))
        for i in tl.static_range(len(out_ptrs)):  # every element is written: the warp-contiguous layout
            if FULL:
                tl.store(out_ptrs[i] + tl.reshape(dst, (BLOCK,)), tl.reshape(values[i], (BLOCK,)))
            else:
                tl.store(out_ptrs[i] + tl.reshape(dst, (BLOCK,)), tl.reshape(values[i], (BLOCK,)),
                         mask=tl.reshape(inside, (BLOCK,)))
    else:
        if kept > 0:  # an empty tile only carries its count
            if LIMITED:
                keep = keep & (base + local < limit)
            if STORE == 0:
                _store_run(out_ptrs, base, local, values, keep, BLOCK, False)
            elif STORE == 1:
                _store_run(out_ptrs, base, local, values, keep, BLOCK, True)
            elif kept * 8 >= BLOCK:
                _store_run(out_ptrs, base, local, values, keep, BLOCK, True)
            else:
                _store_run(out_ptrs, base, local, values, keep, BLOCK, False)
        if LENGTHS:
            # Each head's run within the tile.  A run that goes on past the tile is
            # finished by the tiles after it: each records its elements before its first
            # head and the run they extend, added by the host after the pass.
            end = BLOCK if FULL else (n - start).to(tl.int32)
            head = base * 0 + end  # int64, as the first head read back
            if kept > 0:
                head = _lengths_in_place(out_ptrs[len(out_ptrs) - 1] + base, kept, end, BLOCK // 4)
            if not SINGLE:
                tl.store(mask_ptr + vid, head.to(tl.int64))
                tl.store(mask_ptr + tiles + vid, tl.maximum(base - 1, 0))
        if vid == tiles - 1:
            tl.store(count_ptr, base + kept)


@triton.jit(do_not_specialize=["limit", "tiles", "tile_base", "epoch"])
def select_kernel(io, status, counter_ptr, n, limit, tiles, tile_base, epoch, MONOID: tl.constexpr,
                  PROTOCOL: tl.constexpr, TILE: tl.constexpr, SELECT: tl.constexpr):
    """Compact (or, with ``PARTITION``, partition) the ``n`` elements of the fields by
    the uint8 mask: ``io`` = (x field pointers, out field pointers, mask, count).
    Compaction writes the count; partition reads the total there.  ``MONOID``: the
    count's (add); ``PROTOCOL`` (WORDS, WINDOW, CHAINED); ``TILE`` (BLOCK, R, STORE form,
    SINGLE); ``SELECT`` (PARTITION, LIMITED, WIDE: int64 counts, RUNS, HALF).

    ``RUNS`` (1: keys equal by ``==``, 2: NaN equal to NaN) keeps the heads of the runs
    of equal consecutive first fields instead of the mask's elements (``HALF``: the
    float type of 16-bit keys, :func:`_keys_differ`).  An output field past the x fields
    takes each run's length: the tile stores its heads' indices there and turns them
    into lengths (:func:`_lengths_in_place`); the mask's place then holds the int64
    ``(2, tiles)`` fixes of the runs that go on past their tile: each tile's elements
    before its first head, and the run they extend (the host adds them)."""
    vid, full = tile_id(counter_ptr, tile_base, tiles, n, TILE[0], TILE[3])
    if full:
        _select_tile(io, status, n, limit, vid, tiles, epoch, MONOID, PROTOCOL, TILE, SELECT, True)
    else:
        _select_tile(io, status, n, limit, vid, tiles, epoch, MONOID, PROTOCOL, TILE, SELECT, False)


@triton.jit(do_not_specialize=["limit"])
def fill_tail_kernel(out_ptrs, fill_ptrs, count_ptr, limit, BLOCK: tl.constexpr):
    """``out[count:limit] = fill`` for every field, ``count`` read on the device: the
    programs stride over the blocks from the count's, so a tail that needs no fill (the
    count at or past ``limit``) costs a load per program."""
    count = tl.minimum(tl.load(count_ptr), limit)
    rank = tl.arange(0, BLOCK)
    start = (count // BLOCK + tl.program_id(0)) * BLOCK
    while start < limit:
        where = (start + rank >= count) & (start + rank < limit)
        for i in tl.static_range(len(out_ptrs)):
            fill = tl.load(fill_ptrs[i] + rank * 0)  # the fill's bits, broadcast
            tl.store((out_ptrs[i] + start) + rank, fill, mask=where)
        start += tl.num_programs(0) * BLOCK


def _kernel_view(t):
    """The bits of a flat tensor as a dtype Triton copies exactly (bool as uint8,
    16-bit floats as int16, complex64 as int64)."""
    import torch

    if t.dtype == torch.bool:
        return t.view(torch.uint8)
    if t.dtype in (torch.float16, torch.bfloat16):
        return t.view(torch.int16)
    if t.dtype == torch.complex64:
        return t.view(torch.int64)
    return t


def _word_fields(xs):
    """Fields as 1-D tensors of at most 8 bytes an element: a complex128 field
    becomes its real and imaginary words (contiguous copies; niche on GPUs)."""
    import torch

    words, layout = [], []  # layout: per field, how many word fields it became
    for t in xs:
        if t.dtype == torch.complex128:
            pair = torch.view_as_real(t)
            words += [pair[:, 0].contiguous(), pair[:, 1].contiguous()]
            layout.append(2)
        else:
            words.append(_kernel_view(t))
            layout.append(1)
    return words, layout


def _join_fields(outs, xs, layout):
    """Inverse of :func:`_word_fields` on the results (x's dtypes)."""
    import torch

    result, k = [], 0
    for x, parts in zip(xs, layout):
        if parts == 2:
            result.append(torch.view_as_complex(torch.stack((outs[k], outs[k + 1]), dim=1)))
        else:
            result.append(outs[k].view(x.dtype))
        k += parts
    return result


def _launch_select(words, selector, count, *, outs, limit: int, partition: bool, tile: CompactionTile | None,
                   runs: tuple = (0, 0)):
    """Launch :func:`select_kernel` on the engine: its tile ids, status words and look-back are
    the engine's (:func:`prefixscan.backends.triton.engine.state.single_pass`: no memset per call).  ``count``: the
    total for a partition (read by the kernel), else None, and a new 0-d int64 tensor that
    the last tile writes is returned.  ``selector``: the uint8 mask; with ``runs`` (the
    kernel's RUNS and HALF, RUNS > 0) None: the runs of ``words[0]`` select, and an output
    past the words takes the run lengths (the tiles' fixes added here)."""
    import torch

    n = words[0].numel()
    device = words[0].device
    interpreter = interpreter_mode()
    if tile is None:
        tile = default_tile(sum(w.element_size() for w in words), interpreter, runs=runs[0] > 0)
    block = tile.block
    single = n <= block
    if single:
        block = max(16, 1 << (n - 1).bit_length())
    num_tiles = -(-n // block)
    if count is None:
        count = torch.empty((), dtype=torch.int64, device=device)
    fixes = None
    if runs[0] and len(outs) > len(words) and not single:
        fixes = torch.empty((2, num_tiles), dtype=torch.int64, device=device)  # (elements, run) per tile
    if runs[0]:
        selector = count if fixes is None else fixes  # a placeholder where no tile writes
    # Counts of tiles and their prefixes: int32 (one status word) while they fit.
    wide = n >= (1 << 31)
    acc = torch.int64 if wide else torch.int32
    pair, flat = combine_functions(BUILTIN_OPS["add"], 1)
    stream = current_stream(device) if device.type == "cuda" else 0
    state_words = status_words((acc,), None)
    with single_pass(device, stream, num_tiles, num_tiles, (acc,), state_words, single=single,
                     placeholder=count) as status:
        args = ((tuple(words), tuple(outs), selector, count), status.buffers, status.counter, n, limit, num_tiles,
                status.tile_base, status.epoch)
        constexprs = dict(MONOID=(pair, flat, True), PROTOCOL=(state_words, tile.window, False),
                          TILE=(block, min(tile.rows, block), STORE_FORMS.index(tile.store), single),
                          SELECT=(partition, limit < n, wide) + tuple(runs))
        runtime.launch_kernel(Launch(select_kernel, num_tiles, tile.num_warps, stream, interpreter, args, constexprs,
                                     (n,)))
    if fixes is not None:  # runs that go on past their tile: the later tiles' elements
        outs[-1].index_add_(0, fixes[1], fixes[0])
    return count


def _count_kept(mask8):
    """The number of True bytes of ``mask8`` as a 0-d int64 tensor, without a host
    synchronization: one read of the mask (torch's ``sum`` of a bool tensor casts it to
    int64 first, eight times the bytes: 0.55 ms against 0.24 ms for the partition itself
    at 2^27 on the H200)."""
    import torch

    n = mask8.numel()
    count = torch.zeros((), dtype=torch.int64, device=mask8.device)
    interpreter = interpreter_mode()
    block = 256 if interpreter else COUNT_BLOCK
    stream = current_stream(mask8.device) if mask8.device.type == "cuda" else 0
    runtime.launch_kernel(Launch(count_kernel, -(-n // block), 1 if interpreter else 4, stream, interpreter,
                                 (mask8, count, n), dict(BLOCK=block)))  # n: not specialized, one variant
    return count


def _fill_tail(outs, fills, count, limit: int):
    interpreter = interpreter_mode()
    block = 32 if interpreter else 1024
    device = count.device
    stream = current_stream(device) if device.type == "cuda" else 0
    programs = min(-(-limit // block), FILL_PROGRAMS)
    runtime.launch_kernel(Launch(fill_tail_kernel, programs, 1 if interpreter else 4, stream, interpreter,
                                 (tuple(outs), tuple(fills), count, limit), dict(BLOCK=block)))


def _flat(xs, mask):
    """1-D contiguous fields and the mask as uint8 (zero-copy where already so)."""
    import torch

    # 1-D contiguous tensors pass untouched: a small call's host path is
    # a few microseconds of such calls.
    flat = [x if x.dim() == 1 and x.is_contiguous() else x.reshape(-1).contiguous() for x in xs]
    if mask.dim() != 1 or not mask.is_contiguous():
        mask = mask.reshape(-1).contiguous()
    return flat, mask.view(torch.uint8)


#: Without a size, a result shorter than this fraction of x is copied out of the
#: n-element output buffer (its copy costs at most 2/8 of the buffer's bytes);
#: longer ones are returned as views of it (holding at most 8x their size).
VIEW_FRACTION = 8


def compact_fields(xs, mask, *, size: int | None, fills=None, tile: CompactionTile | None = None):
    """``[x[mask] for x in xs]`` (torch tensors of one shape, a bool mask of it) in
    one pass.  With ``size``: ``(values, count)``, ``values`` of ``size`` elements
    per field (``fills``: one 1-element tensor of each field's dtype for the
    positions past the count), ``count`` a 0-d int64 tensor of the selected
    elements, no host synchronization.  Without: ``(values, count)`` with the
    values exact (the count read back once)."""
    import torch

    flat, mask8 = _flat(xs, mask)
    n = mask8.numel()
    device = mask8.device
    words, layout = _word_fields(flat)
    limit = n if size is None else size
    outs = [torch.empty(limit, dtype=w.dtype, device=device) for w in words]
    if n and limit:
        count = _launch_select(words, mask8, None, limit=limit, partition=False, tile=tile, outs=outs)
    elif n:
        count = mask8.sum(dtype=torch.int64)  # nothing to write: only the count
    else:
        count = torch.zeros((), dtype=torch.int64, device=device)
    if size is not None:
        if size:
            fill_words, _ = _word_fields([f.reshape(-1) for f in fills])
            _fill_tail(outs, fill_words, count, size)
        return _join_fields(outs, flat, layout), count
    return _join_fields(_trimmed(outs, count, n), flat, layout), count


def _trimmed(outs, count, n: int) -> list:
    """The first ``count`` elements of each n-element output, read back once (the one
    synchronization): views, or copies when short (:data:`VIEW_FRACTION`)."""
    kept = int(count)
    if kept * VIEW_FRACTION < n:
        return [o[:kept].clone() for o in outs]
    return [o[:kept] for o in outs]


def partition_fields(xs, mask, *, tile: CompactionTile | None = None):
    """Stable partition of the fields ``xs`` by ``mask``: ``(outs, count)``, each
    out of n elements with the kept ones first, ``count`` a 0-d int64 tensor; no
    host synchronization (the mask is reduced on the device first)."""
    import torch

    flat, mask8 = _flat(xs, mask)
    n = mask8.numel()
    device = mask8.device
    words, layout = _word_fields(flat)
    outs = [torch.empty(n, dtype=w.dtype, device=device) for w in words]
    count = _count_kept(mask8) if n else torch.zeros((), dtype=torch.int64, device=device)
    if n:
        _launch_select(words, mask8, count, outs=outs, limit=n, partition=True, tile=tile)
    return _join_fields(outs, flat, layout), count


def run_fields(xs, *, equal_nan: bool, lengths: bool, tile: CompactionTile | None = None) -> tuple:
    """The runs of equal consecutive elements of ``xs[0]`` (1-D torch tensors of one
    length n > 0, of at most 8 bytes an element): ``(fields, lengths)``, each field at
    the runs' heads and, with ``lengths``, the runs' int64 lengths (else None), in one
    pass that reads each field once and the key twice (no heads or positions arrays);
    the number of runs is read back once.  Keys equal by ``==`` (-0.0 equals 0.0, a NaN
    equals nothing), with ``equal_nan`` a NaN equal to every NaN."""
    import torch

    n = xs[0].shape[0]
    device = xs[0].device
    words = [_kernel_view(x) for x in xs]
    half = {torch.float16: 1, torch.bfloat16: 2}.get(xs[0].dtype, 0)
    outs = [torch.empty(n, dtype=w.dtype, device=device) for w in words]
    if lengths:
        outs.append(torch.empty(n, dtype=torch.int64, device=device))
    count = _launch_select(words, None, None, outs=outs, limit=n, partition=False, tile=tile,
                           runs=(2 if equal_nan else 1, half))
    outs = _trimmed(outs, count, n)
    fields = [o.view(x.dtype) for o, x in zip(outs, xs)]
    return fields, (outs[-1] if lengths else None)


# ---------------------------------------------------------------------------
# The backend's entry points (prefixscan.primitives.compaction.IMPLEMENTATIONS).

def compact(fields: tuple, mask: ArrayRef, size: int | None, fills: tuple):
    """One-pass compaction (:func:`compact_fields`): ``(values, count)`` as torch tensors."""
    xs = [as_torch(f) for f in fields]
    fill_tensors = None
    if size is not None:
        import torch

        # torch.full, not a copy from the host: a fill kernel is captured by CUDA graphs.
        fill_tensors = [torch.full((1,), np.asarray(v).item(), dtype=x.dtype, device=x.device)
                        for v, x in zip(fills, xs)]
    values, count = compact_fields(xs, as_torch(mask), size=size, fills=fill_tensors)
    return tuple(values), count


def partition(fields: tuple, mask: ArrayRef):
    """One-pass stable partition (:func:`partition_fields`): ``(values, count)`` as torch tensors."""
    values, count = partition_fields([as_torch(f) for f in fields], as_torch(mask))
    return tuple(values), count
