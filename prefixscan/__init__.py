"""prefixscan: parallel prefix scans (cumulative sums and any associative operator).

NumPy arrays scan on the CPU backend (vectorized NumPy); CUDA arrays (torch,
CuPy, JAX, any DLPack array) scan on the GPU backend (Triton kernels, a
single-pass decoupled look-back scan) when ``prefixscan[gpu]`` is installed.
Importing this package imports NumPy only.
"""

from .api import (
    AFFINE,
    Scan,
    compact,
    cummax,
    cummin,
    cumprod,
    cumsum,
    delta_decode,
    delta_encode,
    linear_recurrence,
    make_scan,
    scan,
    segmented_scan,
)
from .dispatch import BackendUnavailableError, available_backends
from .monoid import BUILTIN_OPS, Monoid, exp, log, log1p, maximum, minimum, where
from . import networks

__version__ = "0.1.0"

__all__ = [
    "AFFINE", "BUILTIN_OPS", "BackendUnavailableError", "Monoid", "Scan", "available_backends",
    "compact", "cummax", "cummin", "cumprod", "cumsum", "delta_decode", "delta_encode", "exp",
    "linear_recurrence", "log", "log1p", "make_scan", "maximum", "minimum", "networks", "scan",
    "segmented_scan", "where",
]
