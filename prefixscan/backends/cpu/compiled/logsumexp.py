"""The logaddexp scan in blocks whose exp and log vectorise.

``y_i = log(exp(c) + exp(x_0) + ... + exp(x_i))`` is computed a block at a time
against one reference, the block's maximum ``M`` (with the carry ``c``):
``e_j = exp(x_j - M)``, ``T_i = e_0 + ... + e_i`` (plus ``exp(c - M)``) and
``y_i = M + log(T_i)`` (the streaming log-sum-exp of Milakov & Gimelshein 2018,
"Online normalizer calculation for softmax", with the rescale done once per
block): one exp and one log per element, each in a loop of its own that LLVM
vectorises.  The exp and log are polynomial (Cody & Waite range reduction, then
a Taylor polynomial for exp and the atanh series for log) because this Numba
build calls libm per element (about 30 ns per combine); multiplies and adds
fuse (``fastmath={"contract"}``, which keeps NaN and infinity semantics).  The
block's maximum and whether it holds an infinity or a NaN come from integer
reductions over the values' bits (float max reductions do not vectorise
without ``nnan``).

Precision: float64 accumulators compute in float64 throughout.  float32 (and
float16) accumulators compute each element's exp and log in float32, sixteen
lanes at a time, but the running sums ``T_i`` and the carry between blocks in
float64, so rounding does not build up from block to block.  A block whose
values are not all finite, whose carry is infinite or NaN, or whose running
maximum rises by more than ``SPAN`` (so that early sums would leave the normal
range of the precision's exp and log) runs the exact chained combine in
float64 instead.  Measurements and the arithmetic bound: docs/design/cpu_compiled.md.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, types
from numba.extending import overload, register_jitable

from .jit_support import bits_float, float_bits, load2, logaddexp_scalar, store2

__all__ = ["logaddexp_lanes", "BLOCK", "SPAN64", "SPAN32"]

BLOCK = 512
# Per precision: ``SPAN`` bounds how far the running maximum may rise in a block on
# the fast path (every T_i >= exp(-SPAN) stays a normal number, for float32 with room
# for the terms dropped below), ``FLOOR`` is where terms are dropped: exp(-FLOOR) is
# still normal, and BLOCK * exp(SPAN - FLOOR) is below the precision's rounding.
SPAN64, FLOOR64 = 600.0, 700.0
SPAN32, FLOOR32 = np.float32(60.0), np.float32(87.0)

_LN2_HI = 6.93147180369123816490e-01
_LN2_LO = 1.90821492927058770002e-10
_LOG2E = 1.4426950408889634
# float32: ln 2 split so that e * _LN2_HI32 is exact for |e| < 2^9 (as fdlibm's expf).
_LN2_HI32 = np.float32(6.9314575195e-01)
_LN2_LO32 = np.float32(1.4286067653e-06)
_LOG2E32 = np.float32(1.4426950408889634)
_HALF32, _ONE32, _TWO32 = np.float32(0.5), np.float32(1.0), np.float32(2.0)
_EXPONENT64 = 0x7FF0000000000000
_EXPONENT32 = np.int32(0x7F800000)


@register_jitable
def _exp64(x):
    """exp(x) for -FLOOR64 <= x <= 0 to about one ulp."""
    n = math.floor(x * _LOG2E + 0.5)
    r = (x - n * _LN2_HI) - n * _LN2_LO  # |r| <= ln2 / 2
    p = 1.0 + r * (1.0 + r * (1.0 / 2 + r * (1.0 / 6 + r * (1.0 / 24 + r * (1.0 / 120 + r * (
        1.0 / 720 + r * (1.0 / 5040 + r * (1.0 / 40320 + r * (1.0 / 362880 + r * (
            1.0 / 3628800 + r * (1.0 / 39916800 + r * (1.0 / 479001600))))))))))))
    return p * bits_float((np.int64(n) + 1023) << 52)


@register_jitable
def _exp32(x):
    """exp(x) for -FLOOR32 <= x <= 0 in float32 (relative error about 1e-7)."""
    n = np.floor(x * _LOG2E32 + _HALF32)
    r = (x - n * _LN2_HI32) - n * _LN2_LO32
    p = _ONE32 + r * (_ONE32 + r * (np.float32(1 / 2) + r * (np.float32(1 / 6) + r * (np.float32(1 / 24) + r * (
        np.float32(1 / 120) + r * (np.float32(1 / 720) + r * np.float32(1 / 5040)))))))
    return p * bits_float(np.int32((np.int32(n) + 127) << 23))


@register_jitable
def _log64(t):
    """log(t) for a positive normal float64 t to about one ulp."""
    # t = m * 2^e with m in [sqrt(1/2), sqrt(2)), by integer arithmetic alone (as musl's log).
    shifted = float_bits(t) - 0x3FE6A09E667F3BCD
    e = shifted >> 52
    m = bits_float(float_bits(t) - (e << 52))
    s = (m - 1.0) / (m + 1.0)  # |s| <= 0.1716
    z = s * s
    series = 2.0 * s * (1.0 + z * (1.0 / 3 + z * (1.0 / 5 + z * (1.0 / 7 + z * (1.0 / 9 + z * (
        1.0 / 11 + z * (1.0 / 13 + z * (1.0 / 15 + z * (1.0 / 17 + z * (1.0 / 19 + z * (1.0 / 21)))))))))))
    return e * _LN2_HI + (e * _LN2_LO + series)


@register_jitable
def _log32(t):
    """log(t) for a positive normal float32 t in float32 (absolute error about 1e-7)."""
    shifted = np.int32(float_bits(t) - np.int32(0x3F3504F3))  # the bits of sqrt(1/2)
    e = np.int32(shifted >> 23)
    m = bits_float(np.int32(float_bits(t) - np.int32(e << 23)))
    s = (m - _ONE32) / (m + _ONE32)
    z = s * s
    series = _TWO32 * s * (_ONE32 + z * (np.float32(1 / 3) + z * (np.float32(1 / 5) + z * (
        np.float32(1 / 7) + z * np.float32(1 / 9)))))
    f = np.float32(e)
    return f * _LN2_HI32 + (f * _LN2_LO32 + series)


def _is32(x) -> bool:
    return isinstance(x, types.Float) and x.bitwidth == 32


def exp_nonpositive(x):
    """exp(x) for -FLOOR <= x <= 0, in x's precision."""


