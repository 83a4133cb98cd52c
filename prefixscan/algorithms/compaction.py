"""Stream compaction: keep the elements where a mask is True, in order.

An exclusive sum scan of the mask gives each kept element its slot in the
output, and one scatter writes it there (Merrill & Grimshaw 2009, "Parallel
scan for stream architectures"; the same slot computation as the split of
Blelloch 1990, "Prefix sums and their applications", section 1.3).  The scan runs through :func:`prefixscan.scan`; the
scatter is array-library code and belongs to the backend
(:meth:`prefixscan.backends.base.Backend.compact`).
"""

from __future__ import annotations

from .._arrays import from_native
from .._normalize import check_compact_args
from .._scan import scan
from ..dispatch import select_backend

__all__ = ["compact"]


def compact(x, mask):
    """The elements of ``x`` where ``mask`` is True, in order: ``x[mask]``, via a scan.

    Parameters
    ----------
    x : array
        Any array :func:`prefixscan.scan` takes, host or device.
    mask : bool array
        x's shape, on x's device.

    Returns
    -------
    array
        1-D, x's dtype, of the caller's array type, on x's device.

    Raises
    ------
    ValueError
        A mask of another shape or on another device.
    TypeError
        A mask that is not bool, or an x that is not a numeric or bool array.

    Examples
    --------
    >>> import numpy as np, prefixscan
    >>> x = np.array([5, -1, 7, -3, 2])
    >>> prefixscan.compact(x, x > 0)
    array([5, 7, 2])
    """
    rx, rm = check_compact_args(x, mask)
    backend = select_backend(None, rx.device)  # before any work: it may be unavailable here
    slots = scan(rm.obj, "add", inclusive=False, dtype="int64")  # flattened: axis=None
    result = backend.compact(rx, rm, slots)
    return from_native(result, rx, backend.NATIVE_LIBRARY, rx.dtype)
