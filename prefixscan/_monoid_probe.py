"""The up-front probe of a Monoid: its ``combine`` run on a few small NumPy arrays.

Before a monoid's first scan in some accumulator dtypes,
:func:`prefixscan._normalize.check_monoid` checks its identity's values as it
checks ``init`` and then calls :func:`probe`, which runs ``combine`` on host
NumPy arrays of those dtypes (whatever device the scan runs on: no device work)
and refuses, with a message naming ``op``:

* a combine that uses an array as a Python truth value (``max``, ``if``, ``and``
  on arrays), or hands arrays to a function of :mod:`math` (``math.exp``, whose
  twin is ``prefixscan.exp``): it cannot run on whole arrays nor in kernels;
* a combine that returns another number of fields than the monoid has (the
  scan would drop the extra ones, or leave a missing one unscanned);
* an identity ``e`` for which ``combine(e, v) == v == combine(v, e)`` fails for
  one of a few values ``v`` of the dtype (:func:`probe_values`; integers compared
  exactly, floats within a few units in the last place (a combine written with
  ``exp`` and ``log`` rounds), NaN equal to NaN).  Values
  for which combine raises or returns NaN are left out (a combine may be
  defined on part of the dtype only); an identity for which combine returns NaN
  for every value is refused.

Other errors of combine are left to the scan, which reports them in its context.
"""

from __future__ import annotations

import builtins
import dis
import math
from typing import Any, Sequence

import numpy as np

from .monoid import Monoid, is_truth_value_error

__all__ = ["probe", "probe_values"]

# Both signs and no zero (a combine that divides by a count is undefined there);
# few significant bits, so that every float type down to float16 holds them and
# their sums and products exactly.
_FLOATS = (1.0, -1.0, 2.0, 0.5, -0.75, 3.0, -2.5, 6.0)
_COMPLEX = (1 + 0.5j, -1 + 2j, 0.5 - 0.25j, 3 + 0j, -2.5 - 1j, 2j)
_SIGNED = (1, -1, 2, -3, 5, -7, 64)
_UNSIGNED = (1, 2, 3, 7, 64)

# What NumPy and torch say when an array of several elements meets float() / math.*.
_SCALAR_CONVERSION = ("converted to Python scalars", "only length-1 arrays", "only 0-dimensional arrays",
                      "only one element tensors")
_MATH_TWINS = {"exp": "prefixscan.exp", "log": "prefixscan.log", "log1p": "prefixscan.log1p"}
_HELPERS = ("operators and the helpers prefixscan.where, prefixscan.maximum, prefixscan.minimum, "
            "prefixscan.exp, prefixscan.log, prefixscan.log1p")


def probe_values(dtype: np.dtype) -> np.ndarray:
    """The values ``v`` of ``dtype`` the identity law is checked on."""
    dtype = np.dtype(dtype)
    kind = dtype.kind
    if kind == "b":
        values: list = [False, True]
    elif kind in "iu":
        info = np.iinfo(dtype)
        values = list(_SIGNED) + [info.min, info.max] if kind == "i" else list(_UNSIGNED) + [info.max]
    elif kind == "c":
        values = list(_COMPLEX)
    else:
        values = list(_FLOATS)
    return np.array(values, dtype=dtype)


def probe(monoid: Monoid, identity: Sequence[np.ndarray]) -> None:
    """Run ``monoid``'s combine on NumPy arrays of ``identity``'s dtypes (one 0-d
    array per field, already checked against them) and refuse what the module
    docstring lists."""
    with np.errstate(all="ignore"):
        pair = tuple(np.full(2, e) for e in identity)
        try:
            result = _call(monoid, pair, pair)
        except Exception as exc:  # noqa: BLE001 - misuse of arrays is refused, the rest left to the scan
            _refuse_array_misuse(monoid, exc)
            return
        _check_arity(monoid, result, len(identity))
        _check_identity_law(monoid, identity)


def _call(monoid: Monoid, a: tuple, b: tuple) -> Any:
    return monoid.combine(a, b) if len(a) > 1 else monoid.combine(a[0], b[0])


def _refuse_array_misuse(monoid: Monoid, exc: BaseException) -> None:
    if is_truth_value_error(exc):
        raise monoid.truth_value_error() from None
    if isinstance(exc, TypeError) and any(s in str(exc) for s in _SCALAR_CONVERSION):
        raise _scalar_function_error(monoid, exc) from None


