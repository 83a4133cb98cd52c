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

from .._arrays import as_numpy, from_native, refuse_dask, unalias, write_host, write_results
from .._normalize import check_segmented_request, check_segments
from .._request import np_dtype
from .._scan import scan
from ..dispatch import check_capabilities, select_backend
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


def _lifted_monoids(monoid: Monoid, nfields: int, reverse: bool) -> tuple[Monoid, Monoid]:
    """``(inner, lifted)``: ``monoid`` with its operands swapped for a reverse scan
    (else itself), and that lifted to (head flag, field, ...) tuples.  Made once
    per monoid (kept on it), so that the checks of a monoid's first scan, which the
    lifted one goes through too, run once and not on every call."""
    cache = monoid.__dict__.setdefault("_segmented", {})
    found = cache.get((nfields, reverse))
    if found is not None and found[0] is monoid.combine and found[1] is monoid.identity:
        return found[2], found[3]
    inner = monoid
    if reverse:
        inner = Monoid(lambda p, q, c=monoid.combine: c(q, p), monoid.identity, name=monoid.name)
        inner.numpy_errstate = monoid.numpy_errstate
    lifted = _lift_segmented(inner, nfields)
    cache[(nfields, reverse)] = (monoid.combine, monoid.identity, inner, lifted)
    return inner, lifted


def segmented_scan(x, op="add", *, flags=None, offsets=None, keys=None, inclusive=True, reverse=False, init=None,
                   dtype=None, out=None, backend=None):
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
        from ..dask import segmented  # imports dask: x is a dask array

        return segmented.segmented_scan(request, flags=flags, offsets=offsets, keys=keys, chunk_scan=segmented_scan)
    for value, name in ((flags, "flags"), (offsets, "offsets"), (keys, "keys")):
        refuse_dask(value, name)  # an in-memory x: its segments are read now, not computed behind its back
    chosen = select_backend(request.config.backend, request.device)
    check_capabilities(chosen, request)
    on_device = chosen.NATIVE_LIBRARY == "torch"
    segments = check_segments(request.lane_len, flags, offsets, keys,
                              device=request.device if on_device else None)
    results = chosen.segmented_scan(request, segments)
    native = chosen.NATIVE_LIBRARY
    if results is None:  # the host scan of the lifted monoid
        results, native = _lifted_scan(request, segments), "numpy"
    if request.cast_out is not None:  # out of another dtype: cast into it now that the scan succeeded
        write_results(request.cast_out, results)
        results = [o.obj for o in request.cast_out]
    elif request.out is not None:
        results = [o.obj for o in request.out]
    elif request.fields[0].library != native:
        results = [from_native(r, like, native, d) for r, like, d in zip(results, request.fields, request.out_dtypes)]
    return tuple(results) if request.struct else results[0]


def _lifted_scan(request, segments: tuple) -> list:
    """One scan of the lifted monoid on the host (NumPy results, written into ``out``)."""
    config = request.config
    monoid = config.monoid
    n = request.lane_len
    arrays = [np.asarray(as_numpy(r), dtype=np_dtype(acc)) for r, acc in zip(request.fields, request.acc_dtypes)]
    heads = _segment_heads(n, *segments)
    if config.reverse:
        arrays = [a[::-1] for a in arrays]
        # Heads of the flipped array: the first element of each flipped segment.
        seg = np.cumsum(heads)[::-1]
        heads = np.ones(n, dtype=bool)
        heads[1:] = seg[1:] != seg[:-1]
    inner, lifted = _lifted_monoids(monoid, len(arrays), config.reverse)
    seeds = inner.identity_values([a.dtype for a in arrays])
    if request.init is not None and n:
        # Every segment starts from the seed: fold it into each head's value.
        seeds = [np.asarray(_host_value(v), dtype=a.dtype) for v, a in zip(request.init, arrays)]
        firsts = tuple(a[heads] for a in arrays)
        with np.errstate(**monoid.numpy_errstate):
            if len(arrays) == 1:
                seeded = (inner.combine(seeds[0], firsts[0]),)
            else:
                seeded = tuple(inner.combine(tuple(seeds), firsts))
        arrays = [a.copy() for a in arrays]
        for a, v in zip(arrays, seeded):
            a[heads] = v
    result = scan((heads,) + tuple(arrays), lifted, backend="cpu")[1:] if n else tuple(arrays)
    if not config.inclusive:
        shifted = []
        for r, e in zip(result, seeds):
            y = np.empty_like(r)
            y[1:] = r[:-1]
            y[heads] = e
            shifted.append(y)
        result = tuple(shifted)
    if config.reverse:
        result = tuple(r[::-1] for r in result)
    results = [np.ascontiguousarray(np.asarray(r).astype(np_dtype(d), copy=False))
               for r, d in zip(result, request.out_dtypes)]
    if request.out is None:
        return results
    for ref, y in zip(request.out, results):
        write_host(ref, y)
    return [ref.obj for ref in request.out]


def _host_value(value):
    """A checked ``init`` value (a NumPy value, or a tensor) as NumPy."""
    return value.detach().cpu().numpy() if hasattr(value, "detach") else value
