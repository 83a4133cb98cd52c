"""Bad input: every public function refuses it with an error naming the argument, before any work.

Per public function (scan, Scan.__call__, cumsum, cumprod, cummax, cummin, linear_recurrence,
delta_encode, delta_decode, segmented_scan, compact), one test triggers each error it can raise and
checks that no backend entry point ran (a spy on both backends), that the inputs are unchanged and
that a poisoned ``out`` is untouched.  Functions with ``backend=`` run on every backend present (NumPy
arrays on the CPU backend; CPU torch tensors on the Triton backend in its interpreter); the others
take host arrays, which only the CPU backend runs.  Then one test per row of the bad-input table.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any, Callable

import numpy as np
import pytest

import prefixscan as ps
from prefixscan.backends import triton as triton_backend
from prefixscan.testing import ArrayBackend, affine_data, affine_monoid, poisoned

#: A backend runs CUDA arrays here (the device machine): the no-backend case cannot arise.
CUDA_BACKEND = triton_backend.unavailable_reason("cuda") == ""

ERRORS = (ValueError, TypeError)
HOST = ArrayBackend("cpu", "cpu")  # functions without backend=: host arrays, CPU backend


def assert_names(excinfo, *names):
    """The message names one of ``names`` as a whole word."""
    msg = str(excinfo.value)
    assert any(re.search(rf"(?<![A-Za-z0-9_]){re.escape(n)}(?![A-Za-z0-9_])", msg) for n in names), (
        f"message {msg!r} names none of {names}"
    )


# ---------------------------------------------------------------------------
# Test data that each backend gets in its own array type.


@dataclass(frozen=True)
class Data:
    """NumPy data handed to the function in the backend's array type (a torch
    tensor on the Triton backend); everything else is passed as it is."""

    array: np.ndarray


class FakeJaxTracer:
    """What ``jax.jit`` hands a function: an abstract value without data."""

    shape, dtype, ndim = (6,), np.dtype("float32"), 1

    def __array__(self, dtype=None, copy=None):
        raise RuntimeError("TracerArrayConversionError: __array__() was called on a traced array")


FakeJaxTracer.__module__ = "jax._src.interpreters.partial_eval"
FakeJaxTracer.__name__ = FakeJaxTracer.__qualname__ = "DynamicJaxprTracer"


class FakeCudaArray:
    """A DLPack array on a CUDA device, where no GPU backend is available."""

    shape, dtype = (6,), np.dtype("float32")

    def __dlpack_device__(self):
        return (2, 0)


def py_if(a, b):
    if a > b:
        return a
    return b


PY_MAX = ps.Monoid(lambda a, b: max(a, b), 0, name="py_max")
PY_IF = ps.Monoid(py_if, 0, name="py_if")
ONE_VALUE_IDENTITY = ps.Monoid(lambda a, b: (a[0] + b[0], a[1] + b[1]), (0,), name="pair_sum")


def _x(dtype="int32", shape=(4, 6)):
    return (np.arange(int(np.prod(shape))).reshape(shape) % 7 + 1).astype(dtype)


def _read_only(a):
    a.flags.writeable = False
    return a


def _masked(a):
    return np.ma.array(a, mask=np.arange(a.size).reshape(a.shape) % 2 == 0)


@dataclass(frozen=True)
class Case:
    """One bad call: ``args``/``kwargs`` (Data converted per backend), the names
    the message may use, the poisoned ``out`` (shape, dtype) where the function
    takes one, the backend it only applies to ("cpu"/"triton"), the error type."""

    id: str
    names: tuple
    args: tuple
    kwargs: dict
    out: tuple | None
    only: str | None
    error: Any


def case(id, names, *args, out=None, only=None, error=ERRORS, out_object=None, **kwargs):
    """``out``: the (shape, dtype) of a poisoned out; ``out_object``: an out to pass as it is."""
    if out_object is not None:
        kwargs["out"] = out_object
    names = (names,) if isinstance(names, str) else tuple(names)
    return pytest.param(Case(id, names, args, kwargs, out, only, error), id=id)


def _convert(B, value):
    if isinstance(value, Data):
        return B.asarray(value.array)
    if isinstance(value, tuple):
        return tuple(_convert(B, v) for v in value)
    return value


def _snapshot(value):
    """NumPy copies of the arrays in ``value`` (NumPy arrays, torch tensors, tuples), else None."""
    if isinstance(value, tuple):
        return tuple(_snapshot(v) for v in value)
    if hasattr(value, "detach"):
        return value.detach().cpu().numpy().copy()
    return np.array(value, copy=True) if isinstance(value, np.ndarray) else None


def _assert_same(value, snapshot):
    if isinstance(value, tuple):
        for v, s in zip(value, snapshot):
            _assert_same(v, s)
    elif snapshot is not None:
        np.testing.assert_array_equal(_snapshot(value), snapshot)  # NaN sentinels compare equal


@pytest.fixture
def backend_calls(monkeypatch):
    """The backend entry points called during the test, in order: each backend's
    scan and the primitives' implementations on it."""
    import importlib
    import importlib.util

    entries = [("prefixscan.backends.cpu", ("run_scan", "run_scan_planned")),
               ("prefixscan.primitives.delta.cpu", ("delta_encode",)),
               ("prefixscan.primitives.compaction.cpu", ("compact",)),
               ("prefixscan.backends.triton", ("run_scan", "run_scan_planned"))]
    if importlib.util.find_spec("triton") is not None:  # the primitives' GPU modules import triton
        entries += [("prefixscan.primitives.delta.triton", ("delta_encode",)),
                    ("prefixscan.primitives.compaction.triton", ("compact",))]
    calls = []
    for module_name, names in entries:
        module = importlib.import_module(module_name)
        for name in names:
            def spy(*args, _original=getattr(module, name), _name=f"{module_name}.{name}", **kwargs):
                calls.append(_name)
                return _original(*args, **kwargs)

            monkeypatch.setattr(module, name, spy)
    return calls


