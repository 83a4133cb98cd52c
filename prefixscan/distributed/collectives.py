"""The one collective the distributed scans use: every rank's small arrays, to every rank.

A rank's monoid element (its total: a lane's worth of values per field, any
dtypes) travels as its bytes, so that one ``all_gather`` of one buffer per rank
carries every field whatever its dtype (bool, unsigned and 16-bit types
included, which the collective backends do not all take).  The buffer goes
through the process group's device: CUDA for NCCL, the host for gloo.  Host
arrays (:func:`all_gather_fields`) come back to the host, which waits for the
collective; tensors already on the group's device (:func:`all_gather_tensors`)
stay there, so a caller on a GPU queues the collective behind its kernels and
goes on without waiting.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
import torch
import torch.distributed as dist

from ..caches import register_cache

__all__ = ["Group", "all_gather_fields", "all_gather_tensors", "group_of"]


@dataclass(frozen=True)
class Group:
    """A process group as the scans see it: which rank this is, how many there are,
    and the device its collectives take."""

    handle: Any  # the torch.distributed group (None: the default one)
    rank: int
    size: int
    device: torch.device


# id(process group) -> (the group, its backend, this rank, its size): asked of
# torch.distributed once per group, not on every call (three calls into c10d that
# took as long as the rest of a small scan's host work on an H100 host).  The entry
# holds its group, so an id is not reused while it is cached.
_GROUPS: dict = {}
_MAX_GROUPS = 64
register_cache("prefixscan.distributed.collectives.groups", _GROUPS.clear)


def group_of(group: Any, like: torch.Tensor) -> Group:
    """``group`` (None: the default group) described for tensors like ``like``;
    RuntimeError when torch.distributed is not initialised."""
    if not dist.is_available() or not dist.is_initialized():
        raise RuntimeError("group: torch.distributed is not initialised; call "
                           "torch.distributed.init_process_group first")
    handle = dist.group.WORLD if group is None else group
    entry = _GROUPS.get(id(handle))
    if entry is None or entry[0] is not handle:
        if len(_GROUPS) >= _MAX_GROUPS:
            _GROUPS.clear()
        entry = _GROUPS[id(handle)] = (handle, dist.get_backend(group), dist.get_rank(group=group),
                                       dist.get_world_size(group=group))
    _, backend, rank, size = entry
    if backend == "nccl":
        device = like.device if like.is_cuda else torch.device("cuda", torch.cuda.current_device())
    else:
        device = torch.device("cpu")
    return Group(group, rank, size, device)


def all_gather_fields(group: Group, fields: Sequence[np.ndarray]) -> list[tuple[np.ndarray, ...]]:
    """Every rank's ``fields`` (host arrays of the same shapes and dtypes on every
    rank), in rank order: one ``all_gather`` of their bytes."""
    parts = [np.ascontiguousarray(f) for f in fields]
    sizes = [p.nbytes for p in parts]
    buffer = np.concatenate([p.reshape(-1).view(np.uint8) for p in parts]) if parts else np.zeros(0, np.uint8)
    local = torch.from_numpy(buffer).to(group.device)
    gathered = [torch.empty_like(local) for _ in range(group.size)]
    dist.all_gather(gathered, local, group=group.handle)
    result = []
    for raw in gathered:
        data = raw.cpu().numpy()
        fields_of_rank, start = [], 0
        for p, size in zip(parts, sizes):
            fields_of_rank.append(data[start:start + size].view(p.dtype).reshape(p.shape))
            start += size
        result.append(tuple(fields_of_rank))
    return result


def all_gather_tensors(group: Group, tensors: Sequence[torch.Tensor]) -> list[torch.Tensor]:
    """Every rank's ``tensors`` (same shapes and dtypes on every rank, on the group's
    device), each stacked along a new first axis in rank order: one ``all_gather`` of
    their bytes, with no copy to the host and no wait for the stream."""
    parts = [t.contiguous().reshape(-1).view(torch.uint8) for t in tensors]
    local = torch.cat(parts) if len(parts) != 1 else parts[0]
    flat = torch.empty(group.size * local.numel(), dtype=torch.uint8, device=group.device)  # gloo: 1-D only
    # Into one tensor: no list of outputs to fill and stack (host time on every call).
    # torch 2.13 renames the collective; 2.11 has only the old name.
    gather_into = getattr(dist, "all_gather_single", None) or dist.all_gather_into_tensor
    gather_into(flat, local, group=group.handle)
    stacked = flat.view(group.size, local.numel())
    if len(parts) == 1:  # the rows are the field's bytes: a view, no copy
        t = tensors[0]
        return [stacked.view(t.dtype).reshape((group.size,) + tuple(t.shape))]
    result, start = [], 0
    for t, p in zip(tensors, parts):
        raw = stacked[:, start:start + p.numel()].contiguous()  # whole rows: aligned for the view
        result.append(raw.view(t.dtype).reshape((group.size,) + tuple(t.shape)))
        start += p.numel()
    return result
