"""The restart inputs of packed sequences (``offsets``, the ``cu_seqlens`` of
variable-length batches) for ``linear_recurrence`` on torch tensors (:mod:`.tensors`).

From the bounds ``[0, ..., n]`` of S sequences along an axis of n steps, the
recurrence needs (:class:`Packing`): a byte per step, 1 where a nonempty sequence
takes its first step (the kernels restart the state there, :mod:`.torch_ops`), and,
for the seeds and the final states, the position of each sequence's first and last
step and whether it has any.  Two ways to them, with the same values:

* offsets on the host (a list, a tuple, a NumPy array) outside a trace: checked on
  the host (:func:`sequence_bounds`, before the caller checks its other arguments),
  then turned into the arrays in NumPy, in one buffer copied to the device by one
  non-blocking copy from page-locked memory (:func:`host_packing`), whose views are
  the arrays: no small kernel, and the host does not wait on the GPU.  torch's
  caching host allocator keeps the page-locked block from reuse until the copy
  has run (the copy records an event on the stream for it), so the buffer may be
  dropped at once;
* offsets as a tensor, and every call that ``torch.compile`` traces: torch
  operations on the bounds where they live (:func:`device_packing`), which trace
  functionally.  Host offsets under CUDA graph capture take this way too, from
  bounds made on the device by fills (:func:`filled_bounds`): a copy from host
  memory inside a capture would be replayed from a buffer that is gone by then.
"""

from __future__ import annotations

from typing import Any, NamedTuple, Optional

import numpy as np
import torch

from ..._normalize import check_offsets

__all__ = ["Packing", "sequence_bounds", "pack_sequences", "host_packing", "device_packing", "filled_bounds",
           "bounds_tensor"]

LENGTH = "the length of the time axis"  # n, as the offsets' messages name it


class Packing(NamedTuple):
    """What the recurrence reads of S packed sequences over n steps, on a's device.
    Each tensor is None where the call needs none (``flags`` where n is 0)."""

    count: Any  # S, the number of sequences (an int, or a SymInt while tracing)
    flags: Optional[torch.Tensor]  # uint8 (n,): 1 where a nonempty sequence takes its first step
    restart: Optional[torch.Tensor]  # int64 (S,): each sequence's first step (clamped into range): the seeds
    filled: Optional[torch.Tensor]  # bool (S,): the sequence has a step (seeds, final states)
    picks: Optional[torch.Tensor]  # int64 (S,): the step whose h is its final state (clamped)


def _host_like(offsets: Any) -> bool:
    return isinstance(offsets, (list, tuple, np.ndarray))


def sequence_bounds(offsets: Any, n: int, device: torch.device, *, whole: bool) -> Any:
    """``offsets`` checked (:func:`prefixscan._normalize.check_offsets`) as the bounds
    ``[0, ..., n]`` of the packed sequences over an axis of ``n`` steps, n appended where
    they leave it out (``whole``: the number of sequences gives a shape, see
    :func:`bounds_tensor`): host offsets outside a trace and a dispatch mode, for a CPU or
    CUDA ``device``, as a native int64 NumPy array (nothing is sent to the device yet:
    the caller checks its other arguments first); everything else as an int64 tensor on
    ``device``.  Either way ``bounds.shape[0] - 1`` is the number of sequences."""
    if (_host_like(offsets) and device.type in ("cpu", "cuda") and not torch.compiler.is_compiling()
            and not torch._C._len_torch_dispatch_stack()):
        return check_offsets(offsets, n, full=True, length=LENGTH)
    return bounds_tensor(offsets, n, device, whole)


