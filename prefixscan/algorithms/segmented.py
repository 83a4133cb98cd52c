"""Segmented scans: a scan that restarts at every segment head.

The operator is lifted to (head flag, value) pairs,
``(fa, a) ⊕' (fb, b) = (fa | fb, b if fb else a ⊕ b)``, which is associative
whenever ⊕ is, so one ordinary scan of the pairs computes every segment's scan
at once (Schwartz 1980, "Ultracomputers"; Blelloch 1990, "Prefix sums and
their applications", section 1.5).  Segments come as head flags, CSR-style
start offsets or runs of equal keys, all turned into head flags on the host.
"""

from __future__ import annotations

import numpy as np

from .._arrays import as_numpy, from_numpy
from .._normalize import check_segmented_values, check_segments
from .._scan import scan
from ..dispatch import select_backend
from ..monoid import Monoid, where

__all__ = ["segmented_scan"]


def _segment_heads(n: int, kind: str, given: np.ndarray) -> np.ndarray:
    """Head flags (True where a segment starts) from checked flags, offsets or keys."""
    heads = np.zeros(n, dtype=bool)
    if kind == "flags":
        heads[:] = given
    elif kind == "offsets":
        heads[given[given < n]] = True  # empty segments share a head; a trailing n has none
    elif n:
        heads[1:] = given[1:] != given[:-1]
    if n:
        heads[0] = True
    return heads


def _lift_segmented(inner: Monoid, nfields: int) -> Monoid:
    """``inner`` lifted to (head flag, field, ...) tuples: a head drops what came before."""
    combine = inner.combine

    def segmented(a, b):
        fa, fb = a[0], b[0]
        merged = (combine(a[1], b[1]),) if nfields == 1 else tuple(combine(tuple(a[1:]), tuple(b[1:])))
        return (fa | fb,) + tuple(where(fb, vb, vm) for vb, vm in zip(b[1:], merged))

    def identity(dtypes):
        return (False,) + tuple(inner.identity_values(list(dtypes[1:])))

    lifted = Monoid(segmented, identity, name=f"segmented_{inner.name}")
    lifted.numpy_errstate = inner.numpy_errstate
    return lifted


def segmented_scan(x, op="add", *, flags=None, offsets=None, keys=None, inclusive=True, reverse=False):
    """Scan that restarts at every segment of the 1-D array ``x`` (or tuple of them).

    Parameters
    ----------
    x : array or tuple of arrays
        A 1-D host array (NumPy, a CPU torch tensor, ...), or a tuple of
        same-length ones for a struct operator.
    op : str or Monoid, default "add"
        As in :func:`prefixscan.scan`.
    flags : bool array, optional
        One per element of x; True starts a segment (element 0 always does).
    offsets : integer array, optional
        Segment start offsets, CSR style (like ``cu_seqlens``): non-decreasing,
        beginning at 0 and at most ``len(x)``; empty segments and a trailing
        ``len(x)`` are allowed.
    keys : array, optional
        One per element of x; each run of equal consecutive keys is a segment.
    inclusive : bool, default True
        False gives exclusive scans: each segment starts with the identity.
    reverse : bool, default False
        Scan each segment from its end.

    Give exactly one of ``flags``, ``offsets`` and ``keys``.

    Returns
    -------
    array or tuple of arrays
        x's shape and dtype, of the caller's array type.

    Raises
    ------
    ValueError
        Not exactly one segment description, x not 1-D, flags / keys /
        offsets that do not fit x, or a tuple x whose length the operator's
        identity does not match.
    TypeError
        Flags that are not bool, offsets that are not integers, a dtype the
        operator does not take, or ``inclusive`` / ``reverse`` not True/False.

    Every argument is checked before any work starts.
    NotImplementedError
        x on a GPU: segmented scans run on host arrays for now.

    Examples
    --------
    >>> import numpy as np, prefixscan
    >>> prefixscan.segmented_scan(np.array([1, 2, 3, 4, 5]), offsets=np.array([0, 2]))
    array([ 1,  3,  3,  7, 12])
    """
    monoid, refs = check_segmented_values(x, op, inclusive, reverse)
    n = refs[0].shape[0]
    segments = check_segments(n, flags, offsets, keys)
    backend = select_backend(None, refs[0].device)
    arrays = [as_numpy(r) for r in refs]
    fast = backend.segmented_scan(tuple(arrays), monoid, segments, inclusive, reverse)
    if fast is not None:  # one compiled pass (the CPU backend with Numba)
        result = tuple(from_numpy(np.ascontiguousarray(r), ref) for r, ref in zip(fast, refs))
        return result if isinstance(x, tuple) else result[0]
    heads = _segment_heads(n, *segments)
    if reverse:
        arrays = [a[::-1] for a in arrays]
        # Heads of the flipped array: the first element of each flipped segment.
        seg = np.cumsum(heads)[::-1]
        heads = np.ones(n, dtype=bool)
        heads[1:] = seg[1:] != seg[:-1]
        inner = Monoid(lambda p, q, c=monoid.combine: c(q, p), monoid.identity, name=monoid.name)
        inner.numpy_errstate = monoid.numpy_errstate
    else:
        inner = monoid
    lifted = _lift_segmented(inner, len(arrays))
    result = scan((heads,) + tuple(arrays), lifted, backend="cpu")[1:]
    if not inclusive:
        ident = inner.identity_values([a.dtype for a in arrays])
        shifted = []
        for r, e in zip(result, ident):
            y = np.empty_like(r)
            y[1:] = r[:-1]
            y[heads] = e
            shifted.append(y)
        result = tuple(shifted)
    if reverse:
        result = tuple(np.ascontiguousarray(r[::-1]) for r in result)
    result = tuple(from_numpy(r, ref) for r, ref in zip(result, refs))
    return result if isinstance(x, tuple) else result[0]