def run_case(B, c: Case, call: Callable, backend_calls, takes_backend=True):
    """Call ``call(*args, **kwargs)`` for case ``c`` on backend ``B`` and check the
    error, that no backend ran, and that the inputs and ``out`` are untouched."""
    if c.only is not None and c.only != B.backend:
        pytest.skip(f"applies to the {c.only} backend")
    args = _convert(B, c.args)
    kwargs = {k: _convert(B, v) for k, v in c.kwargs.items()}
    if takes_backend and "backend" not in kwargs:
        kwargs["backend"] = B.backend
    if c.out is not None and "out" not in kwargs:
        kwargs["out"] = B.asarray(poisoned(*c.out))
    before = _snapshot((args, tuple(kwargs.values())))
    with pytest.raises(c.error) as excinfo:
        call(*args, **kwargs)
    assert_names(excinfo, *c.names)
    assert backend_calls == [], f"work started before the error: {backend_calls}"
    _assert_same((args, tuple(kwargs.values())), before)


# ---------------------------------------------------------------------------
# scan and Scan.__call__

INT24 = ((24,), "int32")
INT46 = ((4, 6), "int32")

SCAN_CASES = [
    case("op-unknown", "op", Data(_x()), "sum", out=INT24),
    case("op-type", "op", Data(_x()), 42, out=INT24),
    case("op-ufunc", "op", Data(_x()), np.subtract, out=INT24),
    case("op-dtype", ("op", "dtype"), Data(_x("float32")), "xor", out=((24,), "float32")),
    case("op-bool-add", ("op", "dtype"), Data(_x("bool")), "add", out=((24,), "bool")),
    case("axis-range", "axis", Data(_x()), axis=2, out=INT46),
    case("axis-float", "axis", Data(_x()), axis=1.0, out=INT46),
    case("order", "order", Data(_x()), order=0, out=INT24),
    case("tuple_size", "tuple_size", Data(_x()), tuple_size=0, out=INT24),
    case("tuple_size-divides", "tuple_size", Data(_x()), axis=1, tuple_size=4, out=INT46),
    case("dtype", "dtype", Data(_x()), dtype="notadtype", out=INT24),
    case("backend", "backend", Data(_x()), backend="gpu2", out=INT24),
    case("algorithm", "algorithm", Data(_x()), algorithm="bogus", out=INT24),
    case("algorithm-on-triton", "algorithm", Data(_x()), algorithm="sklansky", out=INT24, only="triton"),
    case("strategy", "strategy", Data(_x()), strategy="lookback", out=INT24),
    case("strategy-on-cpu", "strategy", Data(_x()), strategy="persistent", out=INT24, only="cpu"),
    case("strategy-deterministic", "strategy", Data(_x()), strategy="decoupled_lookback", deterministic=True,
         out=INT24),
    case("deterministic", "deterministic", Data(_x()), deterministic="yes", out=INT24),
    case("inclusive", "inclusive", Data(_x()), inclusive=None, out=INT24),
    case("reverse", "reverse", Data(_x()), reverse=1, out=INT24),
    # init: shape, then values the accumulator cannot hold exactly
    case("init-shape", "init", Data(_x()), axis=1, init=np.ones(5, np.int32), out=INT46),
    case("init-half", "init", Data(_x()), init=0.5, out=INT24),
    case("init-2.7", "init", Data(_x()), init=2.7, out=INT24),
    case("init-2**40", "init", Data(_x()), init=2**40, out=INT24),
    case("init-neg-uint8", "init", Data(_x("uint8")), init=-1, out=((24,), "uint8")),
    case("init-1e300", "init", Data(_x()), init=1e300, out=INT24),
    case("init-nan", "init", Data(_x()), init=float("nan"), out=INT24),
    case("init-inf", "init", Data(_x("int64")), init=np.inf, out=((24,), "int64")),
    case("init-str", "init", Data(_x()), init="a", out=INT24),
    case("init-complex", "init", Data(_x("float64")), init=1j, out=((24,), "float64")),
    case("init-int-for-bool", "init", Data(_x("bool")), "or", init=1, out=((24,), "bool")),
    case("init-array-value", "init", Data(_x()), axis=1, init=np.array([1, 2, 3.5, 4]), out=INT46),
    case("init-array-range", "init", Data(_x("int8")), axis=1, init=np.array([1, 2, 300, 4]),
         out=((4, 6), "int8")),
    case("init-tensor-value", "init", Data(_x()), axis=1, init=Data(np.array([1, 2, 3.5, 4])), out=INT46),
    case("init-tensor-range", "init", Data(_x("int16")), axis=1, init=Data(np.array([1, 2, 2**20, 4])),
         out=((4, 6), "int16")),
    case("init-str-array", "init", Data(_x()), axis=1, init=np.array(["a", "b", "c", "d"]), out=INT46),
    case("init-masked", "init", Data(_x()), axis=1, init=_masked(np.arange(4, dtype=np.int32)), out=INT46),
    case("init-tracer", "init", Data(_x("float32")), init=FakeJaxTracer(), out=((24,), "float32")),
    # x that is not a numeric array
    case("x-str-array", "x", np.array(["a", "b"]), out=((2,), "int32")),
    case("x-str-list", "x", ["a", "b"], out=((2,), "int32")),
    case("x-object-array", "x", np.array([1, "b"], dtype=object), out=((2,), "int32")),
    case("x-masked", "x", _masked(_x()), out=INT24),
    case("x-tracer", "x", FakeJaxTracer(), out=((6,), "float32")),
    *([] if CUDA_BACKEND else [
        case("x-cuda-no-backend", "x", FakeCudaArray(), backend=None, error=ps.BackendUnavailableError)]),
    # Monoids
    case("identity-arity", ("op", "identity"), (Data(_x("int64")), Data(_x("int64"))), ONE_VALUE_IDENTITY,
         out=None),
    case("struct-for-builtin", ("op", "x"), (Data(_x()), Data(_x())), "add"),
    case("struct-shapes", "x", (Data(_x("int64")), Data(_x("int64", (3, 8)))), affine_monoid()),
    case("combine-python-max", ("op", "maximum"), Data(_x()), PY_MAX, out=INT24),
    case("combine-python-if", ("op", "where"), Data(_x()), PY_IF, out=INT24),
    # out itself
    case("out-shape", "out", Data(_x()), out=((23,), "int32")),
    case("out-dtype", "out", Data(_x()), out=((24,), "uint32")),  # int32 casts to it only unsafely
    case("out-list", "out", Data(_x()), out_object=[0] * 24),
    case("out-masked", "out", Data(_x()), out_object=_masked(np.zeros(24, np.int32)), only="cpu"),
    case("out-read-only", "out", Data(_x()), out_object=_read_only(poisoned(24, "int32")), only="cpu"),
]

