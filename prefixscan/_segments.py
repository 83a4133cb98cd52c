"""Checks of segment descriptions: ``flags``, ``offsets`` and ``keys``.

One rule for each, on every backend (docs/semantics.md, "Segments"):

* ``offsets`` (:func:`check_offsets`, shared by ``segmented_scan`` and
  ``linear_recurrence``): a 1-D array of integers (any signed or unsigned
  dtype, either byte order) or a list of ints, starting at 0, non-decreasing,
  every value in ``[0, n]``.  Checked as the values they are, before any
  kernel: never cast first (an unsigned value of 2**63 or more is out of
  range, not a negative int64), never differenced in an unsigned type (which
  wraps).  Host offsets come back as a native int64 array, device ones as the
  checked tensor.
* ``keys`` (:func:`check_keys`): bool, integer or real floating-point values
  (float16, bfloat16, float32, float64), one per element; a segment starts
  where a key is not ``==`` to the one before.
* ``flags``: bool, one per element.

Device arrays are checked with torch operations where they live (one
synchronisation for offsets).  This module imports no backend.
"""

from __future__ import annotations

import operator
from typing import Any, Callable

import numpy as np

from ._arrays import as_torch, inspect_array, refuse_unsupported, torch_ready

__all__ = ["check_segments", "check_segment_tensor", "check_offsets", "check_keys", "KEY_DTYPES"]

#: The dtypes keys may have, on every backend (numeric values compared with ``==``).
KEY_DTYPES = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
              "float16", "bfloat16", "float32", "float64")
_OFFSETS_TYPE = "offsets must be a 1-D array of integers (or a list of ints): segment boundaries starting at 0"


def check_segments(n: int, flags: Any, offsets: Any, keys: Any, device: str | None = None) -> tuple[str, Any]:
    """The one segment description given to ``segmented_scan`` for ``n`` elements, as
    ``(kind, array)`` with kind "flags", "offsets" or "keys": a host array (offsets
    as native int64, keys in native byte order, bfloat16 keys as float32), or with
    ``device`` (x's ``torch.device``, or its name, for the Triton backend) a torch
    tensor on it (lists and NumPy arrays are checked on the host and copied over;
    arrays on another device are refused)."""
    given = [name for name, v in (("flags", flags), ("offsets", offsets), ("keys", keys)) if v is not None]
    if len(given) != 1:
        raise ValueError("flags, offsets, keys: give exactly one of them"
                         + (f" (got {', '.join(given)})" if given else ""))
    if offsets is not None:
        return "offsets", check_offsets(offsets, n, device=device)
    if keys is not None:
        return "keys", check_keys(keys, n, device=device)
    if device is not None and not _host_like(flags):
        t = _on_device(flags, "flags", device)
        check_segment_tensor("flags", t, n)
        return "flags", t
    f = _host(flags, "flags")
    _check_length(f.shape, n, "flags")
    if f.dtype != bool:
        raise TypeError(f"flags must be a bool array, got dtype {f.dtype}")
    if device is not None:
        return "flags", _to_device(f, device)
    return "flags", f


def _to_device(values: np.ndarray, device: Any) -> Any:
    """Checked host values as a torch tensor on ``device``, without waiting on the GPU:
    a blocking copy from pageable memory synchronizes the stream (torch waits for the
    copy), so every call with host segments would stall the host behind the queued
    work.  The driver stages a pageable buffer before an asynchronous copy returns, so
    the caller may change or free ``values`` at once; for a buffer larger than its
    staging memory it may wait on the stream to do so (correct, only slower)."""
    return _torch().from_numpy(torch_ready(values)).to(device, non_blocking=True)


def check_segment_tensor(kind: str, t: Any, n: int) -> None:
    """The checks of a torch tensor of segments (``kind``: "flags", "offsets" or
    "keys") for ``n`` elements that read no value: its shape and dtype.  What the
    device checks run first, and what a traced call (``torch.compile``, whose fake
    tensors hold no values) checks while tracing; the values of offsets are
    checked when the operator runs (:func:`check_offsets`)."""
    torch = _torch()
    if kind == "offsets":
        if t.dim() != 1 or t.dtype == torch.bool or t.is_floating_point() or t.is_complex():
            raise TypeError(_OFFSETS_TYPE + f", got shape {tuple(t.shape)} and dtype {_torch_name(t.dtype)}")
        if t.shape[0] == 0:
            raise ValueError("offsets must start at 0, got an empty array")
    elif kind == "keys":
        _check_key_dtype(_torch_name(t.dtype))
        _check_length(tuple(t.shape), n, "keys")
    else:
        _check_length(tuple(t.shape), n, "flags")
        if t.dtype != torch.bool:
            raise TypeError(f"flags must be a bool array, got dtype {_torch_name(t.dtype)}")


