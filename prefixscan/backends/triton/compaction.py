"""Stream compaction and stable partition in one pass: kernels and their launcher.

The single-pass selection of CUB's ``DeviceSelect::Flagged`` and
``DevicePartition::Flagged`` (Merrill & Garland 2016, "Single-pass Parallel
Prefix Scan with Decoupled Look-back", section 4, applied to the mask's counts):

* each program takes a tile id from an atomic counter (tiles start in id order,
  so no tile waits on one that has not started), loads its mask and its values,
  counts its kept elements and publishes the count at once (state A);
* it folds its predecessors' counts by decoupled look-back up to the nearest
  inclusive prefix (state P), publishes its own inclusive prefix, and
* writes its kept elements at ``prefix + (exclusive count within the tile)``.

Each element is read once and each kept element written once: the traffic of
``x[mask]`` without its separate count and index passes.  A status entry is one
64-bit word, the count shifted left by two and the state in the low bits, so
one relaxed atomic reads an entry and counts past 2^31 fit.  The words live in a
scratch buffer zeroed per call (one memset of 8 bytes per tile, a thousandth of
the data) rather than the epoch-tagged buffers of :mod:`.status`: the epoch and
tile base of those are host values, which a replayed CUDA graph would repeat,
whereas a zeroed buffer makes every launch self-contained (graph capture,
``torch.compile``).

Partition (stable, kept first) needs the total count up front: a rejected
element at global index i goes to ``total + i - (kept before i)`` (the
complementary count), so the mask is reduced first (one read of the mask, a
fifth of the bytes for float32) and the same kernel then writes every element.

With a ``limit`` (``compact(size=k)``), kept elements past the first ``limit``
are dropped and a second small launch writes the fill value after the count
(the count is on the device: nothing waits for the host).
docs/design/compaction.md has the design and the measurements.
"""

from __future__ import annotations

from dataclasses import dataclass

import triton
import triton.language as tl

from ..._environment import interpreter_mode
from . import runtime
from .runtime import Launch, current_stream

__all__ = ["CompactionTile", "compact_fields", "partition_fields", "default_tile"]

STATE_AGGREGATE = tl.constexpr(1)
STATE_PREFIX = tl.constexpr(2)


@dataclass(frozen=True)
class CompactionTile:
    """One program's work: ``block`` elements, ``num_warps`` warps, ``window``
    status entries read per look-back step; ``sparse_loads``: load a value only
    where the mask keeps it (sectors without a kept element are never read)."""

    block: int
    num_warps: int
    window: int = 32
    sparse_loads: bool = False
    #: > 0: each thread holds rows of this many consecutive elements (the tile a
    #: [block / rows, rows] array): the mask is counted and scanned along a row in
    #: registers and across rows by one warp scan per row, and kept elements are
    #: stored from the rows (no shared-memory exchange).  0: the 1-D tile, whose
    #: scatter layout (one element per thread per store) Triton reaches through
    #: shared memory for the mask, its flags and the values.
    rows: int = 0
    #: With ``rows``: a tile keeping at least an eighth of its elements (and every
    #: partition tile) stores through the one-element-per-thread layout (a warp's
    #: store covers 32 consecutive elements: whole sectors at high density)
    #: instead of from the rows (one sector per kept element).
    dense_stores: bool = True


#: The interpreter's tile: small, so that tests cross many tile boundaries.
INTERPRETER_TILE = CompactionTile(block=32, num_warps=1, window=4)


def default_tile(nbytes: int, interpreter: bool, partition: bool = False) -> CompactionTile:
    """The tile for elements of ``nbytes`` bytes over all fields (values only).

    Compaction of 4- and 8-byte values takes row tiles (H100, 2^27, 1% / 50% / 99%
    kept, ms: float32 rows of 4 0.58 / 0.66 / 0.73 against the 1-D tile's 0.79 / 0.77 /
    0.82; int64 rows of 8 0.70 / 0.90 / 1.09 against 1.27 / 1.13 / 1.23;
    docs/design/compaction.md).  Partition keeps the 1-D tile: row tiles were not
    measured for it, nor for other widths."""
    if interpreter:
        return INTERPRETER_TILE
    if not partition and nbytes in (4, 8):
        return CompactionTile(block=4096, num_warps=8, rows=4 if nbytes == 4 else 8)
    # About 32 bytes of values per thread at 8 warps: 16 KB of values per tile.
    block = 4096 if nbytes <= 4 else 2048 if nbytes <= 8 else 1024
    return CompactionTile(block=block, num_warps=8)


