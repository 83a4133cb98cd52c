"""``linear_recurrence`` of arrays in memory: host arrays here, torch tensors and
device arrays through :mod:`.tensors`.

The maps ``h -> a h + b`` compose into maps of the same form, so the recurrence
is a scan of the pairs ``(a, b)`` under the affine monoid (:mod:`.affine`;
Blelloch 1990, "Prefix sums and their applications", section 1.4).  Torch
tensors and device arrays take :mod:`.tensors` (autograd, ``torch.compile``,
complex values on the GPU); host arrays take the CPU backend here, with NumPy
around the scan (the backend's one-pass loop first, :mod:`.runner`).  The
public function (:mod:`.api`) and every chunk of the dask path (:mod:`.dask`)
run :func:`recurrence_in_memory`.  This module imports no torch.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..._arrays import ArrayRef, as_numpy, as_torch, from_numpy, from_torch, inspect_array
from ..._axes import AxisError
from ..._normalize import check_axis, check_flag, check_init_shape, check_init_value, check_offsets, make_config
from ...monoid import accumulator_dtype_name
from ..scan.routing import is_torch_tensor
from ..scan.runner import run_scan
from .affine import affine_monoid
from .checks import check_log_space_dtype
from .runner import run_host_recurrence, run_recurrence_total

__all__ = ["recurrence_in_memory", "linear_recurrence_total"]


def recurrence_in_memory(a, b, *, init=None, axis=-1, reverse=False, offsets=None, return_final=False,
                         backend=None, log_space=False):
    """:func:`prefixscan.linear_recurrence` of arrays in memory (host, device,
    torch): what it runs for them, and what each chunk of the dask path runs."""
    check_flag(reverse, "reverse")
    check_flag(return_final, "return_final")
    log_space = check_flag(log_space, "log_space")
    a, b = _number_like(a, b, "a"), _number_like(b, a, "b")
    if is_torch_tensor(a) and is_torch_tensor(b):
        from .tensors import linear_recurrence_tensors  # torch is loaded: a is a tensor

        return linear_recurrence_tensors(a, b, init=init, axis=axis, reverse=reverse, offsets=offsets,
                                         return_final=return_final, backend=backend, log_space=log_space)
    ra, rb = inspect_array(a, "a"), inspect_array(b, "b")
    if ra.device != "cpu" or rb.device != "cpu" or ra.library == "torch" or rb.library == "torch":
        # Device arrays (CuPy, JAX, DLPack) and mixed tensors: zero-copy torch views, results back as a's type.
        from .tensors import linear_recurrence_tensors

        result = linear_recurrence_tensors(as_torch(ra), as_torch(rb), init=init, axis=axis, reverse=reverse,
                                           offsets=offsets, return_final=return_final, backend=backend,
                                           log_space=log_space)
        if return_final:
            return tuple(from_torch(r, ra) for r in result)
        return from_torch(result, ra)
    return _host(ra, rb, init, axis, reverse, offsets, return_final, backend, log_space)


def linear_recurrence_total(a, b, *, axis=-1, reverse=False, backend=None, log_space=False):
    """Each lane's map ``h_in -> A h_in + B`` of the recurrence over the whole ``axis``:
    ``(A, B)``, ``A`` the product of ``a`` (with ``log_space``, ``a`` holds log decays and
    ``A`` is their sum, the log of the product) and ``B`` the last step (the first, in
    reverse) from a zero start, of the lane shape (not differentiable).  The reduce step of a
    recurrence held in pieces (dask chunks, the ranks of a process group): one read of
    ``a`` and ``b`` where the backend has that pass (the compiled CPU loop, the Triton
    kernel's ``TOTAL`` mode), else a product and the recurrence.  ``a`` and ``b`` of one
    dtype, broadcasting against each other; float16 and bfloat16 give float32 (the
    state accumulated in float32 on every path).  NumPy arrays give NumPy arrays; torch
    tensors, device arrays (CuPy, JAX, DLPack, as zero-copy torch views) and mixed
    arguments give a's type."""
    ra, rb = inspect_array(a, "a"), inspect_array(b, "b")
    shape, axis = _shape_and_axis(ra, rb, axis)
    host = ra.library == rb.library == "numpy"
    if host:
        a, b = as_numpy(ra), as_numpy(rb)
        half = a.dtype == np.float16
    else:  # tensors (detached: the map is not differentiated) and device arrays, as torch
        a, b = as_torch(ra).detach(), as_torch(rb).detach()
        half = a.is_floating_point() and a.element_size() == 2
    totals = run_recurrence_total(backend, a, b, axis, reverse, log_space)
    if totals is None:
        if half:  # the state in float32, as the one-read passes keep it
            a, b = (a.astype(np.float32), b.astype(np.float32)) if host else (a.float(), b.float())
        h = recurrence_in_memory(a, b, axis=axis, reverse=reverse, backend=backend, log_space=log_space)
        full = np.broadcast_to(a, shape) if host else a.expand(shape)
        n = shape[axis]
        product = full.sum(axis) if log_space else full.prod(axis)
        totals = product, (h[(slice(None),) * axis + (0 if reverse else n - 1,)] if n else h.sum(axis))
    if host:
        return totals
    like = ra if ra.library != "numpy" else rb
    return tuple(from_torch(t, like) for t in totals)


def _number_like(value: Any, other: Any, name: str) -> Any:
    """A Python number given for ``a`` or ``b`` (a decay shared by every step and
    lane), as a 0-d array of the other's dtype and type; anything else unchanged."""
    if type(value) not in (int, float, complex) or not hasattr(other, "dtype"):
        return value
    if is_torch_tensor(other):
        kind = "c" if other.is_complex() else "f" if other.is_floating_point() else "i"
    else:
        kind = np.dtype(other.dtype).kind
    if not isinstance(value, int) and kind not in "fc" or isinstance(value, complex) and kind != "c":
        raise TypeError(f"{name}: the number {value!r} does not fit the dtype {other.dtype} of the other "
                        "coefficient; pass an array of one dtype")
    if is_torch_tensor(other):
        return other.new_full((), value)
    return np.asarray(value, dtype=other.dtype)


def _host(ra: ArrayRef, rb: ArrayRef, init, axis, reverse, offsets, return_final, backend, log_space):
    """The recurrence of host arrays on the CPU backend: its compiled one-pass loop
    (broadcast coefficients read in place), else NumPy around the affine scan (over
    log decays with ``log_space``)."""
    shape, axis = _shape_and_axis(ra, rb, axis)
    if log_space:
        check_log_space_dtype(ra.dtype)
    lanes = shape[:axis] + shape[axis + 1:]
    bounds = None
    if offsets is not None:
        bounds = check_offsets(offsets, shape[axis], full=True, length="the length of the time axis")
        seed_shape = shape[:axis] + (len(bounds) - 1,) + shape[axis + 1:]
    else:
        seed_shape = lanes
    if init is not None:  # checked before any work: init is h[-1], held in a's dtype
        check_init_shape(init, seed_shape)
        check_init_value(init, accumulator_dtype_name(ra.dtype))
    config = make_config(affine_monoid(reverse, log_space=log_space), axis=axis, inclusive=True, reverse=reverse,
                         order=1, tuple_size=1, dtype=None, backend=backend, algorithm=None)
    a, b = np.broadcast_to(as_numpy(ra), shape), np.broadcast_to(as_numpy(rb), shape)
    n = shape[axis]
    if bounds is None:
        h = run_host_recurrence(backend, a, b, None if init is None else np.asarray(init, dtype=a.dtype), axis,
                                reverse, log_space) if n else None
        if h is None:
            coef, h = run_scan(config, (a, b))
            if init is not None:
                seed = init if np.ndim(init) == 0 else np.expand_dims(np.broadcast_to(np.asarray(init), lanes), axis)
                h = (np.exp(coef) if log_space else coef) * seed + h
        final = None
        if return_final:
            final = np.take(h, 0 if reverse else n - 1, axis=axis) if n else _zero_state(init, lanes, h.dtype)
    else:
        h, final = _packed(config, backend, a, b, init, axis, reverse, bounds, seed_shape, return_final, log_space)
    h = from_numpy(h, ra) if ra.library != "numpy" else h
    if not return_final:
        return h
    return h, (from_numpy(final, ra) if ra.library != "numpy" else final)


def _packed(config, backend, a, b, init, axis: int, reverse: bool, bounds: np.ndarray, seed_shape: tuple,
            return_final: bool, log_space: bool):
    """The recurrence of packed sequences ``[bounds[i], bounds[i + 1])`` along ``axis``
    (empty ones included: their final state is their seed) as one recurrence: a zero
    coefficient (a log decay of ``-inf``) where a sequence's first step is taken, its
    seed folded into that step's ``b``.  Returns ``(h, final)`` (final None unless
    ``return_final``)."""
    n = a.shape[axis]
    starts, ends = bounds[:-1], bounds[1:]
    filled = ends > starts  # sequences of one step or more
    firsts, lasts = starts[filled], ends[filled] - 1
    restart = (slice(None),) * axis + (lasts if reverse else firsts,)
    seeds = None if init is None else np.broadcast_to(np.asarray(init), seed_shape)
    a_eff, b_eff = np.array(a), np.array(b)
    if seeds is not None:
        first_decay = np.exp(a[restart]) if log_space else a[restart]
        b_eff[restart] = b_eff[restart] + first_decay * np.compress(filled, seeds, axis=axis)
    a_eff[restart] = -np.inf if log_space else 0
    h = run_host_recurrence(backend, a_eff, b_eff, None, axis, reverse, log_space) if n else None
    if h is None:
        _, h = run_scan(config, (a_eff, b_eff))
    if not return_final:
        return h, None
    final = _zero_state(seeds, seed_shape, h.dtype)
    final[(slice(None),) * axis + (filled,)] = np.take(h, firsts if reverse else lasts, axis=axis)
    return h, final


def _shape_and_axis(ra: ArrayRef, rb: ArrayRef, axis) -> tuple[tuple, int]:
    """The broadcast shape of ``a`` and ``b`` and the checked, non-negative time axis;
    refused: shapes that do not broadcast, different dtypes, a 0-d shape."""
    try:
        shape = tuple(np.broadcast_shapes(ra.shape, rb.shape))
    except ValueError:
        raise ValueError(f"b has shape {rb.shape}, which does not broadcast against a's shape {ra.shape}") from None
    if ra.dtype != rb.dtype:
        raise TypeError(f"b has dtype {rb.dtype} but a has dtype {ra.dtype}")
    if not shape:
        raise AxisError("a must have at least one dimension (a and b broadcast to a 0-d shape)")
    return shape, check_axis(ArrayRef(ra.obj, ra.library, ra.device, shape, ra.dtype), axis, "a")


def _zero_state(init, lanes: tuple, dtype) -> np.ndarray:
    if init is None:
        return np.zeros(lanes, dtype)
    return np.array(np.broadcast_to(np.asarray(init, dtype=dtype), lanes))
