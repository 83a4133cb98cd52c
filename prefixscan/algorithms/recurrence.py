"""First-order linear recurrences ``h[t] = a[t] * h[t-1] + b[t]`` as one scan.

The maps ``h -> a h + b`` compose into maps of the same form, so the recurrence
is a scan of the pairs ``(a[t], b[t])`` under composition of affine maps, an
associative but not commutative operator: the affine monoid (Blelloch 1990,
"Prefix sums and their applications", section 1.4; Kogge & Stone 1973).  The
scan's pair ``(A[t], B[t])`` is the composed map of steps ``0..t``, so
``h[t] = A[t] * init + B[t]``.
"""

from __future__ import annotations

import numpy as np

from .._normalize import check_recurrence_args
from ..api import scan
from ..monoid import Monoid

__all__ = ["AFFINE", "AFFINE_BACKWARD", "linear_recurrence"]


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


#: The affine monoid over pairs ``(a, b)`` meaning ``h -> a h + b``, earlier map
#: first; identity ``(1, 0)``.  ``scan((a, b), AFFINE)`` returns the composed maps.
AFFINE = Monoid(_affine, (1, 0), name="affine")
#: The affine monoid composing the later map first, for recurrences run from the end.
AFFINE_BACKWARD = Monoid(_affine_backward, (1, 0), name="affine_backward")


def linear_recurrence(a, b, *, init=None, axis=-1, reverse=False):
    """Solve ``h[t] = a[t] * h[t-1] + b[t]`` along ``axis``, with ``h[-1] = init``.

    Computed as one scan of the pairs ``(a, b)`` with the affine monoid
    (:data:`prefixscan.AFFINE`; Blelloch 1990, section 1.4), so it runs in
    parallel on both backends, e.g. the state of a linear RNN or an
    exponential moving average (``a = 1 - alpha``, ``b = alpha * x``).

    Parameters
    ----------
    a, b : array
        Coefficients and offsets: arrays of one shape and dtype (at least 1-D),
        of any type :func:`prefixscan.scan` takes.
    init : scalar or array, optional
        ``h[-1]`` (``h[n]`` with ``reverse``); 0 when None.  A scalar or an
        array of the lane shape (a's shape without ``axis``) or one that
        broadcasts to it.
    axis : int, default -1
        The time axis.
    reverse : bool, default False
        Run from the end: ``h[t] = a[t] * h[t+1] + b[t]`` with ``h[n] = init``.

    Returns
    -------
    array
        ``h``, a's shape and dtype, of the caller's array type.

    Raises
    ------
    ValueError
        ``a`` and ``b`` of different shapes, a 0-d ``a``, an out-of-range
        ``axis``, or an ``init`` that does not broadcast to the lane shape.
    TypeError
        ``a`` and ``b`` of different dtypes.

    Examples
    --------
    >>> import numpy as np, prefixscan
    >>> prefixscan.linear_recurrence(np.array([2.0, 2.0, 2.0]), np.array([1.0, 1.0, 1.0]), init=1.0)
    array([ 3.,  7., 15.])
    """
    ra, _, widen = check_recurrence_args(a, b, init, axis)
    monoid = AFFINE_BACKWARD if reverse else AFFINE
    coef, offset = scan((a, b), monoid, axis=axis, reverse=reverse)
    if init is None:
        return offset
    lane_axis = axis % len(ra.shape)
    if widen:
        init = init.unsqueeze(lane_axis) if hasattr(init, "unsqueeze") else np.expand_dims(init, lane_axis)
    return coef * init + offset
