"""Delta encoding in one pass: q-th order, s-strided differences.

``delta_encode`` applies ``D = I - Z^s`` q times (Z^s: delay by s elements of a lane,
zeros shifted in).  Done as q separate passes it reads and writes the array q
times; SAM (Maleki, Yang & Burtscher, PLDI 2016, section 2.4) decodes the
higher-order difference sequence in one pass, and the encoder is the easy
direction: ``D^q x [j]`` depends only on ``x[j], x[j-s], .., x[j-q*s]``, a stencil.

Each program loads its block and the q delayed copies of it (the copies hit in
L1/L2: they lie at most q*s*K elements behind), then applies the q differences
in registers on the window of q+1 values, ``d_m <- d_m - d_{m+1}``.  That is
exactly the arithmetic of the q passes (same operands, same order), so integer
results wrap identically and floating-point results are bitwise those of the
pass-by-pass reference.  DRAM traffic: one read and one write per element, per
pass of at most ``MAX_PASS_ORDER`` orders (orders compose: ``D^q = D^8 D^(q-8)``).

Lanes are the ``(B, M, K)`` row-major view of the array with the coded axis as M:
element ``(b, j, k)`` has the delayed copies at flat offsets ``- m * s * K``,
which exist when ``j >= m * s``.  :func:`delta_encode` is the backend's entry
(:data:`prefixscan.primitives.delta.IMPLEMENTATIONS`): complex tensors, which
Triton has no types for, take one torch subtraction per round there.
"""

from __future__ import annotations

import triton
import triton.language as tl

from ..._arrays import ArrayRef, as_torch
from ..._environment import interpreter_mode
from ...backends.triton.runtime import launch as runtime
from ...backends.triton.runtime.launch import Launch, current_stream


#: The highest order of one launch: the kernel unrolls q (q + 1) / 2 subtractions and
#: compiles once per order, so higher orders run as passes of at most this many.
MAX_PASS_ORDER = 8


@triton.jit(do_not_specialize=["total"])
def delta_encode_kernel(x_ptr, y_ptr, total, M, K, s, ORDER: tl.constexpr, BLOCK: tl.constexpr):
    """``y = (I - Z^s)^ORDER x`` over ``total`` elements of the (B, M, K) view."""
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    inside = offs < total
    j = (offs // K) % M  # position along the coded axis
    d0 = tl.load(x_ptr + offs, mask=inside)
    # window[m] = x[j - m*s] (zero before the lane starts); then ORDER difference
    # passes, each d_m <- d_m - d_{m+1}: after pass p, d_0 holds D^p x [j].
    window = (d0,)
    for m in tl.static_range(1, ORDER + 1):
        delayed = inside & (j >= m * s)
        window = window + (tl.load(x_ptr + offs - m * s * K, mask=delayed, other=0),)
    for p in tl.static_range(ORDER):
        shifted = ()
        for m in tl.static_range(ORDER - p):
            shifted = shifted + (window[m] - window[m + 1],)
        window = shifted
    tl.store(y_ptr + offs, window[0], mask=inside)


def encode_tensor(x, order: int, tuple_size: int, axis: int):
    """``D^order`` of the torch tensor ``x`` along ``axis`` (one launch); a new tensor."""
    import torch

    x = x.contiguous()  # the (B, M, K) view needs row-major order; a no-op for the usual case
    # torch's uint16/32/64 are barely supported (no subtraction on CUDA): the signed
    # view of the same width wraps to the same bits.
    signed = {torch.uint16: torch.int16, torch.uint32: torch.int32, torch.uint64: torch.int64}.get(x.dtype)
    work = x.view(signed) if signed is not None else x
    shape = tuple(work.shape)
    M = shape[axis]
    K = 1
    for d in shape[axis + 1:]:
        K *= d
    total = work.numel()
    if not total:
        y = torch.empty_like(work)
    else:
        interpreter = interpreter_mode()
        block = 256 if interpreter else 1024
        stream = current_stream(work.device) if work.device.type == "cuda" else 0
        # Passes of at most MAX_PASS_ORDER orders (orders compose), each from the last
        # one's output into the other of two buffers (a pass reads elements behind the
        # ones it writes, so it cannot run in place).
        passes = -(-order // MAX_PASS_ORDER)
        buffers = [torch.empty_like(work) for _ in range(min(passes, 2))]
        y, remaining = work, order
        for p in range(passes):
            q = min(remaining, MAX_PASS_ORDER)
            source, y = y, buffers[p % 2]
            runtime.launch_kernel(Launch(delta_encode_kernel, triton.cdiv(total, block), 4, stream, interpreter,
                                         (source, y, total, M, K, tuple_size), dict(ORDER=q, BLOCK=block),
                                         (M, K, tuple_size)))
            remaining -= q
    return y.view(x.dtype) if signed is not None else y


def delta_encode(x: ArrayRef, order: int, tuple_size: int, axis: int):
    """``order`` rounds of ``d[j] -= d[j - s]`` along ``axis`` in one kernel pass
    (:func:`encode_tensor`); complex tensors, which Triton has no types for, take one
    torch subtraction per round."""
    t = as_torch(x)
    if not t.is_complex():
        return encode_tensor(t, order, tuple_size, axis)
    import torch

    n, s = t.shape[axis], tuple_size
    if n <= s:
        return t.clone()
    # Each round from the last one's result into the other of two buffers: the first s
    # elements kept, the others less the element s before (no copy of the array per round).
    d, other = torch.empty_like(t), torch.empty_like(t) if order > 1 else None
    source = t
    for _ in range(order):
        d.narrow(axis, 0, s).copy_(source.narrow(axis, 0, s))
        torch.sub(source.narrow(axis, s, n - s), source.narrow(axis, 0, n - s), out=d.narrow(axis, s, n - s))
        source, d = d, (other if source is t else source)
    return source
