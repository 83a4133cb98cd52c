"""prefixscan: parallel prefix scans (cumulative sums and any associative operator).

NumPy arrays scan on the CPU backend: compiled single-pass kernels (Numba)
from 8192 elements on, NumPy's ufuncs and scan networks below that.  Float
results round differently on the two paths (the compiled sums add four
elements at a time), so the values of a float32 cumulative sum change in their
last digits when its array grows past 8191 elements; integers are exact on
both.  CUDA arrays (torch, CuPy, JAX, any DLPack array) scan on the GPU backend
(Triton kernels, a single-pass decoupled look-back scan, Merrill & Garland
2016) when the ``gpu`` extra (torch and Triton) is installed:
``pip install -e '.[gpu]'`` in a checkout of the repository (the package is
not on PyPI); without it, the error names the command for this install.
Importing this package imports NumPy only.

Every public function comes from :mod:`prefixscan.api`: :func:`scan` and
:func:`make_scan`, the scan itself, and the functions built on it, each
implemented in its folder of :mod:`prefixscan.primitives`;
:func:`clear_caches` empties every process-wide cache (plans, compiled-kernel
launchers, tuned-table lookups).
"""

from .api import (
    AFFINE,
    Scan,
    argsort,
    compact,
    cummax,
    cummin,
    cumprod,
    cumsum,
    cumulative_prod,
    cumulative_sum,
    delta_decode,
    delta_encode,
    linear_recurrence,
    make_scan,
    partition,
    run_length_encode,
    scan,
    segmented_scan,
    sort,
    unique,
)
from .caches import clear_caches
from .dispatch import BackendUnavailableError, available_backends
from .monoid import BUILTIN_OPS, Monoid, exp, log, log1p, maximum, minimum, where
from . import _version, networks

__version__ = _version.__version__

__all__ = [
    "AFFINE", "BUILTIN_OPS", "BackendUnavailableError", "Monoid", "Scan", "argsort", "available_backends",
    "clear_caches", "compact", "cummax", "cummin", "cumprod", "cumsum", "cumulative_prod", "cumulative_sum",
    "delta_decode", "delta_encode",
    "exp", "linear_recurrence", "log", "log1p", "make_scan", "maximum", "minimum", "networks", "partition",
    "run_length_encode", "scan", "segmented_scan", "sort", "unique", "where",
]
