"""Segmented scans: a scan that restarts at every segment head.

The operator is lifted to (head flag, value) pairs,
``(fa, a) ⊕' (fb, b) = (fa | fb, b if fb else a ⊕ b)``, which is associative
whenever ⊕ is, so one ordinary scan of the pairs computes every segment's scan
at once (Schwartz 1980, "Ultracomputers"; Blelloch 1990, "Prefix sums and
their applications", section 1.5).  Segments come as head flags, CSR-style
start offsets or runs of equal keys.  Each backend runs it in one pass where it
can (:data:`~prefixscan.primitives.segmented.IMPLEMENTATIONS`: the GPU kernel
whose look-back carries the segments, the compiled CPU loop); the CPU's NumPy
path turns the segments into head flags and scans the lifted monoid.
"""

from __future__ import annotations

from ..._arrays import from_native, refuse_dask, unalias, write_results
from ..._normalize import check_segments
from ..._typing import ArrayLike, ArrayOrFields, BackendName, DTypeLike, InitLike, OffsetsLike, OpLike
from ...dispatch import check_capabilities, implementation, select_backend
from . import IMPLEMENTATIONS
from .checks import check_segmented_request

__all__ = ["segmented_scan"]


def segmented_scan(x: ArrayOrFields, op: OpLike = "add", *, flags: ArrayLike | None = None,
                   offsets: OffsetsLike | None = None, keys: ArrayLike | None = None, inclusive: bool = True,
                   reverse: bool = False, init: InitLike | None = None, dtype: DTypeLike | None = None,
                   out: ArrayOrFields | None = None, backend: BackendName | None = None) -> ArrayOrFields:
    """Scan that restarts at every segment of the 1-D array ``x`` (or tuple of them).

    Parameters
    ----------
    x : array or tuple of arrays
        A 1-D array (NumPy, torch on any device, CuPy, ...), or a tuple of
        same-length ones for a struct operator.
    op : str or Monoid, default "add"
        As in :func:`prefixscan.scan`.
    flags : bool array, optional
        One per element of x; True starts a segment (element 0 always does).
    offsets : integer array or list of ints, optional
        The segments' bounds, CSR style (like ``cu_seqlens``): beginning at 0,
        non-decreasing, each in ``[0, len(x)]``, of any integer dtype and byte
        order; empty segments (a repeated value) and a final ``len(x)`` are
        allowed.  The same rule as ``linear_recurrence``'s ``offsets``.
    keys : array, optional
        One per element of x, bool, integer or real floating-point; each run of
        consecutive keys equal under ``==`` is a segment (-0.0 equals 0.0, a NaN
        key starts a segment of its own).

    Segments are described once for every backend in docs/semantics.md
    ("Segments").
    inclusive : bool, default True
        False gives exclusive scans: each segment starts with the identity (or
        ``init``).
    reverse : bool, default False
        Scan each segment from its end.
    init : scalar (tuple of scalars for a struct operator), optional
        Seeds every segment: it sits before each segment's first element (after
        its last one in reverse), as ``init`` does for :func:`prefixscan.scan`.
    dtype : dtype, optional
        Accumulate and return in this dtype, as in :func:`prefixscan.scan`.
    out : array (tuple of arrays), optional
        Written with the result and returned; x's shape, the result's dtype, x's device.
    backend : {"cpu", "triton", None}
        As in :func:`prefixscan.scan`: device arrays run on the Triton backend in
        one pass (a single-pass kernel whose look-back carries the segments).

    Give exactly one of ``flags``, ``offsets`` and ``keys``, on x's device.

    Returns
    -------
    array or tuple of arrays
        x's shape, the result's dtype, of the caller's array type.

    Raises
    ------
    ValueError
        Not exactly one segment description, x not 1-D, flags / keys /
        offsets that do not fit x or are on another device (offsets not
        starting at 0, decreasing, or outside ``[0, len(x)]``), a tuple x whose
        length the operator's identity does not match, an ``out`` that does
        not fit.
    TypeError
        Flags that are not bool, offsets that are not integers, keys that are
        not bool, integer or real floating-point, a dtype the operator does not
        take, or ``inclusive`` / ``reverse`` not True/False.

    Every argument is checked before any work starts; nothing is written to
    ``out`` on bad input.

    Examples
    --------
    >>> import numpy as np, prefixscan
    >>> prefixscan.segmented_scan(np.array([1, 2, 3, 4, 5]), offsets=np.array([0, 2]))
    array([ 1,  3,  3,  7, 12])
    """
    if out is not None:
        x = unalias(x, out)  # an out that overlaps x (but for out=x) gets a copy of x to read
    request = check_segmented_request(x, op, inclusive=inclusive, reverse=reverse, init=init, dtype=dtype, out=out,
                                      backend=backend)
    if request.fields[0].library == "dask":
        from . import dask as segmented  # imports dask: x is a dask array

        return segmented.segmented_scan(request, flags=flags, offsets=offsets, keys=keys, chunk_scan=segmented_scan)
    for value, name in ((flags, "flags"), (offsets, "offsets"), (keys, "keys")):
        refuse_dask(value, name)  # an in-memory x: its segments are read now, not computed behind its back
    chosen = select_backend(request.config.backend, request.device)
    check_capabilities(chosen, request)
    on_device = chosen.NATIVE_LIBRARY == "torch"
    segments = check_segments(request.lane_len, flags, offsets, keys,
                              device=request.device if on_device else None)
    results = implementation("segmented_scan", IMPLEMENTATIONS, chosen).segmented_scan(request, segments)
    native = chosen.NATIVE_LIBRARY
    if request.cast_out is not None:  # out of another dtype: cast into it now that the scan succeeded
        write_results(request.cast_out, results)
        results = [o.obj for o in request.cast_out]
    elif request.out is not None:
        results = [o.obj for o in request.out]
    elif request.fields[0].library != native:
        results = [from_native(r, like, native, d) for r, like, d in zip(results, request.fields, request.out_dtypes)]
    return tuple(results) if request.struct else results[0]