@pytest.mark.parametrize("c", SCAN_CASES)
def test_scan_refuses_before_any_work(backend, c, backend_calls):
    run_case(backend, c, ps.scan, backend_calls)


@pytest.mark.parametrize("c", SCAN_CASES)
def test_scan_object_refuses_before_any_work(backend, c, backend_calls):
    """``make_scan`` may refuse a configuration at once; a call refuses the arrays."""

    def call(x, op="add", *, init=None, out=None, **config):
        ps.make_scan(op, **config)(x, init=init, out=out)

    run_case(backend, c, call, backend_calls)


def test_combine_error_says_what_to_use(backend):
    x = backend.asarray(_x())
    for monoid in (PY_MAX, PY_IF):
        with pytest.raises(TypeError) as excinfo:
            ps.scan(x, monoid, backend=backend.backend)
        msg = str(excinfo.value)
        assert "prefixscan.maximum" in msg and "prefixscan.where" in msg and "truth value" in msg, msg


# ---------------------------------------------------------------------------
# cumsum, cumprod, cummax, cummin

RESULT = "the function's result dtype for int32 input"

CUM_CASES = [
    case("axis-range", "axis", Data(_x()), axis=2, out=((4, 6), RESULT)),
    case("axis-float", "axis", Data(_x()), axis=0.0, out=((4, 6), RESULT)),
    case("out-shape", "out", Data(_x()), out=((5,), RESULT)),
    case("out-dtype", "out", Data(_x()), axis=0, out=((4, 6), "uint32")),  # unsafe for int32 or int64
    case("dtype", "dtype", Data(_x()), dtype="notadtype", out=((24,), RESULT)),
    case("exclusive", "exclusive", Data(_x()), exclusive="yes", out=((24,), RESULT)),
    case("reverse", "reverse", Data(_x()), reverse=None, out=((24,), RESULT)),
    case("backend", "backend", Data(_x()), backend="numpy", out=((24,), RESULT)),
    case("a-str-array", "a", np.array(["a", "b"]), out=((2,), RESULT)),
    case("a-str-list", "a", ["a", "b"], out=((2,), RESULT)),
    case("a-masked", "a", _masked(_x()), out=((24,), RESULT)),
    case("a-tracer", "a", FakeJaxTracer(), out=((6,), "float32")),
]


