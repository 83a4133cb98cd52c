"""The linear recurrence on the Triton backend: the entry points that
:data:`prefixscan.primitives.recurrence.IMPLEMENTATIONS` finds, on the one-pass
recurrence kernel of :mod:`.triton_kernel` (forward, totals, and the backward
with ``dL/da`` fused).  Float and complex tensors only: for other dtypes each
entry returns None and the caller scans the affine monoid.
"""

from __future__ import annotations

from . import triton_kernel as kernel

__all__ = ["linear_recurrence", "linear_recurrence_total", "linear_recurrence_backward"]


def linear_recurrence(a, b, init, axis: int, reverse: bool, deterministic: bool, log_space: bool = False,
                      restart=None):
    """The one-pass recurrence kernel (:mod:`.triton_kernel`) for float and complex
    tensors (``log_space``: real log decays, taken through ``exp`` in registers;
    ``restart``: a flag per step, where packed sequences start); None for other dtypes
    (the affine scan runs)."""
    if not kernel.supports(a.dtype) or (log_space and a.is_complex()):
        return None
    return kernel.linear_recurrence(a, b, init, axis, reverse, deterministic=deterministic, log_space=log_space,
                                    restart=restart)


def linear_recurrence_total(a, b, axis: int, reverse: bool, log_space: bool = False):
    """The recurrence kernel storing only each lane's map (:mod:`.triton_kernel`), for
    float and complex tensors; None for other dtypes."""
    import torch

    if not kernel.supports(a.dtype) or a.dtype != b.dtype or (log_space and a.is_complex()):
        return None
    a, b = torch.broadcast_tensors(a, b)  # expanded views: a broadcast decay is read in place
    return kernel.linear_recurrence_total(a, b, axis, reverse, log_space=log_space)


def linear_recurrence_backward(a, h, grad, init, axis: int, reverse: bool, deterministic: bool, need_a: bool,
                               log_space: bool = False, restart=None, final=None):
    """The recurrence kernel run backwards, ``dL/da`` fused (:mod:`.triton_kernel`);
    ``final``: the adjoint arriving from after the last step (a later piece's), or None."""
    if not kernel.supports(a.dtype) or (log_space and a.is_complex()):
        return None
    return kernel.linear_recurrence_backward(a, h, grad, init, axis, reverse, need_a=need_a,
                                             deterministic=deterministic, log_space=log_space, restart=restart,
                                             final=final)
