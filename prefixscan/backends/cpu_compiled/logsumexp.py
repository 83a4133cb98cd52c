"""The logaddexp scan in blocks whose exp and log vectorise.

``y_i = log(exp(c) + exp(x_0) + ... + exp(x_i))`` is computed a block at a time
against one reference, the block's maximum ``M`` (with the carry ``c``):
``e_j = exp(x_j - M)``, ``T_i = e_0 + ... + e_i`` (plus ``exp(c - M)``) and
``y_i = M + log(T_i)`` (the streaming log-sum-exp of Milakov & Gimelshein 2018,
"Online normalizer calculation for softmax", with the rescale done once per
block).  The exp and log are polynomial (Cody & Waite range reduction, then a
Taylor polynomial for exp and the atanh series for log, in float64) so that
LLVM vectorises them; the chained combine of libm calls costs about 30 ns per
element.  A block whose values are not all finite, or whose running maximum
rises by more than ``SPAN`` (so that early sums could underflow), runs the exact
chained combine instead.  Results are computed in float64 whatever the
accumulator and rounded once.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit
from numba.extending import register_jitable

from .jit_support import bits_float64, float64_bits, load2, store2

__all__ = ["logaddexp_lanes", "BLOCK", "SPAN"]

BLOCK = 512
SPAN = 600.0  # exp(-600) is a normal float64: every T_i keeps full precision
FLOOR = 700.0  # exp(-700) is still normal; smaller terms are below T_i's rounding

_LN2_HI = 6.93147180369123816490e-01
_LN2_LO = 1.90821492927058770002e-10
_LOG2E = 1.4426950408889634
_EXPONENT = 0x7FF0000000000000


@register_jitable
def _exp_nonpositive(x):
    """exp(x) for -FLOOR <= x <= 0 to about one ulp."""
    n = math.floor(x * _LOG2E + 0.5)
    r = (x - n * _LN2_HI) - n * _LN2_LO  # |r| <= ln2 / 2
    p = 1.0 + r * (1.0 + r * (1.0 / 2 + r * (1.0 / 6 + r * (1.0 / 24 + r * (1.0 / 120 + r * (
        1.0 / 720 + r * (1.0 / 5040 + r * (1.0 / 40320 + r * (1.0 / 362880 + r * (
            1.0 / 3628800 + r * (1.0 / 39916800 + r * (1.0 / 479001600))))))))))))
    return p * bits_float64((np.int64(n) + 1023) << 52)


@register_jitable
def _log_normal(t):
    """log(t) for a positive normal float64 t to about one ulp."""
    # t = m * 2^e with m in [sqrt(1/2), sqrt(2)), by integer arithmetic alone (as musl's log).
    shifted = float64_bits(t) - 0x3FE6A09E667F3BCD
    e = shifted >> 52
    m = bits_float64(float64_bits(t) - (e << 52))
    s = (m - 1.0) / (m + 1.0)  # |s| <= 0.1716
    z = s * s
    series = 2.0 * s * (1.0 + z * (1.0 / 3 + z * (1.0 / 5 + z * (1.0 / 7 + z * (1.0 / 9 + z * (
        1.0 / 11 + z * (1.0 / 13 + z * (1.0 / 15 + z * (1.0 / 17 + z * (1.0 / 19 + z * (1.0 / 21)))))))))))
    return e * _LN2_HI + (e * _LN2_LO + series)


@register_jitable
def _combine_exact(a, b):
    if a != a or b != b:
        return a + b
    hi = a if a >= b else b
    lo = b if a >= b else a
    if lo == -math.inf or hi == math.inf:
        return hi
    return hi + math.log1p(math.exp(lo - hi))


@register_jitable
def _block(values, out, count, carry, inclusive):
    """Scan ``values[:count]`` after ``carry`` into ``out``; returns the new carry."""
    # The block's maximum and whether every value is finite, in eight independent
    # chains (an exponent of all ones marks inf and NaN).
    m0 = m1 = m2 = m3 = m4 = m5 = m6 = m7 = carry
    special = 0
    full = count - count % 8
    for i in range(0, full, 8):
        v0, v1, v2, v3 = values[i], values[i + 1], values[i + 2], values[i + 3]
        v4, v5, v6, v7 = values[i + 4], values[i + 5], values[i + 6], values[i + 7]
        m0 = v0 if v0 > m0 else m0
        m1 = v1 if v1 > m1 else m1
        m2 = v2 if v2 > m2 else m2
        m3 = v3 if v3 > m3 else m3
        m4 = v4 if v4 > m4 else m4
        m5 = v5 if v5 > m5 else m5
        m6 = v6 if v6 > m6 else m6
        m7 = v7 if v7 > m7 else m7
        for k in range(8):
            special |= (float64_bits(values[i + k]) & _EXPONENT) == _EXPONENT
    for i in range(full, count):
        v = values[i]
        m0 = v if v > m0 else m0
        special |= (float64_bits(v) & _EXPONENT) == _EXPONENT
    top = max(max(max(m0, m1), max(m2, m3)), max(max(m4, m5), max(m6, m7)))
    fast = not special and not (carry != carry or carry == math.inf)
    # The smallest running maximum: the carry, or (without one) the first value.
    lowest = carry if carry != -math.inf else values[0]
    if fast and top - lowest <= SPAN:
        total = _exp_nonpositive(carry - top) if carry != -math.inf else 0.0
        for i in range(count):  # vectorises; terms below exp(-FLOOR) cannot matter
            out[i] = _exp_nonpositive(max(values[i] - top, -FLOOR))
        groups = count // 4
        for g in range(groups):  # the running sum, one carried add per four elements
            i = 4 * g
            l1 = out[i] + out[i + 1]
            l2 = l1 + out[i + 2]
            l3 = l2 + out[i + 3]
            out[i] = total + out[i]
            out[i + 1] = total + l1
            out[i + 2] = total + l2
            total = total + l3
            out[i + 3] = total
        for i in range(4 * groups, count):
            total += out[i]
            out[i] = total
        last = top + _log_normal(out[count - 1])
        if inclusive:
            for i in range(count):  # vectorises
                out[i] = top + _log_normal(out[i])
        else:
            for i in range(count - 1, 0, -1):
                out[i] = top + _log_normal(out[i - 1])
            out[0] = carry
        return last
    state = carry
    for i in range(count):
        nxt = _combine_exact(state, values[i])
        out[i] = nxt if inclusive else state
        state = nxt
    return state


def _logaddexp_lanes(xs, ys, fmts, seeds, flags):
    """Inclusive or exclusive logaddexp scan of every row of the 2-D ``(lanes, n)``
    arrays (a reverse scan arrives as flipped views)."""
    seeded, inclusive = flags[0], flags[1]
    fin, fout = fmts[0], fmts[2]
    lanes, n = xs[0].shape
    values = np.empty(BLOCK, np.float64)
    out = np.empty(BLOCK, np.float64)
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
            carry = _block(values, out, count, carry, inclusive)
            for i in range(count):
                store2(ys, fout, (out[i],), lane, b0 + i)


logaddexp_lanes = njit(cache=True, nogil=True, error_model="numpy")(_logaddexp_lanes)