@pytest.mark.parametrize("name", ["cumsum", "cumprod", "cummax", "cummin"])
@pytest.mark.parametrize("c", CUM_CASES)
def test_cumulative_refuses_before_any_work(backend, name, c, backend_calls):
    if c.out is not None and c.out[1] is RESULT:
        dtype = np.cumsum(np.zeros(1, np.int32)).dtype if name in ("cumsum", "cumprod") else np.int32
        c = replace(c, out=(c.out[0], dtype))
    run_case(backend, c, getattr(ps, name), backend_calls)


# ---------------------------------------------------------------------------
# linear_recurrence (host arrays: CPU backend)

_A = np.full((3, 5), 0.5)
_AI = np.ones((3, 5), np.int32)

RECURRENCE_CASES = [
    case("b-shape", ("a", "b"), _A, np.ones((3, 6))),
    case("b-dtype", ("a", "b"), _A, np.ones((3, 5), np.float32)),
    case("a-0d", "a", np.array(1.0), np.array(1.0)),
    case("axis-range", "axis", _A, _A, axis=2),
    case("axis-range-init", "axis", _A, _A, axis=-3, init=0.0),
    case("axis-float", "axis", _A, _A, axis=1.0),
    case("init-shape", "init", _A, _A, init=np.ones(4)),
    case("init-half-int", "init", _AI, _AI, init=0.5),
    case("init-range-int", "init", _AI, _AI, init=2**40),
    case("init-str", "init", _A, _A, init="a"),
    case("a-str", "a", np.array([["a"] * 5] * 3), np.array([["a"] * 5] * 3)),
    case("b-masked", "b", _A, _masked(_A)),
    case("reverse", "reverse", _A, _A, reverse="yes"),
]


