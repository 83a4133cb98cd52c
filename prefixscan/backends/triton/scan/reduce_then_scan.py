"""Strategy ``reduce_then_scan``: Merrill & Grimshaw 2009's two-level streaming
reduce-then-scan (section 3.4.3).

A fixed grid of C blocks, C = SMs x the resident blocks of the scan kernel (at
most :data:`RTS_BLOCKS_PER_SM`; ``RoutingPolicy.interpreter_blocks`` in the
interpreter), block c owning a contiguous range of the (group, tile) sequence.
Kernel 1 (:func:`rts_reduce_kernel`) reduces each range to one partial per
column (of the part after the last group start in it) and a head flag; kernel
2 (:func:`rts_carry_kernel`), one program, scans the C partials with a
segmented ``tl.associative_scan``; kernel 3 (:func:`rts_scan_kernel`) re-reads
each range and scans it tile by tile, seeded with its carry.  Traffic 3n + O(C);
auxiliary memory O(C x KB); three launches whatever n.  Merrill & Grimshaw tuned
C to the resident blocks of their GPU (C = 150 on 30 SMs, section 4.3.2).
Deterministic: the grid depends only on the device and the kernel
(docs/design/strategies.md).
"""

from __future__ import annotations


import triton
import triton.language as tl

from ....caches import register_cache
from ..device.combine import generated_jit
from ..device.tiles import _fn, _load_fields, _ordered_reduce, _scalars, _scan_tile, _store_fields, _where
from .job import ScanJob
from ..planning.policy import current_policy
from .strategy_blocks import (_bcast, _entries, _load_tile, _place, _seed, job_geometry, last_plan,
                              launch_strategy_kernel, multiprocessors, pick, pow2, resident_blocks, single_tile,
                              strategy_constexprs)

__all__ = ["launch", "segmented", "rts_reduce_kernel", "rts_carry_kernel", "rts_scan_kernel", "RTS_BLOCKS_PER_SM",
           "RTS_MAX_PARTIALS"]

# Upper bound on the programs per SM; the scan kernel's occupancy (registers,
# shared memory, threads) may allow fewer.
RTS_BLOCKS_PER_SM = 8
RTS_MAX_PARTIALS = 8192  # C x KB: the partials one program of kernel 2 scans in registers


@triton.jit(do_not_specialize=["col_blocks", "tiles", "total", "C"])
def rts_reduce_kernel(x_ptrs, ident_ptrs, part_ptrs, head_ptr, M, K, col_blocks, tiles, total, C,
                      PAIR: tl.constexpr, FLAT: tl.constexpr, COMMUTATIVE: tl.constexpr,
                      REVERSE: tl.constexpr, BACKWARD: tl.constexpr, MULTI_LANE: tl.constexpr,
                      EXACT_K: tl.constexpr, ROWS: tl.constexpr, KB: tl.constexpr):
    """Kernel 1: block c reduces tiles [c*total/C, (c+1)*total/C) of the (group, tile)
    sequence: its partial is the reduction of the range after the last group start
    in it (head flag set when there is one)."""
    c = tl.program_id(0).to(tl.int64)
    start = c * total // C
    end = (c + 1) * total // C
    ident = _scalars(ident_ptrs, 0)
    stride = KB if EXACT_K else K
    acc = _seed(ident_ptrs, 0, 0, K, ident, c < 0, False, KB)  # identity, scalar or [KB]
    head = c < 0
    v = start
    while v < end:
        group = v // tiles
        tile = v - group * tiles
        lane = group // col_blocks
        cblock = group - lane * col_blocks
        base = lane * M * stride if MULTI_LANE else 0
        pos, inside, prev, prev_ok = _place(tile, cblock, M, stride, ROWS, KB, REVERSE, BACKWARD)
        x = _load_fields(x_ptrs, base + pos, inside, ident)
        agg = _ordered_reduce(x, FLAT, COMMUTATIVE)
        acc = PAIR(_where(tile == 0, ident, acc), agg)
        head = head | (tile == 0)
        v += 1
    _store_fields(part_ptrs, _entries(c, KB), acc, c >= 0)
    tl.store(head_ptr + c, head.to(tl.int32))


