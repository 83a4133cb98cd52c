"""The recurrence kernel's tilings (:mod:`.triton_kernel`): :class:`RecurrencePlan`, the
default :func:`plan_for` (measured on the H200; docs/design/recurrence.md), and the
vectors of the fused backward's ``"edge"`` form of its shifted reads."""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

from ...caches import register_cache
from .triton_shift import SHIFTS

__all__ = ["RecurrencePlan", "plan_for"]


@dataclass(frozen=True)
class RecurrencePlan:
    """How a recurrence is tiled: ``lookback`` (one tile per program, time split
    across programs) or a sequential walk per lane block; tiles of ``block_time``
    steps by ``block_lanes`` lanes; ``window`` status entries per look-back step;
    ``log_split`` (log decays): the tile's scan of :func:`_log_split`; ``shift`` (the
    fused backward): how it reads ``a`` one step behind and ``h`` one step ahead of its
    tile (:mod:`.triton_shift`: ``"load"``, ``"edge"``)."""

    lookback: bool
    block_time: int
    block_lanes: int
    num_warps: int = 4
    window: int = 4
    stages: int = 1  # the walk's chunk loop software-pipelined over this many stages (1: not)
    # log decays: a tile's scan carries exp(la) beside la (recurrence_kernel's LOG_SPLIT); False composes
    # (la, b) pairs, an exp in every combine (0.334 against 0.218 ms at (8, 4096, 1024) float32 on an H200)
    log_split: bool = True
    # the backward's shifted values: loaded off the vector alignment ("load"), or the aligned tile moved in
    # registers, each vector's missing element loaded alone ("edge")
    shift: str = "load"

    def __post_init__(self):
        if self.shift not in SHIFTS:
            raise ValueError(f"RecurrencePlan.shift must be one of {SHIFTS}, got {self.shift!r}")


#: Elements of one field per tile (4 warps: 32 per thread).
_TILE = 4096
#: Lane blocks per SM below which the sequential walk leaves SMs idle or
#: starved of bytes in flight, and time is split across programs instead.
_BLOCKS_PER_SM = 1


def _pow2(n: int) -> int:
    return 1 << max(0, math.ceil(math.log2(max(n, 1))))


@functools.lru_cache(maxsize=None)
def _sm_count(index: int) -> int:
    import torch

    return torch.cuda.get_device_properties(index).multi_processor_count


register_cache("prefixscan.primitives.recurrence.triton_kernel.sm_count", _sm_count.cache_clear)


