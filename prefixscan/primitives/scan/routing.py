"""Which calls leave the plain scan path for the differentiable custom operators.

A torch tensor takes the custom operators (:mod:`.torch_ops`, and those of the
other primitives) when autograd records it (grad mode on and a tensor that
requires grad) or when ``torch.compile`` traces the call (the operators have fake
implementations, the plain path has none).  Everything else, NumPy arrays above all, takes the plain
path untouched.  This module imports neither torch nor NumPy: a host array is
told apart by its type's module name, so the test costs the public API a few
attribute reads, and is simple enough for TorchDynamo to trace.
"""

from __future__ import annotations

import sys
from typing import Any

__all__ = ["wants_torch_ops", "is_torch_tensor"]

_PLAIN_TYPES = (bool, int, float, complex, str, list, type(None))


def is_torch_tensor(value: Any) -> bool:
    """True for a torch tensor (``torch.Tensor``, ``Parameter``, subclasses)."""
    cls = type(value)
    if cls in _PLAIN_TYPES:  # also keeps TorchDynamo off the __module__ of builtin types
        return False
    return cls.__module__.startswith("torch") and hasattr(value, "requires_grad")


def wants_torch_ops(x: Any, init: Any = None, *more: Any) -> bool:
    """True when ``x`` (a tensor or a tuple of tensors) should run through the
    differentiable custom operators: torch.compile is tracing, or grad mode is on
    and ``x``, ``init`` or one of ``more`` requires grad."""
    # On every scan call: NumPy arrays leave after one type test, tensors after a few.
    if type(x) is tuple:
        if not x or not all(is_torch_tensor(f) for f in x):
            return False
        recorded = any(f.requires_grad for f in x)
    elif is_torch_tensor(x):
        recorded = x.requires_grad
    else:
        return False
    torch = sys.modules["torch"]  # loaded, since x is a tensor (cheaper than an import statement)
    if torch.compiler.is_compiling():
        return True
    if not torch.is_grad_enabled():
        return False
    if recorded or getattr(init, "requires_grad", False) is True:
        return True
    return bool(more) and any(getattr(v, "requires_grad", False) is True for v in more)