@triton.jit
def _count_prefix(status_ptr, tile, WINDOW: tl.constexpr):
    """The kept elements of the tiles before ``tile`` (> 0): fold the predecessors'
    status words back to the nearest inclusive prefix (Merrill & Garland 2016,
    section 4.2); an entry not ready yet (state 0) makes the step read again."""
    rows = tl.arange(0, WINDOW)
    end = tile  # the window is [end - WINDOW, end)
    acc = tile * 0
    done = 0
    while done == 0:
        widx = end - WINDOW + rows
        valid = widx >= 0
        # Relaxed atomics, not loads: an atomic is never duplicated by the
        # compiler (docs/design/status-words.md).
        word = tl.where(valid, tl.atomic_add(status_ptr + widx, 0, mask=valid, sem="relaxed"), 0)
        state = (word & 3).to(tl.int32)
        stops = (state != STATE_AGGREGATE) | ~valid
        key = tl.max(tl.where(stops, rows * 2 + (valid & (state == STATE_PREFIX)).to(tl.int32), -2), 0)
        stop = key >> 1
        found = (key & 1) == 1
        take = valid & ((rows > stop) | ((rows == stop) & found))
        acc += tl.sum(tl.where(take, word >> 2, 0), 0)
        end = tl.where(stop >= 0, end - WINDOW + stop + 1, end - WINDOW)
        done = found.to(tl.int32)
    return acc


@triton.jit
def _publish(status_ptr, tile, count, STATE: tl.constexpr):
    tl.atomic_xchg(status_ptr + tile, (count.to(tl.int64) << 2) | STATE, sem="relaxed")


@triton.jit
def _load_tile(x_ptrs, mask_ptr, start, rank, n, FULL: tl.constexpr, PARTITION: tl.constexpr,
               SPARSE: tl.constexpr):
    """The mask (as booleans and as 0/1), which elements lie inside x, and every field's values
    at ``start + rank`` (``rank`` of any shape); ``SPARSE`` compaction loads only the
    kept values."""
    inside = start + rank < n
    if FULL:
        keep = tl.load((mask_ptr + start) + rank) != 0
    else:
        keep = tl.load((mask_ptr + start) + rank, mask=inside, other=0) != 0
    flags = keep.to(tl.int32)
    values = ()
    for i in tl.static_range(len(x_ptrs)):
        if SPARSE and not PARTITION:
            v = tl.load((x_ptrs[i] + start) + rank, mask=keep)
        elif FULL:
            v = tl.load((x_ptrs[i] + start) + rank)
        else:
            v = tl.load((x_ptrs[i] + start) + rank, mask=inside)
        values = values + (v,)
    return keep, flags, inside, values


@triton.jit
def _tile_prefix(status_ptr, tile, kept, WINDOW: tl.constexpr, SINGLE: tl.constexpr):
    """Publish the tile's count and return the kept elements of the tiles before it
    (int64): its aggregate, then the look-back, then its inclusive prefix."""
    prefix = tile * 0
    if not SINGLE:
        if tile == 0:
            _publish(status_ptr, tile, kept, STATE_PREFIX)
        else:
            _publish(status_ptr, tile, kept, STATE_AGGREGATE)
            prefix = _count_prefix(status_ptr, tile, WINDOW)
            _publish(status_ptr, tile, prefix + kept, STATE_PREFIX)
    return prefix


@triton.jit
def _scatter(out_ptrs, dst, values, inside, FULL: tl.constexpr):
    """Every field's values to ``dst`` (partition writes each element once);
    ``inside`` masks a partial tile's elements past ``n``."""
    for i in tl.static_range(len(out_ptrs)):
        if FULL:
            tl.store(out_ptrs[i] + dst, values[i])
        else:
            tl.store(out_ptrs[i] + dst, values[i], mask=inside)


@triton.jit
def _select_tile(x_ptrs, out_ptrs, mask_ptr, status_ptr, count_ptr, n, limit, tile, num_tiles,
                 BLOCK: tl.constexpr, WINDOW: tl.constexpr, FULL: tl.constexpr, SINGLE: tl.constexpr,
                 PARTITION: tl.constexpr, LIMITED: tl.constexpr, SPARSE: tl.constexpr):
    """Tile ``tile`` of :func:`select_kernel`; ``FULL``: every element inside x."""
    start = tile * BLOCK  # 64-bit scalar; per-element offsets stay 32-bit
    rank = tl.arange(0, BLOCK)
    keep, flags, inside, values = _load_tile(x_ptrs, mask_ptr, start, rank, n, FULL, PARTITION, SPARSE)
    kept = tl.sum(flags, 0)
    prefix = _tile_prefix(status_ptr, tile, kept, WINDOW, SINGLE)
    local = tl.cumsum(flags, 0) - flags  # kept elements before each one in the tile
    if PARTITION:
        # Kept: prefix + local.  Rejected: after all kept ones, in order: total +
        # (rejected before it) = total + start + rank - (prefix + local).
        total = tl.load(count_ptr)
        dst = tl.where(keep, prefix + local, (total + start - prefix) + (rank - local))
        _scatter(out_ptrs, dst, values, inside, FULL)
    else:
        if LIMITED:
            keep = keep & (prefix + local < limit)
        for i in tl.static_range(len(out_ptrs)):
            tl.store((out_ptrs[i] + prefix) + local, values[i], mask=keep)
        if tile == num_tiles - 1:
            tl.store(count_ptr, prefix + kept)


