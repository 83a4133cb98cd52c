"""The recurrence kernel's device helpers (:mod:`.triton_kernel`): the combines of affine
maps ``h -> a h + b`` (real, complex, and log decays carried beside their ``exp``), the
earlier map first, and the loads, stores and index arithmetic of its tiles, whose
fields are one real value or a (re, im) pair."""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def _affine_flat(a1, b1, a2, b2):
    return a1 * a2, a2 * b1 + b2


@triton.jit
def _affine_pair(f, g):
    return _affine_flat(f[0], f[1], g[0], g[1])


@triton.jit
def _complex_affine_flat(ar1, ai1, br1, bi1, ar2, ai2, br2, bi2):
    return (ar1 * ar2 - ai1 * ai2, ar1 * ai2 + ai1 * ar2,
            ar2 * br1 - ai2 * bi1 + br2, ar2 * bi1 + ai2 * br1 + bi2)


@triton.jit
def _complex_affine_pair(f, g):
    return _complex_affine_flat(f[0], f[1], f[2], f[3], g[0], g[1], g[2], g[3])


@triton.jit
def _load(ptr, offs, mask, other, ACC: tl.constexpr, COMPLEX: tl.constexpr):
    """The value(s) at element offsets ``offs``: ``(re,)``, or ``(re, im)`` of interleaved pairs."""
    if COMPLEX:
        out = (tl.load(ptr + 2 * offs, mask=mask, other=other).to(ACC),
               tl.load(ptr + 2 * offs + 1, mask=mask, other=0).to(ACC))
    else:
        out = (tl.load(ptr + offs, mask=mask, other=other).to(ACC),)
    return out


@triton.jit
def _store(ptr, offs, values, mask, COMPLEX: tl.constexpr):
    if COMPLEX:
        tl.store(ptr + 2 * offs, values[0].to(ptr.dtype.element_ty), mask=mask)
        tl.store(ptr + 2 * offs + 1, values[1].to(ptr.dtype.element_ty), mask=mask)
    else:
        tl.store(ptr + offs, values[0].to(ptr.dtype.element_ty), mask=mask)


@triton.jit
def _conj(values, COMPLEX: tl.constexpr):
    if COMPLEX:
        out = (values[0], -values[1])
    else:
        out = values
    return out


@triton.jit
def _mul_add(coef, state, offset, COMPLEX: tl.constexpr):
    """``coef * state + offset`` (field tuples, complex products written out)."""
    if COMPLEX:
        out = (coef[0] * state[0] - coef[1] * state[1] + offset[0],
               coef[0] * state[1] + coef[1] * state[0] + offset[1])
    else:
        out = (coef[0] * state[0] + offset[0],)
    return out


@triton.jit
def _mul(x, y, COMPLEX: tl.constexpr):
    if COMPLEX:
        out = (x[0] * y[0] - x[1] * y[1], x[0] * y[1] + x[1] * y[0])
    else:
        out = (x[0] * y[0],)
    return out


@triton.jit
def _zeros(BL: tl.constexpr, ACC: tl.constexpr, COMPLEX: tl.constexpr):
    if COMPLEX:
        out = (tl.zeros([BL], dtype=ACC), tl.zeros([BL], dtype=ACC))
    else:
        out = (tl.zeros([BL], dtype=ACC),)
    return out


@triton.jit
def _add_at(values, t, step, ptr, lanes, lane_mask, ACC: tl.constexpr, COMPLEX: tl.constexpr,
            TIME_AXIS: tl.constexpr):
    """``values`` (a tile's field tuple at times ``t``) with the per-lane values at element
    offsets ``lanes`` of ``ptr`` added at time ``step``."""
    extra = _expand(_load(ptr, lanes, lane_mask, 0, ACC, COMPLEX), TIME_AXIS)
    at = _scan_position(t, step, TIME_AXIS)
    out = ()
    for i in tl.static_range(len(values)):
        out = out + (tl.where(at, values[i] + extra[i], values[i]),)
    return out


@triton.jit
def _expand(values, TIME_AXIS: tl.constexpr):
    """Per-lane ``[BL]`` fields broadcast over the tile's time axis."""
    out = ()
    for i in tl.static_range(len(values)):
        if TIME_AXIS == 0:
            out = out + (values[i][None, :],)
        else:
            out = out + (values[i][:, None],)
    return out


@triton.jit
def _tile(lane, lane_mask, t, time_mask, stride, TIME_AXIS: tl.constexpr):
    """Element offsets and mask of a tile: lanes ``lane`` (offsets, [BL]) by times ``t`` ([BT])."""
    if TIME_AXIS == 0:
        offs = lane[None, :] + t[:, None] * stride
        mask = lane_mask[None, :] & time_mask[:, None]
    else:
        offs = lane[:, None] + t[None, :] * stride
        mask = lane_mask[:, None] & time_mask[None, :]
    return offs, mask


@triton.jit
def _scan_position(s, position, TIME_AXIS: tl.constexpr):
    if TIME_AXIS == 0:
        keep = (s == position)[:, None]
    else:
        keep = (s == position)[None, :]
    return keep


@triton.jit
def _log_split(l1, d1, b1, l2, d2, b2):
    """Maps held as (log decay, decay, b), the earlier first: the logs add (what the
    look-back publishes and the carry is multiplied by), the decays compose ``b``
    linearly, no ``exp`` on the scan's dependency chain."""
    return l1 + l2, d1 * d2, d2 * b1 + b2


@triton.jit
def _restarts(flags_ptr, lane_mask, t, time_mask, T, BL: tl.constexpr, TIME_AXIS: tl.constexpr):
    """Whether a packed sequence starts at each step of the tile (times ``t``, [BT]): the
    restart flags, one byte a step, read where ``time_mask`` holds and ``t`` is in range,
    the same for every lane."""
    offs, mask = _tile(tl.zeros([BL], dtype=tl.int32), lane_mask, t, time_mask & (t >= 0) & (t < T), 1, TIME_AXIS)
    return tl.load(flags_ptr + offs, mask=mask, other=0) != 0
