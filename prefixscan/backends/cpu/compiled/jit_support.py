"""Numba building blocks shared by the compiled CPU kernels.

* Compile-time markers: :class:`Tag` values (a built-in operator, a storage
  format) and :class:`StaticInt` (an int the kernel is specialised on, e.g. the
  order of a scan) reach a kernel as distinct Numba types, so one kernel source
  compiles into one machine-code variant per operator and order, and those
  variants can live in Numba's on-disk cache (a jitted function passed as an
  argument cannot: its type is the function object itself).
* Field tuples: every kernel handles a struct of arrays as a tuple of arrays;
  ``load``, ``store`` and :func:`to_acc` are unrolled per field count
  when a kernel is typed.
* float16 storage: Numba has no float16 type on the CPU, so float16 arrays
  travel as their uint16 bits and convert through LLVM's ``half`` (F16C
  instructions where the CPU has them), rounding to nearest even.
* The helpers of :mod:`prefixscan.monoid` (``where``, ``minimum``, ``maximum``,
  ``exp``, ``log``, ``log1p``) get Numba overloads, so the ``combine`` that the
  Triton backend compiles also compiles here, unchanged.
"""

from __future__ import annotations

import math

import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import NativeValue, intrinsic, models, overload, register_model, typeof_impl, unbox
from numba.np.numpy_support import as_dtype

from .... import monoid as _monoid

__all__ = ["Tag", "StaticInt", "literal_jitable", "PLAIN", "HALF", "load1", "load2", "load3", "store1", "store2", "store3",
           "to_acc", "combine", "repeat", "advance", "alloc_states", "cut", "narrow_states", "narrow_first", "narrow_row", "nan_free",
           "fast_combine", "window_lane", "window_rows",
           "difference",
           "half_to_float", "float_to_half", "float_bits", "bits_float", "builtin_tag", "logaddexp_scalar"]


class Tag:
    """A compile-time marker; its Numba type carries its name."""

    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return f"Tag({self.name!r})"


class TagType(types.Dummy):
    def __init__(self, name: str):
        self.tag = name
        super().__init__(name=f"Tag[{name}]")


register_model(TagType)(models.OpaqueModel)


@unbox(TagType)
def _unbox_tag(typ, obj, c):
    return NativeValue(c.context.get_dummy_value())


@typeof_impl.register(Tag)
def _typeof_tag(value, context):
    return TagType(value.name)


class StaticInt(int):
    """An int that a kernel is compiled for (a Numba integer literal)."""


@typeof_impl.register(StaticInt)
def _typeof_static_int(value, context):
    return types.IntegerLiteral(int(value))


PLAIN = Tag("plain")  # stored in its own dtype
HALF = Tag("half")  # float16 stored as uint16 bits; float32 in registers
_BUILTIN_TAGS = {name: Tag("op_" + name) for name in _monoid.BUILTIN_OPS}


def builtin_tag(name: str) -> Tag:
    return _BUILTIN_TAGS[name]


def literal_jitable(fn):
    """``register_jitable`` that compiles one variant per literal argument (a constant
    ``True``/``False`` flag at the call site), so that the flag's branches fold away
    inside the loop: LLVM neither unswitches loops on a flag nor inlines big helpers."""
    @overload(fn, prefer_literal=True, strict=False)
    def _specialised(*args):
        return fn

    return fn


def _is_half(fmt) -> bool:
    return isinstance(fmt, TagType) and fmt.tag == "half"


# ---------------------------------------------------------------------------
# float16 through LLVM's half type.

@intrinsic
def half_to_float(typingctx, bits):
    def codegen(context, builder, signature, args):
        return builder.fpext(builder.bitcast(args[0], ir.HalfType()), ir.FloatType())

    return types.float32(types.uint16), codegen


@intrinsic
def float_to_half(typingctx, value):
    def codegen(context, builder, signature, args):
        return builder.bitcast(builder.fptrunc(args[0], ir.HalfType()), ir.IntType(16))

    return types.uint16(types.float32), codegen


