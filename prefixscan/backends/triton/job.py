"""What every strategy launcher is given: one scan pass over the (B, M, K) layout.

A scan is a ``(B, M, K)`` row-major view scanned along M: B lanes, M steps, K
interleaved streams (a tuple size, or the extent after the scanned axis).  The
scan path (:mod:`.scan`) prepares the tensors and the monoid's Triton functions
once and hands each launcher a :class:`ScanJob`; a scan of order q > 1 that a
kernel cannot do in one pass runs q jobs that differ only in ``xs`` and ``ys``.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ScanJob"]


@dataclass(frozen=True, eq=False)
class ScanJob:
    xs: tuple  # input fields (torch tensors, contiguous)
    ys: tuple  # output fields
    idents: tuple  # the identity of each field, one-element tensors in its accumulator dtype
    inits: tuple | None  # per-lane seeds of each field, or None
    pair: object  # PAIR(a, b) on field tuples (combine.combine_functions)
    flat: object  # FLAT(a0, .., b0, ..), as tl.associative_scan calls it
    commutative: bool
    accs: tuple  # accumulator torch dtypes, one per field
    B: int
    M: int
    K: int
    config: object  # the request's ScanConfig (strategy, order, inclusive, reverse, monoid, ...)
    stream: int  # raw CUDA stream (0 in the interpreter)
    interpreter: bool

    @property
    def device(self):
        return self.xs[0].device