@triton.jit(do_not_specialize=["C"])
def rts_carry_kernel(part_ptrs, head_ptr, ident_ptrs, C, SEG: tl.constexpr, CP: tl.constexpr, KB: tl.constexpr):
    """Kernel 2 (one program): segmented inclusive scan of the C partials, restarting
    at every block whose range holds a group start, in place."""
    ident = _scalars(ident_ptrs, 0)
    idx = tl.arange(0, CP)
    valid = idx < C
    head = tl.load(head_ptr + idx, mask=valid, other=0)
    if KB == 1:
        entry = idx
        mask = valid
    else:
        entry = idx[:, None] * KB + tl.arange(0, KB)[None, :]
        mask = valid[:, None] & (entry >= 0)
        head = tl.broadcast_to(head[:, None], [CP, KB])
    parts = _load_fields(part_ptrs, entry, mask, ident)
    scanned = tl.associative_scan((head,) + parts, 0, _fn(SEG))
    out = ()
    for i in tl.static_range(len(parts)):
        out = out + (scanned[i + 1],)
    _store_fields(part_ptrs, entry, out, mask)


@triton.jit(do_not_specialize=["col_blocks", "tiles", "total", "C"])
def rts_scan_kernel(x_ptrs, y_ptrs, ident_ptrs, init_ptrs, part_ptrs, M, K, col_blocks, tiles, total, C,
                    PAIR: tl.constexpr, FLAT: tl.constexpr, COMMUTATIVE: tl.constexpr,
                    INCLUSIVE: tl.constexpr, REVERSE: tl.constexpr, BACKWARD: tl.constexpr,
                    HAS_INIT: tl.constexpr, MULTI_LANE: tl.constexpr, EXACT_K: tl.constexpr,
                    ROWS: tl.constexpr, KB: tl.constexpr, RAKE: tl.constexpr):
    """Kernel 3: block c re-reads its range and scans it tile by tile, seeded with the
    init of its first group combined with the scanned partial of block c - 1
    when its range starts inside a group."""
    c = tl.program_id(0).to(tl.int64)
    start = c * total // C
    end = (c + 1) * total // C
    ident = _scalars(ident_ptrs, 0)
    stride = KB if EXACT_K else K
    inner = (start % tiles) != 0  # the range starts inside a group: carry from block c - 1
    entry = _entries(c - 1, KB)
    if KB == 1:
        carried = _load_fields(part_ptrs, entry, inner, ident)
    else:
        carried = _load_fields(part_ptrs, entry, inner & (entry >= 0), ident)
    group0 = start // tiles
    lane0 = group0 // col_blocks
    prefix = PAIR(_seed(init_ptrs, lane0, group0 - lane0 * col_blocks, K, ident, inner, HAS_INIT, KB), carried)
    v = start
    while v < end:
        group = v // tiles
        tile = v - group * tiles
        lane = group // col_blocks
        cblock = group - lane * col_blocks
        base = lane * M * stride if MULTI_LANE else 0
        prefix = _where(tile == 0, _seed(init_ptrs, lane, cblock, K, ident, tile == 0, HAS_INIT, KB), prefix)
        x, scan_in, pos, inside = _load_tile(x_ptrs, base, tile, cblock, M, stride, ident, INCLUSIVE, REVERSE,
                                             BACKWARD, ROWS, KB)
        agg = _ordered_reduce(x, FLAT, COMMUTATIVE)
        scanned = _scan_tile(scan_in, ident, PAIR, FLAT, BACKWARD, RAKE)
        _store_fields(y_ptrs, base + pos, PAIR(_bcast(prefix, KB), scanned), inside)
        prefix = PAIR(prefix, agg)
        v += 1