@intrinsic
def float_bits(typingctx, value):
    """The bits of a float32 (float64) as an int32 (int64)."""
    if not isinstance(value, types.Float) or value.bitwidth not in (32, 64):
        return None
    width = value.bitwidth

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.IntType(width))

    return getattr(types, f"int{width}")(value), codegen


@intrinsic
def bits_float(typingctx, bits):
    """The float32 (float64) whose bits are the int32 (int64) ``bits``."""
    if not isinstance(bits, types.Integer) or bits.bitwidth not in (32, 64):
        return None
    kind = ir.FloatType() if bits.bitwidth == 32 else ir.DoubleType()

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], kind)

    return getattr(types, f"float{bits.bitwidth}")(bits), codegen


# ---------------------------------------------------------------------------
# Field tuples, unrolled per field count when a kernel is typed.

def _compile(source: str, name: str = "impl"):
    namespace = {"np": np, "half_to_float": half_to_float, "float_to_half": float_to_half,
                 "combine": combine, "to_acc": to_acc, "repeat": repeat, "advance": advance,
                 "load2": load2, "load3": load3, "store3": store3}
    exec(source, namespace)  # noqa: S102 - source built here from field counts only
    return namespace[name]


def _index_args(ndim: int) -> str:
    return ", ".join(f"i{k}" for k in range(ndim))


def _unsigned(ndim: int) -> str:
    # Kernels index with non-negative values only; unsigned indices spare Numba's
    # negative-index wraparound, which would keep LLVM from vectorising.
    return ", ".join(f"np.uintp(i{k})" for k in range(ndim))


def _load_impl(xs, fmts, ndim: int):
    args = _index_args(ndim)
    values = []
    for k in range(len(xs)):
        item = f"xs[{k}][{_unsigned(ndim)}]"
        values.append(f"half_to_float({item})" if _is_half(fmts[k]) else item)
    return _compile(f"def impl(xs, fmts, {args}):\n    return ({', '.join(values)},)\n")


def _store_impl(ys, fmts, ndim: int):
    args = _index_args(ndim)
    lines = []
    for k in range(len(ys)):
        item = f"value[{k}]"
        if _is_half(fmts[k]):
            item = f"float_to_half(np.float32({item}))"
        lines.append(f"    ys[{k}][{_unsigned(ndim)}] = {item}\n")
    return _compile(f"def impl(ys, fmts, value, {args}):\n{''.join(lines)}")


def load1(xs, fmts, i0):
    """The fields at ``i0`` as a tuple (float16 fields as float32)."""


def load2(xs, fmts, i0, i1):
    """The fields at ``[i0, i1]`` as a tuple."""


def load3(xs, fmts, i0, i1, i2):
    """The fields at ``[i0, i1, i2]`` as a tuple."""


def store1(ys, fmts, value, i0):
    """Write the field tuple ``value`` at ``i0`` (rounding float16 fields)."""


def store2(ys, fmts, value, i0, i1):
    """Write the field tuple ``value`` at ``[i0, i1]``."""


def store3(ys, fmts, value, i0, i1, i2):
    """Write the field tuple ``value`` at ``[i0, i1, i2]``."""


overload(load1)(lambda xs, fmts, i0: _load_impl(xs, fmts, 1))
overload(load2)(lambda xs, fmts, i0, i1: _load_impl(xs, fmts, 2))
overload(load3)(lambda xs, fmts, i0, i1, i2: _load_impl(xs, fmts, 3))
overload(store1)(lambda ys, fmts, value, i0: _store_impl(ys, fmts, 1))
overload(store2)(lambda ys, fmts, value, i0, i1: _store_impl(ys, fmts, 2))
overload(store3)(lambda ys, fmts, value, i0, i1, i2: _store_impl(ys, fmts, 3))


def _cast_source(item: str, dtype, fmt) -> str:
    name = _numpy_name(dtype)
    if _is_half(fmt):  # an accumulator of float16: round after every combine
        return f"half_to_float(float_to_half(np.float32({item})))"
    return f"np.{name}({item})"


def to_acc(value, like, fmts):
    """``value`` converted field by field to the accumulator types of ``like``."""


@overload(to_acc)
def _to_acc(value, like, fmts):
    items = [_cast_source(f"value[{k}]", as_dtype(t), fmts[k]) for k, t in enumerate(like)]
    return _compile(f"def impl(value, like, fmts):\n    return ({', '.join(items)},)\n")


