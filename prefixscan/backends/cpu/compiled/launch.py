"""Calling a compiled kernel without Numba's per-call type resolution.

A Numba dispatcher types every argument on every call; for the nested tuples
of arrays, markers and scalars the kernels take, that costs about 100 us, far
more than a scan of a few thousand elements.  Here the compiled entry point of
each signature is looked up once, under a key built from what determines the
Numba types (dtypes, dimensions, contiguity, flags, marker identities), and
then called directly (a few microseconds).
"""

from __future__ import annotations

import threading

import numpy as np

from ....caches import register_cache
from .jit_support import StaticInt

__all__ = ["call", "clear"]

_ENTRIES: dict = {}
_LOCK = threading.Lock()


def clear() -> None:
    with _LOCK:
        _ENTRIES.clear()


register_cache("prefixscan.backends.cpu.compiled.launch", clear)


# C- and F-contiguous, aligned, writeable: what Numba's array type depends on.
_FLAG_BITS = 0x1 | 0x2 | 0x100 | 0x400


def _key(value):
    kind = type(value)
    if kind is np.ndarray:
        return (value.dtype, value.ndim, value.flags.num & _FLAG_BITS)
    if kind is tuple:
        return tuple([_key(v) for v in value])
    if isinstance(value, StaticInt):  # its value is part of the type
        return (StaticInt, int(value))
    if isinstance(value, (bool, int, float, np.generic)):
        return type(value)
    return value  # markers and jitted functions: one type per object (kept alive by the key)


def _check_native(value) -> None:
    if type(value) is np.ndarray:
        if not value.dtype.isnative:
            raise TypeError(f"internal error: an array of non-native byte order ({value.dtype.str}) reached a "
                            "compiled kernel; the backend swaps such arrays first")
    elif type(value) is tuple:
        for v in value:
            _check_native(v)


def call(dispatcher, *args, static=None):
    """``dispatcher(*args)``, through the cached entry point of its signature.
    ``static``: a hashable stand-in for the types of every argument that is not an
    array or a tuple of arrays (the caller knows them; keying them is slower)."""
    if static is None:
        key = (dispatcher, _key(args))
    else:
        key = (dispatcher, static, tuple([_key(a) for a in args if type(a) is np.ndarray
                                          or (type(a) is tuple and type(a[0]) is np.ndarray)]))
    entry = _ENTRIES.get(key)
    if entry is not None:
        return entry(*args)
    # Keys hold dtypes with their byte order, so an array of the other byte order
    # never reaches a cached entry; Numba's own dispatcher would run it on the
    # native signature's machine code, reading swapped bytes as numbers.
    _check_native(args)
    result = dispatcher(*args)  # compiles (or loads from disk) on first use
    types = tuple(dispatcher.typeof_pyval(a) for a in args)
    compiled = dispatcher.overloads.get(types)
    if compiled is not None:
        with _LOCK:
            if len(_ENTRIES) > 4096:
                _ENTRIES.clear()
            _ENTRIES[key] = compiled.entry_point
    return result
