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

from ..._arrays import as_torch, dtype_and_ndim, from_torch, inspect_array, is_dask_collection
from ..._axes import numpy_cumulative_axis
from ..._normalize import check_flag, numpy_out_accumulator
from ..._typing import ArrayLike, BackendName, DTypeLike
from ...caches import register_cache
from ..scan.api import run_shared, shared_scan
from ..scan.routing import wants_torch_ops

__all__ = ["cumsum", "cumprod", "cummax", "cummin", "cumulative_sum", "cumulative_prod"]


def _check_a(a, exclusive, reverse, argument: str = "a") -> tuple[Any, int]:
    """``a``'s dtype (a NumPy dtype object or a name) and number of dimensions, after
    refusing what is not a numeric or bool array and flags that are not True/False;
    errors name ``a`` (``argument``)."""
    if exclusive is not False:
        check_flag(exclusive, "exclusive")
    if reverse is not False:
        check_flag(reverse, "reverse")
    # A NumPy dtype object is a cheap cache key (its .name is a slow property).
    return dtype_and_ndim(a, argument)


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


register_cache("prefixscan.primitives.cumulative.api.numpy_rule", _numpy_rule.cache_clear)


@functools.lru_cache(maxsize=None)  # one entry per (result dtype, out dtype): a few dozen at most
def _out_rule(data, result, out_dtype, op: str) -> str | None:
    """The accumulator for data of dtype ``data`` whose result has dtype ``result``,
    written into an ``out`` of ``out_dtype`` (dtype objects or names) by ``op``: None when
    result and out are one dtype, else NumPy's
    (:func:`prefixscan._normalize.numpy_out_accumulator`)."""
    d, r, o = (v if isinstance(v, str) else np.dtype(v).name for v in (data, result, out_dtype))
    return None if r == o else numpy_out_accumulator(d, r, o, op)


register_cache("prefixscan.primitives.cumulative.api.out_rule", _out_rule.cache_clear)