def repeat(value, count):
    """A tuple of ``count`` (a literal) copies of ``value``."""


@overload(repeat)
def _repeat(value, count):
    if not isinstance(count, types.IntegerLiteral):
        return None  # Numba then retries with the literal
    q = count.literal_value
    return _compile(f"def impl(value, count):\n    return ({'value, ' * q})\n")


def _row_views_impl(arrays, lead: int):
    args = ", ".join(f"i{k}" for k in range(lead))
    heads = "".join(f"np.uintp(i{k}), " for k in range(lead))
    views = ", ".join(f"arrays[{k}][{heads}start:start + count]" for k in range(len(arrays)))
    return _compile(f"def impl(arrays, {args}, start, count):\n    return ({views},)\n")


def row_views2(arrays, i0, start, count):
    """Per field, the 1-D view ``a[i0, start:start + count]``."""


def row_views3(arrays, i0, i1, start, count):
    """Per field, the 1-D view ``a[i0, i1, start:start + count]``."""


overload(row_views2)(lambda arrays, i0, start, count: _row_views_impl(arrays, 1))
overload(row_views3)(lambda arrays, i0, i1, start, count: _row_views_impl(arrays, 2))


def cut(arrays, start, stop):
    """Per field, the view ``a[:, start:stop]`` of a 2-D array."""


@overload(cut)
def _cut(arrays, start, stop):
    views = ", ".join(f"arrays[{k}][:, start:stop]" for k in range(len(arrays)))
    return _compile(f"def impl(arrays, start, stop):\n    return ({views},)\n")


def alloc_states(like, order, chunk):
    """One ``(order, chunk)`` array per field, of the accumulator types of ``like``."""


@overload(alloc_states)
def _alloc_states(like, order, chunk):
    arrays = ", ".join(f"np.empty((order, chunk), np.{_numpy_name(as_dtype(t))})" for t in like)
    return _compile(f"def impl(like, order, chunk):\n    return ({arrays},)\n")


def _numpy_name(dtype) -> str:
    return "bool_" if dtype.name == "bool" else dtype.name


def advance(op, states, value, like, fmts, inclusive):
    """One element through the ``len(states)`` chained scans of an order-q scan
    (the carry of orders): returns the new states and the last scan's output."""


@overload(advance, prefer_literal=True)
def _advance(op, states, value, like, fmts, inclusive):
    q = len(states)
    names = ", ".join(f"s{k}" for k in range(q))
    inc = "".join(f"        s{k} = to_acc(combine(op, states[{k}], v), like, fmts)\n        v = s{k}\n"
                  for k in range(q))
    exc = "".join(f"        s{k} = to_acc(combine(op, states[{k}], v), like, fmts)\n        v = states[{k}]\n"
                  for k in range(q))
    return _compile("def impl(op, states, value, like, fmts, inclusive):\n    v = value\n"
                    f"    if inclusive:\n{inc}        return ({names},), v\n"
                    f"    else:\n{exc}        return ({names},), v\n")


def _load_source(item: str, fmt) -> str:
    return f"half_to_float({item})" if _is_half(fmt) else item


def window_lane(x, fmt, lane, t, order, checked):
    """``(x[lane, t-q], ..., x[lane, t])`` (zero before the lane's start when ``checked``)."""


def window_rows(x, fmt, o, t, c, order, checked):
    """``(x[o, t-q, c], ..., x[o, t, c])`` (zero before the first row when ``checked``)."""


def _window(x, index: str, order, checked, fmt, args: str):
    q = order.literal_value if isinstance(order, types.IntegerLiteral) else None
    if q is None or not isinstance(checked, types.BooleanLiteral):
        return None  # Numba retries with literals
    items = []
    for k in range(q, -1, -1):
        item = _load_source(index.format(k=k), fmt)
        items.append(f"({item} if t >= {k} else zero)" if checked.literal_value and k else item)
    zero = "np.float32(0)" if _is_half(fmt) else f"np.{_numpy_name(as_dtype(x.dtype))}(0)"
    return _compile(f"def impl({args}):\n    zero = {zero}\n    return ({', '.join(items)},)\n")


