"""Operators for the compiled kernels: built-in tags and compiled user monoids.

A built-in operator reaches a kernel as a :class:`~.jit_support.Tag` (one Numba
type per operator), so its kernels live in Numba's on-disk cache.  A user's
``Monoid.combine`` is compiled with ``numba.njit`` on first use, the same
function object that the Triton backend compiles (the helpers of
:mod:`prefixscan.monoid` have Numba overloads), and wrapped into a step on
field tuples.  Those steps and the kernels specialised on them are cached per
process only (registered with :mod:`prefixscan.caches`): a kernel's type would
be the function object itself, which no on-disk cache can key on safely.  A
combine that Numba cannot compile is remembered, and the NumPy path runs it.
"""

from __future__ import annotations

import threading
from typing import Any

from ....caches import register_cache
from ....monoid import Monoid
from .jit_support import builtin_tag

__all__ = ["operator_for", "clear"]

_STEPS: dict[tuple, Any] = {}
_FAILED: set = set()
_LOCK = threading.Lock()


def clear() -> None:
    """Forget the compiled user monoids (they compile again on next use)."""
    with _LOCK:
        _STEPS.clear()
        _FAILED.clear()


register_cache("prefixscan.backends.cpu.compiled.monoids", clear)


def operator_for(monoid: Monoid, nfields: int, reverse: bool):
    """``(op, user)``: what the kernels take as ``op`` for this monoid, and whether
    it is a user monoid (the uncached kernels run it).  None when Numba cannot
    compile the monoid's combine."""
    if monoid.builtin and nfields == 1:
        return builtin_tag(monoid.name), False
    key = (monoid, nfields, bool(reverse))
    step = _STEPS.get(key)
    if step is None:
        if key in _FAILED:
            return None
        step = _user_step(monoid.combine, nfields, reverse)
        with _LOCK:
            _STEPS[key] = step
    return step, True


def mark_failed(monoid: Monoid, nfields: int, reverse: bool) -> None:
    """Numba could not type this monoid's kernel: leave it to the NumPy path from now on."""
    with _LOCK:
        _FAILED.add((monoid, nfields, bool(reverse)))
        _STEPS.pop((monoid, nfields, bool(reverse)), None)


def _user_step(combine, nfields: int, reverse: bool):
    """The combine as a jitted function on field tuples; the left operand holds the
    earlier elements, so a reverse scan swaps the operands."""
    from numba import njit

    inner = njit(combine)
    if nfields == 1:
        if reverse:
            def step(a, b):
                return (inner(b[0], a[0]),)
        else:
            def step(a, b):
                return (inner(a[0], b[0]),)
    elif reverse:
        def step(a, b):
            return inner(b, a)
    else:
        def step(a, b):
            return inner(a, b)
    return njit(step)