@pytest.mark.parametrize("c", RECURRENCE_CASES)
def test_linear_recurrence_refuses_before_any_work(c, backend_calls):
    run_case(HOST, c, ps.linear_recurrence, backend_calls, takes_backend=False)


# ---------------------------------------------------------------------------
# delta_encode / delta_decode

_D = _x("int32", (3, 12))

DELTA_CASES = [
    case("order", "order", Data(_D), 0),
    case("order-float", "order", Data(_D), 1.5),
    case("tuple_size", "tuple_size", Data(_D), 1, 0),
    case("tuple_size-divides", "tuple_size", Data(_D), 1, 5),
    case("axis-range", "axis", Data(_D), axis=2),
    case("axis-float", "axis", Data(_D), axis=1.0),
    case("x-0d", "x", Data(np.array(3, np.int32))),
    case("x-bool", "x", Data(_x("bool", (12,)))),
    case("x-str", "x", np.array(["a", "b"])),
    case("x-masked", "x", _masked(_D)),
    case("backend", "backend", Data(_D), backend="gpu"),
]


@pytest.mark.parametrize("name", ["delta_encode", "delta_decode"])
@pytest.mark.parametrize("c", DELTA_CASES)
def test_delta_refuses_before_any_work(backend, name, c, backend_calls):
    run_case(backend, c, getattr(ps, name), backend_calls)


# ---------------------------------------------------------------------------
# segmented_scan (host arrays: CPU backend)

_S = np.arange(10, dtype=np.int64)

SEGMENTED_CASES = [
    case("flags-shape", "flags", _S, flags=np.zeros(9, bool)),
    case("flags-dtype", "flags", _S, flags=np.zeros(10, np.int8)),
    case("offsets-start", "offsets", _S, offsets=[1, 5]),
    case("offsets-order", "offsets", _S, offsets=[0, 6, 4]),
    case("offsets-end", "offsets", _S, offsets=[0, 11]),
    case("offsets-float", "offsets", _S, offsets=[0.0, 2.5]),
    case("keys-shape", "keys", _S, keys=np.zeros(9)),
    case("none-given", ("flags", "offsets", "keys"), _S),
    case("two-given", ("flags", "offsets", "keys"), _S, flags=np.zeros(10, bool), offsets=[0]),
    case("op", "op", _S, "nope", offsets=[0]),
    case("op-dtype", ("op", "dtype"), _S.astype(float), "xor", offsets=[0]),
    case("x-2d", "x", np.ones((2, 5)), offsets=[0]),
    case("x-str", "x", np.array(["a", "b"]), offsets=[0]),
    case("x-masked", "x", _masked(_S), offsets=[0]),
    case("inclusive", "inclusive", _S, offsets=[0], inclusive="no"),
    case("reverse", "reverse", _S, offsets=[0], reverse=1),
    case("identity-arity", ("op", "identity"), (_S, _S), ONE_VALUE_IDENTITY, offsets=[0]),
    case("combine-python-max", ("op", "maximum"), _S, PY_MAX, offsets=[0]),
]


