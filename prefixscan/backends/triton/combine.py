"""A monoid's Python ``combine`` compiled as a Triton function.

Triton compiles a function from its source, so the monoid's own ``combine`` is
wrapped with ``triton.jit`` unchanged.  Reverse scans of non-commutative
monoids need the operands swapped (``combine(b, a)``); that adapter is a
two-line function generated once per monoid and registered with ``linecache``
so that Triton can read its source like any other.
"""

from __future__ import annotations

import linecache
import types
import weakref

import triton
import triton.language as tl

from ...dispatch import interpreter_mode

_compiled: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
_counter = 0


def _swapped_source(name: str) -> str:
    return f"def {name}(a, b):\n    return USER_COMBINE(b, a)\n"


def _make_swapped(user_jit) -> triton.JITFunction:
    global _counter
    _counter += 1
    name = f"_swapped_combine_{_counter}"
    filename = f"<prefixscan-combine-{_counter}>"
    source = _swapped_source(name)
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace = {"USER_COMBINE": user_jit, "_prefixscan_tl": tl}
    exec(compile(source, filename, "exec"), namespace)  # noqa: S102 - fixed two-line adapter
    return triton.jit(namespace[name])


def _jit(fn):
    if interpreter_mode():
        # The interpreter patches triton.language only for functions that can
        # see it among their globals; the user's module need not import it.
        fn = types.FunctionType(fn.__code__, {**fn.__globals__, "_prefixscan_tl": tl}, fn.__name__,
                                fn.__defaults__, fn.__closure__)
    return triton.jit(fn)


def triton_combine(monoid, swapped: bool = False):
    """The Triton function for ``monoid.combine`` (operands swapped if asked)."""
    entry = _compiled.get(monoid)
    if entry is None:
        entry = {False: _jit(monoid.combine)}
        _compiled[monoid] = entry
    if swapped and True not in entry:
        entry[True] = _make_swapped(entry[False])
    return entry[swapped]