_SHARED_PARAMETERS = """
    Parameters
    ----------
    a : array
        Any array :func:`prefixscan.scan` takes (NumPy, torch, CuPy, JAX, ...).
    axis : int or None, default None
        None scans the flattened array and returns 1-D, as NumPy does; an
        integer scans along that axis (a 0-d ``a`` counts as 1-D, as in NumPy;
        out of range: NumPy's ``AxisError``).
    dtype : dtype, optional
        Accumulation and output dtype; by default {default}.{accumulator}
    out : array, optional
        Where to write the result (the result's shape, x's device): of the
        result's dtype, or of one it casts to under ``same_kind`` (float into
        int is refused), accumulated as NumPy does, in the promotion of the
        data's dtype and out's (int16 data into a float32 ``out``: summed in
        float32; int32 data: in float64, rounded once).
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
        from . import tensors  # imports torch: a is a tensor

        return getattr(tensors, name)(a, axis, dtype, out, exclusive=exclusive, reverse=reverse, backend=backend)
    dtype_key, ndim = _check_a(a, exclusive, reverse)
    given = dtype
    if probe is not None:
        dtype = _numpy_result_dtype(dtype_key, dtype, probe)
    if out is not None and given is None and type(out) is not tuple:
        # An out of another dtype: accumulate as NumPy does, in the promotion of the data's and out's.
        out_key = dtype_and_ndim(out, "out")[0]
        promoted = _out_rule(dtype_key, dtype_key if dtype is None else dtype, out_key, op)
        dtype = dtype if promoted is None else promoted
    if ndim == 0:  # NumPy scans a 0-d array as a 1-element 1-D one
        axis = numpy_cumulative_axis(axis, ndim)
    # prefixscan.scan's body (its torch-ops test was the one above).
    return run_shared(a, None, out, shared_scan(op, axis=axis, inclusive=not exclusive, reverse=reverse, order=1,
                                                tuple_size=1, dtype=dtype, backend=backend, algorithm=None,
                                                deterministic=False))


def cumsum(a: ArrayLike, axis: int | None = None, dtype: DTypeLike | None = None, out: ArrayLike | None = None, *,
           exclusive: bool = False, reverse: bool = False, backend: BackendName | None = None) -> ArrayLike:
    return _cumulative("cumsum", "add", np.cumsum, a, axis, dtype, out, exclusive, reverse, backend)


def cumprod(a: ArrayLike, axis: int | None = None, dtype: DTypeLike | None = None, out: ArrayLike | None = None, *,
            exclusive: bool = False, reverse: bool = False, backend: BackendName | None = None) -> ArrayLike:
    return _cumulative("cumprod", "mul", np.cumprod, a, axis, dtype, out, exclusive, reverse, backend)


def cummax(a: ArrayLike, axis: int | None = None, dtype: DTypeLike | None = None, out: ArrayLike | None = None, *,
           exclusive: bool = False, reverse: bool = False, backend: BackendName | None = None) -> ArrayLike:
    return _cumulative("cummax", "max", None, a, axis, dtype, out, exclusive, reverse, backend)


def cummin(a: ArrayLike, axis: int | None = None, dtype: DTypeLike | None = None, out: ArrayLike | None = None, *,
           exclusive: bool = False, reverse: bool = False, backend: BackendName | None = None) -> ArrayLike:
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
                                              identity="0; for floats -0.0, the identity of IEEE addition,"
                                                       "\n        which equals 0.0"))
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


# ---------------------------------------------------------------------------
# The Python array API standard's functions (2024.12 revision).

def cumulative_sum(x: ArrayLike, /, *, axis: int | None = None, dtype: DTypeLike | None = None,
                   include_initial: bool = False, backend: BackendName | None = None) -> ArrayLike:
    """Cumulative sum with the array API standard's signature and rules (``cumulative_sum``).

    Parameters
    ----------
    x : array
        Any array :func:`prefixscan.scan` takes.  A 0-d array counts as a
        1-element 1-D one, as in NumPy.
    axis : int or None, default None
        The axis to sum along; None only for arrays of at most one dimension
        (the standard requires an axis for more).  An out-of-range axis raises
        ``AxisError``.
    dtype : dtype, optional
        Accumulation and output dtype.  By default x's dtype, except integers
        narrower than the default integer (int64): signed ones and bool give
        int64, unsigned ones uint64.  float16 accumulates in float16, as in
        :func:`cumsum`.
    include_initial : bool, default False
        True puts the sum of no elements (0, +0.0 for floats, as
        ``numpy.cumulative_sum``) first: the result is one longer along
        ``axis``, and its last element along it is the total.
    backend : {None, "cpu", "triton"}, default None
        As in :func:`prefixscan.scan`.

    Returns
    -------
    array
        Of the caller's array type: x's shape, or one longer along ``axis``
        with ``include_initial``.

    Examples
    --------
    >>> import numpy as np, prefixscan
    >>> prefixscan.cumulative_sum(np.array([1, 2, 3]), include_initial=True)
    array([0, 1, 3, 6])
    """
    return _cumulative_standard(cumsum, 0, x, axis, dtype, include_initial, backend)


def cumulative_prod(x: ArrayLike, /, *, axis: int | None = None, dtype: DTypeLike | None = None,
                    include_initial: bool = False, backend: BackendName | None = None) -> ArrayLike:
    """Cumulative product with the array API standard's signature and rules (``cumulative_prod``).

    As :func:`cumulative_sum`, with products: ``include_initial=True`` puts the
    product of no elements (1) first.

    Examples
    --------
    >>> import numpy as np, prefixscan
    >>> prefixscan.cumulative_prod(np.array([1, 2, 3]), include_initial=True)
    array([1, 1, 2, 6])
    """
    return _cumulative_standard(cumprod, 1, x, axis, dtype, include_initial, backend)


def _cumulative_standard(drop_in: Callable, identity: int, x, axis, dtype, include_initial, backend):
    """The standard's rules around the NumPy drop-in ``drop_in`` (whose default dtype
    is the standard's on platforms whose default integer is int64): an axis for
    arrays of two or more dimensions, and the identity first with ``include_initial``."""
    include_initial = check_flag(include_initial, "include_initial")
    _, ndim = _check_a(x, False, False, "x")
    if axis is None and ndim > 1:
        raise ValueError(f"axis: required for an array of {ndim} dimensions (the array API standard scans "
                         "along one axis; prefixscan.cumsum / cumprod scan the flattened array)")
    if axis is None or ndim == 0:
        axis = numpy_cumulative_axis(0 if axis is None else axis, ndim)  # 0-d: NumPy's 1-element 1-D
    result = drop_in(x, axis=axis, dtype=dtype, backend=backend)
    if not include_initial:
        return result
    return _prepend_identity(result, 0 if axis is None else axis % max(ndim, 1), identity)


def _prepend_identity(result, axis: int, identity: int):
    """``result`` with one slab of ``identity`` (of its dtype) before it along ``axis``,
    in the result's own array library."""
    shape = tuple(result.shape[:axis]) + (1,) + tuple(result.shape[axis + 1:])
    if isinstance(result, np.ndarray):
        return np.concatenate([np.full(shape, identity, dtype=result.dtype), result], axis=axis)
    if is_dask_collection(result):
        import dask.array as da

        head = (slice(None),) * axis + (slice(0, 1),)
        slab = (da.full_like(result[head], identity) if result.shape[axis] else
                da.full(shape, identity, dtype=result.dtype))
        return da.concatenate([slab, result], axis=axis)
    ref = inspect_array(result, "x")
    if ref.library == "jax" and ref.device == "cpu":
        import jax.numpy as jnp

        return jnp.concatenate([jnp.full(shape, identity, dtype=result.dtype), result], axis=axis)
    import torch  # torch tensors, and device arrays through a zero-copy torch view

    t = as_torch(ref)
    joined = torch.cat([torch.full(shape, identity, dtype=t.dtype, device=t.device), t], dim=axis)
    return joined if ref.library == "torch" else from_torch(joined, ref)