def log_normal(t):
    """log(t) for a positive normal t, in t's precision."""


def limits(x):
    """``(SPAN, FLOOR)`` of x's precision."""


def order_key(x):
    """An integer of x's width ordered as the (non-NaN) floats are."""


def key_value(key, like):
    """The float of ``like``'s type whose :func:`order_key` is ``key``."""


def exponent_bits(x):
    """x's exponent field in place: all ones for an infinity or a NaN."""


def all_ones_exponent(x):
    """The exponent field of x's precision with every bit set."""


def cast_like(value, like):
    """``value`` in ``like``'s float type."""


@overload(exp_nonpositive)
def _exp_nonpositive(x):
    return (lambda x: _exp32(x)) if _is32(x) else (lambda x: _exp64(x))


@overload(log_normal)
def _log_normal(t):
    return (lambda t: _log32(t)) if _is32(t) else (lambda t: _log64(t))


@overload(limits)
def _limits(x):
    return (lambda x: (SPAN32, FLOOR32)) if _is32(x) else (lambda x: (SPAN64, FLOOR64))


@overload(order_key)
def _order_key(x):
    if _is32(x):
        def key32(x):
            b = float_bits(x)
            return np.int32(b ^ np.int32(np.int32(b >> 31) & np.int32(0x7FFFFFFF)))
        return key32

    def key64(x):
        b = float_bits(x)
        return b ^ ((b >> 63) & 0x7FFFFFFFFFFFFFFF)
    return key64


@overload(key_value)
def _key_value(key, like):
    if _is32(like):  # the key's transform is its own inverse
        return lambda key, like: bits_float(np.int32(key ^ np.int32(np.int32(key >> 31) & np.int32(0x7FFFFFFF))))
    return lambda key, like: bits_float(key ^ ((key >> 63) & 0x7FFFFFFFFFFFFFFF))


@overload(exponent_bits)
def _exponent_bits(x):
    if _is32(x):
        return lambda x: np.int32(float_bits(x) & _EXPONENT32)
    return lambda x: float_bits(x) & _EXPONENT64


