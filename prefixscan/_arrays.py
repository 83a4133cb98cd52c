"""Array interop: recognise the caller's array type, view it without copying, and
hand results back as that type.

NumPy arrays and anything with ``__array__`` are host arrays.  Torch tensors are
handled natively (the GPU backend launches on them).  CuPy, JAX and any other
``__dlpack__`` / ``__cuda_array_interface__`` array on a CUDA device enter as a
zero-copy torch view through DLPack and leave the same way, as their own type.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any

import numpy as np

# DLPack device types for memory a CUDA kernel can address.
_DLPACK_CUDA_DEVICES = (2, 3, 13)  # kDLCUDA, kDLCUDAHost, kDLCUDAManaged


@dataclass(frozen=True)
class ArrayRef:
    obj: Any  # what the caller passed
    library: str  # "numpy", "torch", "cupy", "jax" or "other"
    device: str  # "cpu" or "cuda"
    shape: tuple
    dtype: str  # canonical name: "int32", "bfloat16", ...

    def __init__(self, obj: Any, library: str, device: str, shape: tuple, dtype: str) -> None:
        # The generated __init__ of a frozen dataclass sets each field through
        # object.__setattr__ (about 2 us for the five; a scan of a new shape makes three
        # ArrayRefs, a replayed one one); the fields go into the instance dict at once.
        # The class stays frozen: assigning a field raises FrozenInstanceError.
        d = self.__dict__
        d["obj"], d["library"], d["device"], d["shape"], d["dtype"] = obj, library, device, shape, dtype


def _root_module(obj: Any) -> str:
    return type(obj).__module__.split(".")[0]


def _torch_dtype_name(dtype: Any) -> str:
    name = _DTYPE_NAMES.get(dtype)
    if name is None:
        name = _DTYPE_NAMES[dtype] = str(dtype).replace("torch.", "")
    return name


_DTYPE_NAMES: dict = {}  # torch dtype -> its name (a few dozen dtypes)
_TENSOR_TYPES: dict = {}  # type -> is_tensor_type's answer


def is_tensor_type(cls: type) -> bool:
    """Whether instances of ``cls`` are torch tensors (``torch.Tensor``, ``Parameter``,
    subclasses), as the checks tell them: a type of torch's modules with ``is_cuda``.
    Remembered per type (the test costs half a microsecond, a planned scan a few)."""
    known = _TENSOR_TYPES.get(cls)
    if known is None:
        if len(_TENSOR_TYPES) > 256:
            _TENSOR_TYPES.clear()
        known = _TENSOR_TYPES[cls] = cls.__module__.split(".")[0] == "torch" and hasattr(cls, "is_cuda")
    return known


def is_jax_tracer(obj: Any) -> bool:
    """True for the abstract values of ``jax.jit`` / ``vmap`` / ``grad`` tracing
    (subclasses of ``jax.core.Tracer``), recognised without importing jax."""
    if _root_module(obj) not in ("jax", "jaxlib"):
        return False
    return any(c.__name__.endswith("Tracer") for c in type(obj).__mro__)


def refuse_dask(obj: Any, argument: str) -> None:
    """Raise TypeError naming ``argument`` for a dask array (or a tuple of them)
    where prefixscan takes concrete values: reading it would compute it behind
    the caller's back."""
    if is_dask_collection(obj):
        raise TypeError(f"{argument}: a dask array is not taken here (it would be computed behind your back); "
                        "call .compute() on it first")


def refuse_unsupported(obj: Any, argument: str) -> None:
    """Raise TypeError naming ``argument`` for arrays whose data a scan cannot take
    as they are: JAX tracers (no concrete values), NumPy masked arrays (the
    mask would be dropped silently) and dask arrays (the value would be computed:
    inspect_array describes a dask ``x`` before it gets here)."""
    refuse_dask(obj, argument)
    if is_jax_tracer(obj):
        raise TypeError(f"{argument}: prefixscan runs on concrete JAX arrays, outside jax.jit / vmap / grad; "
                        f"got a {type(obj).__name__}.  Call it outside the traced function (or through "
                        "jax.pure_callback)")
    if _is_masked(obj):
        raise TypeError(f"{argument}: masked arrays are not supported (the mask would be ignored); fill the "
                        f"masked elements first, e.g. {argument}.filled(0) for a sum or {argument}.filled(1) "
                        "for a product, or use numpy.ma.cumsum")


def _is_masked(obj: Any) -> bool:
    """True for a NumPy masked array.  ``numpy.ma`` is asked only once something imported
    it (every masked array has): NumPy loads it lazily, and importing it for the check
    took about 20 ms of every process's first scan (the identity's check passes here)."""
    ma = sys.modules.get("numpy.ma")
    return ma is not None and isinstance(obj, ma.MaskedArray)


