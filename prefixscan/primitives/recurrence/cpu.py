"""The linear recurrence on the CPU backend: the entry points that
:data:`prefixscan.primitives.recurrence.IMPLEMENTATIONS` finds.  Float and
complex recurrences of at least ``SMALL_SCAN`` elements run one compiled pass
(:mod:`.compiled`, Numba); below that, for other dtypes and without Numba each
entry returns None and the caller scans the affine monoid with NumPy around it.
The CPU has no fused backward: the reverse recurrence runs (compiled) instead.
"""

from __future__ import annotations

import numpy as np

from ...backends.cpu import compiled as cpu_compiled

__all__ = ["linear_recurrence", "linear_recurrence_total"]


def linear_recurrence(a, b, init, axis: int, reverse: bool, deterministic: bool,
                      log_space: bool = False) -> np.ndarray | None:
    """One compiled pass (Numba) for float and complex recurrences of at least
    ``SMALL_SCAN`` elements; None below that, for other dtypes or without Numba.
    ``log_space``: ``a`` holds log decays (real floats)."""
    if (not cpu_compiled.available() or np.dtype(a.dtype).kind not in "fc"
            or np.broadcast(a, b).size < cpu_compiled.SMALL_SCAN):
        return None
    from .compiled import linear_recurrence as run  # imports Numba

    return run(a, b, init=init, axis=axis, reverse=reverse, log_space=log_space)


def linear_recurrence_total(a, b, axis: int, reverse: bool, log_space: bool = False) -> tuple | None:
    """One compiled pass, where :func:`linear_recurrence` has one; None elsewhere
    (``log_space``: the product of the decays comes as the sum of their logs)."""
    if (not cpu_compiled.available() or np.dtype(a.dtype).kind not in "fc"
            or np.broadcast(a, b).size < cpu_compiled.SMALL_SCAN):
        return None
    from .compiled import linear_recurrence_total as run  # imports Numba

    return run(a, b, axis=axis, reverse=reverse, log_space=log_space)
