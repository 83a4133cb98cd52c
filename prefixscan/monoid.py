"""Operators as monoids: one ``combine(a, b)`` for NumPy arrays and Triton kernels.

A scan needs an associative binary operator with an identity (a monoid; Blelloch
1990, "Prefix sums and their applications", section 1.1).  Here a monoid's ``combine`` is a
plain Python function written with arithmetic, comparison and bitwise operators
and the helpers of this module (:func:`where`, :func:`minimum`, :func:`maximum`,
:func:`exp`, :func:`log`, :func:`log1p`).  The same function object then runs

* on NumPy arrays (the CPU backend calls it on whole slices at once),
* inside Triton kernels, where the GPU backend compiles it with ``triton.jit``:
  each helper is marked as a Triton builtin, so the compiler hands it the
  kernel's semantic object and the helper emits ``tl.where`` and friends,
* and in Triton's interpreter, where the helpers see interpreter tensors.

A monoid over a struct of arrays combines tuples: ``combine((a1, b1), (a2, b2))``
returns a tuple of the same arity.  The left operand always holds the earlier
elements, so non-commutative operators (affine maps, matrix products) are safe.

Dtype rule of :func:`prefixscan.scan` (as Triton's ``standard.py`` makes
explicit): unless the caller asks for a ``dtype``, a scan keeps the input dtype
for its output and accumulates in that dtype, except that 16-bit floats
accumulate in float32.  ``cumsum``/``cumprod`` pass NumPy's result dtype as
``dtype``, so they accumulate float16 in float16 as NumPy does.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Sequence

import numpy as np

__all__ = [
    "Monoid",
    "BUILTIN_OPS",
    "BUILTIN_UFUNCS",
    "resolve_op",
    "where",
    "minimum",
    "maximum",
    "exp",
    "log",
    "log1p",
    "accumulator_dtype_name",
    "is_truth_value_error",
]

_TRITON_BUILTIN = "__triton_builtin__"


def _is_triton_tensor(value: Any) -> bool:
    # Interpreter mode passes triton.language tensors that wrap NumPy data.
    return type(value).__module__.startswith("triton.")


def _triton_log1p(x, _semantic=None):
    import triton.language as tl

    # triton.language has no log1p; log(1 + x) is what libdevice-free code can do.
    one_plus = x.__add__(1.0, _semantic=_semantic) if _semantic is not None else x + 1.0
    return tl.log(one_plus, _semantic=_semantic) if _semantic is not None else tl.log(one_plus)


def _dual(numpy_fn: Callable, triton_name: str, **triton_kwargs: Any) -> Callable:
    """A helper that runs NumPy's ``numpy_fn`` or Triton's ``tl.<triton_name>``."""

    def helper(*args: Any, _semantic: Any = None) -> Any:
        if _semantic is not None or any(_is_triton_tensor(a) for a in args):
            import triton.language as tl

            fn = _triton_log1p if triton_name == "log1p" else getattr(tl, triton_name)
            kwargs = dict(triton_kwargs)
            if "propagate_nan" in kwargs:
                kwargs["propagate_nan"] = getattr(tl.PropagateNan, kwargs["propagate_nan"])
            if _semantic is not None:
                kwargs["_semantic"] = _semantic
            return fn(*args, **kwargs)
        return numpy_fn(*args)

    helper.__name__ = triton_name
    helper.__qualname__ = triton_name
    # The Triton compiler calls functions carrying this mark with `_semantic=`.
    setattr(helper, _TRITON_BUILTIN, True)
    return helper


where = _dual(np.where, "where")
where.__doc__ = "``where(cond, x, y)``: elementwise select, in NumPy and in Triton kernels."
minimum = _dual(np.minimum, "minimum", propagate_nan="ALL")
minimum.__doc__ = "Elementwise minimum; NaN propagates (as NumPy's)."
maximum = _dual(np.maximum, "maximum", propagate_nan="ALL")
maximum.__doc__ = "Elementwise maximum; NaN propagates (as NumPy's)."
exp = _dual(np.exp, "exp")
exp.__doc__ = "Elementwise exponential."
log = _dual(np.log, "log")
log.__doc__ = "Elementwise natural logarithm."
log1p = _dual(np.log1p, "log1p")
log1p.__doc__ = "Elementwise log(1 + x)."


class Monoid:
    """An associative ``combine`` with an identity element.

    Parameters
    ----------
    combine:
        ``combine(a, b)`` for a single-field monoid, or
        ``combine((a0, a1, ...), (b0, b1, ...)) -> (c0, c1, ...)`` for a struct
        of arrays.  ``a`` holds the earlier elements.  Use operators and the
        helpers of :mod:`prefixscan.monoid` only, so that the function also
        compiles as a Triton function.
    identity:
        The identity: a number, a tuple of numbers (one per field), or a
        callable ``identity(dtype)`` (single field) returning one.  Before
        its first scan in an accumulator dtype it is checked as ``init`` is
        (a number that dtype holds exactly: ``0.5`` or ``300`` for uint8 are
        refused), and ``combine(identity, v) == v == combine(v, identity)``
        is checked on a few values ``v`` of that dtype (small integers and
        fractions of both signs and, for integers, the extremes; values for
        which ``combine`` returns NaN or raises are left out).  ``combine``
        must return as many fields as the identity has.  Each check runs
        once per monoid and accumulator dtype, on the host.
    name:
        Shown in messages and benchmark tables.
    commutative:
        True allows backends to combine partial results in any order.
    """

    def __init__(
        self,
        combine: Callable,
        identity: Any,
        *,
        name: str | None = None,
        commutative: bool = False,
    ) -> None:
        if not callable(combine):
            raise TypeError(f"Monoid: combine must be callable, got {type(combine).__name__}")
        self.combine = combine
        self.identity = identity
        self.name = name or getattr(combine, "__name__", "monoid")
        self.commutative = bool(commutative)
        # Built-in operators fill these in (see _builtin below).
        self.ufunc: np.ufunc | None = None
        self.dtype_kinds: str | None = None
        self.builtin = False
        # np.errstate settings for running combine on NumPy arrays: logaddexp passes
        # through -inf - -inf (then discarded) where NumPy's own ufunc warns of nothing.
        self.numpy_errstate: dict = {}
        # Accumulator dtypes -> (combine, identity, checked identity): the checks of
        # prefixscan._normalize.check_monoid, run once per dtype (again when combine
        # or identity is replaced).
        self._checked: dict = {}

    @property
    def fields(self) -> int | None:
        """Number of fields when the identity tells it, else None (inferred from the input)."""
        if self.builtin:
            return 1
        if isinstance(self.identity, tuple):
            return len(self.identity)
        if callable(self.identity):
            return None
        return 1

    def identity_values(self, dtypes: Sequence[np.dtype]) -> tuple:
        """The identity as one scalar per field, for fields of these dtypes."""
        ident = self.identity
        if callable(ident):
            ident = ident(dtypes[0]) if len(dtypes) == 1 else ident(tuple(dtypes))
        if not isinstance(ident, tuple):
            ident = (ident,)
        if len(ident) != len(dtypes):
            raise ValueError(f"op: the identity of monoid {self.name!r} gives {len(ident)} value(s) but x has "
                             f"{len(dtypes)} field(s); a struct monoid's identity has one value per field")
        return ident

    def check_fields(self, nfields: int, struct: bool) -> None:
        """Raise ValueError when x's ``nfields`` fields (``struct``: x was a tuple)
        do not match the number of values of the identity."""
        fields = self.fields
        if fields is None or fields == nfields:
            return
        if isinstance(self.identity, tuple) and struct:
            raise ValueError(f"op: the identity of monoid {self.name!r}, {self.identity!r}, has {fields} "
                             f"value(s) but x is a tuple of {nfields} arrays; give the identity one value per "
                             f"field (a tuple of {nfields})")
        if isinstance(self.identity, tuple):
            raise ValueError(f"x: op {self.name!r} combines {fields} fields (its identity is {self.identity!r}); "
                             f"pass x as a tuple of {fields} arrays")
        hint = ("" if self.builtin else
                f" (its identity {self.identity!r} is one value; a struct monoid's identity is a tuple, "
                "one value per field)")
        raise ValueError(f"x: op {self.name!r} takes a single array, got a tuple of {nfields}{hint}")

    def truth_value_error(self) -> TypeError:
        """The error for a combine that used an array as a Python truth value."""
        return TypeError(
            f"op: the combine of monoid {self.name!r} uses an array as a truth value (Python's max, min, "
            "if, and, or on arrays); combine runs on whole arrays and in Triton kernels: write it with "
            "prefixscan.maximum, prefixscan.minimum, prefixscan.where and the & | ~ operators")

    def check_dtype(self, dtype: np.dtype | str, argument: str = "x") -> None:
        """Raise TypeError when a built-in operator does not apply to this dtype."""
        if self.dtype_kinds is None:
            return
        kind = _dtype_kind(dtype)
        if kind not in self.dtype_kinds:
            allowed = {"b": "bool", "i": "signed integer", "u": "unsigned integer",
                       "f": "floating", "c": "complex"}
            names = ", ".join(allowed[k] for k in self.dtype_kinds)
            subject = f"dtype={_dtype_name(dtype)}" if argument == "dtype" else \
                f"{argument} of dtype {_dtype_name(dtype)}"
            raise TypeError(
                f"op={self.name!r} does not apply to {subject}; "
                f"it takes {names} dtypes"
                + (" (pass dtype= to accumulate bool in an integer type)"
                   if kind == "b" and self.name in ("add", "mul") else "")
            )

    def __getstate__(self) -> dict:
        # What the checks and the segmented scans keep on the monoid stays behind
        # (it holds lambdas): a copy checks itself again on its first scan.
        state = {k: v for k, v in self.__dict__.items() if k not in ("_checked", "_segmented")}
        state["_checked"] = {}
        return state

    def __repr__(self) -> str:
        return f"Monoid({self.name!r})"


def _dtype_name(dtype: Any) -> str:
    name = str(dtype)
    return name[len("torch."):] if name.startswith("torch.") else name


def is_truth_value_error(exc: BaseException) -> bool:
    """NumPy's (and torch's) error for ``bool(array)`` of more than one element."""
    return isinstance(exc, (ValueError, RuntimeError)) and "truth value of" in str(exc) and "ambiguous" in str(exc)


def _dtype_kind(dtype: Any) -> str:
    """NumPy's kind letter, also for torch dtypes (bfloat16 has no NumPy twin)."""
    name = _dtype_name(dtype)
    if name == "bfloat16":
        return "f"
    return np.dtype(name).kind