@overload(window_lane)
def _window_lane(x, fmt, lane, t, order, checked):
    return _window(x, "x[np.uintp(lane), np.uintp(t - {k})]", order, checked, fmt, "x, fmt, lane, t, order, checked")


@overload(window_rows)
def _window_rows(x, fmt, o, t, c, order, checked):
    return _window(x, "x[np.uintp(o), np.uintp(t - {k}), np.uintp(c)]", order, checked, fmt, "x, fmt, o, t, c, order, checked")


def difference(window, fmt):
    """The q-th difference of the last element of ``window`` (q = len(window) - 1),
    pass by pass as q passes of ``d[j] -= d[j-1]`` would round it."""


@overload(difference)
def _difference(window, fmt):
    q = len(window) - 1
    lines = [f"    w{j} = window[{j}]\n" for j in range(q + 1)]
    for k in range(1, q + 1):
        for j in range(q, k - 1, -1):
            value = f"w{j} - w{j - 1}"
            if _is_half(fmt):
                value = f"half_to_float(float_to_half(np.float32({value})))"
            lines.append(f"    w{j} = {value}\n")
    return _compile(f"def impl(window, fmt):\n{''.join(lines)}    return w{q}\n")


def narrow_states(seeds, fmts, o, like, width, order, seeded):
    """Per column of a narrow row, ``order`` copies of its seed (or of the identity)."""


@overload(narrow_states)
def _narrow_states(seeds, fmts, o, like, width, order, seeded):
    if not isinstance(width, types.IntegerLiteral) or not isinstance(order, types.IntegerLiteral):
        return None
    cols = ", ".join(f"repeat(load2(seeds, fmts[3], o, {c}) if seeded else like, order)"
                     for c in range(width.literal_value))
    return _compile(f"def impl(seeds, fmts, o, like, width, order, seeded):\n    return ({cols},)\n")


def narrow_first(xs, ys, fmts, o, r, like, width, order):
    """States of a narrow row started by its first row (an inclusive scan without seed);
    the row is written out as it is."""


@overload(narrow_first)
def _narrow_first(xs, ys, fmts, o, r, like, width, order):
    if not isinstance(width, types.IntegerLiteral) or not isinstance(order, types.IntegerLiteral):
        return None
    lines = "".join(f"    v{c} = to_acc(load3(xs, fmts[0], o, r, {c}), like, fmts[1])\n"
                    f"    store3(ys, fmts[2], v{c}, o, r, {c})\n" for c in range(width.literal_value))
    cols = ", ".join(f"repeat(v{c}, order)" for c in range(width.literal_value))
    return _compile(f"def impl(xs, ys, fmts, o, r, like, width, order):\n{lines}    return ({cols},)\n")


def narrow_row(op, xs, ys, fmts, o, r, states, like, inclusive):
    """One row of a narrow scan, every column's states kept in registers."""


@overload(narrow_row, prefer_literal=True)
def _narrow_row(op, xs, ys, fmts, o, r, states, like, inclusive):
    lines = "".join(f"    s{c}, v{c} = advance(op, states[{c}], to_acc(load3(xs, fmts[0], o, r, {c}), like, fmts[1]),"
                    f" like, fmts[1], inclusive)\n    store3(ys, fmts[2], v{c}, o, r, {c})\n"
                    for c in range(len(states)))
    cols = ", ".join(f"s{c}" for c in range(len(states)))
    return _compile(f"def impl(op, xs, ys, fmts, o, r, states, like, inclusive):\n{lines}    return ({cols},)\n")


# ---------------------------------------------------------------------------
# Operators.  Built-ins follow NumPy (NaN propagates through max/min and
# logaddexp); user monoids arrive as jitted functions on field tuples.

def _nan_max(a, b):
    r = a if a >= b else b
    return a if a != a else r


def _nan_min(a, b):
    r = a if a <= b else b
    return a if a != a else r


def logaddexp_scalar(a, b):
    """log(exp(a) + exp(b)) of two scalars: NaN propagates, equal infinities stay."""
    if a != a or b != b:
        return a + b
    hi = a if a >= b else b
    lo = b if a >= b else a
    if lo == -math.inf or hi == math.inf:
        return hi
    return hi + math.log1p(math.exp(lo - hi))


