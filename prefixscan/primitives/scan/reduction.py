"""Reductions over a monoid: each lane's total ``x[0] ⊕ x[1] ⊕ ... ⊕ x[n-1]``.

The first phase of a two-level scan: a sequence cut into pieces is scanned by
reducing every piece to its total, combining the totals into each piece's
carry, and scanning every piece seeded with its carry (reduce-then-scan:
Merrill & Grimshaw 2009, "Parallel scan for stream architectures"; Blelloch
1990, "Prefix sums and their applications", section 1.2).  The reduction reads
each element once and writes only the totals, which is what makes the
two-level scan three passes over the data instead of four.

Built-in operators reduce with the array library's own reductions (NumPy's
``ufunc.reduce``, pairwise for float sums; CuPy's and torch's ``sum``,
``prod``, ``max``, ``min``, ``logsumexp``).  Other monoids reduce with a
balanced tree of vectorized combines of adjacent pairs, the left operand
always the earlier one, so non-commutative monoids are safe: log2(n) levels,
n - 1 combines (Blelloch 1990, section 1.2, the up-sweep).  Torch tensors on a
GPU with a user monoid (whose ``combine`` runs as NumPy or Triton code, not
torch code) take the last row of an inclusive scan instead.

The result is in the accumulator dtype and has the shape a scan's ``init``
takes (the lane shape, followed by ``(tuple_size,)`` when ``tuple_size > 1``),
so a total can seed the scan of the next piece directly.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import numpy as np

from ..._arrays import as_numpy, as_torch, from_numpy, from_torch
from ..._normalize import build_request, make_config
from ..._request import ScanRequest, np_dtype
from .routing import is_torch_tensor
from .runner import run_scan

__all__ = ["reduce", "reduce_request", "tree_reduce"]

# Elements per row of the blocked reduction of narrow rows.
_BLOCK = 1024
# Array methods of CuPy (and NumPy) for the built-in operators that have one.
_ARRAY_METHODS = {"add": "sum", "mul": "prod", "max": "max", "min": "min"}
_SIGNED_TWIN = {"uint16": "int16", "uint32": "int32", "uint64": "int64"}
# torch dtypes whose sum/prod/amax/amin run on every device.
_TORCH_REDUCIBLE = ("bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32",
                    "float64", "complex64", "complex128")


def reduce(x, op="add", *, axis=None, tuple_size=1, dtype=None, backend=None):
    """The total of every lane under ``op``: ``x[0] ⊕ x[1] ⊕ ... ⊕ x[n-1]``.

    Arguments as :func:`prefixscan.scan`'s.  With ``tuple_size=s`` each of the
    s interleaved streams of a lane has its own total.  An empty lane's total
    is the identity.

    Returns
    -------
    array or tuple of arrays
        In the accumulator dtype (see :func:`prefixscan.scan`), of x's array
        type, shaped as scan's ``init``: the lane shape (x's shape without
        ``axis``; ``()`` for ``axis=None``), followed by ``(tuple_size,)``
        when ``tuple_size > 1``.  A tuple for a struct monoid.

    Examples
    --------
    >>> import numpy as np
    >>> from prefixscan.primitives.scan.reduction import reduce
    >>> reduce(np.array([[1, 2, 3], [4, 5, 6]]), axis=1)
    array([ 6, 15])
    >>> reduce(np.array([1, 2, 3, 4, 5, 6]), tuple_size=2)
    array([ 9, 12])
    """
    config = make_config(op, axis=axis, inclusive=True, reverse=False, order=1, tuple_size=tuple_size,
                         dtype=dtype, backend=backend, algorithm=None)
    request = build_request(config, x, None, None)
    totals = reduce_request(request)
    return tuple(totals) if request.struct else totals[0]


def reduce_request(request: ScanRequest) -> list:
    """The per-field totals of a checked scan request (its operator, axis and
    tuple size; direction, order and ``init`` are ignored), each of shape
    ``request.init_shape`` in its accumulator dtype, of x's array type."""
    ref = request.fields[0]
    monoid = request.config.monoid
    if ref.device == "cpu":  # host arrays and CPU tensors: zero-copy NumPy views
        arrays = [as_numpy(f) for f in request.fields]
        if monoid.builtin and monoid.ufunc is not None and request.lane_len:
            with np.errstate(**monoid.numpy_errstate):
                totals = [_ufunc_totals(a, request, monoid.ufunc, np_dtype(acc))
                          for a, acc in zip(arrays, request.acc_dtypes)]
        else:
            totals = _reduce_numpy_like([_lanes(a, request) for a in arrays], request, numpy=True)
        # (reshaped after the conversion: NumPy makes 0-d arrays 1-d on the way to torch)
        return [from_numpy(np.asarray(t), f, acc).reshape(request.init_shape)
                for t, f, acc in zip(totals, request.fields, request.acc_dtypes)]
    if ref.library == "cupy":
        views = [_lanes(f.obj, request) for f in request.fields]
        return [t.reshape(request.init_shape) for t in _reduce_numpy_like(views, request, numpy=False)]
    tensors = [as_torch(f) for f in request.fields]  # torch, or a zero-copy view of a device array
    totals = _reduce_torch(tensors, request)
    return [from_torch(t.reshape(request.init_shape), f) for t, f in zip(totals, request.fields)]