# ---------------------------------------------------------------------------
# offsets

def check_offsets(offsets: Any, n: int, *, device: str | None = None, full: bool = False,
                  length: str = "len(x)") -> Any:
    """``offsets`` for an axis of ``n`` elements, checked: a 1-D integer array or list
    of ints, starting at 0, non-decreasing, every value in ``[0, n]`` (``length``
    names n in messages).  Segment i is ``[offsets[i], offsets[i + 1])``, the last
    one ending at n; so repeated values are empty segments and a final n may be
    given or left out.  Returns a native int64 NumPy array, or with ``device`` a
    torch tensor on it; with ``full``, the bounds of every segment: the offsets
    with n appended where they end before it."""
    if device is not None and not _host_like(offsets):
        ref = inspect_array(offsets, "offsets")
        if len(ref.shape) != 1 or not ref.dtype.startswith(("int", "uint")):
            # The kind first: an array of floats is wrong wherever it lives.
            raise TypeError(_OFFSETS_TYPE + f", got shape {ref.shape} and dtype {ref.dtype}")
        return _device_offsets(_on_device(offsets, "offsets", device), n, full, length)
    host = _host_offsets(offsets, n, length)
    if full and host[-1] != n:
        host = np.append(host, np.int64(n))
    if device is None:
        return host
    return _to_device(host, device)


def _host_offsets(offsets: Any, n: int, length: str) -> np.ndarray:
    if isinstance(offsets, (list, tuple)):
        if any(isinstance(v, (bool, np.bool_)) for v in offsets):
            raise TypeError(_OFFSETS_TYPE + ", got a bool")
        try:
            values = [operator.index(v) for v in offsets]
        except TypeError:
            raise TypeError(_OFFSETS_TYPE + f", got {offsets!r}"[:200]) from None
        if not values:
            raise ValueError("offsets must start at 0, got an empty list")
        low, high = min(values), max(values)
        _judge_offsets(n, values[0], low < 0 or high > n, lambda: _first(v < 0 or v > n for v in values),
                       lambda i: values[i], length)
        arr = np.array(values, dtype=np.int64)
        _judge_order(arr, lambda i: values[i])
        return arr
    arr = _host(offsets, "offsets")
    if arr.ndim != 1 or arr.dtype.kind not in "iu":
        raise TypeError(_OFFSETS_TYPE + f", got shape {arr.shape} and dtype {arr.dtype}")
    if arr.size == 0:
        raise ValueError("offsets must start at 0, got an empty array")
    # Compared in their own dtype (no cast that could wrap): n against the dtype's range.
    top = np.iinfo(arr.dtype).max
    outside = (arr > arr.dtype.type(n)) if n < top else np.zeros(arr.shape, bool)
    if arr.dtype.kind == "i":
        outside |= arr < 0
    _judge_offsets(n, int(arr[0]), bool(outside.any()), lambda: int(np.argmax(outside)), lambda i: int(arr[i]),
                   length)
    wide = arr.astype(np.int64, copy=False)  # exact: every value is in [0, n]; native byte order
    _judge_order(wide, lambda i: int(arr[i]))
    return wide


def _device_offsets(t: Any, n: int, full: bool, length: str) -> Any:
    """The checks of :func:`_host_offsets` with torch operations where ``t`` lives:
    one synchronisation (two when they fail, to name the value)."""
    torch = _torch()
    check_segment_tensor("offsets", t, n)
    # uint64 values of 2**63 or more become negative int64 here: out of range, as they are.
    wide = t.to(torch.int64)
    outside = (wide < 0) | (wide > n)
    descending = wide[1:] < wide[:-1]
    first, bad, last, down = torch.stack([wide[0], outside.any().to(torch.int64), wide[-1],
                                          descending.any().to(torch.int64)]).tolist()

    def value(i: int) -> int:
        return int(t[i].item())

    if first != 0:
        first = value(0)
    _judge_offsets(n, first, bool(bad), lambda: int(torch.nonzero(outside)[0, 0]), value, length)
    if down:
        i = int(torch.nonzero(descending)[0, 0]) + 1
        _refuse_descending(i, value)
    if full and last != n:
        return torch.cat([wide, wide.new_full((1,), n)])
    return t


