"""Segmented scans on the CPU backend: the entry point that
:data:`prefixscan.primitives.segmented.IMPLEMENTATIONS` finds.

Arrays of at least ``SMALL_SCAN`` elements run one compiled pass
(:mod:`.compiled`, Numba) where the combine compiles; otherwise the NumPy path
turns the segments into head flags and runs one ordinary scan of the operator
lifted to (head flag, value) pairs, ``(fa, a) ⊕' (fb, b) = (fa | fb, b if fb
else a ⊕ b)``, associative whenever ⊕ is (Schwartz 1980, "Ultracomputers";
Blelloch 1990, "Prefix sums and their applications", section 1.5).
"""

from __future__ import annotations

import numpy as np

from ..._arrays import as_numpy, write_host
from ..._request import ScanRequest, np_dtype
from ...backends.cpu import compiled as cpu_compiled
from ...monoid import Monoid, where
from ..scan.api import scan

__all__ = ["segmented_scan"]


def segmented_scan(request: ScanRequest, segments: tuple) -> list:
    """The checked 1-D ``request`` scanned segment by segment (``segments``: the
    checked ``(kind, host array)``); NumPy results, written into ``out`` when the
    request has it."""
    results = _compiled(request, segments)
    if results is None:  # the host scan of the lifted monoid
        results = _lifted_scan(request, segments)
    return results


def _compiled(request: ScanRequest, segments: tuple) -> list | None:
    """One compiled pass (Numba) for segmented scans of at least ``SMALL_SCAN`` elements
    (written into ``out`` when the request has it); None below that, without Numba,
    or for a combine Numba cannot compile."""
    if not cpu_compiled.available() or request.lane_len < cpu_compiled.SMALL_SCAN:
        return None
    from . import compiled  # imports Numba

    kind, given = segments
    arrays = [as_numpy(f) for f in request.fields]
    if request.config.dtype is not None:  # accumulate and return in dtype
        arrays = [a.astype(np_dtype(d), copy=False) for a, d in zip(arrays, request.out_dtypes)]
    x = tuple(arrays) if request.struct else arrays[0]
    result = compiled.segmented_scan(x, request.config.monoid, inclusive=request.config.inclusive,
                                     reverse=request.config.reverse, init=request.init, **{kind: given})
    if result is None:
        return None
    results = list(result) if isinstance(result, tuple) else [result]
    if request.out is None:
        return results
    for ref, y in zip(request.out, results):
        write_host(ref, y)
    return [ref.obj for ref in request.out]


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