@pytest.mark.parametrize("c", SEGMENTED_CASES)
def test_segmented_scan_refuses_before_any_work(c, backend_calls):
    run_case(HOST, c, ps.segmented_scan, backend_calls, takes_backend=False)


# ---------------------------------------------------------------------------
# compact (host arrays: CPU backend)

_C = np.arange(10)

COMPACT_CASES = [
    case("mask-shape", "mask", _C, np.ones(9, bool)),
    case("mask-dtype", "mask", _C, np.ones(10, np.int8)),
    case("mask-masked", "mask", _C, _masked(np.ones(10, bool))),
    case("x-str", "x", np.array(["a"] * 10), np.ones(10, bool)),
    case("x-tracer", "x", FakeJaxTracer(), np.ones(6, bool)),
]


@pytest.mark.parametrize("c", COMPACT_CASES)
def test_compact_refuses_before_any_work(c, backend_calls):
    run_case(HOST, c, ps.compact, backend_calls, takes_backend=False)


# ---------------------------------------------------------------------------
# The rows of the bad-input table, one by one.


@pytest.mark.parametrize("init,dtype", [(0.5, "int32"), (2.7, "int32"), (2**40, "int32"), (-1, "uint8"),
                                        (1e300, "int32"), (float("nan"), "int32"), (-np.inf, "int16"),
                                        (256, "uint8"), (2**63, "int64"), (-2**63 - 1, "int64")])
def test_init_not_held_exactly_is_refused(backend, init, dtype):
    x = backend.asarray(_x(dtype, (5,)))
    with pytest.raises(ValueError) as excinfo:
        ps.scan(x, init=init, backend=backend.backend)
    assert_names(excinfo, "init")


@pytest.mark.parametrize("init", ["a", b"1", 1j, np.complex64(1), np.str_("2")])
def test_init_of_the_wrong_kind_is_refused(init):
    for dtype in ("int32", "float64"):
        with pytest.raises(TypeError) as excinfo:
            ps.scan(_x(dtype, (5,)), init=init)
        assert_names(excinfo, "init")


def test_init_held_exactly_is_accepted(backend):
    x = _x("int32", (5,))
    expected = np.cumsum(x) + 7
    for init in (7, 7.0, np.int64(7), np.uint64(7), np.float32(7), np.array(7.0), np.array(7, np.int64)):
        got = ps.scan(backend.asarray(x), init=init, backend=backend.backend)
        np.testing.assert_array_equal(backend.to_numpy(got), expected)
    bounds = np.iinfo(np.int64)
    for init in (bounds.min, bounds.max, float(-2**63)):
        ps.scan(np.zeros(3, np.int64), init=init, inclusive=False)
    assert ps.scan(np.zeros(3, np.uint8), init=True)[0] == 1  # bool fits every integer type
    assert ps.scan(np.zeros(3, bool), "or", init=np.True_).all()


def test_init_for_float_accumulators_rounds(backend):
    """Any real number is accepted for a float accumulator: rounded, beyond the
    range to inf, NaN kept; integers of any size too."""
    x = backend.asarray(np.zeros(3, np.float32))
    got = backend.to_numpy(ps.scan(x, init=1e300, backend=backend.backend))
    assert np.isinf(got).all()
    got = backend.to_numpy(ps.scan(x, init=float("nan"), backend=backend.backend))
    assert np.isnan(got).all()
    got = backend.to_numpy(ps.scan(x, init=2**70, backend=backend.backend))
    np.testing.assert_array_equal(got, np.float32(2**70))
    with pytest.raises(ValueError) as excinfo:  # a Python int no float holds
        ps.scan(np.zeros(3), init=2**2000)
    assert_names(excinfo, "init")


