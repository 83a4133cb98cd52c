"""The copy roof on the host: the fastest copy of the same bytes.

A scan reads and writes every byte once, so a copy of the same bytes, into the
same pre-faulted output, is the most it can hope for.  Which copy is fastest
depends on the machine: on the project's 2-core virtual machine ``numpy.copyto``
moved 20-25 GB/s at 16-64 MiB where a plain compiled loop (vector loads and
stores, the code a compiled scan is made of) moved 26-38 GB/s, whatever glibc's
``rep movsb`` and non-temporal thresholds were set to (docs/design/cpu_compiled.md,
"The copy roof").  So the roof is both, timed in the same interleaved rounds as
the scans, and the faster one counts.  Without Numba only ``numpy.copyto`` is timed.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

__all__ = ["copy_variants", "ROOF_NOTE"]

ROOF_NOTE = ("the faster of numpy.copyto and a compiled copy loop (Numba), same bytes into the same "
             "pre-faulted output, in the same interleaved rounds")

_LOOP: list = []  # the compiled copy loop, built on first use


def _copy_loop():
    if not _LOOP:
        try:
            from numba import njit
        except ImportError:  # numba is optional here: numpy.copyto alone is the roof
            _LOOP.append(None)
        else:
            def copy(src, dst):
                for i in range(src.size):
                    dst[i] = src[i]

            _LOOP.append(njit(cache=True, nogil=True)(copy))
    return _LOOP[0]


def copy_variants() -> list[tuple[str, Callable[[np.ndarray, np.ndarray], None]]]:
    """``(name, copy(src, dst))`` for every copy the roof is the best of (1-D,
    C-contiguous arrays of one dtype)."""
    variants = [("numpy.copyto", lambda src, dst: np.copyto(dst, src))]
    loop = _copy_loop()
    if loop is not None:
        variants.append(("compiled loop", loop))
    return variants