def _geometry(request: ScanRequest) -> tuple[int, int, int, int]:
    """``(outer, rows, inner, s)``: x as ``(outer, rows, s * inner)`` without moving data,
    element ``m + j*s`` of a lane at row j, column ``m * inner + lane's inner index``
    (as the compiled CPU backend views it)."""
    s = request.config.tuple_size
    rows = request.lane_len // s
    if request.axis is None:
        return 1, rows, 1, s
    shape = request.shape
    return math.prod(shape[:request.axis]), rows, math.prod(shape[request.axis + 1:]), s


def _ufunc_totals(arr: np.ndarray, request: ScanRequest, ufunc: np.ufunc, acc: np.dtype) -> np.ndarray:
    """``(lanes, s)`` totals of a commutative built-in operator: NumPy's reduction along the
    rows of the ``(outer, rows, s * inner)`` view.  Rows are first folded in blocks of
    ``_BLOCK`` elements where NumPy would reduce an element at a time (rows of a few
    elements; contiguous lanes under ``mul``, which NumPy does not vectorize there); the
    operator commutes, so the blocks may be combined in any grouping.  ``logaddexp`` takes
    the shifted sum of exponentials (:func:`_logsumexp_rows`)."""
    outer, rows, inner, s = _geometry(request)
    width = s * inner
    if not outer * width:  # no lanes
        return np.empty((outer * inner, s), acc)
    view = np.reshape(arr, (outer, rows, width))
    block = max(1, _BLOCK // width)
    if ufunc is np.logaddexp:
        totals = _logsumexp_rows(view, acc)
    elif width == 1 and ufunc is not np.multiply:  # contiguous lanes: NumPy's own vectorized reduction
        totals = ufunc.reduce(view[:, :, 0], axis=1, dtype=acc)[:, None]
    elif block > 1 and rows >= 2 * block:
        whole = rows - rows % block
        partial = ufunc.reduce(view[:, :whole].reshape(outer, whole // block, block * width), axis=1, dtype=acc)
        totals = ufunc.reduce(partial.reshape(outer, block, width), axis=1, dtype=acc)
        if whole < rows:
            totals = ufunc(totals, ufunc.reduce(view[:, whole:], axis=1, dtype=acc), dtype=acc)
    else:
        totals = ufunc.reduce(view, axis=1, dtype=acc)
    return totals.reshape(outer, s, inner).transpose(0, 2, 1).reshape(outer * inner, s)


def _logsumexp_rows(view: np.ndarray, acc: np.dtype) -> np.ndarray:
    """``log(sum(exp(x)))`` along the rows, shifted by the rows' maximum (NumPy's
    ``logaddexp.reduce`` takes a logarithm and an exponential per element); rows of a
    maximum that is not finite (an infinity, NaN, or all -inf) total that maximum, as the
    scan's logaddexp does.  The rows are taken in slices, to bound the temporaries."""
    top = np.maximum.reduce(view, axis=1).astype(acc)
    finite = np.isfinite(top)
    shift = np.where(finite, top, 0)[:, None, :]
    sums = np.zeros(top.shape, acc)
    step = max(1, (1 << 16) // view.shape[2])
    for start in range(0, view.shape[1], step):
        sums += np.add.reduce(np.exp(view[:, start:start + step].astype(acc) - shift), axis=1)
    with np.errstate(divide="ignore"):
        return np.where(finite, top + np.log(sums), top)


def _lanes(arr: Any, request: ScanRequest) -> Any:
    """``arr`` viewed as ``(lanes, n / s, s)``: element ``m + j*s`` of a lane at row j, column m."""
    s = request.config.tuple_size
    rows = request.lane_len // s
    if request.axis is None:
        return arr.reshape(1, rows, s)
    lanes = math.prod(request.lanes_shape)
    moved = arr.movedim(request.axis, -1) if is_torch_tensor(arr) else np.moveaxis(arr, request.axis, -1)
    return moved.reshape(lanes, rows, s)


def _identity_totals(views: list, request: ScanRequest) -> list:
    lanes, _, s = views[0].shape
    return [np.full_like(v, value, dtype=np_dtype(acc), shape=(lanes, s))
            for v, value, acc in zip(views, request.identity, request.acc_dtypes)]


def _reduce_numpy_like(views: list, request: ScanRequest, *, numpy: bool) -> list:
    """Totals of ``(lanes, rows, s)`` NumPy views for user monoids, or CuPy views
    (through NumPy's dispatch)."""
    if views[0].shape[1] == 0:
        return _identity_totals(views, request)
    monoid = request.config.monoid
    accs = [np_dtype(a) for a in request.acc_dtypes]
    if monoid.builtin and monoid.name in _ARRAY_METHODS and views[0].dtype.kind != "b":
        method = _ARRAY_METHODS[monoid.name]
        if method in ("sum", "prod"):
            return [getattr(v, method)(axis=1, dtype=acc) for v, acc in zip(views, accs)]
        return [getattr(v.astype(acc, copy=False), method)(axis=1) for v, acc in zip(views, accs)]
    fields = [v.astype(acc, copy=False) for v, acc in zip(views, accs)]
    with np.errstate(**monoid.numpy_errstate):
        return tree_reduce(fields, _field_combine(monoid, len(fields)))


def _reduce_torch(tensors: list, request: ScanRequest) -> list:
    """Totals of torch tensors on a GPU: torch's reductions for the built-in operators,
    a tree of combines for the bitwise ones, the last row of a scan otherwise."""
    import torch  # the tensors are torch's

    monoid = request.config.monoid
    views = [_lanes(t, request) for t in tensors]
    accs = [getattr(torch, a) for a in request.acc_dtypes]
    if views[0].shape[1] == 0:
        lanes, _, s = views[0].shape
        return [torch.full((lanes, s), np.asarray(value).item(), dtype=acc, device=v.device)
                for v, value, acc in zip(views, request.identity, accs)]
    name = monoid.name if monoid.builtin else None
    kinds_ok = all(str(v.dtype).replace("torch.", "") in _TORCH_REDUCIBLE for v in views)
    is_bool = views[0].dtype == torch.bool
    # Commutative built-ins reduce along the rows of the (outer, rows, s * inner) view, in place.
    outer, rows, inner, s = _geometry(request)
    rowwise = [t.reshape(outer, rows, s * inner) for t in tensors]

    def by_lane(totals):
        return [t.reshape(outer, s, inner).transpose(1, 2).reshape(outer * inner, s) for t in totals]

    if name in ("add", "mul") and kinds_ok and not is_bool:
        reducer = torch.sum if name == "add" else torch.prod
        return by_lane([reducer(v, 1, dtype=acc) for v, acc in zip(rowwise, accs)])
    if name in ("max", "min") and kinds_ok:
        if is_bool:
            return by_lane([(torch.any if name == "max" else torch.all)(v, 1) for v in rowwise])
        return by_lane([(torch.amax if name == "max" else torch.amin)(v.to(acc), 1) for v, acc in zip(rowwise, accs)])
    if name == "logaddexp":
        return by_lane([torch.logsumexp(v.to(acc), 1) for v, acc in zip(rowwise, accs)])
    if name in ("and", "or", "xor"):  # plain operators: the combine runs on tensors
        fields = [v.to(acc) for v, acc in zip(views, accs)]
        # torch has few kernels for uint16-64; bitwise operators are the same on the signed twin.
        signed = [_SIGNED_TWIN.get(str(f.dtype).replace("torch.", "")) for f in fields]
        fields = [f.view(getattr(torch, t)) if t else f for f, t in zip(fields, signed)]
        totals = tree_reduce(fields, _field_combine(monoid, len(fields)))
        return [t.view(acc) if s else t for t, s, acc in zip(totals, signed, accs)]
    # A user monoid's combine runs as NumPy or Triton code: the last row of an inclusive scan.
    config = replace(request.config, inclusive=True, reverse=False, order=1, dtype=None)
    fields = [t.to(acc) for t, acc in zip(tensors, accs)]
    scanned = run_scan(config, tuple(fields) if request.struct else fields[0])
    scanned = scanned if request.struct else (scanned,)
    return [_lanes(y, request)[:, -1, :] for y in scanned]


def _field_combine(monoid, nfields: int):
    """``monoid.combine`` on lists of field arrays."""
    combine = monoid.combine
    if nfields == 1:
        return lambda a, b: [combine(a[0], b[0])]
    return lambda a, b: list(combine(tuple(a), tuple(b)))


def tree_reduce(fields: list, combine) -> list:
    """Reduce ``(lanes, rows, s)`` field arrays along their rows with ``combine`` (on
    lists of fields): adjacent pairs combined level by level, the earlier row always
    the left operand; an odd row out waits, and the rows left over fold in from the
    left at the end.  Returns ``(lanes, s)`` arrays."""
    leftovers = []
    while fields[0].shape[1] > 1:
        rows = fields[0].shape[1]
        even = rows - rows % 2
        if rows % 2:
            leftovers.append([f[:, even:] for f in fields])
        fields = combine([f[:, 0:even:2] for f in fields], [f[:, 1:even:2] for f in fields])
    # Each level's odd row lies right of the rows still pairing and left of the lower levels' ones.
    for rest in reversed(leftovers):
        fields = combine(fields, rest)
    return [f[:, 0] for f in fields]
