"""Stable sorting and grouping: ``sort``, ``argsort``, ``unique``, ``run_length_encode``.

A least-significant-digit radix sort: keys become order-preserving unsigned
integers (:mod:`.keys`), and each digit pass is a stable counting sort whose
output offsets are an exclusive scan of the digits' counts (Blelloch 1990,
"Prefix sums and their applications", section 3.4).  On the GPU each digit pass
is one launch on the single-pass engine: every tile counts its digits and gets
the counts of the tiles before it by decoupled look-back, one column per digit
(Adinets & Merrill 2022, "Onesweep: A Faster Least Significant Digit Radix Sort
for GPUs"); on the CPU a compiled loop per pass.  ``unique`` and
``run_length_encode`` take the positions where sorted (or given) keys change (a
compaction) and their differences (the counts).

Each runs its backend's implementation
(:data:`~prefixscan.primitives.sort.IMPLEMENTATIONS`); docs/semantics.md has the
exact meaning (stability, NaN, -0.0, descending, ``key_bits``, axes) and
docs/design/sort.md the design and the measurements.
"""

from __future__ import annotations

from typing import Any

from ..._arrays import from_native
from ...dispatch import implementation, select_backend
from ..scan.routing import is_torch_tensor, wants_torch_ops
from . import IMPLEMENTATIONS
from .checks import check_sort_args, check_unique_args

__all__ = ["sort", "argsort", "unique", "run_length_encode"]


def _values_tuple(values: Any) -> tuple:
    return values if type(values) is tuple else (() if values is None else (values,))


def _tensor_call(x: Any, values: Any) -> bool:
    """Whether the call takes the custom operators (autograd or torch.compile)."""
    more = _values_tuple(values)
    return wants_torch_ops(x, None, *more) and all(is_torch_tensor(v) for v in more)


def sort(x: Any, *, axis: int | None = -1, descending: bool = False, values: Any = None,
         key_bits: int | None = None, backend: str | None = None) -> Any:
    """The elements of ``x`` sorted along ``axis``, stably (a radix sort).

    Parameters
    ----------
    x : array
        Host or device array of integers, bools or real floats (float16, bfloat16,
        float32, float64); any number of dimensions.
    axis : int or None, default -1
        The axis sorted along: every row along it is sorted on its own.  None sorts
        the flattened array (C order).
    descending : bool, default False
        Largest first.  Equal keys keep their input order either way.
    values : array or tuple of arrays, optional
        Arrays of x's shape on x's device (any numeric or bool dtype), moved with
        their keys.
    key_bits : int, optional
        The keys are integers known to lie in ``[0, 2**key_bits)``: only their low
        ``key_bits`` bits are sorted on, in fewer passes (8 expert ids: 3).  On the
        CPU a key outside the range raises ValueError; on the GPU the result is
        undefined (not checked: it would cost a pass).
    backend : {None, "cpu", "triton"}, default None
        As in :func:`prefixscan.scan`.

    Returns
    -------
    array, or (array, values)
        The sorted keys, x's shape, dtype and array type, on x's device (the input's
        bits: -0.0 stays -0.0).  With ``values``, also the values in the keys'
        order (a tuple for a tuple).  Floats sort as NumPy's ``sort``: -0.0 and 0.0
        are equal (kept in input order) and NaNs come last (first when
        ``descending``, as ``torch.sort``).  A dask ``x`` sorts each block along an
        ``axis`` held in one chunk, lazily.

    Raises
    ------
    AxisError
        An axis out of range.
    TypeError
        Complex keys, ``descending`` not a bool, ``key_bits`` not an integer or
        given for float keys.
    ValueError
        ``key_bits`` outside [1, the keys' bits], or (CPU) a key outside
        ``[0, 2**key_bits)``; values of another shape or on another device.

    Examples
    --------
    >>> import numpy as np, prefixscan
    >>> prefixscan.sort(np.array([3.0, -0.0, np.nan, 0.0, -2.0]))
    array([-2., -0.,  0.,  3., nan])
    >>> prefixscan.sort(np.array([2, 0, 2, 1]), values=np.array([10, 11, 12, 13]), descending=True)
    (array([2, 2, 1, 0]), array([10, 12, 13, 11]))
    """
    if is_torch_tensor(x) and _tensor_call(x, values):  # autograd or torch.compile: the custom operator
        from . import torch_ops as sort_ops  # imports torch: x is a tensor

        return sort_ops.sort(x, axis=axis, descending=descending, values=values, key_bits=key_bits, backend=backend)
    args = check_sort_args(x, axis, descending, values, key_bits)
    chosen = select_backend(backend, args.keys.device)  # before any work: it may be unavailable here
    run = implementation("sort", IMPLEMENTATIONS, chosen)  # the backend's, found before any work too
    if args.keys.library == "dask":  # lazy, block by block
        from . import dask as chunked  # imports dask: x is a dask array

        return chunked.sort(args, chunk_sort=sort, backend=backend)
    result = run.sort(args, want_keys=True, want_index=False)
    native = chosen.NATIVE_LIBRARY
    keys = from_native(result.keys, args.keys, native, args.keys.dtype)
    if not args.values:
        return keys
    moved = tuple(from_native(v, ref, native, ref.dtype) for v, ref in zip(result.values, args.values))
    return keys, (moved if args.struct else moved[0])


