"""The backends a test can run on here, each with its array type.

One test body then checks every backend: put the NumPy input on the backend
with ``asarray``, call prefixscan with ``backend=b.backend``, bring the result
back with ``to_numpy`` and compare with the reference.  tests/conftest.py turns
:func:`backends_under_test` into the parametrized ``backend`` fixture.
"""

from __future__ import annotations

import importlib.util
import os
from dataclasses import dataclass
from typing import Any

import numpy as np

from ._scalars import as_numpy

__all__ = ["ArrayBackend", "backends_under_test"]


@dataclass(frozen=True)
class ArrayBackend:
    """A backend and the array type it scans.

    ``name``: "cpu", "triton-interpreter" (Triton's interpreter on CPU torch
    tensors, ``TRITON_INTERPRET=1``) or "cuda" (compiled Triton kernels on CUDA
    tensors).  ``backend``: the value for prefixscan's ``backend=`` argument.
    """

    name: str
    backend: str
    device: str | None = None  # torch device; None for NumPy arrays

    @property
    def is_triton(self) -> bool:
        return self.backend == "triton"

    def asarray(self, a: Any) -> Any:
        """A copy of NumPy array ``a`` (or a tuple of them) in this backend's array type."""
        if isinstance(a, tuple):
            return tuple(self.asarray(f) for f in a)
        a = np.array(a, copy=True)
        if self.device is None:
            return a
        import torch

        return torch.from_numpy(a).to(self.device)

    def to_numpy(self, result: Any) -> Any:
        """A result (or a tuple of them) as NumPy arrays (bfloat16 comes as float32)."""
        if isinstance(result, tuple):
            return tuple(self.to_numpy(r) for r in result)
        return as_numpy(result)[0]


def backends_under_test() -> list[ArrayBackend]:
    """The backends present: "cpu" always; "cuda" when torch sees a GPU and
    Triton is installed; else "triton-interpreter" when torch and Triton are
    installed and ``TRITON_INTERPRET=1`` (tests/conftest.py sets it without a GPU)."""
    found = [ArrayBackend("cpu", "cpu")]
    if importlib.util.find_spec("triton") is None:
        return found
    try:
        import torch
    except ImportError:
        return found
    if torch.cuda.is_available():
        found.append(ArrayBackend("cuda", "triton", "cuda"))
    elif os.environ.get("TRITON_INTERPRET") == "1":
        found.append(ArrayBackend("triton-interpreter", "triton", "cpu"))
    return found
