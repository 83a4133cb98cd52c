"""Axis arguments: NumPy's ``AxisError`` and the one range check of an axis (a leaf module).

Every function that takes an axis checks it here, so an out-of-range axis raises
NumPy's ``AxisError`` everywhere (a subclass of ``ValueError`` and ``IndexError``,
as ``numpy.cumsum`` raises), with a message that names the axis.
"""

from __future__ import annotations

try:
    from numpy.exceptions import AxisError
except ImportError:  # NumPy < 1.25
    from numpy import AxisError  # type: ignore[attr-defined,no-redef]

__all__ = ["AxisError", "normalize_axis", "numpy_cumulative_axis"]


def normalize_axis(axis: int, ndim: int, argument: str = "x") -> int:
    """``axis`` (an int) made non-negative for an array of ``ndim`` dimensions;
    AxisError when it is outside ``[-ndim, ndim)`` (a 0-d ``argument`` has no axis)."""
    if not -ndim <= axis < ndim:
        if ndim == 0:
            raise AxisError(f"axis {axis} is out of range: {argument} is 0-d and has no axis; "
                            "pass axis=None, or an array of at least one dimension")
        raise AxisError(f"axis {axis} is out of range for an array of {ndim} dimension(s)")
    return axis % ndim


def numpy_cumulative_axis(axis, ndim: int):
    """The axis NumPy's cumulative functions use: a 0-d array is a 1-element 1-D
    one there (``numpy.cumsum(np.array(5), axis=0)`` is ``[5]``), so axis 0 or -1
    of a 0-d array becomes None (the flattened scan, a 1-D result); anything else
    is returned unchanged for the scan's own checks."""
    if ndim == 0 and axis is not None and not isinstance(axis, bool):
        try:
            index = int(axis.__index__())
        except (AttributeError, TypeError):
            return axis  # not an integer: the scan's check names it
        if index not in (0, -1):
            raise AxisError(f"axis {index} is out of range for a 0-d array, which counts as 1-D here "
                            "(as in NumPy): give axis 0, -1 or None")
        return None
    return axis
