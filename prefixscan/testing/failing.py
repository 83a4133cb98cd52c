"""A sum whose combine raises part-way through a scan, and the data to make it raise.

docs/semantics.md promises that nothing is written to ``out`` when an error is
raised, also when a Monoid's combine raises after part of the scan has run (and
part of its output may have been written).  This module gives the tests such a
combine and its data:

* :func:`raising_sum_monoid` adds like ``"add"`` (one field, or two fieldwise) and
  raises :class:`CombineFailed` when an operand (the first field's, for two fields)
  lies within :data:`BAND` of :data:`POISON`;
* :func:`combine_check` is that test, on a scalar, a NumPy array or a Triton
  interpreter tensor; the monoid registers a Numba implementation of it on first
  use, so the compiled CPU kernels raise too (a compiled GPU kernel cannot raise:
  the monoid is not for GPUs);
* :func:`poison_data` makes random small nonzero values with ``POISON`` at chosen
  positions.

In such data every partial result that holds the poisoned element stays in the band
while those without it stay far below it (order-1 sums of up to 2^20 elements; the
tests scan higher orders over the q-th differences of such data), so a scan raises
as soon as it combines the poisoned element or a partial result holding it, in
whatever grouping, and the elements before it may have been scanned and written
already.  A scan of one element without ``init`` combines nothing and returns it;
an element that no output holds (the last one in scan order of an exclusive scan)
may or may not be combined.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..monoid import Monoid

__all__ = ["CombineFailed", "POISON", "BAND", "DATA_BOUND", "raising_sum_monoid", "poison_data", "combine_check"]

#: The value that makes the combine raise, and the half-width of the band around it:
#: sums of the poison and at most 2^20 data values of magnitude DATA_BOUND stay in the
#: band, while sums of data values alone stay far below it.  int32 holds all of them.
POISON = 1 << 30
BAND = 1 << 27
DATA_BOUND = 100


class CombineFailed(ValueError):
    """Raised by the combine of :func:`raising_sum_monoid`."""


def combine_check(v: Any) -> Any:
    """``v``; raises :class:`CombineFailed` where ``v`` (a scalar, a NumPy array or a
    Triton interpreter tensor) holds a value within ``BAND`` of ``POISON``."""
    data = getattr(getattr(v, "handle", None), "data", v)  # an interpreter tensor's NumPy data
    values = np.asarray(data)
    if values.dtype.kind in "iuf" and np.any(np.abs(values.astype(np.float64) - POISON) <= BAND):
        raise CombineFailed("the combine met the poisoned element")
    return v


_NUMBA_REGISTERED: list = []


def _register_numba() -> None:
    """Give :func:`combine_check` a Numba implementation (once; without Numba, nothing)."""
    if _NUMBA_REGISTERED:
        return
    try:
        from numba.extending import overload
    except ImportError:
        return

    @overload(combine_check)
    def _combine_check(v):
        def impl(v):
            if abs(v - POISON) <= BAND:
                raise CombineFailed("the combine met the poisoned element")
            return v

        return impl

    _NUMBA_REGISTERED.append(True)


def _raising_add(a, b):
    return combine_check(a) + combine_check(b)


def _raising_add_pair(a, b):
    return combine_check(a[0]) + combine_check(b[0]), a[1] + b[1]


_MONOIDS: dict = {}


def raising_sum_monoid(fields: int = 1) -> Monoid:
    """A sum (of one field, or fieldwise of two) that raises :class:`CombineFailed`
    when an operand's first field nears :data:`POISON`.  One shared Monoid per field
    count, so that its compiled kernels are built once per process."""
    if fields not in (1, 2):
        raise ValueError(f"fields: 1 or 2, got {fields!r}")
    _register_numba()
    found = _MONOIDS.get(fields)
    if found is None:
        found = _MONOIDS[fields] = (Monoid(_raising_add, 0, name="raising_add") if fields == 1 else
                                    Monoid(_raising_add_pair, (0, 0), name="raising_add_pair"))
    return found


def poison_data(rng: np.random.Generator, shape: Any, dtype: Any, positions: Any = ()) -> np.ndarray:
    """Random nonzero integers of magnitude at most :data:`DATA_BOUND` (exact in every
    dtype the monoid takes: int32, int64, float32, float64), with :data:`POISON` at
    the flat ``positions``."""
    x = rng.integers(1, DATA_BOUND + 1, size=shape) * rng.choice([-1, 1], size=shape)
    x = x.astype(dtype)
    flat = x.reshape(-1)
    for p in np.atleast_1d(np.asarray(positions, dtype=np.int64)):
        flat[p] = POISON
    return x
