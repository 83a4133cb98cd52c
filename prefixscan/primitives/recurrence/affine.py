"""The affine monoid, over real pairs and over complex numbers held as real fields.

The maps ``h -> a h + b`` compose into maps of the same form, so the linear
recurrence ``h[t] = a[t] h[t-1] + b[t]`` is a scan of the pairs ``(a, b)``
under composition (Blelloch 1990, "Prefix sums and their applications",
section 1.4; Kogge & Stone 1973): an associative, non-commutative operator.
Triton has no complex types, so complex recurrences scan four real fields
``(re a, im a, re b, im b)`` with the complex products written out.

With log decays (``linear_recurrence(..., log_space=True)``) a map is
``h -> exp(la) h + b`` and held as ``(la, b)``: two maps compose into
``(la1 + la2, exp(la2) b1 + b2)``, so products of decays are sums of logs and
never underflow before ``exp`` of their sum does; identity ``(0, 0)``.
"""

from __future__ import annotations

from ...monoid import Monoid, exp

__all__ = ["AFFINE", "AFFINE_BACKWARD", "COMPLEX_AFFINE", "COMPLEX_AFFINE_BACKWARD", "LOG_AFFINE",
           "LOG_AFFINE_BACKWARD", "affine_monoid"]


def _affine(f, g):
    """Apply f = (a1, b1) first, then g = (a2, b2): h -> a2 (a1 h + b1) + b2."""
    a1, b1 = f
    a2, b2 = g
    return a1 * a2, a2 * b1 + b2


def _affine_backward(f, g):
    """The same composition in the other order: g first, then f (for reverse recurrences)."""
    a1, b1 = f
    a2, b2 = g
    return a1 * a2, a1 * b2 + b1


def _log_affine(f, g):
    """:func:`_affine` of maps ``h -> exp(la) h + b`` held as ``(la, b)``: f first, then g."""
    la1, b1 = f
    la2, b2 = g
    return la1 + la2, exp(la2) * b1 + b2


def _log_affine_backward(f, g):
    """:func:`_log_affine` in the other order: g first, then f (for reverse recurrences)."""
    la1, b1 = f
    la2, b2 = g
    return la1 + la2, exp(la1) * b2 + b1


def _complex_affine(f, g):
    """:func:`_affine` on complex numbers held as (re a, im a, re b, im b)."""
    ar1, ai1, br1, bi1 = f
    ar2, ai2, br2, bi2 = g
    return (ar1 * ar2 - ai1 * ai2, ar1 * ai2 + ai1 * ar2,
            ar2 * br1 - ai2 * bi1 + br2, ar2 * bi1 + ai2 * br1 + bi2)


def _complex_affine_backward(f, g):
    """:func:`_affine_backward` on complex numbers held as (re a, im a, re b, im b)."""
    ar1, ai1, br1, bi1 = f
    ar2, ai2, br2, bi2 = g
    return (ar1 * ar2 - ai1 * ai2, ar1 * ai2 + ai1 * ar2,
            ar1 * br2 - ai1 * bi2 + br1, ar1 * bi2 + ai1 * br2 + bi1)


#: The affine monoid over pairs ``(a, b)`` meaning ``h -> a h + b``, earlier map
#: first; identity ``(1, 0)``.  ``scan((a, b), AFFINE)`` returns the composed maps.
AFFINE = Monoid(_affine, (1, 0), name="affine")
#: The affine monoid composing the later map first, for recurrences run from the end.
AFFINE_BACKWARD = Monoid(_affine_backward, (1, 0), name="affine_backward")
#: The affine monoid over log decays: pairs ``(la, b)`` meaning ``h -> exp(la) h + b``,
#: earlier map first; identity ``(0, 0)``.
LOG_AFFINE = Monoid(_log_affine, (0, 0), name="log_affine")
#: :data:`LOG_AFFINE` composing the later map first, for recurrences run from the end.
LOG_AFFINE_BACKWARD = Monoid(_log_affine_backward, (0, 0), name="log_affine_backward")
#: :data:`AFFINE` on complex coefficients split into four real fields.
COMPLEX_AFFINE = Monoid(_complex_affine, (1, 0, 0, 0), name="complex_affine")
#: :data:`AFFINE_BACKWARD` on complex coefficients split into four real fields.
COMPLEX_AFFINE_BACKWARD = Monoid(_complex_affine_backward, (1, 0, 0, 0), name="complex_affine_backward")


def affine_monoid(reverse: bool, split_complex: bool = False, log_space: bool = False) -> Monoid:
    """The monoid of a recurrence run forward or from the end (``reverse``), over
    real pairs or over complex numbers split into four real fields; ``log_space``:
    over real pairs of a log decay and an input."""
    if log_space:
        return LOG_AFFINE_BACKWARD if reverse else LOG_AFFINE
    if split_complex:
        return COMPLEX_AFFINE_BACKWARD if reverse else COMPLEX_AFFINE
    return AFFINE_BACKWARD if reverse else AFFINE