def argsort(x: Any, *, axis: int | None = -1, descending: bool = False, key_bits: int | None = None,
            backend: str | None = None) -> Any:
    """The stable permutation that sorts ``x`` along ``axis``: ``numpy.argsort(x,
    axis, kind="stable")`` (a radix sort).

    Parameters
    ----------
    x : array
        As in :func:`sort`.
    axis : int or None, default -1
        As in :func:`sort`; None: indices into the flattened array.
    descending : bool, default False
        Largest first, equal keys in input order (``torch.argsort(stable=True,
        descending=True)``).
    key_bits : int, optional
        As in :func:`sort`.
    backend : {None, "cpu", "triton"}, default None
        As in :func:`prefixscan.scan`.

    Returns
    -------
    array
        int64 indices along ``axis`` (x's shape; 1-D for axis None), x's array
        type, on x's device.  A dask ``x``: lazily, block by block, as :func:`sort`.

    Raises
    ------
    AxisError, TypeError, ValueError
        As :func:`sort`.

    Examples
    --------
    >>> import numpy as np, prefixscan
    >>> prefixscan.argsort(np.array([3, 1, 2, 1]))
    array([1, 3, 2, 0])
    >>> prefixscan.argsort(np.array([5, 1, 7, 1]), key_bits=3, descending=True)
    array([2, 0, 1, 3])
    """
    if is_torch_tensor(x) and wants_torch_ops(x):  # torch.compile: the custom operator
        from . import torch_ops as sort_ops  # imports torch: x is a tensor

        return sort_ops.argsort(x, axis=axis, descending=descending, key_bits=key_bits, backend=backend)
    args = check_sort_args(x, axis, descending, None, key_bits)
    chosen = select_backend(backend, args.keys.device)
    run = implementation("argsort", IMPLEMENTATIONS, chosen)
    if args.keys.library == "dask":
        from . import dask as chunked  # imports dask: x is a dask array

        return chunked.argsort(args, chunk_argsort=argsort, backend=backend)
    result = run.sort(args, want_keys=False, want_index=True)
    return from_native(result.index, args.keys, chosen.NATIVE_LIBRARY)


def unique(x: Any, *, return_index: bool = False, return_inverse: bool = False, return_counts: bool = False,
           backend: str | None = None) -> Any:
    """The sorted distinct elements of 1-D ``x``, as ``numpy.unique``.

    Parameters
    ----------
    x : 1-D array
        Integers, bools or real floats, on the host or a device.
    return_index : bool, default False
        Also the index of each distinct value's first occurrence in ``x``.
    return_inverse : bool, default False
        Also, for each element of ``x``, the index of its value in the result
        (``values[inverse]`` equals ``x``).
    return_counts : bool, default False
        Also how often each distinct value occurs.
    backend : {None, "cpu", "triton"}, default None
        As in :func:`prefixscan.scan`.

    Returns
    -------
    array, or tuple of arrays
        The distinct values (x's dtype and array type, on x's device), then those
        of ``index``, ``inverse`` and ``counts`` that were asked for (int64), in that
        order.  As ``numpy.unique``: every NaN counts as one value (the last), and
        -0.0 equals 0.0 (the one that comes first in ``x`` is kept).  On the GPU the
        number of distinct values is read from the device once.

    Raises
    ------
    ValueError
        An ``x`` that is not 1-D.
    TypeError
        Complex keys, a dask array, a flag that is not a bool.

    Examples
    --------
    >>> import numpy as np, prefixscan
    >>> prefixscan.unique(np.array([3, 1, 3, 2, 1]), return_counts=True)
    (array([1, 2, 3]), array([2, 1, 2]))
    """
    args = check_unique_args(x, return_index, return_inverse, return_counts)
    chosen = select_backend(backend, args.keys.device)
    run = implementation("unique", IMPLEMENTATIONS, chosen)
    values, index, inverse, counts = run.unique(args)
    native = chosen.NATIVE_LIBRARY
    out = [from_native(values, args.keys, native, args.keys.dtype)]
    out += [from_native(a, args.keys, native) for a in (index, inverse, counts) if a is not None]
    return out[0] if len(out) == 1 else tuple(out)


def run_length_encode(x: Any, *, backend: str | None = None) -> tuple:
    """The runs of equal consecutive elements of 1-D ``x``: ``(values, counts)``, as
    ``torch.unique_consecutive(x, return_counts=True)`` (CUB's ``DeviceRunLengthEncode``).

    Parameters
    ----------
    x : 1-D array
        Integers, bools or real floats, on the host or a device.
    backend : {None, "cpu", "triton"}, default None
        As in :func:`prefixscan.scan`.

    Returns
    -------
    (values, counts)
        ``values``: each run's first element (x's dtype and array type, on x's
        device); ``counts``: int64 run lengths (they sum to ``len(x)``).  Elements
        are equal as by ``==``: -0.0 continues a run of 0.0, and a NaN is never
        equal to anything, so each NaN is a run of its own (as in torch).  On the
        GPU the number of runs is read from the device once.

    Raises
    ------
    ValueError
        An ``x`` that is not 1-D.
    TypeError
        Complex keys, a dask array.

    Examples
    --------
    >>> import numpy as np, prefixscan
    >>> prefixscan.run_length_encode(np.array([7, 7, 2, 2, 2, 7]))
    (array([7, 2, 7]), array([2, 3, 1]))
    """
    args = check_unique_args(x, function="run_length_encode")
    chosen = select_backend(backend, args.keys.device)
    run = implementation("run_length_encode", IMPLEMENTATIONS, chosen)
    values, counts = run.run_length_encode(args.keys)
    native = chosen.NATIVE_LIBRARY
    return from_native(values, args.keys, native, args.keys.dtype), from_native(counts, args.keys, native)
