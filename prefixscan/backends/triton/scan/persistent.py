"""Strategy ``persistent``: a fixed grid of resident programs handing carries on
through a ring of tagged slots (SAM, Maleki, Yang & Burtscher, PLDI 2016, section 2.2).

G resident programs (SMs x occupancy, at most :data:`PERSISTENT_BLOCKS_PER_SM`
per SM; ``RoutingPolicy.interpreter_blocks`` in the interpreter); program b
scans chunks (tiles) b, b+G, b+2G, .. in order.  For each chunk it publishes the
tile's total into a circular buffer of ``SLOTS`` = pow2(3G) entries (G: the most
programs that fit, whatever the grid of a smaller scan), tagged with the chunk's
sequence number, then forms its carry from its own previous chunk's inclusive
prefix and the totals of the G - 1 chunks in between that belong to its group,
read LOOK at a time in vector loads, waiting on tags that are not there yet.
Traffic ~2n + G entries per chunk (L2 hits); auxiliary memory O(G x KB),
whatever n.

Slot reuse.  Every chunk waits until all of its G - 1 predecessors have
published, even those of another group (their values are then masked).  Chunk
w publishes only after its program finished chunk w - G, so when chunk y has
passed its wait every chunk <= y - G has finished.  The program publishing
chunk c + S has finished chunk c + S - G, hence all chunks <= c + S - 2G: for
S >= 3G - 1 every reader of chunk c (chunks c+1 .. c+G-1) is done with slot c
mod S before it is overwritten.  The tag (a 31-bit sequence number that grows
across calls on one device and stream) tells a reader the value it waits for
from the one S chunks earlier or from an earlier call, so no memset is needed
between calls.  Tags wrap after 2^31 chunks, and the buffers are zeroed then.

Forward progress.  Programs wait on one another, so all G must be resident at
once: G is capped by the occupancy estimated from the compiled kernel
(registers, shared memory, warps) and the kernel is launched as a cooperative
grid, which CUDA refuses rather than running part of it (the launcher then
halves G).  A wait gives up after :data:`SPIN_LIMIT` polls and counts the
failure in an error word (:func:`persistent_errors`): a bug yields wrong results
and a nonzero count, not a hung GPU.  The other strategies never wait on
another program (the look-back kernels take tile ids from an atomic counter,
Merrill & Garland 2016).  Deterministic: carries combine in an order fixed by the
sizes and the grid (docs/design/strategies.md).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import triton
import triton.language as tl

from ....caches import register_cache
from ..device.tiles import _load_fields, _ordered_reduce, _scalars, _scan_tile, _store_fields, _where
from ..engine.protocol import bits32, from_bits32, read_word
from .job import ScanJob
from ..planning.policy import current_policy
from .strategy_blocks import (_bcast, _entries, _load_tile, _seed, job_geometry, last_plan, launch_strategy_kernel,
                              multiprocessors, pow2, resident_blocks, single_tile, strategy_constexprs)

__all__ = ["launch", "persistent_errors", "persistent_kernel", "PERSISTENT_BLOCKS_PER_SM", "SPIN_LIMIT"]


@triton.jit
def _pack_word(value, tag):
    """``tag`` in the high 32 bits of an int64 word, the bits of ``value`` (<= 32) in the low ones."""
    return (tag.to(tl.int64) << 32) | bits32(value).to(tl.int64)


@triton.jit
def _word_value(word, ACC: tl.constexpr):
    """The value of ``ACC`` type in the low bits of a packed word (see :func:`_pack_word`)."""
    return from_bits32((word & 0xFFFFFFFF).to(tl.uint32), ACC)

# Upper bound on the programs per SM; the kernel's occupancy may allow fewer.  SAM
# launches exactly the resident blocks.
PERSISTENT_BLOCKS_PER_SM = 8
# Polls of a missing ring entry before the persistent kernel gives up on it
# (counted in the ring's error word; see persistent_errors).  All G programs are
# co-resident (cooperative launch) and a predecessor publishes its total right
# after loading its tile, so a legitimate wait lasts microseconds; 2^20 polls
# of up to 512 entries from L2 take about a second.  Polls only count while the
# program runs, so a GPU shared by time slicing does not trip it.
SPIN_LIMIT = 1 << 20
INTERPRETER_SPIN_LIMIT = 4  # the interpreter runs programs in order: never needs to wait
_TAG_LIMIT = (1 << 31) - 1  # tags are int32 sequence numbers


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
        word = read_word(word_ptr + entry, vmask)
        ready = ~vmask | ((word >> 32).to(tl.int32) == want)
        while (tl.min(ready.to(tl.int32)) == 0) & (spins < spin_limit):
            word = read_word(word_ptr + entry, vmask)
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
def persistent_kernel(io, ring, shape, col_blocks, tiles, total, G, round0, rounds, tag_base, spin_limit,
                      PAIR: tl.constexpr, FLAT: tl.constexpr, COMMUTATIVE: tl.constexpr,
                      INCLUSIVE: tl.constexpr, REVERSE: tl.constexpr, BACKWARD: tl.constexpr,
                      HAS_INIT: tl.constexpr, PACKED: tl.constexpr, MULTI_LANE: tl.constexpr,
                      EXACT_K: tl.constexpr, SAVE_CARRY: tl.constexpr, ROWS: tl.constexpr, KB: tl.constexpr,
                      SLOTS: tl.constexpr, LOOK: tl.constexpr, RAKE: tl.constexpr):
    """Program b scans chunks b + rG, r in [round0, round0 + rounds), of the (group,
    tile) sequence; its carry is its previous chunk's inclusive prefix (when in the
    same group) plus the totals of the chunks in between, read from the ring.
    Arguments in groups: ``io`` (x, y, identity, init field tuples), ``ring`` (tagged
    words, flags, slot values, saved carries, the error counter), ``shape`` (M, K:
    specialized, as Triton specializes every integer inside a tuple); the schedule's
    counts, which change from call to call, not."""
    x_ptrs, y_ptrs, ident_ptrs, init_ptrs = io
    word_ptr, flag_ptr, slot_ptrs, carry_ptrs, err_ptr = ring
    M, K = shape
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

    def reserve(self, entries: int, chunks: int, accs, packed: bool):
        """Buffers of at least ``entries`` entries, and the first tag of ``chunks``
        new chunks: tags grow across calls, so an entry left by an earlier call
        (or S chunks earlier) never matches, and no memset is needed."""
        import torch

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
                self.words = torch.zeros(pow2(max(entries, 1024)), dtype=torch.int64, device=self.device)
            words, flags, vals = self.words, self.words, (self.words,)
        else:
            if self.flags is None or self.flags.numel() < entries:
                self.flags = torch.zeros(pow2(max(entries, 1024)), dtype=torch.int32, device=self.device)
            vals = []
            for i, a in enumerate(accs):
                buf = self.values.get((i, a))
                if buf is None or buf.numel() < entries:
                    buf = self.values[(i, a)] = torch.empty(pow2(max(entries, 1024)), dtype=a, device=self.device)
                vals.append(buf)
            words, flags, vals = self.flags, self.flags, tuple(vals)
        base = self.tag_base
        self.tag_base += chunks
        return words, flags, vals, base


_rings: dict = {}
_persistent_grids: dict = {}  # (device, warps, constexprs) -> the most co-resident programs
register_cache("prefixscan.backends.triton.scan.persistent.rings", _rings.clear)
register_cache("prefixscan.backends.triton.scan.persistent.grids", _persistent_grids.clear)


def persistent_errors() -> int:
    """Ring waits that gave up after SPIN_LIMIT polls, over all devices and streams
    (synchronizes).  Nonzero means a persistent scan returned wrong results: a
    bug, or programs that were not all resident.  Tests on the GPU check it."""
    return sum(int(r.errors.sum().item()) for r in _rings.values() if r.errors is not None)


def launch(job: ScanJob) -> None:
    """SAM-style persistent scan: G resident programs, carries through a ring of totals."""
    g = job_geometry(job, "persistent")
    if single_tile("persistent", job, g):
        return
    xs, ys, idents, inits, accs = job.xs, job.ys, job.idents, job.inits, job.accs
    B, M, K, device, stream = job.B, job.M, job.K, job.device, job.stream
    total = B * g.col_blocks * g.tiles
    c = strategy_constexprs(job, g, job.config.inclusive, job.config.reverse)
    c.update(HAS_INIT=inits is not None, PACKED=g.packed)
    ring = _rings.get((device, stream))
    if ring is None:
        ring = _rings[(device, stream)] = _Ring(device)
    init_arg = inits if inits is not None else idents

    def constexprs(G: int, save: bool) -> dict:
        # SAM: a little over 3G slots, a power of two (section 2.2); the G - 1
        # predecessors are read LOOK at a time (fewer rows when KB is wide).
        return dict(c, SAVE_CARRY=save, SLOTS=pow2(3 * G), LOOK=min(pow2(max(G - 1, 1)), max(1, 512 // g.kb)))

    if job.interpreter:
        blocks = current_policy().interpreter_blocks
        G = max(1, min(blocks, total))
        # Ring and window sized for the policy's blocks even when G is smaller, as on a GPU.
        k = constexprs(max(1, blocks), G > 1)
        _launch_interpreted(job, ring, G, k, init_arg, g, total)
        return
    # Every program waits on others: all G must be resident at once.  G is capped
    # at the occupancy of the kernel (computed once per variant, with the largest
    # ring and window, which need the most registers) and the grid is launched
    # cooperatively, which CUDA refuses (an error, not a hang) when it cannot be
    # co-resident: G is then halved and the launch retried.
    key = (device, g.num_warps, tuple(c.items()))
    G_max = _persistent_grids.get(key)
    if G_max is None:
        sms = multiprocessors(device)
        G_max = sms * PERSISTENT_BLOCKS_PER_SM
        for _ in range(3):
            k = dict(constexprs(G_max, False), launch_cooperative_grid=True)
            words, flags, vals, _ = ring.reserve(k["SLOTS"] * g.kb, 0, accs, g.packed)
            probe = ((xs, ys, idents, init_arg), (words, flags, vals, idents, ring.errors), (M, K),
                     g.col_blocks, g.tiles, total, G_max, 0, 1, 1, 1)
            fit = sms * min(PERSISTENT_BLOCKS_PER_SM, resident_blocks(persistent_kernel, probe, k, g.num_warps,
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
        words, flags, vals, tag_base = ring.reserve(k["SLOTS"] * g.kb, total, accs, g.packed)
        try:
            launch_strategy_kernel(job, persistent_kernel, G, g.num_warps,
                                   ((xs, ys, idents, init_arg), (words, flags, vals, idents, ring.errors), (M, K),
                                    g.col_blocks, g.tiles, total, G, 0, rounds, tag_base, SPIN_LIMIT), k, (),
                                   interpreter=False)
            break
        except RuntimeError:
            # The occupancy estimate was too generous (the cooperative launch
            # checks the real one).
            if G == 1:
                raise
            G_max = _persistent_grids[key] = max(1, G // 2)
    last_plan["persistent"] = dict(grid=G, tile=g.rows * g.kb, tiles=total, launches=1, slots=k["SLOTS"])


def _launch_interpreted(job: ScanJob, ring: _Ring, G: int, k: dict, init_arg, g, total: int) -> None:
    """The interpreter runs a grid's programs one after another in program-id
    order: within one launch program 0 could never see chunk G - 1 before its own
    chunk G.  So each round (chunks rG .. rG + G - 1) is one launch and every
    program's running carry waits in a G-entry buffer between launches; a
    program then only waits on chunks of earlier rounds or of lower program ids
    in its round, which have run.  With G == 1 there is nothing to wait for, and
    one launch runs every round in the kernel's own loop, as on a GPU."""
    import torch

    xs, ys, idents, M, K, device = job.xs, job.ys, job.idents, job.M, job.K, job.device
    words, flags, vals, tag_base = ring.reserve(k["SLOTS"] * g.kb, total, job.accs, g.packed)
    carries = tuple(torch.empty(G * g.kb, dtype=a, device=device) for a in job.accs) if G > 1 else idents
    rounds = -(-total // G)
    batches = [(r, 1) for r in range(rounds)] if G > 1 else [(0, rounds)]
    before = int(ring.errors.item())
    for round0, count in batches:
        launch_strategy_kernel(job, persistent_kernel, G, g.num_warps,
                               ((xs, ys, idents, init_arg), (words, flags, vals, carries, ring.errors), (M, K),
                                g.col_blocks, g.tiles, total, G, round0, count, tag_base, INTERPRETER_SPIN_LIMIT),
                               k, (), interpreter=True)
        if int(ring.errors.item()) != before:
            raise RuntimeError(f"persistent scan: a ring entry was missing in round {round0} (a bug)")
    last_plan["persistent"] = dict(grid=G, tile=g.rows * g.kb, tiles=total, launches=len(batches), slots=k["SLOTS"])
