"""Delta encoding on the CPU backend: one compiled pass (:mod:`.compiled`, Numba)
for integer and real arrays of at least ``SMALL_SCAN`` elements, else one
vectorized NumPy subtraction per round on a copy of x (complex arrays included)."""

from __future__ import annotations

import numpy as np

from ..._arrays import ArrayRef, as_numpy
from ...backends.cpu import compiled as cpu_compiled

__all__ = ["delta_encode"]


def delta_encode(x: ArrayRef, order: int, tuple_size: int, axis: int) -> np.ndarray:
    """``order`` rounds of ``d[j] -= d[j - s]`` along ``axis``, one vectorized
    subtraction per round on a copy of x (one compiled pass where Numba is installed)."""
    host = as_numpy(x)
    if cpu_compiled.available() and host.dtype.kind in "iuf" and host.size >= cpu_compiled.SMALL_SCAN:
        from .compiled import delta_encode as encode  # imports Numba

        return encode(host, order, tuple_size, axis)
    d = np.array(as_numpy(x), copy=True)
    n, s = d.shape[axis], tuple_size
    lead = (slice(None),) * axis
    for _ in range(order):
        if n > s:
            d[lead + (slice(s, None),)] = d[lead + (slice(s, None),)] - d[lead + (slice(None, n - s),)]
    return d
