"""A monoid's Python ``combine`` compiled as Triton functions.

Triton compiles a function from its source, so the monoid's own ``combine`` is
wrapped with ``triton.jit`` unchanged.  The kernels need it in two shapes
(see :mod:`.tiles`): ``PAIR(a, b)`` on tuples of fields, and ``FLAT(a0, ..,
b0, ..)`` as ``tl.associative_scan``/``tl.reduce`` call it; reverse scans of
non-commutative monoids also need the operands swapped.  These adapters are
one-line functions generated once per (monoid, fields, swapped) and registered
with ``linecache`` so that Triton reads their source like any other.

A generated function is named after its content (:func:`generated_jit`): its
source and what each function it calls computes.  Triton keys its on-disk cache
by the kernel's source and the ``str`` of each constexpr, and a tuple of
functions (``MONOID``) prints as their names; names from a per-process counter
made two processes that generated their adapters in another order share one
cache entry, so that a kernel compiled for one monoid ran for another (a sum
launched the product's binary, found on the GPU).
"""

from __future__ import annotations

import hashlib
import inspect
import linecache
import types
import weakref

import triton
import triton.language as tl

from ...._environment import interpreter_mode
from ....caches import register_cache

_compiled: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()  # monoid -> {key: (PAIR, FLAT)}
register_cache("prefixscan.backends.triton.device.combine.functions", _compiled.clear)


def _jit(fn):
    if interpreter_mode():
        # The interpreter patches triton.language only for functions that can
        # see it among their globals; the user's module need not import it.
        fn = types.FunctionType(fn.__code__, {**fn.__globals__, "_prefixscan_tl": tl}, fn.__name__,
                                fn.__defaults__, fn.__closure__)
    return triton.jit(fn)


def content_key(function) -> str:
    """What a Triton function computes, as text: its module, name and Triton's
    ``cache_key`` (a hash of its source, of the functions it calls and of its constexpr
    globals), and the other globals it reads (only a closure's captured values, with
    ``TRITON_ALLOW_NON_CONSTEXPR_GLOBALS=1``: two closures of one factory differ there)."""
    fn = getattr(function, "fn", function)
    key = getattr(function, "cache_key", None)
    if key is None:  # the interpreter's functions (no binary cache to share): their source
        key = hashlib.sha256(inspect.getsource(fn).encode()).hexdigest()
    # Triton's entries: {(name, id of the globals dict): (value, the globals dict)}
    used = getattr(function, "used_global_vals", None) or {}
    others = sorted((str(k[0] if isinstance(k, tuple) else k), repr(v[0] if isinstance(v, tuple) else v))
                    for k, v in used.items())
    return f"{fn.__module__}.{fn.__qualname__}:{key}" + (f":{others}" if others else "")


def generated_jit(kind: str, params: str, body: str, calls: dict):
    """``def _<kind>_<digest>(<params>):`` with ``body`` (indented lines), compiled with
    ``triton.jit``; ``calls`` maps the names the body calls to Triton functions.  The
    digest hashes the source and the :func:`content_key` of every function called, so
    that equal names mean equal code in every process (see the module docstring)."""
    text = f"{kind}({params}):\n{body}\n" + "\n".join(f"{k}={content_key(v)}" for k, v in sorted(calls.items()))
    digest = hashlib.sha256(text.encode()).hexdigest()[:24]
    name = f"_{kind}_{digest}"
    filename = f"<prefixscan-{kind}-{digest}>"
    source = f"def {name}({params}):\n{body}\n"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace = {**calls, "tl": tl, "_prefixscan_tl": tl, "__name__": __name__}  # a module for Triton
    exec(compile(source, filename, "exec"), namespace)  # noqa: S102 - fixed generated adapter
    return triton.jit(namespace[name])


def _adapter(user_jit, params: str, body: str):
    """``def f(<params>): return <body>`` with USER bound to the monoid's function."""
    return generated_jit("combine", params, f"    return {body}", {"USER": user_jit})


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