def _scalar_function_error(monoid: Monoid, exc: BaseException) -> TypeError:
    """The error for a combine that hands arrays to ``math.exp`` and the like."""
    frame = None
    tb = exc.__traceback__
    while tb is not None:  # the innermost Python frame: where the math function was called
        frame, tb = tb.tb_frame, tb.tb_next
    names = _math_functions(frame) if frame is not None else []
    start = f"op: the combine of monoid {monoid.name!r}"
    if not names:
        return TypeError(f"{start} converts an array to a Python number ({exc}): math functions, float() and "
                         f"int() take one number, but combine runs on whole arrays and in GPU kernels; write it "
                         f"with {_HELPERS}")
    called = ", ".join(f"math.{n}" for n in names)
    twins = [f"{_MATH_TWINS[n]} for math.{n}" for n in names if n in _MATH_TWINS]
    rest = [n for n in names if n not in _MATH_TWINS]
    advice = "use " + ", ".join(twins) if twins else ""
    if rest:
        advice += ("; " if advice else "") + f"write the rest with {_HELPERS}"
    return TypeError(f"{start} calls {called}, which takes one number, not arrays; combine runs on whole arrays "
                     f"and in GPU kernels: {advice}")


def _math_functions(frame: Any) -> list[str]:
    """The functions of :mod:`math` that ``frame``'s code calls, as ``math.exp``
    (any name bound to the module) or as ``exp`` imported from it."""
    scope = {**vars(builtins), **frame.f_globals, **frame.f_locals}
    found: list[str] = []
    after_math = False
    for ins in dis.get_instructions(frame.f_code):
        if ins.opname in ("LOAD_ATTR", "LOAD_METHOD") and after_math:
            name = ins.argval
            if callable(getattr(math, name, None)) and name not in found:
                found.append(name)
        after_math = False
        if ins.opname.startswith(("LOAD_GLOBAL", "LOAD_NAME", "LOAD_DEREF", "LOAD_FAST", "LOAD_CLOSURE")):
            value = scope.get(ins.argval)
            if value is math:
                after_math = True
            elif getattr(value, "__module__", None) == "math" and callable(value) and value.__name__ not in found:
                found.append(value.__name__)
    return found


def _check_arity(monoid: Monoid, result: Any, nfields: int) -> None:
    start = f"op: the combine of monoid {monoid.name!r}"
    if nfields == 1:
        if isinstance(result, (tuple, list)):
            raise ValueError(f"{start} returned a {type(result).__name__} of {len(result)} value(s); a monoid of "
                             "one field (x one array) has combine(a, b) return one array")
        return
    if not isinstance(result, (tuple, list)):
        raise ValueError(f"{start} returned one {type(result).__name__}, but {nfields} fields were expected "
                         f"(x has {nfields} fields): combine((a0, a1, ...), (b0, b1, ...)) returns a tuple of "
                         f"{nfields} arrays, one per field")
    if len(result) != nfields:
        raise ValueError(f"{start} returned {len(result)} field(s), but {nfields} were expected (x has {nfields} "
                         f"fields, the identity {nfields} values): combine returns one array per field")


# Verdicts of one probed value: the law holds, fails, or cannot be told (combine
# raised, or returned NaN where v is a number).
_HOLDS, _FAILS, _RAISED, _NAN = 1, 0, -1, -2


def _check_identity_law(monoid: Monoid, identity: Sequence[np.ndarray]) -> None:
    nfields = len(identity)
    base = [probe_values(e.dtype) for e in identity]
    size = max(len(b) for b in base)
    # Field k starts k values further on, so that the fields of one probe differ.
    values = tuple(np.resize(np.roll(b, -k), size) for k, b in enumerate(base))
    ident = tuple(np.full(size, e) for e in identity)
    for left in (True, False):
        a, b = (ident, values) if left else (values, ident)
        verdicts = _verdicts(monoid, a, b, values, nfields)
        failed = np.flatnonzero(verdicts == _FAILS)
        if failed.size:
            j = int(failed[0])
            try:
                got = _call(monoid, tuple(f[j:j + 1] for f in a), tuple(f[j:j + 1] for f in b))
            except Exception:  # noqa: BLE001 - raised alone where it ran with the others: not shown
                got = None
            raise ValueError(_law_message(monoid, identity, [f[j] for f in values], got, left))
        if not (verdicts == _HOLDS).any() and (verdicts == _NAN).any():
            shown = _shown([e for e in identity])
            raise ValueError(f"op: {shown} is not an identity of monoid {monoid.name!r} for {_dtypes(identity)}: "
                             f"combine({'identity, v' if left else 'v, identity'}) returned NaN for every value "
                             f"v tried; an identity e leaves every value unchanged, "
                             f"combine(e, v) == v == combine(v, e)")