@functools.lru_cache(maxsize=1024)  # a pure function of a few ints, asked on every call (~4 us)
def plan_for(lanes_p: int, T: int, Q: int, sms: int, interpreter: bool, backward: bool = False) -> RecurrencePlan:
    """The tiling for ``P = lanes_p`` by ``Q`` lanes of ``T`` steps on ``sms``
    multiprocessors: the sequential walk where the lane blocks fill the GPU, else
    the look-back over time tiles.  Measured on the H200 (float32 forward, ms):
    (8, 4096, 1024) along axis 1, the walk over 32 lanes by 128 steps 0.229 with its
    chunk loop plain, 0.171 pipelined over 3 stages; (8, 1024, 4096) along the last
    axis, one lane by 2048 steps 0.165 against 4 lanes by 1024 0.231; (1, 64, 2^20)
    along the last axis, the look-back over tiles of 8192 steps on 4 warps (16384 on 8
    warps 0.367 and 4096 0.678; 8192 on 4 warps ahead of 16384 on 8 by 3-9% from 2^22
    to 2^24 elements in lanes of 2^16 to 2^18 steps, float32 and bfloat16, and level at
    (1, 1, 2^26)); (1, 32768, 1024) along axis 1 (lane blocks too few for the walk),
    the look-back over tiles of 8192 elements, 32 lanes by 256 steps, 0.230 (16 by 512:
    0.229, 8 by 1024: 0.253) against 4096 elements, 64 lanes by 64 steps, 0.393; the best
    walk, 8 lanes by 512 steps, 0.215 on 128 programs.  ``backward``: the fused
    backward's walk, which holds five arrays' values and two loads one step off the
    vector alignment, takes tiles of half the elements (device time queued, ms: (8, 1024, 4096) along the last axis,
    one lane by 1024 steps 0.180 against 2048 0.232; along axis 1, 32 lanes by 64
    steps 0.204 against 64 by 64 0.217; (8, 4096, 1024) along axis 1, 32 by 64 0.204
    against 32 by 128 0.211); few long lanes, where the look-back's tile holds five
    arrays, 4096 steps on 4 warps (backward alone, ms: (1, 64, 2^20) 0.760 against the
    forward's 16384 on 8 warps 1.801 and 8192 on 8 0.818; (1, 1, 2^26) 0.786 against
    1.026 and 0.801).  Where time is contiguous the backward moves its values one step off
    the tile in registers (``shift="edge"``; the backward alone, queued: bfloat16 (8, 1024,
    4096) 0.158 -> 0.133 ms, (4, 2048, 8192) 0.307 -> 0.256, float32 2% faster)."""
    if interpreter:  # small tiles: several chunks and tiles even in small tests
        if Q > 1:
            return RecurrencePlan(lookback=False, block_time=8, block_lanes=min(_pow2(Q), 8), num_warps=1)
        return RecurrencePlan(lookback=False, block_time=min(_pow2(T), 16), block_lanes=2, num_warps=1,
                              shift="edge" if backward else "load")
    # Walk or look-back as the forward decides; a backward walk's tile is then halved.
    tile = _TILE // 2 if backward else _TILE
    if Q > 1:
        for bl in (64, 32, 16):  # the walk while some lane block width fills the GPU (16 fills if any does)
            bl = min(bl, _pow2(Q))
            if lanes_p * -(-Q // bl) >= _BLOCKS_PER_SM * sms:
                bl = min(bl, 32) if backward else bl
                bt = min(max(tile // bl, 16), max(_pow2(T), 16))
                return RecurrencePlan(lookback=False, block_time=bt, block_lanes=bl, stages=3)
        bl = min(_pow2(Q), 32)
        return RecurrencePlan(lookback=True, block_time=max(2 * tile // bl, 16), block_lanes=bl,
                              window=min(16, max(4, 128 // bl)))
    bt = min(_pow2(T), _TILE // 2)
    bl = max(1, _TILE // 2 // bt)
    # Time contiguous: the backward moves its shifted values in registers (the "edge" form).
    shift = "edge" if backward else "load"
    if -(-lanes_p // bl) >= _BLOCKS_PER_SM * sms or T <= bt:
        bt = min(_pow2(T), tile // 2)
        return RecurrencePlan(lookback=False, block_time=bt, block_lanes=max(1, tile // 2 // bt), shift=shift)
    if backward:  # five arrays a step: the forward's tile would spill
        return RecurrencePlan(lookback=True, block_time=4096, block_lanes=1, num_warps=4, window=16, shift=shift)
    return RecurrencePlan(lookback=True, block_time=8192, block_lanes=1, num_warps=4, window=16)


def _edge_vectors(plan: RecurrencePlan, T: int, Q: int, strides_a: tuple, a, h, interpreter: bool) -> tuple[int, int]:
    """Elements of a vector along time in the ``"edge"`` form of the backward's ``a`` and
    ``h`` tiles (1: read as in the ``"load"`` form), ``strides_a`` a's ``(s_p1, s_p2, s_t)``:
    the elements of a 16-byte vector, where a thread's part of the tile holds that many
    and the compiler knows the loads aligned (time contiguous, 16-byte aligned data, lane
    strides and ``T`` multiples of 16), which is how Triton's coalescing then lays out the
    tile and what the split in registers needs; else 1.  Lanes contiguous, complex fields
    (loaded with a stride of 2) and 8-byte values: 1.  The interpreter has no layout:
    vectors as the element size gives them, for the tests' small tiles."""
    # 8-byte values keep the load form: the edge form was measured, and is compiled for sm_90
    # in CI, with 4- and 2-byte values only.
    if plan.shift != "edge" or Q > 1 or h is None or h.is_complex() or h.element_size() > 4:
        return 1, 1
    width = min(16 // h.element_size(), plan.block_time)
    if not interpreter:
        if T % 16:
            return 1, 1
        width = min(width, max(1, plan.block_time * plan.block_lanes // (32 * plan.num_warps)))
    s_p1, s_p2, s_t = strides_a
    aligned_a = interpreter or (not a.data_ptr() % 16 and not s_p1 % 16 and not s_p2 % 16)
    aligned_h = interpreter or not h.data_ptr() % 16
    return (width if s_t == 1 and aligned_a else 1), (width if aligned_h else 1)


register_cache("prefixscan.primitives.recurrence.triton_kernel.plans", plan_for.cache_clear)
