"""The decays of the recurrence kernel (:mod:`.triton_kernel`), plain or as logs.

With ``linear_recurrence(..., log_space=True)`` the kernel reads log decays ``la``
and never forms an array of ``exp(la)``: a map ``h -> exp(la) h + b`` is held as
``(la, b)``, two maps compose into ``(la1 + la2, exp(la2) b1 + b2)`` (the affine
monoid of :mod:`.affine` over log decays), so the decays published by the look-back
and stored as a lane's total are sums of logs, and ``exp`` is taken in registers only
where a decay multiplies a state (a walk, whose products span one chunk, takes it as it
loads each decay and scans as the linear kernel does).  Each helper takes the kernel's
``LOG`` flag (a constexpr: one kernel, specialized), and its fields as tuples of
``(re,)`` or ``(re, im)`` (log decays are real).
"""

from __future__ import annotations

import triton
import triton.language as tl

from .triton_maps import _mul

__all__ = ["log_affine_flat", "log_affine_pair", "unit_decay", "then_decay", "as_factor"]


@triton.jit
def log_affine_flat(la1, b1, la2, b2):
    """Maps ``h -> exp(la) h + b`` held as ``(la, b)``, the earlier first."""
    return la1 + la2, tl.exp(la2) * b1 + b2


@triton.jit
def log_affine_pair(f, g):
    return log_affine_flat(f[0], f[1], g[0], g[1])


@triton.jit
def unit_decay(BL: tl.constexpr, ACC: tl.constexpr, COMPLEX: tl.constexpr, LOG: tl.constexpr):
    """The identity decay of ``BL`` lanes: 1, or its log 0."""
    if LOG:
        out = (tl.zeros([BL], dtype=ACC),)
    elif COMPLEX:
        out = (tl.zeros([BL], dtype=ACC) + 1, tl.zeros([BL], dtype=ACC))
    else:
        out = (tl.zeros([BL], dtype=ACC) + 1,)
    return out


@triton.jit
def then_decay(x, y, LOG: tl.constexpr, COMPLEX: tl.constexpr):
    """The decay of ``x`` then ``y``: their product, or the sum of their logs."""
    if LOG:
        out = (x[0] + y[0],)
    else:
        out = _mul(x, y, COMPLEX)
    return out


@triton.jit
def as_factor(coef, LOG: tl.constexpr):
    """A decay as the factor it multiplies a state by: ``coef``, or ``exp`` of its log."""
    if LOG:
        out = (tl.exp(coef[0]),)
    else:
        out = coef
    return out
