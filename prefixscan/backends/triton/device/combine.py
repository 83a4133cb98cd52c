"""A monoid's Python ``combine`` compiled as Triton functions.

Triton compiles a function from its source, so the monoid's own ``combine`` is
wrapped with ``triton.jit`` unchanged.  The kernels need it in two shapes
(see :mod:`.tiles`): ``PAIR(a, b)`` on tuples of fields, and ``FLAT(a0, ..,
b0, ..)`` as ``tl.associative_scan``/``tl.reduce`` call it; reverse scans of
non-commutative monoids also need the operands swapped.  These adapters are
one-line functions generated once per (monoid, fields, swapped) and registered
with ``linecache`` so that Triton reads their source like any other.
"""

from __future__ import annotations

import linecache
import types
import weakref

import triton
import triton.language as tl

from ...._environment import interpreter_mode
from ....caches import register_cache

_compiled: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()  # monoid -> {key: (PAIR, FLAT)}
register_cache("prefixscan.backends.triton.device.combine.functions", _compiled.clear)
_counter = 0


def _jit(fn):
    if interpreter_mode():
        # The interpreter patches triton.language only for functions that can
        # see it among their globals; the user's module need not import it.
        fn = types.FunctionType(fn.__code__, {**fn.__globals__, "_prefixscan_tl": tl}, fn.__name__,
                                fn.__defaults__, fn.__closure__)
    return triton.jit(fn)


def _adapter(user_jit, params: str, body: str):
    """``def f(<params>): return <body>`` with USER bound to the monoid's function."""
    global _counter
    _counter += 1
    name = f"_combine_adapter_{_counter}"
    filename = f"<prefixscan-combine-{_counter}>"
    source = f"def {name}({params}):\n    return {body}\n"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace = {"USER": user_jit, "_prefixscan_tl": tl, "__name__": __name__}  # a module for Triton
    exec(compile(source, filename, "exec"), namespace)  # noqa: S102 - fixed one-line adapter
    return triton.jit(namespace[name])


def _tuple(names: list[str]) -> str:
    return "(" + ", ".join(names) + ("," if len(names) == 1 else "") + ")"


def combine_functions(monoid, nfields: int, swapped: bool = False):
    """``(PAIR, FLAT)`` Triton functions for ``monoid`` over ``nfields`` fields."""
    entry = _compiled.get(monoid)
    if entry is None:
        entry = _compiled[monoid] = {"user": _jit(monoid.combine)}
    key = (nfields, swapped)
    if key not in entry:
        user = entry["user"]
        a = [f"a{i}" for i in range(nfields)]
        b = [f"b{i}" for i in range(nfields)]
        left, right = (b, a) if swapped else (a, b)
        if nfields == 1:
            call = f"USER({left[0]}, {right[0]})"
            pair = _adapter(user, "a, b", f"(USER({'b' if swapped else 'a'}[0], {'a' if swapped else 'b'}[0]),)")
        else:
            call = f"USER({_tuple(left)}, {_tuple(right)})"
            pair = _adapter(user, "a, b", "USER(b, a)" if swapped else "USER(a, b)")
        flat = _adapter(user, ", ".join(a + b), call)
        entry[key] = (pair, flat)
    return entry[key]