def test_init_check_is_elementwise():
    x = _x("int32", (4, 6))
    with pytest.raises(ValueError, match="init"):
        ps.scan(x, axis=1, init=np.array([1.0, 2.0, np.nan, 4.0]))
    with pytest.raises(ValueError, match="init"):
        ps.scan(x, axis=1, init=np.array([1, 2, 2**40, 4]))
    got = ps.scan(x, axis=1, init=np.array([1.0, 2.0, 3.0, 4.0]))  # integral floats: exact
    np.testing.assert_array_equal(got, np.cumsum(x, axis=1, dtype=np.int32) + np.arange(1, 5)[:, None])
    a, b = affine_data(np.random.default_rng(0), 8, "int64")
    with pytest.raises(ValueError) as excinfo:
        ps.scan((a, b), affine_monoid(), init=(np.int64(1), 0.5))
    assert_names(excinfo, "init[1]")


def test_init_warns_nothing(recwarn):
    with pytest.raises(ValueError):
        ps.scan(_x("int32", (5,)), init=1e300)
    with pytest.raises(ValueError):
        ps.scan(_x("int32", (5,)), init=np.array(np.nan))
    ps.scan(np.zeros(3, np.float32), init=np.array(1e300))
    ps.scan(np.zeros(3, np.float32), init=1e300)
    assert not [w for w in recwarn if issubclass(w.category, RuntimeWarning)]


def test_masked_array_is_refused_with_how_to_fill_it():
    x = _masked(_x("int32", (6,)))
    for fn, name in ((ps.scan, "x"), (ps.cumsum, "a")):
        with pytest.raises(TypeError) as excinfo:
            fn(x)
        assert f"{name}.filled(0)" in str(excinfo.value)
        assert_names(excinfo, name)


def test_string_array_message_matches_the_list_message():
    with pytest.raises(TypeError) as from_list:
        ps.scan(["a", "b"])
    with pytest.raises(TypeError) as from_array:
        ps.scan(np.array(["a", "b"]))
    assert str(from_array.value) == str(from_list.value) == "x: expected a numeric or bool array, got dtype <U1"
    for fn in (ps.cumsum, ps.cumprod, ps.cummax, ps.cummin):
        with pytest.raises(TypeError) as excinfo:
            fn(np.array(["a", "b"]))
        assert str(excinfo.value) == "a: expected a numeric or bool array, got dtype <U1"


def test_identity_arity_is_named():
    x = _x("int64", (6,))
    with pytest.raises(ValueError) as excinfo:
        ps.scan((x, x), ONE_VALUE_IDENTITY)
    msg = str(excinfo.value)
    assert "identity" in msg and "(0,)" in msg and "1 value" in msg and "tuple of 2" in msg, msg
    # A scalar identity on a tuple says a struct monoid's identity is a tuple.
    with pytest.raises(ValueError, match="identity is a tuple"):
        ps.scan((x, x), ps.Monoid(lambda a, b: a + b, 0, name="plus"))


def test_jax_tracer_is_refused_clearly():
    for fn, name in ((ps.scan, "x"), (ps.cumsum, "a"), (ps.delta_encode, "x")):
        with pytest.raises(TypeError) as excinfo:
            fn(FakeJaxTracer())
        msg = str(excinfo.value)
        assert "concrete JAX arrays" in msg and "jax.jit" in msg, msg
        assert_names(excinfo, name)


# ---------------------------------------------------------------------------
# out= comes back as the caller's own object