def is_dask_collection(obj: Any) -> bool:
    """True for a dask array, or a non-empty tuple of them (a struct monoid's
    fields), told by its type's module so that dask is never imported here."""
    if type(obj) is tuple:
        return bool(obj) and all(is_dask_collection(f) for f in obj)
    return type(obj).__module__.startswith("dask.array") and hasattr(obj, "chunks")


def _dask_device(obj: Any) -> str:
    """The device of a dask array's chunks: "cuda" for CuPy chunks (its meta), else "cpu"."""
    return "cuda" if _root_module(getattr(obj, "_meta", None)) == "cupy" else "cpu"


def _not_numeric(argument: str, dtype: Any) -> TypeError:
    return TypeError(f"{argument}: expected a numeric or bool array, got dtype {dtype}")


def inspect_array(obj: Any, argument: str = "x") -> ArrayRef:
    """Describe ``obj``; lists and scalars become NumPy arrays.  Raises TypeError
    naming ``argument`` for what is not a numeric or bool array (strings, objects,
    masked arrays, JAX tracers)."""
    root = _root_module(obj)
    if root == "torch" and hasattr(obj, "is_cuda"):
        dev = "cuda" if obj.is_cuda else "cpu"
        return ArrayRef(obj, "torch", dev, tuple(obj.shape), _torch_dtype_name(obj.dtype))
    if type(obj) is np.ndarray or isinstance(obj, np.ndarray) and not _is_masked(obj):
        if obj.dtype.kind not in "biufc":
            raise _not_numeric(argument, obj.dtype)
        return ArrayRef(obj, "numpy", "cpu", obj.shape, obj.dtype.name)
    if root == "dask" and is_dask_collection(obj):
        # Described from its metadata, never computed: prefixscan.dask builds the lazy graph.
        if obj.dtype.kind not in "biufc":
            raise _not_numeric(argument, obj.dtype)
        return ArrayRef(obj, "dask", _dask_device(obj), tuple(obj.shape), obj.dtype.name)
    refuse_unsupported(obj, argument)
    if hasattr(obj, "__cuda_array_interface__") or _dlpack_on_cuda(obj):
        library = root if root in ("cupy", "jax", "jaxlib") else "other"
        library = "jax" if library == "jaxlib" else library
        shape = tuple(obj.shape)
        dtype = _torch_dtype_name(getattr(obj, "dtype", ""))
        return ArrayRef(obj, library, "cuda", shape, np.dtype(dtype).name if dtype != "bfloat16" else dtype)
    if root in ("jax", "jaxlib"):
        arr = np.asarray(obj)
        return ArrayRef(obj, "jax", "cpu", arr.shape, arr.dtype.name)
    try:
        arr = np.asarray(obj)
    except Exception as exc:  # noqa: BLE001 - the message names the argument
        raise TypeError(f"{argument}: cannot convert {type(obj).__name__} to an array ({exc})") from None
    if arr.dtype.kind not in "biufc":
        raise _not_numeric(argument, arr.dtype)
    return ArrayRef(arr, "numpy" if isinstance(obj, np.ndarray) else "other", "cpu", arr.shape, arr.dtype.name)


def dtype_and_ndim(obj: Any, argument: str = "x") -> tuple[Any, int]:
    """``obj``'s dtype (a NumPy dtype object for NumPy arrays, else its name) and number of
    dimensions, as :func:`inspect_array` describes them (and refuses what it refuses),
    without building the description for NumPy arrays and torch tensors (the per-call
    checks of the cumulative functions)."""
    if type(obj) is np.ndarray and obj.dtype.kind in "biufc":
        return obj.dtype, obj.ndim
    if is_tensor_type(type(obj)):
        return _torch_dtype_name(obj.dtype), obj.dim()
    ref = inspect_array(obj, argument)
    return ref.dtype, len(ref.shape)


def _dlpack_on_cuda(obj: Any) -> bool:
    dev = getattr(obj, "__dlpack_device__", None)
    if dev is None:
        return False
    try:
        return int(dev()[0]) in _DLPACK_CUDA_DEVICES
    except Exception:  # noqa: BLE001
        return False


def native_order(a: np.ndarray) -> np.ndarray:
    """``a`` itself when its dtype is in the machine's byte order (always, but for
    NumPy arrays made with an explicit ``>`` or ``<``), else a byte-swapped copy of
    the same values: the compiled kernels read memory as native numbers."""
    if a.dtype.isnative:
        return a
    return a.astype(a.dtype.newbyteorder("="))


def as_numpy(ref: ArrayRef) -> np.ndarray:
    """NumPy view of a host array to read from: zero-copy, except that bfloat16
    tensors are widened and arrays of non-native byte order are swapped
    (:func:`native_order`).  For writing into the caller's ``out``, see
    :func:`writable_host`."""
    obj = ref.obj
    if ref.library == "torch":
        if ref.dtype == "bfloat16":
            return obj.detach().float().numpy()
        return obj.detach().numpy()
    return native_order(np.asarray(obj))


