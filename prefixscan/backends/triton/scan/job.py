"""What every strategy launcher is given: one scan pass over the (B, M, K) layout.

A scan is a ``(B, M, K)`` row-major view scanned along M: B lanes, M steps, K
interleaved streams (a tuple size, or the extent after the scanned axis).  The
scan path (:mod:`.route`) prepares the tensors and the monoid's Triton functions
once and hands each launcher a :class:`ScanJob`; a scan of order q > 1 that a
kernel cannot do in one pass runs q jobs that differ only in ``xs`` and ``ys``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

__all__ = ["ScanJob", "SeedLayout", "lane_layout", "torch_dtype"]


def torch_dtype(name: str):
    import torch

    return getattr(torch, name)


def lane_layout(request) -> tuple[int, int, int]:
    """(B, M, K) for a checked scan request: lanes, scanned length, interleaved streams.
    (Here, not in :mod:`.route`, so that what needs it does not import the kernels.)"""
    s = request.config.tuple_size
    if request.axis is None:
        return 1, request.lane_len // s, s
    shape = request.shape
    pre = math.prod(shape[: request.axis])
    post = math.prod(shape[request.axis + 1:])
    return pre, request.lane_len // s, post * s


class SeedLayout(NamedTuple):
    """Where a scan's seeds go: ``init`` (lanes + (tuple_size,), checked, of the
    accumulator dtype's values) becomes every lane's seeds in the kernel's column order,
    a contiguous ``(B, K)`` tensor of dtype ``acc`` on ``device``."""

    acc: object  # torch dtype
    init_shape: tuple
    B: int
    K: int
    tuple_size: int
    device: object

    def columns(self, value):
        import torch

        if not torch.is_tensor(value) and np.size(value) == 1 and self.acc != torch.uint64:
            # One host value: a fill on the device, queued like a kernel.  A copy from
            # pageable host memory is staged by the driver, which holds the call for
            # longer than the fill (and torch has no uint64 fill beyond 2^63).
            return torch.full((self.B, self.K), np.asarray(value).item(), dtype=self.acc, device=self.device)
        value = value if torch.is_tensor(value) else torch.as_tensor(np.asarray(value))
        # Host to device without a blocking copy, which waits for the whole stream (0.22 ms a
        # call behind a 2^28 scan on an H100): a pageable source is staged before the
        # asynchronous copy returns, so the host value may go away at once.  (Never device to
        # host: that copy would return before the data is there.)
        seeds = value.to(device=self.device, dtype=self.acc,
                         non_blocking=value.device.type == "cpu").broadcast_to(self.init_shape)
        s, K = self.tuple_size, self.K
        # init's (B, post, s) against the columns' (stream, post) order: stream t of inner
        # position p is column t * post + p.
        if s > 1 and K > s:
            seeds = seeds.reshape(self.B, K // s, s).transpose(1, 2)
        return seeds.contiguous().reshape(self.B, K)


@dataclass(frozen=True, eq=False)
class ScanJob:
    xs: tuple  # input fields (torch tensors, contiguous)
    ys: tuple  # output fields
    idents: tuple  # the identity of each field, one-element tensors in its accumulator dtype
    inits: tuple | None  # per-lane seeds of each field, or None
    pair: object  # PAIR(a, b) on field tuples (combine.combine_functions)
    flat: object  # FLAT(a0, .., b0, ..), as tl.associative_scan calls it
    commutative: bool
    accs: tuple  # accumulator torch dtypes, one per field
    B: int
    M: int
    K: int
    config: object  # the request's ScanConfig (strategy, order, inclusive, reverse, monoid, ...)
    stream: int  # raw CUDA stream (0 in the interpreter)
    interpreter: bool

    @property
    def device(self):
        return self.xs[0].device