def accumulator_dtype_name(input_dtype: Any, requested: Any = None) -> str:
    """The dtype a scan accumulates in: ``requested`` if given, else the input's,
    with float16 and bfloat16 widened to float32."""
    if requested is not None:
        return _dtype_name(requested)
    name = _dtype_name(input_dtype)
    return "float32" if name in ("float16", "bfloat16") else name


# ---------------------------------------------------------------------------
# Built-in operators.  Each combine is a plain function so that Triton can read
# its source; identities depend on the dtype.

def _add(a, b):
    return a + b


def _mul(a, b):
    return a * b


def _max(a, b):
    return maximum(a, b)


def _min(a, b):
    return minimum(a, b)


def _and(a, b):
    return a & b


def _or(a, b):
    return a | b


def _xor(a, b):
    return a ^ b


def _logaddexp(a, b):
    hi = maximum(a, b)
    lo = minimum(a, b)
    # Equal operands give hi + ln 2, which also keeps two infinities of one sign
    # (inf - inf would be NaN); otherwise hi + log1p(exp(lo - hi)) is stable.  On NumPy
    # arrays the unused branch of equal infinities is NaN with an "invalid" warning
    # before the where drops it: the CPU backend runs combine under numpy_errstate.
    # ln 2 is a literal: compiled Triton reads no module globals but constexprs.
    return where(lo == hi, hi + 0.6931471805599453, hi + log1p(exp(lo - hi)))