_BUILTIN_SOURCE = {
    "add": "a[0] + b[0]",
    "mul": "a[0] * b[0]",
    "and": "a[0] & b[0]",
    "or": "a[0] | b[0]",
    "xor": "a[0] ^ b[0]",
}


def combine(op, a, b):
    """``op`` applied to two field tuples; ``a`` holds the earlier elements."""


@overload(combine)
def _combine(op, a, b):
    if isinstance(op, TagType):
        name = op.tag[len("op_"):]
        if name in _BUILTIN_SOURCE:
            return _compile(f"def impl(op, a, b):\n    return ({_BUILTIN_SOURCE[name]},)\n")
        is_bool = isinstance(a[0], types.Boolean)
        if name == "max":
            if is_bool:
                return lambda op, a, b: (a[0] | b[0],)
            return lambda op, a, b: (_jit_nan_max(a[0], b[0]),)
        if name == "min":
            if is_bool:
                return lambda op, a, b: (a[0] & b[0],)
            return lambda op, a, b: (_jit_nan_min(a[0], b[0]),)
        if name == "logaddexp":
            return lambda op, a, b: (_jit_logaddexp(a[0], b[0]),)
        raise TypeError(f"unknown built-in operator {name!r}")
    if isinstance(op, types.Dispatcher):
        return lambda op, a, b: op(a, b)
    return None


def nan_free(op, v0, v1, v2, v3):
    """For float max/min: whether the group holds no NaN, so :func:`fast_combine`
    is exact for it.  Literally False for every other operator (no fast path)."""


@overload(nan_free)
def _nan_free(op, v0, v1, v2, v3):
    if (isinstance(op, TagType) and op.tag in ("op_max", "op_min")
            and isinstance(v0[0], types.Float)):
        return lambda op, v0, v1, v2, v3: ((v0[0] == v0[0]) & (v1[0] == v1[0])
                                           & (v2[0] == v2[0]) & (v3[0] == v3[0]))
    return lambda op, v0, v1, v2, v3: False


def fast_combine(op, a, b):
    """Float max/min as the bare compare-and-select of the hardware (a NaN in ``a``
    stays, a NaN in ``b`` is dropped): exact where :func:`nan_free` said so."""


@overload(fast_combine)
def _fast_combine(op, a, b):
    if isinstance(op, TagType) and op.tag == "op_max":
        return lambda op, a, b: (b[0] if b[0] > a[0] else a[0],)
    if isinstance(op, TagType) and op.tag == "op_min":
        return lambda op, a, b: (b[0] if b[0] < a[0] else a[0],)
    return lambda op, a, b: combine(op, a, b)


def _register_helpers():
    from numba import njit

    global _jit_nan_max, _jit_nan_min, _jit_logaddexp
    _jit_nan_max = njit(cache=True)(_nan_max)
    _jit_nan_min = njit(cache=True)(_nan_min)
    _jit_logaddexp = njit(cache=True)(logaddexp_scalar)

    # The helpers of prefixscan.monoid, on scalars.
    @overload(_monoid.where)
    def _where(cond, x, y):
        return lambda cond, x, y: x if cond else y

    @overload(_monoid.maximum)
    def _maximum(a, b):
        if isinstance(a, types.Boolean) and isinstance(b, types.Boolean):
            return lambda a, b: a | b
        return lambda a, b: _jit_nan_max(a, b)

    @overload(_monoid.minimum)
    def _minimum(a, b):
        if isinstance(a, types.Boolean) and isinstance(b, types.Boolean):
            return lambda a, b: a & b
        return lambda a, b: _jit_nan_min(a, b)

    @overload(_monoid.exp)
    def _exp(x):
        return lambda x: np.exp(x)

    @overload(_monoid.log)
    def _log(x):
        return lambda x: np.log(x)

    @overload(_monoid.log1p)
    def _log1p(x):
        return lambda x: np.log1p(x)


_jit_nan_max = _jit_nan_min = _jit_logaddexp = None
_register_helpers()
