"""Process environment read by several layers (a leaf module: imports nothing of prefixscan)."""

from __future__ import annotations

import os

__all__ = ["interpreter_mode", "environ_get"]

_KEYS: dict = {}  # name -> its key in os.environ's own mapping


def interpreter_mode() -> bool:
    """True when Triton kernels run in the interpreter (TRITON_INTERPRET=1)."""
    return environ_get("TRITON_INTERPRET", "0") not in ("", "0")


def environ_get(name: str, default: str) -> str:
    """``os.environ.get(name, default)`` for the switches a planned call reads every time.

    ``os.environ.get`` of an unset variable raises and catches a KeyError inside
    (``Mapping.get``): 1-1.5 us, a tenth of a planned scan's host time.  CPython's
    ``os.environ`` keeps its variables in a plain dict (``_data``, keys encoded by
    ``encodekey``), read here directly where there is one; the same values as
    ``os.environ.get``, since every change made through ``os.environ`` lands there."""
    environ = os.environ
    data = getattr(environ, "_data", None)
    if data is None:
        return environ.get(name, default)
    key = _KEYS.get(name)
    if key is None:
        key = _KEYS[name] = environ.encodekey(name)
    value = data.get(key)
    return default if value is None else environ.decodevalue(value)