_segmented_cache: dict = {}
register_cache("prefixscan.backends.triton.scan.reduce_then_scan.segmented", _segmented_cache.clear)


def segmented(flat, nfields: int):
    """``SEG(ha, a0.., hb, b0..)``: the segmented form of ``flat`` for
    ``tl.associative_scan`` (a set head flag hb restarts the scan at b), generated
    like combine.py's adapters because the number of fields varies."""
    key = (flat, nfields)
    fn = _segmented_cache.get(key)
    if fn is not None:
        return fn
    a = [f"a{i}" for i in range(nfields)]
    b = [f"b{i}" for i in range(nfields)]
    picks = [f"tl.where(hb != 0, b{i}, r{f'[{i}]' if nfields > 1 else ''})" for i in range(nfields)]
    body = (f"    r = FLAT({', '.join(a + b)})\n"
            f"    return ha | hb, {', '.join(picks)}")
    fn = _segmented_cache[key] = generated_jit("segmented", f"ha, {', '.join(a)}, hb, {', '.join(b)}", body,
                                               {"FLAT": flat})
    return fn


def launch(job: ScanJob) -> None:
    """Merrill & Grimshaw's two-level streaming reduce-then-scan over a fixed grid of C blocks."""
    import torch

    g = job_geometry(job, "reduce_then_scan")
    if single_tile("reduce_then_scan", job, g):
        return
    xs, ys, idents, inits = job.xs, job.ys, job.idents, job.inits
    B, M, K, device, interpreter = job.B, job.M, job.K, job.device, job.interpreter
    total = B * g.col_blocks * g.tiles
    c = strategy_constexprs(job, g, job.config.inclusive, job.config.reverse)
    c.update(HAS_INIT=inits is not None)
    init_arg = inits if inits is not None else idents
    scan_keys = pick(c, "PAIR", "FLAT", "COMMUTATIVE", "INCLUSIVE", "REVERSE", "BACKWARD", "HAS_INIT",
                     "MULTI_LANE", "EXACT_K", "ROWS", "KB", "RAKE")
    if interpreter:
        C = current_policy().interpreter_blocks
    else:
        # C = SMs x the blocks of the scan kernel (the heavier of the two) that fit
        # on an SM: the grid saturates the GPU in one wave.
        probe = (xs, ys, idents, init_arg, idents, M, K, g.col_blocks, g.tiles, total, 1)
        per_sm = min(RTS_BLOCKS_PER_SM, resident_blocks(rts_scan_kernel, probe, scan_keys, g.num_warps, device))
        C = multiprocessors(device) * per_sm
    C = max(1, min(C, total, RTS_MAX_PARTIALS // g.kb))
    parts = tuple(torch.empty(C * g.kb, dtype=a, device=device) for a in job.accs)
    heads = torch.empty(C, dtype=torch.int32, device=device)
    launch_strategy_kernel(job, rts_reduce_kernel, C, g.num_warps,
                           (xs, idents, parts, heads, M, K, g.col_blocks, g.tiles, total, C),
                           pick(c, "PAIR", "FLAT", "COMMUTATIVE", "REVERSE", "BACKWARD", "MULTI_LANE", "EXACT_K",
                                "ROWS", "KB"), (M, K))
    launch_strategy_kernel(job, rts_carry_kernel, 1, 1 if interpreter else 8, (parts, heads, idents, C),
                           dict(SEG=segmented(job.flat, len(job.accs)), CP=pow2(C), KB=g.kb), ())
    launch_strategy_kernel(job, rts_scan_kernel, C, g.num_warps,
                           (xs, ys, idents, init_arg, parts, M, K, g.col_blocks, g.tiles, total, C), scan_keys,
                           (M, K))
    last_plan["reduce_then_scan"] = dict(grid=C, tile=g.rows * g.kb, tiles=total, launches=3)
