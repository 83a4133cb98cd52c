"""Process environment read by several layers (a leaf module: imports nothing of prefixscan)."""

from __future__ import annotations

import os

__all__ = ["interpreter_mode"]


def interpreter_mode() -> bool:
    """True when Triton kernels run in the interpreter (TRITON_INTERPRET=1)."""
    return os.environ.get("TRITON_INTERPRET", "0") not in ("", "0")