@overload(all_ones_exponent)
def _all_ones_exponent(x):
    return (lambda x: _EXPONENT32) if _is32(x) else (lambda x: _EXPONENT64)


@overload(cast_like)
def _cast_like(value, like):
    return (lambda value, like: np.float32(value)) if _is32(like) else (lambda value, like: np.float64(value))


_combine_exact = register_jitable(logaddexp_scalar)  # the exact combine, one element at a time


@register_jitable
def _block(values, terms, count, carry, inclusive):
    """Scan ``values[:count]`` after the float64 ``carry``, in place; ``terms`` is
    float64 scratch.  Returns the new carry."""
    like = values[0]
    top_key = order_key(like)
    top_exponent = exponent_bits(like)
    for i in range(count):  # integer max reductions: they vectorise
        v = values[i]
        top_key = max(top_key, order_key(v))
        top_exponent = max(top_exponent, exponent_bits(v))
    if top_exponent != all_ones_exponent(like) and carry == carry and carry != math.inf:
        span, floor = limits(like)
        top = key_value(top_key, like)
        if carry > top:  # rounds up or down: every value stays below it anyway
            top = cast_like(carry, like)
        lowest = carry if carry != -math.inf else np.float64(values[0])
        if np.float64(top) - lowest <= span:
            return _block_fast(values, terms, count, carry, top, floor, inclusive)
    state = carry
    for i in range(count):
        nxt = _combine_exact(state, np.float64(values[i]))
        values[i] = nxt if inclusive else state
        state = nxt
    return state


@register_jitable
def _block_fast(values, terms, count, carry, top, floor, inclusive):
    """The block against the reference ``top`` (at least every value, within
    ``SPAN`` of the running maxima): every T_i is a normal number of the precision."""
    total = math.exp(carry - np.float64(top)) if carry != -math.inf else 0.0
    for i in range(count):  # vectorises; terms below exp(-floor) cannot matter
        terms[i] = exp_nonpositive(max(values[i] - top, -floor))
    groups = count // 4
    for g in range(groups):  # the running sum, one carried add per four elements
        i = 4 * g
        l1 = terms[i] + terms[i + 1]
        l2 = l1 + terms[i + 2]
        l3 = l2 + terms[i + 3]
        terms[i] = total + terms[i]
        terms[i + 1] = total + l1
        terms[i + 2] = total + l2
        total = total + l3
        terms[i + 3] = total
    for i in range(4 * groups, count):
        total += terms[i]
        terms[i] = total
    last = np.float64(top) + math.log(terms[count - 1])
    if inclusive:
        for i in range(count):  # vectorises
            values[i] = top + log_normal(cast_like(terms[i], top))
    else:
        for i in range(count - 1, 0, -1):
            values[i] = top + log_normal(cast_like(terms[i - 1], top))
        values[0] = carry
    return last


def _logaddexp_lanes(xs, ys, fmts, seeds, flags):
    """Inclusive or exclusive logaddexp scan of every row of the 2-D ``(lanes, n)``
    arrays (a reverse scan arrives as flipped views), in the precision of the
    accumulator (the seeds' dtype)."""
    seeded, inclusive = flags[0], flags[1]
    fin, fout = fmts[0], fmts[2]
    lanes, n = xs[0].shape
    values = np.empty(BLOCK, seeds[0].dtype)
    terms = np.empty(BLOCK, np.float64)
    for lane in range(lanes):
        carry = np.float64(load2(seeds, fmts[3], lane, 0)[0]) if seeded else -math.inf
        start = 0
        if not seeded and inclusive and n > 0:  # the first element starts the chain as it is
            first = load2(xs, fin, lane, 0)
            store2(ys, fout, first, lane, 0)
            carry = np.float64(first[0])
            start = 1
        for b0 in range(start, n, BLOCK):
            count = min(BLOCK, n - b0)
            for i in range(count):
                values[i] = load2(xs, fin, lane, b0 + i)[0]
            carry = _block(values, terms, count, carry, inclusive)
            for i in range(count):
                store2(ys, fout, (values[i],), lane, b0 + i)


logaddexp_lanes = njit(cache=True, nogil=True, error_model="numpy", fastmath={"contract"})(_logaddexp_lanes)
