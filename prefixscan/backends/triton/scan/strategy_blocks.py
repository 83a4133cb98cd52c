"""What the three multi-pass or fixed-grid strategies share: tile helpers, the local
tile scan, and the host side of their launches.

The strategies of :mod:`.reduce_then_scan`, :mod:`.scan_then_propagate` and
:mod:`.persistent` (Merrill & Grimshaw 2009, section 3.4; SAM, Maleki, Yang &
Burtscher, PLDI 2016, section 2.2) scan the ``(B, M, K)`` row-major layout
along M once per launch sequence (the scan path loops over orders), with the
tiles of the look-back kernels (:func:`geometry`, :func:`..planning.planner.choose_config`):
``[BLOCK]`` tiles when ``K == 1`` and ``[ROWS, KB]`` tiles (KB interleaved
columns) otherwise, so that the strategies differ only in how carries travel
between tiles.  A *group* is one lane and one block of KB columns; its tiles are
numbered in scan order (reverse scans mirror the indices or, for a commutative
operator on one column, take blocks from the end and scan them backwards in
registers).  A lane that fits one tile needs no carry: every strategy scans it
in one pass (:func:`single_tile`, :func:`stp_local_kernel` with ``SEED``).
Carries are combined on the left of the values they precede, so
non-commutative operators (affine maps, 2x2 matrices) are scanned in order.

Determinism.  The carries of these strategies are combined in an order fixed by
the sizes and, for the two fixed-grid ones, by the grid (which depends only on
the device and the kernel): floating-point results are bitwise reproducible
from run to run, so ``deterministic=True`` accepts them.

Raking (``TileConfig.raking``, :func:`..device.tiles._scan_tile`): every kernel here
and the look-back kernels scan a tile either with ``tl.associative_scan`` or by
raking, the SRTS of Merrill & Grimshaw 2009 (section 4.3.2): rows of RAKE
elements scanned serially, then the row totals, then each row combined with its
exclusive prefix.  Triton cannot pin a row to a thread (the layout after the
reshape is the compiler's), see the comment in :mod:`..device.tiles`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import triton
import triton.language as tl

from ....caches import register_cache
from ..runtime import launch as runtime
from ..device.tiles import _as_rows, _load_fields, _ordered_reduce, _scalars, _scan_tile, _store_fields, _where
from .job import ScanJob
from ..planning.planner import choose_config
from ..runtime.launch import Launch
from ..planning.tiles import raking_rows

#: What the last launch of each strategy used: {"grid": C or G (programs),
#: "tile": elements per tile, "tiles": tiles in all, "levels"/"launches"}; for the
#: benchmark's traffic model (:func:`..planning.traffic.plan`).
last_plan: dict = {}


# ---------------------------------------------------------------------------
# Tile helpers.


@triton.jit
def _place(tile, cblock, M, stride, ROWS: tl.constexpr, KB: tl.constexpr, REVERSE: tl.constexpr,
           BACKWARD: tl.constexpr):
    """Offsets within the lane of tile ``tile`` of column block ``cblock``, their mask,
    and the offsets and mask of each element's predecessor in scan order (exclusive scans).

    ``BACKWARD`` (one column, reverse, commutative): tile t is the t-th block from
    the end, loaded in ascending order and scanned backwards in registers.
    """
    if KB == 1:
        rank = tl.arange(0, ROWS)
        if BACKWARD:
            pos = M - (tile + 1) * ROWS + rank
            inside = pos >= 0
            prev = pos + 1
            prev_ok = inside & (rank != ROWS - 1)
        else:
            offs = tile * ROWS + rank
            inside = offs < M
            pos = (M - 1 - offs) if REVERSE else offs
            prev = (pos + 1) if REVERSE else (pos - 1)
            prev_ok = inside & (rank != 0)
    else:
        local = tl.arange(0, ROWS)[:, None]
        rows = tile * ROWS + local
        cols = cblock * KB + tl.arange(0, KB)[None, :]
        inside = (rows < M) & (cols < stride)
        rpos = (M - 1 - rows) if REVERSE else rows
        rprev = (rpos + 1) if REVERSE else (rpos - 1)
        pos = rpos * stride + cols
        prev = rprev * stride + cols
        prev_ok = inside & (local != 0)
    return pos, inside, prev, prev_ok


@triton.jit
def _load_tile(x_ptrs, base, tile, cblock, M, stride, ident, INCLUSIVE: tl.constexpr, REVERSE: tl.constexpr,
               BACKWARD: tl.constexpr, ROWS: tl.constexpr, KB: tl.constexpr):
    """(x, scan input, offsets, mask): the scan input is x shifted by one element in
    scan order (identity first) for exclusive scans."""
    pos, inside, prev, prev_ok = _place(tile, cblock, M, stride, ROWS, KB, REVERSE, BACKWARD)
    x = _load_fields(x_ptrs, base + pos, inside, ident)
    if INCLUSIVE:
        scan_in = x
    else:
        scan_in = _load_fields(x_ptrs, base + prev, prev_ok, ident)
    return x, scan_in, pos, inside


@triton.jit
def _bcast(prefix, KB: tl.constexpr):
    """A per-column prefix (scalar, or [KB]) shaped to combine with a tile."""
    if KB == 1:
        out = prefix
    else:
        out = _as_rows(prefix)
    return out


@triton.jit
def _seed(init_ptrs, lane, cblock, K, ident, need, HAS_INIT: tl.constexpr, KB: tl.constexpr):
    """The group's init (identity without one, or where ``need`` is False): scalar or [KB]."""
    if KB == 1:
        if HAS_INIT:
            out = _load_fields(init_ptrs, lane, need, ident)
        else:
            out = ident
    else:
        col = cblock * KB + tl.arange(0, KB)
        if HAS_INIT:
            out = _load_fields(init_ptrs, lane * K + col, need & (col < K), ident)
        else:
            out = _where(col >= 0, ident, ident)
    return out


