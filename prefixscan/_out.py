"""Checks of ``out=`` arguments (a part of :mod:`prefixscan._normalize`, which
re-exports these): the array a result is written into, the dtypes it may be cast
to, and what makes an array unfit to take a result.
"""

from __future__ import annotations

import sys
from typing import Any, Sequence

import numpy as np

from ._arrays import ArrayRef, has_internal_overlap, inspect_array, overlap
from ._request import ScanRequest, np_dtype

__all__ = ["check_out", "check_out_arrays", "check_out_dtype", "check_out_writable", "numpy_out_accumulator"]


def check_out(out: Any, request: ScanRequest) -> list[ArrayRef]:
    """``out``'s arrays checked against the result: its shape, a dtype the result casts
    to (NumPy's ``same_kind`` rule), x's device, writable, no element stored twice."""
    return check_out_arrays(out, request.struct, len(request.fields), request.out_shape, request.out_dtypes,
                            request.device)


def check_out_arrays(out: Any, struct: bool, nfields: int, shape: tuple, dtypes: Sequence[str],
                     device: str) -> list[ArrayRef]:
    """:func:`check_out` of a result given by its parts: ``nfields`` fields (``struct``:
    a tuple, as x was) of ``shape`` and dtype names ``dtypes``, on ``device`` ("cpu" or
    "cuda")."""
    values = list(out) if struct else [out]
    if struct and (not isinstance(out, tuple) or len(values) != nfields):
        raise ValueError(f"out: expected a tuple of {nfields} arrays")
    refs = []
    torch = sys.modules.get("torch")  # loaded if out holds a tensor
    for i, v in enumerate(values):
        tensor = torch is not None and isinstance(v, torch.Tensor)  # tensors first: torch.compile traces this
        if not tensor and (isinstance(v, (list, tuple)) or np.isscalar(v)):
            raise TypeError(f"out must be an array, got {type(v).__name__}")
        ref = inspect_array(v, "out")
        if ref.library == "jax":
            raise TypeError("out: JAX arrays are immutable; leave out=None and use the returned array")
        if ref.library == "dask":
            raise TypeError("out: a dask array cannot be written into; leave out=None and store the result "
                            "(dask.array.store, to_zarr)")
        if ref.library == "other" and not isinstance(v, np.ndarray):
            raise TypeError(f"out must be a NumPy array or tensor, got {type(v).__name__}")
        if ref.shape != tuple(shape):
            raise ValueError(f"out has shape {ref.shape}; the result has shape {tuple(shape)}")
        check_out_dtype(dtypes[i], ref.dtype)
        if ref.device != device:
            raise ValueError(f"out is on {ref.device} but x is on {device}")
        check_out_writable(v)
        for j, earlier in enumerate(values[:i]):
            if _share_memory(v, earlier, tensor and torch.compiler.is_compiling()):
                raise ValueError(f"out: out[{j}] and out[{i}] share memory; give each field its own array")
        refs.append(ref)
    return refs


def _share_memory(a: Any, b: Any, traced: bool) -> bool:
    """Whether arrays ``a`` and ``b`` may share memory.  While ``torch.compile`` traces
    (``traced``) there are no addresses: two views of one tensor (or one tensor twice)
    count as sharing, whatever elements they cover."""
    if traced:
        return a is b or (a if a._base is None else a._base) is (b if b._base is None else b._base)
    return overlap(a, b) != "none"


def check_out_dtype(result: str, dtype: str) -> None:
    """A result of dtype ``result`` is cast into an ``out`` of ``dtype`` as NumPy casts
    into ``out=`` (``same_kind``: int64 into int32 or float64 wraps or rounds as NumPy
    does); a cast that changes the kind (float into int, complex into float, a number
    into bool) is refused."""
    if dtype != result and not np.can_cast(np_dtype(result), np_dtype(dtype), "same_kind"):
        raise TypeError(f"out has dtype {dtype}; the result has dtype {result}, which does not cast to it "
                        "under same_kind casting (NumPy's rule for out=); pass an out of a dtype of the "
                        "same kind, or dtype= to compute in another one")


def numpy_out_accumulator(data: str, result: str, dtype: str, op: str = "add") -> str:
    """The dtype NumPy's ``cumsum`` / ``maximum.accumulate`` ... accumulate in when
    ``out`` has ``dtype``, the data ``data`` and the function's own result dtype is
    ``result``: the promotion of the data's dtype and out's, not of the result's (int16
    data into a float32 out: summed in float32, though cumsum's own result is int64;
    int32 or float64 data into a float32 out: summed in float64, rounded once), except
    that two integer types never promote to a float (uint64 with a signed type: NumPy's
    float64 loses the integers' bits), and that real values into a complex out
    accumulate in the real type for ``op`` "add", "max" and "min" (the same values; a
    product in complex arithmetic has signed-zero imaginary parts and NaNs of its own,
    so "mul" multiplies in the complex promotion, as NumPy).  A cast that
    :func:`check_out_dtype` refuses keeps ``result`` (the check names ``out``)."""
    if dtype == result:
        return result
    d, r, o = np_dtype(data), np_dtype(result), np_dtype(dtype)  # bfloat16 as float32: it promotes as float32 does
    if not np.can_cast(r, o, "same_kind"):
        return result
    if o.kind == "c" and d.kind != "c" and op != "mul":  # real values: the same sums in the real type
        o = np.empty(0, o).real.dtype
    promoted = np.result_type(d, o)
    if promoted.kind not in "biu" and d.kind in "biu" and o.kind in "biu":
        return result
    return promoted.name


def check_out_writable(out: Any) -> None:
    """Refuse an ``out`` that cannot take the result: a read-only NumPy array (a
    broadcast view), a tensor that requires grad, or an array with overlapping
    elements (a stride-0 ``expand``/broadcast view)."""
    if isinstance(out, np.ndarray) and not out.flags.writeable:
        raise ValueError("out is read-only (a broadcast view, or writeable=False); pass a writable array")
    if getattr(out, "requires_grad", False) is True:
        raise ValueError("out requires grad: functions with out= do not record gradients; leave out=None, "
                         "or pass a tensor that does not require grad")
    if has_internal_overlap(out):
        raise ValueError("out has internal overlap: several of its elements share memory (an expand()ed or "
                         "broadcast view, stride 0); pass an array with one memory location per element")
