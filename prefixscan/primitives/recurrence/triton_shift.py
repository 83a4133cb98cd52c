"""The fused backward's values one step off its tile (:mod:`.triton_kernel`): ``a`` one
step behind in scan order and ``h`` one step ahead, two ways (``RecurrencePlan.shift``):

* ``"load"``: the tile of times ``t + step`` loaded as it stands.  Where time is
  contiguous that load is one element off the 16-byte alignment of every vector, so
  each vector of V elements (4 float32, 8 bfloat16) is read as V scalar loads, which
  load the lines of their neighbours again (the L1 saturates first at 2 bytes an element).
* ``"edge"``: the aligned tile loaded as vectors and taken apart in registers into its V
  elements a vector (``tl.reshape``/``tl.split``, no data movement: a thread's vector is
  its own registers), each vector shifted by one inside the thread and completed by the
  one element off its edge, a single scalar load a vector instead of V, then put back
  together (``tl.join``).  Only time-contiguous tiles have vectors along time: with lanes
  contiguous (and for complex values, whose fields are loaded with a stride of 2, and
  wherever the host cannot tell that the loads vectorize) the vector is one element and
  the edge load is the shifted load itself, the ``"load"`` form.
A third form, the aligned tile moved by ``tl.gather`` along time, was built and measured on
the H200: Triton 3.6 lowers a gather whose axis spans warps through shared memory (two layout
conversions, a shuffle per element), 0.31-0.46x the load form's speed, and along axis 1 its
results differed from the load form's in the last bit (another order of the same
arithmetic): removed.  The edge form is the default of the fused backward where time is
contiguous (:func:`.triton_plans.plan_for`): bfloat16 1.19-1.20x the load form on (8, 1024,
4096) and (4, 2048, 8192), float32 1.02x (docs/design/recurrence.md).

Every form gives the load form's values at every step of the lane and in every lane
(the same loads, the same conversion to the accumulator type; 0 where ``t + step`` is
outside the lane or the lane is masked).  At a padded step (``t`` outside the lane, past
the last real step in scan order) the register forms may hold a value where the load
form holds 0: nothing there is stored, and an inclusive scan's result at a real step
never reads a later one.
"""

from __future__ import annotations

import triton
import triton.language as tl

from .triton_maps import _load, _tile

__all__ = ["SHIFTS", "neighbours"]

#: ``RecurrencePlan.shift`` values, by the index the kernel's ``SHIFT`` constexpr holds.
SHIFTS = ("load", "edge")


@triton.jit
def _split_vectors(x, BL: tl.constexpr, J: tl.constexpr, V: tl.constexpr):
    """``x`` ``[BL, J * V]`` as V tensors ``[BL, J]``: element ``k`` of each vector of V
    (up to 8), by halving splits (a split of a dimension held in one thread's registers
    moves nothing)."""
    parts = (tl.reshape(x, [BL, J, V]),)
    for level in tl.static_range(3):
        if (2 << level) <= V:  # the parts hold every (1 << level)-th element: halve them again
            evens = ()
            odds = ()
            for i in tl.static_range(1 << level):
                even, odd = tl.split(tl.reshape(parts[i], [BL, J, (V >> level) // 2, 2]))
                evens = evens + (even,)
                odds = odds + (odd,)
            parts = evens + odds
    out = ()
    for k in tl.static_range(V):
        out = out + (tl.reshape(parts[k], [BL, J]),)
    return out


@triton.jit
def _join_vectors(parts, BL: tl.constexpr, J: tl.constexpr, V: tl.constexpr):
    """The inverse of :func:`_split_vectors`: V tensors ``[BL, J]`` as ``[BL, J * V]``."""
    cur = ()
    for k in tl.static_range(V):
        cur = cur + (tl.reshape(parts[k], [BL, J, 1]),)
    for level in tl.static_range(3):
        if (2 << level) <= V:  # join part i with part i + n: vectors of 2 << level elements
            joined = ()
            for i in tl.static_range(V >> (level + 1)):
                joined = joined + (tl.reshape(tl.join(cur[i], cur[i + (V >> (level + 1))]), [BL, J, 2 << level]),)
            cur = joined
    return tl.reshape(cur[0], [BL, J * V])


@triton.jit
def _edge_shift(here, ptr, lane, lane_mask, t0, T, stride, STEP: tl.constexpr, VEC: tl.constexpr,
                BT: tl.constexpr, BL: tl.constexpr, ACC: tl.constexpr, COMPLEX: tl.constexpr):
    """``here`` (fields ``[BL, BT]`` at times ``t0 + s``, time contiguous) moved by
    ``STEP`` in registers, vector by vector, each vector's missing element loaded."""
    J: tl.constexpr = BT // VEC
    # The element past each vector's edge, and the step that takes it.
    te = t0 + tl.arange(0, J) * VEC + (VEC if STEP > 0 else -1)
    tp = te - STEP
    # Built [J, BL] and transposed: Triton's coalescing orders a load's dimensions by
    # contiguity, ties first-dimension first, so the vectors' index varies fastest across
    # threads, as it does in the split tile (a [BL, J] load would be laid out lane first
    # and converted through shared memory).
    offs = lane[None, :] + te[:, None] * stride
    mask = lane_mask[None, :] & ((te >= 0) & (te < T) & (tp >= 0) & (tp < T))[:, None]
    edge = _load(ptr, offs, mask, 0, ACC, COMPLEX)
    out = ()
    for f in tl.static_range(len(here)):
        parts = _split_vectors(here[f], BL, J, VEC)
        moved = ()
        if STEP < 0:
            moved = moved + (tl.trans(edge[f]),)
        for k in tl.static_range(VEC - 1):
            moved = moved + (parts[k + 1] if STEP > 0 else parts[k],)
        if STEP > 0:
            moved = moved + (tl.trans(edge[f]),)
        out = out + (_join_vectors(moved, BL, J, VEC),)
    return out


@triton.jit
def neighbours(ptr, lane, lane_mask, t, time_mask, t0, T, stride, STEP: tl.constexpr, SHIFT: tl.constexpr,
               VEC: tl.constexpr, BT: tl.constexpr, BL: tl.constexpr, TIME_AXIS: tl.constexpr, ACC: tl.constexpr,
               COMPLEX: tl.constexpr):
    """The fields of ``ptr`` at times ``t + STEP`` (``STEP`` 1 or -1) for the tile of
    lanes ``lane`` (offsets, ``[BL]``) by times ``t = t0 + arange(BT)`` (``time_mask``:
    ``t`` inside ``[0, T)``), ``stride`` apart in time: 0 where ``t`` or ``t + STEP`` is
    outside ``[0, T)`` or the lane is masked.  ``SHIFT`` indexes :data:`SHIFTS`; ``VEC``:
    the elements of a vector along time in the ``"edge"`` form (1: the load form)."""
    if SHIFT == 0 or VEC == 1:
        tn = t + STEP
        offs, mask = _tile(lane, lane_mask, tn, time_mask & ((tn >= 0) & (tn < T)), stride, TIME_AXIS)
        out = _load(ptr, offs, mask, 0, ACC, COMPLEX)
    else:
        offs, mask = _tile(lane, lane_mask, t, time_mask, stride, TIME_AXIS)
        here = _load(ptr, offs, mask, 0, ACC, COMPLEX)
        tl.static_assert(TIME_AXIS == 1 and not COMPLEX, "vectors along time: time contiguous, real fields")
        out = _edge_shift(here, ptr, lane, lane_mask, t0, T, stride, STEP, VEC, BT, BL, ACC, COMPLEX)
    return out
