"""First-order linear recurrences ``h[t] = a[t] * h[t-1] + b[t]`` as one scan.

The maps ``h -> a h + b`` compose into maps of the same form, so the recurrence
is a scan of the pairs ``(a[t], b[t])`` under composition of affine maps, an
associative but not commutative operator: the affine monoid (Blelloch 1990,
"Prefix sums and their applications", section 1.4; Kogge & Stone 1973).  The
implementation (host arrays through NumPy, torch tensors through a
differentiable custom operator) is :mod:`prefixscan.differentiable.recurrence`.
"""

from __future__ import annotations

from ..differentiable.affine import AFFINE, AFFINE_BACKWARD
from ..differentiable.recurrence import linear_recurrence

__all__ = ["AFFINE", "AFFINE_BACKWARD", "linear_recurrence"]