@triton.jit
def _entries(index, KB: tl.constexpr):
    """Auxiliary entries of ``index`` (one per column): scalar, or [KB]."""
    if KB == 1:
        out = index
    else:
        out = index * KB + tl.arange(0, KB)
    return out


# ---------------------------------------------------------------------------
# The local tile scan: lanes of one tile (SEED), and scan_then_propagate's first pass.


@triton.jit(do_not_specialize=["col_blocks", "tiles"])
def stp_local_kernel(x_ptrs, y_ptrs, ident_ptrs, init_ptrs, sum_ptrs, M, K, col_blocks, tiles,
                     PAIR: tl.constexpr, FLAT: tl.constexpr, COMMUTATIVE: tl.constexpr,
                     INCLUSIVE: tl.constexpr, REVERSE: tl.constexpr, BACKWARD: tl.constexpr,
                     HAS_INIT: tl.constexpr, SEED: tl.constexpr, MULTI_LANE: tl.constexpr,
                     EXACT_K: tl.constexpr, ROWS: tl.constexpr, KB: tl.constexpr, RAKE: tl.constexpr):
    """Scan one tile locally.  ``SEED`` (lanes of one tile): combine with the init
    and write the result.  Otherwise write the local scan and the tile's total at
    ``(lane, tile, column)`` of the ``(B, tiles, K)`` totals."""
    vid = tl.program_id(0).to(tl.int64)
    group = vid // tiles
    tile = vid % tiles
    lane = group // col_blocks
    cblock = group % col_blocks
    ident = _scalars(ident_ptrs, 0)
    stride = KB if EXACT_K else K
    base = lane * M * stride if MULTI_LANE else 0
    x, scan_in, pos, inside = _load_tile(x_ptrs, base, tile, cblock, M, stride, ident, INCLUSIVE, REVERSE,
                                         BACKWARD, ROWS, KB)
    scanned = _scan_tile(scan_in, ident, PAIR, FLAT, BACKWARD, RAKE)
    if SEED:
        seed = _seed(init_ptrs, lane, cblock, K, ident, lane >= 0, HAS_INIT, KB)
        _store_fields(y_ptrs, base + pos, PAIR(_bcast(seed, KB), scanned), inside)
    else:
        _store_fields(y_ptrs, base + pos, scanned, inside)
        total = _ordered_reduce(x, FLAT, COMMUTATIVE)
        if KB == 1:
            _store_fields(sum_ptrs, lane * tiles + tile, total, lane >= 0)
        else:
            col = cblock * KB + tl.arange(0, KB)
            _store_fields(sum_ptrs, (lane * tiles + tile) * K + col, total, col < K)


# ---------------------------------------------------------------------------
# Host side.


def pow2(n: int) -> int:
    """The smallest power of two >= n (1 for n <= 1)."""
    return 1 << max(0, math.ceil(math.log2(max(n, 1))))


@dataclass(frozen=True)
class Geometry:
    kb: int  # columns per tile (1: the 1-D layout)
    col_blocks: int
    rows: int  # tile extent along the scanned axis
    tiles: int  # tiles per group
    num_warps: int
    rake: int  # raking row length, 0: tl.associative_scan
    packed: bool  # ring entries: tag and value in one 64-bit word