def _lowest(dtype):
    kind = _dtype_kind(dtype)
    if kind == "b":
        return False
    if kind in "iu":
        return int(np.iinfo(_dtype_name(dtype)).min)
    return -math.inf


def _highest(dtype):
    kind = _dtype_kind(dtype)
    if kind == "b":
        return True
    if kind in "iu":
        return int(np.iinfo(_dtype_name(dtype)).max)
    return math.inf


def _all_ones(dtype):
    kind = _dtype_kind(dtype)
    if kind == "b":
        return True
    if kind == "u":
        return int(np.iinfo(_dtype_name(dtype)).max)
    return -1


def _zero(dtype):
    return False if _dtype_kind(dtype) == "b" else 0


def _additive_identity(dtype):
    """0 for integers; -0.0 for floats (and -0.0 - 0.0j for complex numbers), IEEE
    addition's identity: -0.0 + x is x for every x, -0.0 included, where 0.0 + -0.0
    is 0.0.  Seeds and pads of -0.0 keep a sum of negative zeros negative, as NumPy's
    cumsum does."""
    kind = _dtype_kind(dtype)
    if kind == "f":
        return -0.0
    if kind == "c":
        return complex(-0.0, -0.0)
    return 0


def _builtin(combine, identity, name, ufunc, kinds, commutative=True, numpy_errstate=None) -> Monoid:
    m = Monoid(combine, identity, name=name, commutative=commutative)
    m.ufunc = ufunc
    m.dtype_kinds = kinds
    m.builtin = True
    m.numpy_errstate = dict(numpy_errstate or {})
    return m