def test_out_is_returned_itself(backend):
    x = backend.asarray(_x("int32", (4, 6)))
    out = backend.asarray(np.zeros((4, 6), np.int32))
    assert ps.scan(x, axis=1, out=out, backend=backend.backend) is out
    assert ps.cumsum(x, axis=1, dtype="int32", out=out, backend=backend.backend) is out
    assert ps.make_scan("max", axis=0, backend=backend.backend)(x, out=out) is out
    if backend.device is not None:  # a non-contiguous torch out is written through a copy
        t = backend.asarray(np.zeros((6, 4), np.int32)).T
        assert ps.scan(x, axis=1, out=t, backend=backend.backend) is t
    a, b = affine_data(np.random.default_rng(1), 8, "int64")
    out = (np.zeros(8, np.int64), np.zeros(8, np.int64))
    got = ps.scan((a, b), affine_monoid(), out=out)
    assert got[0] is out[0] and got[1] is out[1]


class FakeDeviceArray:
    """A CuPy-like CUDA array (``__cuda_array_interface__``) of another library."""

    __module__ = "cupy"

    shape, dtype = (8,), np.dtype("float32")
    __cuda_array_interface__ = {"shape": (8,), "typestr": "<f4", "data": (0, False), "version": 3}


class FakeTorchBackend:
    """A GPU backend stand-in whose results (torch views of out, in the real one) are not out."""

    NAME, DEVICES, NATIVE_LIBRARY, TAKES_ALGORITHM, TAKES_STRATEGY = "triton", ("cuda",), "torch", False, True

    def run_scan(self, request):
        return [object() for _ in request.fields]


def test_device_out_is_returned_itself(monkeypatch):
    """ps.scan(cupy_x, out=cupy_out) returns cupy_out, not the torch view the GPU
    backend wrote through (checked without a GPU: a stand-in backend)."""
    from prefixscan import dispatch

    monkeypatch.setattr(dispatch, "select_backend", lambda name, device: FakeTorchBackend())
    x, out = FakeDeviceArray(), FakeDeviceArray()
    assert ps.scan(x, out=out) is out
    assert ps.make_scan("add")(x, out=out) is out


# ---------------------------------------------------------------------------
# The rules in the docstrings: init's values; which functions accumulate float16 wider


def test_docstrings_state_the_rules():
    doc = " ".join(ps.scan.__doc__.split())
    assert "accumulator dtype" in doc and "cannot hold exactly is refused" in doc and "any real number" in doc


def test_float16_accumulators_are_documented_and_true():
    x = np.ones(3000, np.float16)
    assert ps.scan(x)[-1] == 3000  # float32 accumulator, rounded once
    assert ps.cumsum(x)[-1] == np.cumsum(x)[-1] == 2048  # NumPy's rule: float16 accumulator
    for fn in (ps.cumsum, ps.cumprod):
        doc = " ".join(fn.__doc__.split())
        assert "float16 in float16" in doc and "as NumPy does" in doc, fn.__name__
    doc = " ".join(ps.scan.__doc__.split())
    assert "float16 and bfloat16 accumulate in float32" in doc
    assert "cumprod` follow NumPy's rule" in doc


def test_the_spy_sees_work(backend, backend_calls):
    """The checks above are meaningful: a valid call reaches the backend spy."""
    ps.scan(backend.asarray(_x()), backend=backend.backend)
    ps.delta_encode(backend.asarray(_x()), backend=backend.backend)
    assert backend_calls[0].endswith("run_scan") or backend_calls[0].endswith("run_scan_planned")
    assert backend_calls[-1].endswith("delta_encode")


def test_the_masked_array_check_does_not_import_numpy_ma():
    """NumPy imports ``numpy.ma`` lazily: a process that never made a masked array must not
    pay for importing it (about 20 ms of its first scan); one that did still gets them
    refused (the ``-masked`` cases above)."""
    import subprocess
    import sys

    from tests.repo_scripts import ROOT

    code = ("import sys, numpy as np, prefixscan as ps; ps.cumsum(np.arange(5)); ps.scan(np.arange(5.0), 'add'); "
            "print('numpy.ma' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
