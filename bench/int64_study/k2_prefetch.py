"""Variant k2: k1 (full tiles unmasked, int32 tile math, STATUS/SCAN knobs) made
persistent with a one-tile software prefetch.

Self-contained (torch + triton only).  A grid of about (SMs x resident blocks per SM)
programs; each takes tile ids from the atomic counter in a loop, and issues the
loads of its NEXT tile before it reduces/looks back/scans/stores the current one,
so the memory pipe has a tile's worth of loads in flight while the block sits in
the latency-bound phases (reduction barriers, look-back round trips, the scan's
shuffle chain).  Forward progress: a program takes a tile only while running, and
processes its tiles in the order it took them, so the smallest unfinished tile is
always being processed by its owner and its predecessors are all finished.

Ids are taken two ahead (the atomic's latency is hidden behind a tile too), so each
program ends with exactly two failed takes (ids >= the tile count): the counter
advances by tiles + 2 * grid per call (tile_base on the host follows that).

Loads of the prefetched tile are unmasked from min(next, full tiles - 1) (always
in bounds; the value is discarded when next is past the end); a partial last tile
is reloaded with masks when its turn comes.

Host API:  s = Scanner(n, dtype, device, block=4096, warps=4, status=2, grid=None);
s(x, y).  grid None: SMs x blocks per SM from the compiled kernel's registers
(the first call runs with grid = tiles to compile and learn them).
"""

from __future__ import annotations

import triton
import triton.language as tl

# The status protocol and look-back are k1_full's (this file adds persistence + prefetch).
from k1_full import FLAG_A, FLAG_P, _add, _load_window, _lookback, _publish  # noqa: E402,F401


@triton.jit
def _process(x, agg, y_ptr, status_ptr, flag_ptr, agg_ptr, incl_ptr, n, tile, epoch,
             BLOCK: tl.constexpr, WINDOW: tl.constexpr, STATUS: tl.constexpr, SCAN: tl.constexpr,
             FULL: tl.constexpr, DEBUG_P_EVERY: tl.constexpr, ASM: tl.constexpr):
    rank = tl.arange(0, BLOCK)
    start = tile * BLOCK
    yp = y_ptr + start
    zero = tl.zeros([1], dtype=x.dtype).sum(0)
    if tile == 0:
        prefix = zero
    else:
        _publish(status_ptr, flag_ptr, agg_ptr, tile, agg, FLAG_A, epoch, STATUS, ASM)
        prefix = _lookback(status_ptr, flag_ptr, agg_ptr, incl_ptr, tile, epoch, zero, STATUS, WINDOW, ASM)
    if DEBUG_P_EVERY == 0 or tile % DEBUG_P_EVERY == 0:  # test hook: others leave only A
        _publish(status_ptr, flag_ptr, incl_ptr, tile, prefix + agg, FLAG_P, epoch, STATUS, ASM)
    if SCAN == 0:
        y = tl.associative_scan(x, 0, _add)
    else:
        y = tl.cumsum(x, 0)
    y = y + prefix
    if FULL:
        tl.store(yp + rank, y)
    else:
        tl.store(yp + rank, y, mask=rank < n - start)


@triton.jit
def _prefetch(x_ptr, n, tile, num_full, BLOCK: tl.constexpr):
    rank = tl.arange(0, BLOCK)
    if num_full > 0:
        t = tl.minimum(tile, num_full - 1)
        x = tl.load(x_ptr + t * BLOCK + rank)
    else:
        x = tl.load(x_ptr + rank, mask=rank < n, other=0)
    return x