def writable_host(ref: ArrayRef) -> np.ndarray | None:
    """Zero-copy NumPy view of the caller's host ``out`` that a kernel may write
    into; None where the values must go through :func:`write_host` instead
    (bfloat16 tensors, non-native byte order)."""
    if ref.library == "torch":
        return None if ref.dtype == "bfloat16" else ref.obj.detach().numpy()
    a = np.asarray(ref.obj)
    return a if a.dtype.isnative else None


def torch_ready(values: np.ndarray) -> np.ndarray:
    """``values`` as a C-contiguous array that ``torch.from_numpy`` takes: NumPy
    calls an array of at most one element contiguous whatever its strides, and
    keeps the negative stride of a reversed one, which torch refuses; and torch
    warns of a read-only one (a broadcast view, a memory map): those copied."""
    values = np.ascontiguousarray(values)
    return values if values.flags.writeable and all(s >= 0 for s in values.strides) else values.copy()


def write_host(ref: ArrayRef, values: np.ndarray) -> None:
    """Copy host ``values`` into the caller's host array ``ref`` (casting to its dtype).
    A cast runs before the copy: what it raises (an overflow the caller's
    ``numpy.errstate`` makes an error) leaves ``ref`` unwritten."""
    if ref.library == "torch":
        import torch

        ref.obj.copy_(torch.from_numpy(torch_ready(values)))
    else:
        target = np.asarray(ref.obj)
        if values.dtype != target.dtype:
            values = values.astype(target.dtype, casting="unsafe")
        np.copyto(target, values)


def as_torch(ref: ArrayRef):
    """Zero-copy torch view (DLPack) of any array."""
    import torch

    if ref.library == "torch":
        return ref.obj
    if ref.library == "numpy" or ref.device == "cpu":
        return torch.from_numpy(torch_ready(np.asarray(ref.obj)))
    return torch.from_dlpack(ref.obj)


def from_numpy(result: np.ndarray, like: ArrayRef, dtype: str | None = None) -> Any:
    """Return a host result as the caller's array type."""
    if like.library == "torch":
        import torch

        t = torch.from_numpy(torch_ready(result).reshape(np.shape(result)))  # keeps a 0-d result 0-d
        if dtype == "bfloat16":
            t = t.to(torch.bfloat16)
        return t
    if like.library == "jax":
        import jax.numpy as jnp

        return jnp.asarray(result)
    return result


def from_native(result: Any, like: ArrayRef, native_library: str, dtype: str | None = None) -> Any:
    """Return a backend's result (``native_library``: "numpy" or "torch") as the
    caller's array type."""
    if native_library == "numpy":
        return from_numpy(result, like, dtype)
    return from_torch(result, like, dtype)


def from_torch(result, like: ArrayRef, dtype: str | None = None) -> Any:
    """Return a torch result as the caller's array type, zero-copy."""
    if like.library == "torch":
        return result
    if like.library == "cupy":
        import cupy

        return cupy.from_dlpack(result)
    if like.library == "jax":
        import jax.dlpack

        return jax.dlpack.from_dlpack(result)
    if like.device == "cpu":
        return result.numpy()
    mod = sys.modules.get(_root_module(like.obj))
    if mod is not None and hasattr(mod, "from_dlpack"):
        return mod.from_dlpack(result)
    return result


# ---------------------------------------------------------------------------
# Memory of an ``out`` argument: overlaps, and results cast into it.

def _memory(obj: Any) -> tuple | None:
    """``(device, address, shape, byte strides, itemsize)`` of a NumPy array, a torch
    tensor or a ``__cuda_array_interface__`` array; None for anything else."""
    if isinstance(obj, np.ndarray):
        return "cpu", obj.__array_interface__["data"][0], obj.shape, obj.strides, obj.itemsize
    if _root_module(obj) == "torch" and hasattr(obj, "data_ptr"):
        size = obj.element_size()
        return str(obj.device), obj.data_ptr(), tuple(obj.shape), tuple(s * size for s in obj.stride()), size
    iface = getattr(obj, "__cuda_array_interface__", None)
    if isinstance(iface, dict):
        shape, itemsize = tuple(iface["shape"]), np.dtype(iface["typestr"]).itemsize
        strides = iface.get("strides")
        if strides is None:  # C-contiguous
            strides, step = [], itemsize
            for n in reversed(shape):
                strides.insert(0, step)
                step *= max(n, 1)
        return "cuda", iface["data"][0], shape, tuple(strides), itemsize
    return None


