"""Compiled CPU kernels (Numba): every scan and primitive in one pass over memory.

The NumPy backend (:mod:`prefixscan.backends.cpu`) runs a ufunc's serial
accumulate where NumPy has one and a scan network of whole-array steps
otherwise, and repeats the scan per order.  Here each scan is one compiled loop
that reads and writes every element once, whatever the operator (built-in or a
user's ``Monoid.combine``, structs of arrays included), the order, the tuple
size, the axis and the direction (:mod:`.kernels`; sums of contiguous lanes four
elements per vector register, :mod:`.simd`; orders of 32-bit integers over chunks
in vector lanes, :mod:`.chunked`; logaddexp in blocks, :mod:`.logsumexp`).  The
other primitives (segmented scans, compaction, linear recurrences, delta coding)
are single loops too, kept with each primitive (the ``compiled`` modules of
:mod:`prefixscan.primitives`) on the machinery here: the Numba types and
overloads (:mod:`.jit_support`), the direct call (:mod:`.launch`), the monoids'
compiled combines (:mod:`.monoids`) and host arrays as the kernels read them
(:mod:`.views`).  Design and measurements: docs/design/cpu_compiled.md.

Entry points (host NumPy arrays; the public API checks the arguments first):

* :func:`available`, :func:`unavailable_reason`
* :func:`run_scan(request) <run_scan>`: the results, or None to let the NumPy
  path run (tiny inputs, an algorithm other than the serial one, a combine
  Numba cannot compile).
* :data:`SMALL_SCAN`: the size from which the primitives' CPU implementations
  run their compiled pass.
"""

from __future__ import annotations

import importlib
import importlib.util
import math

__all__ = ["available", "unavailable_reason", "run_scan", "takes", "SMALL_SCAN", "SMALL_DIRECT_SCAN"]

#: Below this many elements ``run_scan`` returns None: NumPy's path costs less
#: than a compiled call's fixed cost (about 15 us) there.
SMALL_SCAN = 8192
#: The same for scans NumPy runs as one ufunc accumulate at memory speed
#: (inclusive integer add/and/or/xor/max/min/mul without init, order 1, tuple size 1).
SMALL_DIRECT_SCAN = 1 << 17

_REASON: str | None = None


def unavailable_reason() -> str:
    """Empty when Numba is importable, else what to install."""
    global _REASON
    if _REASON is None:
        if importlib.util.find_spec("numba") is None:
            _REASON = "the compiled CPU kernels need Numba: pip install 'numba>=0.59'"
        else:
            try:
                importlib.import_module(f"{__name__}.jit_support")  # registers the Numba overloads
                _REASON = ""
            except Exception as exc:  # noqa: BLE001 - a broken Numba install
                _REASON = f"Numba failed to import: {exc}"
    return _REASON


def available() -> bool:
    return not unavailable_reason()


def run_scan(request) -> list | None:
    """``request`` (a checked ScanRequest) scanned in one compiled pass: a list of
    NumPy results (written into ``out`` when given), or None when the NumPy path
    should run instead."""
    if not takes(request):
        return None
    from .scan import run_scan as run

    return run(request)


def takes(request) -> bool:
    """Whether :func:`run_scan` compiles this scan (else the NumPy path runs it)."""
    if not available() or request.device != "cpu":
        return False
    if request.config.algorithm not in ("auto", "serial"):
        return False  # the caller asked for a scan network
    total = request.lane_len * max(1, _lanes(request))
    return total >= (SMALL_DIRECT_SCAN if _numpy_direct(request) else SMALL_SCAN)


def _numpy_direct(request) -> bool:
    """Whether the NumPy path runs this scan as one fast ufunc accumulate."""
    config = request.config
    return (config.monoid.ufunc is not None and config.inclusive and request.init is None
            and config.order == 1 and config.tuple_size == 1
            and all(name[0] in "iub" for name in request.acc_dtypes))


def _lanes(request) -> int:
    return math.prod(request.lanes_shape) if request.axis is not None else 1
