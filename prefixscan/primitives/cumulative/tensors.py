"""The NumPy drop-ins ``cumsum``, ``cumprod``, ``cummax`` and ``cummin`` on torch
tensors that autograd records or that ``torch.compile`` traces: the same
signatures and NumPy's dtype rule as :mod:`.api`, run through the scan's
differentiable custom operator (:func:`prefixscan.primitives.scan.tensors.scan`).
The argument checks here are plain Python, which TorchDynamo traces.
"""

from __future__ import annotations

import torch

from ..._axes import numpy_cumulative_axis
from ..._normalize import check_flag, numpy_out_accumulator
from ..scan.tensors import dtype_name, scan

__all__ = ["cumsum", "cumprod", "cummax", "cummin"]



# NumPy's cumsum/cumprod result dtype: small integers and bool widen to the platform integer.
_NUMPY_WIDENING = {"bool": "int64", "int8": "int64", "int16": "int64", "int32": "int64",
                   "uint8": "uint64", "uint16": "uint64", "uint32": "uint64"}


def _cumulative(op: str, a, axis, dtype, out, exclusive, reverse, backend, widen: bool):
    check_flag(exclusive, "exclusive")
    check_flag(reverse, "reverse")
    given = dtype
    if dtype is None and widen:
        dtype = _NUMPY_WIDENING.get(dtype_name(a))
    if out is not None and given is None and isinstance(out, torch.Tensor):
        # An out of another dtype: accumulate as NumPy does, in the promotion of the data's and out's.
        dtype = numpy_out_accumulator(dtype_name(a), dtype or dtype_name(a), dtype_name(out), op)
    if a.dim() == 0:  # NumPy scans a 0-d array as a 1-element 1-D one
        axis = numpy_cumulative_axis(axis, 0)
    return scan(a, op, axis=axis, inclusive=not exclusive, reverse=reverse, dtype=dtype, out=out, backend=backend)


def cumsum(a, axis=None, dtype=None, out=None, *, exclusive=False, reverse=False, backend=None):
    """:func:`prefixscan.cumsum` of a tensor through the differentiable operator."""
    return _cumulative("add", a, axis, dtype, out, exclusive, reverse, backend, widen=True)


def cumprod(a, axis=None, dtype=None, out=None, *, exclusive=False, reverse=False, backend=None):
    """:func:`prefixscan.cumprod` of a tensor through the differentiable operator."""
    return _cumulative("mul", a, axis, dtype, out, exclusive, reverse, backend, widen=True)


def cummax(a, axis=None, dtype=None, out=None, *, exclusive=False, reverse=False, backend=None):
    """:func:`prefixscan.cummax` of a tensor through the differentiable operator."""
    return _cumulative("max", a, axis, dtype, out, exclusive, reverse, backend, widen=False)


def cummin(a, axis=None, dtype=None, out=None, *, exclusive=False, reverse=False, backend=None):
    """:func:`prefixscan.cummin` of a tensor through the differentiable operator."""
    return _cumulative("min", a, axis, dtype, out, exclusive, reverse, backend, widen=False)