@triton.jit(do_not_specialize=["tile_base", "epoch"])
def scan_kernel(x_ptr, y_ptr, status_ptr, flag_ptr, agg_ptr, incl_ptr, counter_ptr, n, tile_base, epoch,
                BLOCK: tl.constexpr, WINDOW: tl.constexpr, STATUS: tl.constexpr, SCAN: tl.constexpr,
                DEBUG_P_EVERY: tl.constexpr = 0, ASM: tl.constexpr = 1):
    num_tiles = (n + BLOCK - 1) // BLOCK
    num_full = n // BLOCK
    rank = tl.arange(0, BLOCK)
    tile = tl.atomic_add(counter_ptr, 1, sem="relaxed") - tile_base
    x = _prefetch(x_ptr, n, tile, num_full, BLOCK)
    agg = tl.sum(x, 0)  # consumes the loads before the loop (see below)
    nxt = tl.atomic_add(counter_ptr, 1, sem="relaxed") - tile_base
    while tile < num_tiles:
        # The next tile's loads go out first and stay in flight while this tile is
        # processed; the id after it is taken now so that its atomic's latency is
        # hidden too.  The aggregate of the prefetched tile is reduced at the END of
        # the iteration and carried: that is where the loads are waited for, so no
        # scoreboard wait at the top of the loop covers them (ptxas waits on a
        # scoreboard, not on a register: with the load consumed at the top, the first
        # use of the current tile would also wait for the prefetch).
        x_next = _prefetch(x_ptr, n, nxt, num_full, BLOCK)
        nxt2 = tl.atomic_add(counter_ptr, 1, sem="relaxed") - tile_base
        if tile < num_full:
            _process(x, agg, y_ptr, status_ptr, flag_ptr, agg_ptr, incl_ptr, n, tile, epoch,
                     BLOCK, WINDOW, STATUS, SCAN, True, DEBUG_P_EVERY, ASM)
        else:
            start = tile * BLOCK
            xm = tl.load(x_ptr + start + rank, mask=rank < n - start, other=0)
            _process(xm, tl.sum(xm, 0), y_ptr, status_ptr, flag_ptr, agg_ptr, incl_ptr, n, tile, epoch,
                     BLOCK, WINDOW, STATUS, SCAN, False, DEBUG_P_EVERY, ASM)
        agg = tl.sum(x_next, 0)
        tile = nxt
        nxt = nxt2
        x = x_next


def blocks_per_sm(n_regs, warps, shared):
    """Resident blocks per SM on sm_90 (64K registers, 64 warps, 32 blocks, 227 KB shared)."""
    per_warp = -(-max(n_regs, 1) * 32 // 256) * 256
    b = min(65536 // (per_warp * warps), 64 // warps, 32)
    if shared:
        b = min(b, (227 * 1024) // shared)
    return max(b, 1)


class Scanner:
    """Status buffers + counter for repeated scans of n elements (see k1_full.Scanner)."""

    name = "k2_prefetch"

    def __init__(self, n, dtype, device, block=4096, warps=4, status=None, scan=0, window=32, debug_p_every=0,
                 grid=None, sms=None):
        import os
        import torch
        self.n, self.block, self.warps, self.window, self.scan = n, block, warps, window, scan
        self.debug_p_every = debug_p_every
        self.asm = 0 if os.environ.get("TRITON_INTERPRET", "0") == "1" else 1
        itemsize = torch.empty(0, dtype=dtype).element_size()
        if status is None:
            status = 1 if itemsize <= 4 else 2
        if status == 1 and itemsize > 4:
            raise ValueError("packed 64-bit status needs a value of <= 32 bits")
        self.status_kind = status
        self.tiles = -(-n // block)
        t = self.tiles
        self.grid = grid
        if sms is None:
            sms = torch.cuda.get_device_properties(device).multi_processor_count if str(device).startswith("cuda") else 1
        self.sms = sms
        self.counter = torch.zeros(1, dtype=torch.int32, device=device)
        self.status = torch.zeros(2 * t if status == 2 else t, dtype=torch.int64, device=device)
        self.flags = torch.zeros(t, dtype=torch.int32, device=device)
        self.agg = torch.zeros(t, dtype=dtype, device=device)
        self.incl = torch.zeros(t, dtype=dtype, device=device)
        self.issued = 0
        self.epoch = 0
        self.occupancy = None
        self.compiled = None

    def __call__(self, x, y):
        self.epoch += 1
        grid = self.grid if self.grid is not None else self.tiles
        grid = max(1, min(grid, self.tiles))
        k = scan_kernel[(grid,)](x, y, self.status, self.flags, self.agg, self.incl, self.counter, self.n,
                                 self.issued, self.epoch, BLOCK=self.block, WINDOW=self.window,
                                 STATUS=self.status_kind, SCAN=self.scan, DEBUG_P_EVERY=self.debug_p_every,
                                 ASM=self.asm, num_warps=self.warps)
        self.issued += self.tiles + 2 * grid  # every program ends with two failed takes
        self.compiled = k
        if self.grid is None and getattr(k, "n_regs", None) is not None:
            self.occupancy = blocks_per_sm(k.n_regs, self.warps, k.metadata.shared)
            self.grid = self.sms * self.occupancy
        return y