def pack_sequences(bounds: Any, n: int, device: torch.device, *, reverse: bool, seeds: bool,
                   finals: bool) -> Packing:
    """The :class:`Packing` on ``device`` of the ``bounds`` of :func:`sequence_bounds`,
    with what ``seeds`` (an init per sequence) and ``finals`` (``return_final``) need
    besides the flags; ``reverse``: each sequence runs from its end.  Host bounds take
    :func:`host_packing`, except under CUDA graph capture (:func:`filled_bounds`, then
    the torch operations); bounds on the device :func:`device_packing`."""
    if isinstance(bounds, np.ndarray):
        if not (device.type == "cuda" and torch.cuda.is_current_stream_capturing()):
            return host_packing(bounds, n, device, reverse=reverse, seeds=seeds, finals=finals)
        bounds = filled_bounds(bounds, device)
    return device_packing(bounds, n, reverse=reverse, seeds=seeds, finals=finals)


# ---------------------------------------------------------------------------
# Host offsets: NumPy, one buffer, one copy.


def _layout(n: int, count: int, seeds: bool, finals: bool) -> tuple[int, int, int, int]:
    """Byte offsets in the buffer of the restart positions, the picks and the filled
    mask (-1 where not needed), and its size.  The flags first (at the allocation's
    own alignment, as a separate tensor has it: the kernel's launch key takes it), the
    int64 arrays at a multiple of 8."""
    at = -(-n // 8) * 8
    restart = picks = filled = -1
    if seeds:
        restart, at = at, at + 8 * count
    if finals:
        picks, at = at, at + 8 * count
    if seeds or finals:
        filled, at = at, at + count
    return restart, picks, filled, (at if seeds or finals else n)


def _fill(host: np.ndarray, bounds: np.ndarray, n: int, reverse: bool, layout: tuple) -> None:
    """The arrays of :class:`Packing` written into the byte buffer ``host`` at ``layout``:
    the values :func:`device_packing` computes from the same bounds."""
    restart_at, picks_at, filled_at, _ = layout
    starts, ends = bounds[:-1], bounds[1:]
    count = starts.shape[0]
    filled = ends > starts
    firsts, lasts = np.minimum(starts, n - 1), np.maximum(ends - 1, 0)
    restart = lasts if reverse else firsts
    flags = host[:n]
    flags.fill(0)
    flags[restart[filled]] = 1
    if restart_at >= 0:
        host[restart_at:restart_at + 8 * count].view(np.int64)[:] = restart
    if picks_at >= 0:
        host[picks_at:picks_at + 8 * count].view(np.int64)[:] = firsts if reverse else lasts
    if filled_at >= 0:
        host[filled_at:filled_at + count] = filled


def host_packing(bounds: np.ndarray, n: int, device: torch.device, *, reverse: bool, seeds: bool,
                 finals: bool) -> Packing:
    """The :class:`Packing` of checked host ``bounds`` (native int64, n last): computed in
    NumPy into one byte buffer, page-locked for a CUDA device and copied there without
    waiting on the GPU (for a CPU tensor the buffer itself), the arrays views of the
    copy.  Not under CUDA graph capture (:func:`pack_sequences` sends that elsewhere)."""
    count = bounds.shape[0] - 1
    if n == 0:
        return Packing(count, None, None, None, None)
    layout = _layout(n, count, seeds, finals)
    size = layout[3]
    if device.type == "cuda":
        pinned = torch.empty(size, dtype=torch.uint8, pin_memory=True)
        _fill(pinned.numpy(), bounds, n, reverse, layout)
        buffer = pinned.to(device, non_blocking=True)
    else:
        host = np.empty(size, dtype=np.uint8)
        _fill(host, bounds, n, reverse, layout)
        buffer = torch.from_numpy(host)
    restart_at, picks_at, filled_at, _ = layout
    flags = buffer if size == n else buffer[:n]

    def int64_at(at: int) -> Optional[torch.Tensor]:
        return None if at < 0 else buffer[at:at + 8 * count].view(torch.int64)

    filled = None if filled_at < 0 else buffer[filled_at:filled_at + count].view(torch.bool)
    return Packing(count, flags, int64_at(restart_at), filled, int64_at(picks_at))


# ---------------------------------------------------------------------------
# Offsets on the device, traced calls, captures: torch operations.


def bounds_tensor(offsets: Any, n: int, device: torch.device, whole: bool) -> torch.Tensor:
    """The bounds ``[0, ..., n]`` of the packed sequences as an int64 tensor on
    ``device``: ``offsets`` checked (:func:`prefixscan._normalize.check_offsets`), n
    appended where they leave it out.  Traced by ``torch.compile``, the checks of
    the values run when the graph runs (the operator ``prefixscan::checked_offsets``),
    and n is appended to a tensor whatever its last value: an empty last sequence
    changes no step of h.  With ``whole`` (the number of sequences gives a shape:
    init's, the final states'), a tensor must hold every bound, n included."""
    if not torch.compiler.is_compiling():
        if isinstance(offsets, torch.Tensor):  # checked where it lives, then moved to a's device
            bounds = check_offsets(offsets, n, device="cuda" if offsets.is_cuda else "cpu", full=True, length=LENGTH)
        else:  # checked on the host, then copied without waiting on the GPU
            bounds = check_offsets(offsets, n, device=device, full=True, length=LENGTH)
        return bounds.to(device=device, dtype=torch.int64, non_blocking=True)  # host bounds: no wait
    from ..segmented.torch_ops import checked_offsets, int_list  # the operator checks them when the graph runs

    if isinstance(offsets, (list, tuple)):  # its length is known while tracing: n appended where it is missing
        values = list(offsets)
        return checked_offsets(int_list(values + [n] if values and values[-1] != n else values, n, LENGTH), n,
                               LENGTH, True).to(device=device)
    if not isinstance(offsets, torch.Tensor):
        offsets = torch.as_tensor(offsets)  # a host array: its values are checked by the operator
    bounds = checked_offsets(offsets, n, LENGTH, whole).to(device=device)
    return bounds if whole else torch.cat([bounds, bounds.new_full((1,), n)])


def filled_bounds(bounds: np.ndarray, device: torch.device) -> torch.Tensor:
    """Checked host ``bounds`` as an int64 tensor on ``device`` made by fills, one per run
    of equal values: nothing is read from host memory, so a CUDA graph captures the
    values themselves (the fills' arguments) and replays them."""
    out = torch.empty(bounds.shape[0], dtype=torch.int64, device=device)
    changes = np.flatnonzero(np.diff(bounds)) + 1
    for lo, hi in zip(np.concatenate([[0], changes]).tolist(), np.concatenate([changes, [bounds.shape[0]]]).tolist()):
        out.narrow(0, lo, hi - lo).fill_(int(bounds[lo]))
    return out


def _restart_flags(n: int, positions: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
    """One byte per step of the ``n`` along the axis, 1 at ``positions`` where ``keep`` is
    True (where each nonempty sequence takes its first step): the kernels read it, and
    elsewhere it selects the decays to zero.  An ``index_add`` of the hits and a compare,
    not ``index_fill``/``index_put_``, so that it traces functionally everywhere."""
    hits = torch.zeros(n, dtype=torch.int32, device=positions.device).index_add(0, positions, keep.to(torch.int32))
    return (hits > 0).to(torch.uint8)


def device_packing(cuts: torch.Tensor, n: int, *, reverse: bool, seeds: bool, finals: bool) -> Packing:
    """The :class:`Packing` of the int64 bounds ``cuts`` (n last) by torch operations
    where they live.  Empty sequences (a repeated bound) take no step: their positions
    are clamped into range and masked out, so that the graph has no data-dependent
    shape."""
    count = cuts.shape[0] - 1
    if n == 0:
        return Packing(count, None, None, None, None)
    starts, ends = cuts[:-1], cuts[1:]
    filled = ends > starts

    def firsts() -> torch.Tensor:
        return starts.clamp(max=n - 1)

    def lasts() -> torch.Tensor:
        return (ends - 1).clamp(min=0)

    restart = lasts() if reverse else firsts()  # where each sequence's first step is taken
    picks = (firsts() if reverse else lasts()) if finals else None
    return Packing(count, _restart_flags(n, restart, filled), restart if seeds else None,
                   filled if seeds or finals else None, picks)