def has_internal_overlap(obj: Any) -> bool:
    """Whether two elements of ``obj`` may share memory (a stride-0 ``expand`` or
    broadcast view, or strides that interleave): checked on the strides alone, so a
    rare layout whose elements interleave without meeting counts as overlapping."""
    if _root_module(obj) == "torch" and hasattr(obj, "stride"):  # no data pointer: traceable
        shape, strides, itemsize = tuple(obj.shape), obj.stride(), 1
    else:
        mem = _memory(obj)
        if mem is None:
            return False
        _, _, shape, strides, itemsize = mem
    if 0 in shape:
        return False
    extent = itemsize  # bytes spanned by the dimensions of smaller strides
    for stride, n in sorted((abs(s), n) for n, s in zip(shape, strides) if n > 1):
        if stride < extent:
            return True
        extent += stride * (n - 1)
    return False


def _span(mem: tuple) -> tuple[int, int]:
    _, address, shape, strides, itemsize = mem
    low = address + sum(min(0, (n - 1) * s) for n, s in zip(shape, strides))
    high = address + sum(max(0, (n - 1) * s) for n, s in zip(shape, strides)) + itemsize
    return low, high


def overlap(a: Any, b: Any) -> str:
    """How arrays ``a`` and ``b`` share memory: "none", "same" (the same elements
    in the same layout: an in-place scan) or "partial" (anything else that may
    overlap, judged on the address ranges)."""
    if a is b:
        return "same"
    if type(a) is np.ndarray and type(b) is np.ndarray and not np.may_share_memory(a, b):
        return "none"  # the common case, without building the descriptions
    if _root_module(a) == "torch" and _root_module(b) == "torch":
        sa, sb = a.untyped_storage(), b.untyped_storage()
        pa, pb = sa.data_ptr(), sb.data_ptr()
        if pa + sa.nbytes() <= pb or pb + sb.nbytes() <= pa or a.device != b.device:
            return "none"  # disjoint allocations: the common case, cheaply
    ma, mb = _memory(a), _memory(b)
    if ma is None or mb is None or ma[0] != mb[0] or 0 in ma[2] or 0 in mb[2]:
        return "none"
    (low_a, high_a), (low_b, high_b) = _span(ma), _span(mb)
    if high_a <= low_b or high_b <= low_a:
        return "none"
    layout = [(ma[1], ma[4], ma[2], tuple(s for n, s in zip(ma[2], ma[3]) if n > 1)),
              (mb[1], mb[4], mb[2], tuple(s for n, s in zip(mb[2], mb[3]) if n > 1))]
    return "same" if layout[0] == layout[1] else "partial"


def _copy(obj: Any) -> Any:
    if isinstance(obj, np.ndarray):
        return obj.copy()
    return obj.clone() if hasattr(obj, "clone") else obj.copy()


def unalias(x: Any, out: Any) -> Any:
    """``x`` with a copy of every field that ``out`` overlaps other than as the same
    field in place (``out=x``): a scan then reads its input before writing any of it."""
    if out is None:
        return x
    if type(x) is not tuple and type(out) is not tuple:  # one field: the common case
        return _copy(x) if overlap(x, out) == "partial" else x
    struct = type(x) is tuple
    outs = out if type(out) is tuple else (out,)
    fields = list(x) if struct else [x]
    changed = False
    for i, f in enumerate(fields):
        for j, o in enumerate(outs):
            kind = overlap(f, o)
            if kind == "partial" or (kind == "same" and i != j):
                fields[i], changed = _copy(f), True
                break
    if not changed:
        return x
    return tuple(fields) if struct else fields[0]


def write_result(ref: ArrayRef, result: Any) -> None:
    """Copy a backend's ``result`` (a NumPy array or a torch tensor) into the caller's
    array ``ref``, cast to its dtype (the caller has checked that the cast is allowed)."""
    write_results([ref], [result])


def write_results(refs: list, results: list) -> None:
    """:func:`write_result` for every field, every cast done before any copy: a cast
    that raises (an overflow the caller's ``numpy.errstate`` or warning filters make an
    error) leaves every ``out`` unwritten."""
    casts = []
    for ref, result in zip(refs, results):
        if ref.device == "cpu" and ref.library != "torch":
            if not isinstance(result, np.ndarray):  # a torch tensor (bfloat16 widened: NumPy lacks it)
                result = result.detach().cpu()
                result = (result.float() if str(result.dtype) == "torch.bfloat16" else result).numpy()
            target = np.asarray(ref.obj)
            casts.append((target, result.astype(target.dtype, casting="unsafe") if result.dtype != target.dtype
                          else result))
        else:
            import torch

            if isinstance(result, np.ndarray):
                result = torch.from_numpy(torch_ready(result))
            target = as_torch(ref)
            casts.append((target, result.to(target.dtype)))
    for target, value in casts:
        if isinstance(target, np.ndarray):
            np.copyto(target, value)
        else:
            target.copy_(value)