#: Units in the last place within which a float combine may give back v (log-sum-exp
#: written with exp and log gives 1.0000001 for 1.0 in float32).
_ULPS = 4


def _verdicts(monoid: Monoid, a: tuple, b: tuple, want: tuple, nfields: int) -> np.ndarray:
    """One verdict per position of the probe arrays: all at once, else (when
    combine raises on the whole) one position at a time."""
    size = len(want[0])
    try:
        got = _call(monoid, a, b)
    except Exception:  # noqa: BLE001 - a combine defined on part of the dtype: try each value alone
        if size == 1:
            return np.array([_RAISED])
        return np.concatenate([_verdicts(monoid, tuple(f[j:j + 1] for f in a), tuple(f[j:j + 1] for f in b),
                                         tuple(f[j:j + 1] for f in want), nfields) for j in range(size)])
    got = (got,) if nfields == 1 else tuple(got)
    verdict = np.full(size, _HOLDS)
    for g, w in zip(got, want):
        g = np.asarray(g)
        if g.dtype != w.dtype and not (g.dtype.kind in "fc" and w.dtype.kind in "iub") \
                and not (g.dtype.kind == "c" and w.dtype.kind != "c"):
            g = g.astype(w.dtype)  # as the scan stores combine's result in the accumulator
        try:
            g = np.broadcast_to(g, w.shape)
        except ValueError:
            return np.full(size, _RAISED)  # a result of another shape: the scan reports it
        same = np.asarray(g == w, dtype=bool)
        if w.dtype.kind in "fc":
            # A combine that rounds (log(exp(a) + exp(b)), a product of exponentials) gives
            # back v within a few units in the last place: an identity all the same.
            tolerance = _ULPS * np.finfo(w.dtype).eps * np.maximum(np.abs(w), np.finfo(w.dtype).tiny)
            with np.errstate(invalid="ignore", over="ignore"):
                same |= np.asarray(np.abs(g - w) <= tolerance, dtype=bool)
        nan = np.isnan(g) if g.dtype.kind in "fc" else np.zeros(size, bool)
        verdict = np.where(nan & (verdict != _FAILS), _NAN, verdict)
        verdict = np.where(~same & ~nan, _FAILS, verdict)
    return verdict


def _law_message(monoid: Monoid, identity: Sequence[np.ndarray], v: list, got: Any, left: bool) -> str:
    e_shown, v_shown = _shown(list(identity)), _shown(v)
    call = f"combine({e_shown}, {v_shown})" if left else f"combine({v_shown}, {e_shown})"
    if got is None:
        returned = f"{call} is not {v_shown}"
    else:
        got = (got,) if len(identity) == 1 else tuple(got)
        returned = f"{call} returned {_shown([np.asarray(g).reshape(-1)[0] if np.size(g) else g for g in got])}, " \
            f"not {v_shown}"
    return (f"op: {e_shown} is not an identity of monoid {monoid.name!r} for {_dtypes(identity)}: {returned}; "
            "an identity e leaves every value unchanged, "
            "combine(e, v) == v == combine(v, e): give the monoid the identity of its combine (a callable "
            "identity(dtype) may give one per dtype)")


def _shown(values: list) -> str:
    items = [repr(v.item()) if isinstance(v, (np.generic, np.ndarray)) and np.ndim(v) == 0 else repr(v)
             for v in values]
    return items[0] if len(items) == 1 else "(" + ", ".join(items) + ")"


def _dtypes(identity: Sequence[np.ndarray]) -> str:
    names = [str(e.dtype) for e in identity]
    return f"dtype {names[0]}" if len(names) == 1 else f"dtypes ({', '.join(names)})"