@triton.jit
def _select_rows_tile(x_ptrs, out_ptrs, mask_ptr, status_ptr, count_ptr, n, limit, tile, num_tiles,
                      BLOCK: tl.constexpr, WINDOW: tl.constexpr, FULL: tl.constexpr, SINGLE: tl.constexpr,
                      PARTITION: tl.constexpr, LIMITED: tl.constexpr, SPARSE: tl.constexpr, ROWS: tl.constexpr,
                      DENSE: tl.constexpr):
    """:func:`_select_tile` over a [BLOCK / ROWS, ROWS] tile: a thread's row of mask
    bytes and values arrive as vectors in one layout, the row is counted and
    scanned in registers and the rows' counts by one scan across threads."""
    start = tile * BLOCK
    rank = tl.arange(0, BLOCK // ROWS)[:, None] * ROWS + tl.arange(0, ROWS)[None, :]
    keep, flags, inside, values = _load_tile(x_ptrs, mask_ptr, start, rank, n, FULL, PARTITION, SPARSE)
    row_kept = tl.sum(flags, 1)
    kept = tl.sum(row_kept, 0)
    prefix = _tile_prefix(status_ptr, tile, kept, WINDOW, SINGLE)
    if PARTITION:
        local = (tl.cumsum(row_kept, 0) - row_kept)[:, None] + (tl.cumsum(flags, 1) - flags)
        total = tl.load(count_ptr)
        dst = tl.where(keep, prefix + local, (total + start - prefix) + (rank - local))
        if DENSE:  # every element is written: the warp-contiguous layout
            flat = ()
            for i in tl.static_range(len(values)):
                flat = flat + (tl.reshape(values[i], (BLOCK,)),)
            if FULL:
                _scatter(out_ptrs, tl.reshape(dst, (BLOCK,)), flat, inside, FULL)
            else:
                _scatter(out_ptrs, tl.reshape(dst, (BLOCK,)), flat, tl.reshape(inside, (BLOCK,)), FULL)
        else:
            _scatter(out_ptrs, dst, values, inside, FULL)
    else:
        if kept > 0:  # an empty tile only publishes its count
            local = (tl.cumsum(row_kept, 0) - row_kept)[:, None] + (tl.cumsum(flags, 1) - flags)
            if LIMITED:
                keep = keep & (prefix + local < limit)
            if DENSE and kept * 8 >= BLOCK:
                local_flat = tl.reshape(local, (BLOCK,))
                keep_flat = tl.reshape(keep, (BLOCK,))
                for i in tl.static_range(len(out_ptrs)):
                    tl.store((out_ptrs[i] + prefix) + local_flat, tl.reshape(values[i], (BLOCK,)), mask=keep_flat)
            else:
                for i in tl.static_range(len(out_ptrs)):
                    tl.store((out_ptrs[i] + prefix) + local, values[i], mask=keep)
        if tile == num_tiles - 1:
            tl.store(count_ptr, prefix + kept)


@triton.jit(do_not_specialize=["limit", "num_tiles"])
def select_kernel(x_ptrs, out_ptrs, mask_ptr, scratch_ptr, count_ptr, n, limit, num_tiles,
                  BLOCK: tl.constexpr, WINDOW: tl.constexpr, SINGLE: tl.constexpr, PARTITION: tl.constexpr,
                  LIMITED: tl.constexpr, SPARSE: tl.constexpr, ROWS: tl.constexpr, DENSE: tl.constexpr):
    """Compact (or, with ``PARTITION``, partition) the ``n`` elements of the fields
    ``x_ptrs`` by the uint8 mask into ``out_ptrs``; ``scratch_ptr``: zeroed int64
    words, the tile counter then one status word per tile.  Compaction writes the
    count to ``count_ptr``; partition reads the total there."""
    if SINGLE:
        tile = tl.program_id(0).to(tl.int64)
    else:
        tile = tl.atomic_add(scratch_ptr, 1, sem="relaxed")  # an id, nothing to order
    status_ptr = scratch_ptr + 1
    if ROWS > 0:
        if (tile + 1) * BLOCK <= n:
            _select_rows_tile(x_ptrs, out_ptrs, mask_ptr, status_ptr, count_ptr, n, limit, tile, num_tiles,
                              BLOCK, WINDOW, True, SINGLE, PARTITION, LIMITED, SPARSE, ROWS, DENSE)
        else:
            _select_rows_tile(x_ptrs, out_ptrs, mask_ptr, status_ptr, count_ptr, n, limit, tile, num_tiles,
                              BLOCK, WINDOW, False, SINGLE, PARTITION, LIMITED, SPARSE, ROWS, DENSE)
    elif (tile + 1) * BLOCK <= n:
        _select_tile(x_ptrs, out_ptrs, mask_ptr, status_ptr, count_ptr, n, limit, tile, num_tiles,
                     BLOCK, WINDOW, True, SINGLE, PARTITION, LIMITED, SPARSE)
    else:
        _select_tile(x_ptrs, out_ptrs, mask_ptr, status_ptr, count_ptr, n, limit, tile, num_tiles,
                     BLOCK, WINDOW, False, SINGLE, PARTITION, LIMITED, SPARSE)


@triton.jit(do_not_specialize=["limit"])
def fill_tail_kernel(out_ptrs, fill_ptrs, count_ptr, limit, BLOCK: tl.constexpr):
    """``out[count:limit] = fill`` for every field, ``count`` read on the device;
    programs wholly before the count write nothing."""
    start = tl.program_id(0).to(tl.int64) * BLOCK
    count = tl.load(count_ptr)
    if start + BLOCK > count:
        rank = tl.arange(0, BLOCK)
        where = (start + rank >= count) & (start + rank < limit)
        for i in tl.static_range(len(out_ptrs)):
            fill = tl.load(fill_ptrs[i] + rank * 0)  # the fill's bits, broadcast
            tl.store((out_ptrs[i] + start) + rank, fill, mask=where)


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


def _launch_select(words, mask8, count, *, outs, limit: int, partition: bool, tile: CompactionTile | None):
    """Launch :func:`select_kernel`; ``count`` None: the count lives in the first
    word of the zeroed scratch (one allocation and one memset per call, not two)
    and that 0-d view is returned, else ``count`` itself."""
    import torch

    n = mask8.numel()
    device = mask8.device
    interpreter = interpreter_mode()
    if tile is None:
        tile = default_tile(sum(w.element_size() for w in words), interpreter, partition)
    block = tile.block
    single = n <= block
    if single:
        block = max(16, 1 << (n - 1).bit_length())
    num_tiles = -(-n // block)
    if count is None:  # [count, tile counter, status words...] zeroed at once
        words_zeroed = torch.zeros(1 if single else num_tiles + 2, dtype=torch.int64, device=device)
        count = words_zeroed[0]
        scratch = count if single else words_zeroed[1:]
    else:
        scratch = count if single else torch.zeros(num_tiles + 1, dtype=torch.int64, device=device)
    stream = current_stream(device) if device.type == "cuda" else 0
    args = (tuple(words), tuple(outs), mask8, scratch, count, n, limit, num_tiles)
    constexprs = dict(BLOCK=block, WINDOW=tile.window, SINGLE=single, PARTITION=partition,
                      LIMITED=limit < n, SPARSE=tile.sparse_loads, ROWS=min(tile.rows, block),
                      DENSE=tile.dense_stores)
    runtime.launch_kernel(Launch(select_kernel, num_tiles, tile.num_warps, stream, interpreter, args, constexprs,
                                 (n,)))
    return count


def _fill_tail(outs, fills, count, limit: int, tile: CompactionTile | None):
    interpreter = interpreter_mode()
    block = 32 if interpreter else 1024
    device = count.device
    stream = current_stream(device) if device.type == "cuda" else 0
    runtime.launch_kernel(Launch(fill_tail_kernel, -(-limit // block), 1 if interpreter else 4, stream, interpreter,
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
            _fill_tail(outs, fill_words, count, size, tile)
        return _join_fields(outs, flat, layout), count
    kept = int(count)  # the one synchronization: the length of the result
    if kept * VIEW_FRACTION < n:
        outs = [o[:kept].clone() for o in outs]
    else:
        outs = [o[:kept] for o in outs]
    return _join_fields(outs, flat, layout), count


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
    count = mask8.sum(dtype=torch.int64) if n else torch.zeros((), dtype=torch.int64, device=device)
    if n:
        _launch_select(words, mask8, count, outs=outs, limit=n, partition=True, tile=tile)
    return _join_fields(outs, flat, layout), count
