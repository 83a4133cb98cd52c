"""First-order linear recurrences ``h[t] = a[t] * h[t-1] + b[t]`` as one scan.

The maps ``h -> a h + b`` compose into maps of the same form, so the recurrence
is a scan of the pairs ``(a[t], b[t])`` under composition of affine maps, an
associative but not commutative operator: the affine monoid (Blelloch 1990,
"Prefix sums and their applications", section 1.4; Kogge & Stone 1973).  The
implementation (host arrays through NumPy, torch tensors through a
differentiable custom operator) is :mod:`prefixscan.differentiable.recurrence`;
dask arrays go to :mod:`prefixscan.dask`, chunk by chunk.
"""

from __future__ import annotations

import functools

from .._arrays import is_dask_collection, refuse_dask
from ..differentiable import recurrence as in_memory
from ..differentiable.affine import AFFINE, AFFINE_BACKWARD
from ..differentiable.routing import is_torch_tensor

__all__ = ["AFFINE", "AFFINE_BACKWARD", "linear_recurrence"]


@functools.wraps(in_memory.linear_recurrence)
def linear_recurrence(a, b, *, init=None, axis=-1, reverse=False, offsets=None, return_final=False, backend=None):
    # Tensors first: torch.compile traces this function, and a type's module name
    # (the dask test) is something TorchDynamo cannot read.
    if is_torch_tensor(a) or is_torch_tensor(b):
        return in_memory.linear_recurrence(a, b, init=init, axis=axis, reverse=reverse, offsets=offsets,
                                           return_final=return_final, backend=backend)
    if is_dask_collection(a) or is_dask_collection(b):  # lazy, chunk by chunk
        from .. import dask as chunked  # imports dask: a or b is a dask array

        return chunked.linear_recurrence(a, b, init=init, axis=axis, reverse=reverse, offsets=offsets,
                                         return_final=return_final, backend=backend)
    refuse_dask(offsets, "offsets")  # host a and b: the offsets are read now, not computed behind their back
    return in_memory.linear_recurrence(a, b, init=init, axis=axis, reverse=reverse, offsets=offsets,
                                       return_final=return_final, backend=backend)