def geometry(device, accs, M: int, K: int, interpreter: bool, strategy: str, monoid=None) -> Geometry:
    """The tiles of the look-back launcher (same shapes; the tuned table's tile for
    ``strategy``, else the same defaults), so that strategies differ only in how
    carries travel."""
    nbytes = sum(a.itemsize for a in accs)
    tune = choose_config(device, nbytes, any(a.is_floating_point for a in accs), M, K, interpreter,
                         accs=accs, monoid=monoid, strategy=strategy)
    packed = (len(accs) == 1 and nbytes <= 4) if tune.packed is None else (tune.packed and len(accs) == 1)
    if K == 1:
        kb, col_blocks, rows = 1, 1, tune.block
        if M <= rows:
            rows = max(16, pow2(M))
    else:
        kb = min(pow2(K), tune.max_kb)
        col_blocks = -(-K // kb)
        rows = max(1, tune.block // kb)
        if M <= rows:
            rows = pow2(M)
    return Geometry(kb, col_blocks, rows, -(-M // rows), tune.num_warps, raking_rows(tune, rows), packed)


def job_geometry(job: ScanJob, strategy: str) -> Geometry:
    return geometry(job.device, job.accs, job.M, job.K, job.interpreter, strategy, job.config.monoid)


def strategy_constexprs(job: ScanJob, g: Geometry, inclusive: bool, reverse: bool) -> dict:
    """The constexprs the strategies' kernels share (each takes its own subset, :func:`pick`)."""
    return dict(PAIR=job.pair, FLAT=job.flat, COMMUTATIVE=job.commutative, INCLUSIVE=inclusive,
                REVERSE=reverse, BACKWARD=bool(reverse and job.commutative and job.K == 1),
                HAS_INIT=False, MULTI_LANE=job.B > 1, EXACT_K=job.K == g.kb, ROWS=g.rows, KB=g.kb, RAKE=g.rake)


def pick(d: dict, *names) -> dict:
    return {k: d[k] for k in names}


def launch_strategy_kernel(job: ScanJob, kernel, grid: int, num_warps: int, args: tuple, constexprs: dict,
                           specialized: tuple, *, interpreter: bool | None = None):
    """Launch ``kernel`` on the job's stream (``interpreter``: the job's unless given)."""
    interpreter = job.interpreter if interpreter is None else interpreter
    runtime.launch_kernel(Launch(kernel, grid, num_warps, job.stream, interpreter, args, constexprs, specialized))


def multiprocessors(device) -> int:
    import torch

    return torch.cuda.get_device_properties(device).multi_processor_count


_occupancy: dict = {}
register_cache("prefixscan.backends.triton.scan.strategy_blocks.resident_blocks", _occupancy.clear)


def resident_blocks(kernel, args, constexprs, num_warps: int, device) -> int:
    """Programs of ``kernel`` that fit on one SM at once (registers, shared memory,
    threads, 32 blocks), from the compiled kernel; 1 when that cannot be read.
    An estimate of cudaOccupancyMaxActiveBlocksPerMultiprocessor, which Triton
    does not expose."""
    key = (kernel, num_warps, tuple(constexprs.items()), device)
    if key in _occupancy:
        return _occupancy[key]
    import torch

    try:
        compiled = kernel.warmup(*args, grid=(1,), num_warps=num_warps, **constexprs)
        compiled._init_handles()
        p = torch.cuda.get_device_properties(device)
        regs_sm = getattr(p, "regs_per_multiprocessor", 0) or 65536
        threads_sm = getattr(p, "max_threads_per_multi_processor", 0) or 2048
        smem_sm = getattr(p, "shared_memory_per_multiprocessor", 0) or 228 * 1024
        regs_warp = -(-max(compiled.n_regs, 1) * 32 // 256) * 256  # allocated per warp, 256 at a time
        by_regs = (regs_sm // regs_warp) // num_warps
        by_threads = threads_sm // (num_warps * 32)
        by_smem = smem_sm // (compiled.metadata.shared + 1024)  # 1 KiB reserved per block
        blocks = max(1, min(by_regs, by_threads, by_smem, 32))
    except Exception:  # noqa: BLE001 - one block per SM always fits
        blocks = 1
    _occupancy[key] = blocks
    return blocks


LOCAL_KEYS = ("PAIR", "FLAT", "COMMUTATIVE", "INCLUSIVE", "REVERSE", "BACKWARD", "HAS_INIT", "SEED", "MULTI_LANE",
              "EXACT_K", "ROWS", "KB", "RAKE")


def scan_one_tile(job: ScanJob, g: Geometry, inclusive: bool, reverse: bool) -> None:
    """Lanes that fit one tile: one program per (lane, column block), no carries."""
    c = strategy_constexprs(job, g, inclusive, reverse)
    c.update(HAS_INIT=job.inits is not None, SEED=True)
    idents = job.idents
    args = (tuple(job.xs), tuple(job.ys), idents, job.inits if job.inits is not None else idents, idents, job.M,
            job.K, g.col_blocks, 1)
    launch_strategy_kernel(job, stp_local_kernel, job.B * g.col_blocks, g.num_warps, args, pick(c, *LOCAL_KEYS),
                           (job.M, job.K))


def single_tile(name: str, job: ScanJob, g: Geometry) -> bool:
    """Lanes that fit one tile take :func:`scan_one_tile` (plan recorded as ``name``'s);
    False when there are several tiles per lane."""
    if g.tiles > 1:
        return False
    scan_one_tile(job, g, job.config.inclusive, job.config.reverse)
    total = job.B * g.col_blocks
    last_plan[name] = dict(grid=total, tile=g.rows * g.kb, tiles=total, launches=1)
    return True
