"""The type aliases of the public API's annotations.

Every public module writes its annotations as strings (``from __future__ import
annotations``), so they cost a call nothing; the aliases are defined here, at
run time, so that ``typing.get_type_hints`` resolves them.  Nothing here
imports torch, CuPy, JAX or dask: an array of theirs is :data:`ArrayLike`.
"""

from __future__ import annotations

from typing import Any, Literal, Sequence, Union

import numpy as np

from .monoid import Monoid

__all__ = ["ArrayLike", "ArrayOrFields", "OpLike", "DTypeLike", "Scalar", "InitLike", "OffsetsLike", "BackendName",
           "AlgorithmName", "StrategyName"]

#: An array: a NumPy array or anything NumPy converts (a list, an object with
#: ``__array__``), a torch tensor, a CuPy or JAX array, any DLPack array, a dask array.
ArrayLike = Any
#: An array, or a tuple of same-shape arrays, one per field of a struct monoid.
ArrayOrFields = Union[ArrayLike, tuple[ArrayLike, ...]]
#: An operator: a built-in name (``"add"``, ...), the NumPy ufunc of one
#: (``numpy.add``, ``numpy.maximum``, ...), or a :class:`~prefixscan.Monoid`.
OpLike = Union[str, Monoid, np.ufunc]
#: A dtype: a NumPy or torch dtype, or its name (``"float32"``, ``"bfloat16"``, ...).
DTypeLike = Any
#: A number: a Python bool, int, float or complex, or a NumPy scalar.
Scalar = Union[bool, int, float, complex, np.generic]
#: A seed: a scalar or an array of the lane shape, or a tuple of those (one per field).
InitLike = Union[Scalar, ArrayLike, tuple[Any, ...]]
#: Segment or sequence bounds: an integer array or a sequence of ints.
OffsetsLike = Union[ArrayLike, Sequence[int]]
#: The names ``backend=`` takes (None: chosen by the arrays' device).
BackendName = Literal["cpu", "triton"]
#: The names ``algorithm=`` takes (the CPU scan networks; None is "auto").
AlgorithmName = Literal["auto", "serial", "kogge_stone", "sklansky", "brent_kung", "reduce_then_scan"]
#: The names ``strategy=`` takes (the GPU meta-strategies; None is "auto").
StrategyName = Literal["auto", "decoupled_lookback", "chained", "reduce_then_scan", "scan_then_propagate",
                       "persistent"]
