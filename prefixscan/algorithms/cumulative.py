"""NumPy drop-ins: ``cumsum``, ``cumprod``, ``cummax``, ``cummin``.

Each is :func:`prefixscan.scan` with a built-in operator and NumPy's dtype
promotion (``cumsum``/``cumprod`` widen small integers and bool to the platform
integer, as NumPy does; ``cummax``/``cummin`` keep the dtype), plus
``exclusive`` and ``reverse``, which NumPy lacks.

Accumulator: ``cumsum``/``cumprod`` follow NumPy's rule, not :func:`prefixscan.scan`'s:
they accumulate in the result dtype, so float16 sums and products accumulate in
float16, as ``numpy.cumsum`` does (bfloat16 in bfloat16 on the GPU), where
``scan`` accumulates 16-bit floats in float32 and rounds once on output.  On the
CPU a float16 accumulator is rounded to float16 after every step, in index order,
on every path: the results are ``numpy.cumsum``'s and ``numpy.cumprod``'s bit for
bit, and appending elements leaves the earlier outputs unchanged.
``cummax``/``cummin`` are exact in any accumulator.
"""

from __future__ import annotations

import functools
from typing import Any, Callable

import numpy as np

from .._arrays import inspect_array
from .._normalize import check_flag
from .._scan import scan
from ..caches import register_cache
from ..differentiable.routing import wants_torch_ops

__all__ = ["cumsum", "cumprod", "cummax", "cummin"]


def _check_a(a, exclusive, reverse) -> Any:
    """``a``'s dtype (a NumPy dtype object or a name), after refusing what is not a
    numeric or bool array and flags that are not True/False; errors name ``a``."""
    check_flag(exclusive, "exclusive")
    check_flag(reverse, "reverse")
    # A NumPy dtype object is a cheap cache key (its .name is a slow property).
    if type(a) is np.ndarray and a.dtype.kind in "biufc":
        return a.dtype
    return inspect_array(a, "a").dtype


def _numpy_result_dtype(dtype_key, dtype, probe: Callable) -> Any:
    """NumPy's accumulation dtype for ``probe`` (np.cumsum, ...) on ``dtype_key``."""
    if dtype is not None:
        return dtype
    if isinstance(dtype_key, str) and dtype_key == "bfloat16":
        return dtype_key
    return _numpy_rule(dtype_key, probe.__name__)


@functools.lru_cache(maxsize=None)  # one entry per (dtype, function): a few dozen at most
def _numpy_rule(dtype, probe: str) -> str:
    return getattr(np, probe)(np.zeros(0, dtype=dtype)).dtype.name


register_cache("prefixscan.algorithms.cumulative.numpy_rule", _numpy_rule.cache_clear)

_SHARED_PARAMETERS = """
    Parameters
    ----------
    a : array
        Any array :func:`prefixscan.scan` takes (NumPy, torch, CuPy, JAX, ...).
    axis : int or None, default None
        None scans the flattened array and returns 1-D, as NumPy does; an
        integer scans along that axis.
    dtype : dtype, optional
        Accumulation and output dtype; by default {default}.{accumulator}
    out : array, optional
        Where to write the result (the result's shape and dtype, x's device).
    exclusive : bool, default False
        Exclusive scan: element i combines the elements before i, the first
        being the operator's identity ({identity}).
    reverse : bool, default False
        Scan from the end of the axis.
    backend : {{None, "cpu", "triton"}}, default None
        As in :func:`prefixscan.scan`.

    Returns
    -------
    array
        Of the caller's array type; ``out`` itself when given.
"""


def _cumulative(name: str, op: str, probe: Callable | None, a, axis, dtype, out, exclusive, reverse, backend):
    """The shared body of the four functions: tensors that need autograd or run under
    torch.compile take the custom operator; everything else is checked (``a`` named in
    errors), given NumPy's result dtype when ``probe`` is set, and scanned with ``op``."""
    if type(a) is not np.ndarray and wants_torch_ops(a):  # autograd or torch.compile: the custom operator
        from ..differentiable import scans

        return getattr(scans, name)(a, axis, dtype, out, exclusive=exclusive, reverse=reverse, backend=backend)
    dtype_key = _check_a(a, exclusive, reverse)
    if probe is not None:
        dtype = _numpy_result_dtype(dtype_key, dtype, probe)
    return scan(a, op, axis=axis, inclusive=not exclusive, reverse=reverse, dtype=dtype, out=out,
                backend=backend)


def cumsum(a, axis=None, dtype=None, out=None, *, exclusive=False, reverse=False, backend=None):
    return _cumulative("cumsum", "add", np.cumsum, a, axis, dtype, out, exclusive, reverse, backend)


def cumprod(a, axis=None, dtype=None, out=None, *, exclusive=False, reverse=False, backend=None):
    return _cumulative("cumprod", "mul", np.cumprod, a, axis, dtype, out, exclusive, reverse, backend)


def cummax(a, axis=None, dtype=None, out=None, *, exclusive=False, reverse=False, backend=None):
    return _cumulative("cummax", "max", None, a, axis, dtype, out, exclusive, reverse, backend)


def cummin(a, axis=None, dtype=None, out=None, *, exclusive=False, reverse=False, backend=None):
    return _cumulative("cummin", "min", None, a, axis, dtype, out, exclusive, reverse, backend)


_NUMPY_ACCUMULATOR = ("\n        Accumulates in that dtype, as NumPy does: float16 in float16 (on the CPU"
                      "\n        rounded after every step in index order: NumPy's results bit for bit), unlike"
                      "\n        :func:`prefixscan.scan`, which accumulates 16-bit floats in float32; bfloat16"
                      "\n        accumulates in bfloat16 on the GPU (the CPU backend holds it in float32)."
                      "\n        Pass ``dtype=np.float32`` to accumulate (and return) float32.")
_NUMPY_DEFAULT = "NumPy's (small integers and bool widen\n        to the platform integer)"
cumsum.__doc__ = ("Cumulative sum: ``numpy.cumsum`` with NumPy's signature and dtype promotion, plus "
                  "``exclusive`` and ``reverse``.\n"
                  + _SHARED_PARAMETERS.format(default=_NUMPY_DEFAULT, accumulator=_NUMPY_ACCUMULATOR,
                                              identity="0"))
cumprod.__doc__ = ("Cumulative product: ``numpy.cumprod`` with NumPy's signature and dtype promotion, plus "
                   "``exclusive`` and ``reverse``.\n"
                   + _SHARED_PARAMETERS.format(default=_NUMPY_DEFAULT, accumulator=_NUMPY_ACCUMULATOR,
                                               identity="1"))
cummax.__doc__ = ("Running maximum (``np.maximum.accumulate``); keeps the dtype.  NaN propagates.\n"
                  + _SHARED_PARAMETERS.format(default="a's (max is exact in any dtype)", accumulator="",
                                              identity="the dtype's lowest value"))
cummin.__doc__ = ("Running minimum (``np.minimum.accumulate``); keeps the dtype.  NaN propagates.\n"
                  + _SHARED_PARAMETERS.format(default="a's (min is exact in any dtype)", accumulator="",
                                              identity="the dtype's highest value"))