def _judge_offsets(n: int, first: int, outside: bool, where_outside: Callable[[], int],
                   value: Callable[[int], int], length: str) -> None:
    """The refusals of :func:`check_offsets` but the order, from what was measured."""
    if first != 0:
        raise ValueError(f"offsets must start at 0, got {first}")
    if outside:
        i = where_outside()
        raise ValueError(f"offsets[{i}] = {value(i)} is out of range: offsets lie in [0, {n}], {n} being {length}")


def _judge_order(wide: np.ndarray, value: Callable[[int], int]) -> None:
    descending = wide[1:] < wide[:-1]  # int64 of values in [0, n]: no wrap
    if descending.any():
        _refuse_descending(int(np.argmax(descending)) + 1, value)


def _refuse_descending(i: int, value: Callable[[int], int]) -> None:
    raise ValueError(f"offsets must be non-decreasing: offsets[{i}] = {value(i)} is less than "
                     f"offsets[{i - 1}] = {value(i - 1)}")


def _first(flags) -> int:
    return next(i for i, f in enumerate(flags) if f)


# ---------------------------------------------------------------------------
# keys

def check_keys(keys: Any, n: int, *, device: str | None = None) -> Any:
    """``keys`` for ``n`` elements, checked: one per element, of a dtype of
    :data:`KEY_DTYPES`.  A host array in native byte order (bfloat16 as float32,
    the same values), or with ``device`` a torch tensor on it."""
    if device is not None and not _host_like(keys):
        t = _on_device(keys, "keys", device)
        check_segment_tensor("keys", t, n)
        return t
    if _root(keys) == "torch" and hasattr(keys, "is_cuda"):
        _check_key_dtype(_torch_name(keys.dtype))
    k = _host(keys, "keys")
    _check_key_dtype(k.dtype.name if k.dtype.kind in "biuf" else str(k.dtype), k.dtype.kind)
    _check_length(k.shape, n, "keys")
    if not k.dtype.isnative:
        k = k.astype(k.dtype.newbyteorder("="))
    if device is not None:
        return _to_device(k, device)
    return k


def _check_key_dtype(name: str, kind: str = "") -> None:
    if name in KEY_DTYPES:
        return
    hint = ""
    if kind and kind in "mM":
        hint = "; compare them as integers: keys.view('int64')"
    elif kind and kind in "USO":
        hint = "; map them to integer codes first: numpy.unique(keys, return_inverse=True)[1]"
    raise TypeError(f"keys must be bool, integer or real floating-point values (compared with == between "
                    f"neighbours), got dtype {name}{hint}")


# ---------------------------------------------------------------------------
# Helpers.

def _check_length(shape: tuple, n: int, name: str) -> None:
    if tuple(shape) != (n,):
        raise ValueError(f"{name} has shape {tuple(shape)}; expected ({n},), one per element of x")


def _torch():
    import torch

    return torch


def _torch_name(dtype: Any) -> str:
    return str(dtype).replace("torch.", "")


def _root(value: Any) -> str:
    return type(value).__module__.split(".")[0]


def _host_like(value: Any) -> bool:
    """Whether ``value`` is checked on the host for x on ``device``: lists, tuples and
    NumPy arrays (host memory: copied to any device, as a list is)."""
    return isinstance(value, (list, tuple, np.ndarray))


def _on_device(value: Any, name: str, device: Any) -> Any:
    """``value`` as a torch tensor on ``device`` (zero-copy), refused on another device:
    ``device`` a name ("cuda", "cpu"), or x's ``torch.device``, whose index counts too."""
    ref = inspect_array(value, name)
    kind = getattr(device, "type", device)
    if ref.device != kind:
        raise ValueError(f"{name} is on {ref.device} but x is on {kind}")
    t = as_torch(ref)
    if hasattr(device, "type") and device.index is not None and t.device != device:
        raise ValueError(f"{name} is on {t.device} but x is on {device}")
    return t


def _host(value: Any, name: str) -> np.ndarray:
    """``value`` as a NumPy array (torch tensors copied to the host; bfloat16, which
    NumPy lacks, as float32: the same values); masked arrays and JAX tracers refused."""
    refuse_unsupported(value, name)
    if _root(value) == "torch" and hasattr(value, "is_cuda"):
        if _torch_name(value.dtype) == "bfloat16":
            value = value.float()
        try:
            return value.detach().cpu().numpy()
        except TypeError:
            raise TypeError(f"{name}: torch dtype {_torch_name(value.dtype)} is not supported here") from None
    try:
        return np.asarray(value)
    except Exception as exc:  # noqa: BLE001 - the message names the argument
        raise TypeError(f"{name}: cannot convert {type(value).__name__} to an array ({exc})") from None