BUILTIN_OPS: dict[str, Monoid] = {
    "add": _builtin(_add, _additive_identity, "add", np.add, "iufc"),
    "mul": _builtin(_mul, 1, "mul", np.multiply, "iufc"),
    "max": _builtin(_max, _lowest, "max", np.maximum, "biuf"),
    "min": _builtin(_min, _highest, "min", np.minimum, "biuf"),
    "and": _builtin(_and, _all_ones, "and", np.bitwise_and, "biu"),
    "or": _builtin(_or, _zero, "or", np.bitwise_or, "biu"),
    "xor": _builtin(_xor, _zero, "xor", np.bitwise_xor, "biu"),
    "logaddexp": _builtin(_logaddexp, -math.inf, "logaddexp", np.logaddexp, "f",
                          numpy_errstate={"invalid": "ignore"}),
}


#: The NumPy ufuncs that name built-in operators (``op=numpy.add`` is ``op="add"``).
BUILTIN_UFUNCS: dict = {m.ufunc: m for m in BUILTIN_OPS.values()}


def _ufunc_names() -> str:
    return ", ".join(f"numpy.{u.__name__}" for u in BUILTIN_UFUNCS)


def resolve_op(op: Any) -> Monoid:
    """``op`` as a Monoid: a built-in name, the NumPy ufunc of a built-in
    (``numpy.add``, ``numpy.maximum``, ...) or a Monoid instance."""
    if isinstance(op, Monoid):
        return op
    if isinstance(op, str):
        try:
            return BUILTIN_OPS[op]
        except KeyError:
            raise ValueError(
                f"op: unknown operator {op!r}; built-ins are {', '.join(BUILTIN_OPS)}, "
                "or pass a prefixscan.Monoid"
            ) from None
    if isinstance(op, np.ufunc):
        found = BUILTIN_UFUNCS.get(op)
        if found is None:
            raise ValueError(
                f"op: numpy.{op.__name__} is not one of the ufuncs prefixscan scans with; it takes "
                f"{_ufunc_names()} (the built-in operators {', '.join(repr(n) for n in BUILTIN_OPS)}), "
                "or a prefixscan.Monoid with an associative combine and its identity")
        return found
    raise TypeError(f"op must be a built-in name, the NumPy ufunc of one, or a prefixscan.Monoid, "
                    f"got {type(op).__name__}")
