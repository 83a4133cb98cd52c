"""A Monoid is checked before its first scan, once per accumulator dtype, on the host.

Its identity as ``init`` is checked (a number the accumulator holds exactly), then
the identity law ``combine(e, v) == v == combine(v, e)`` on a few values of the
dtype, and the number of fields ``combine`` returns; a combine that hands arrays to
``math`` functions is refused with the name of the prefixscan twin.  Refusals name
``op``, come before any backend runs and leave a poisoned ``out`` untouched, on
every backend (the Triton backend in the interpreter here).  Valid monoids,
built-in operators on every dtype they take included, pass.  The NumPy ufuncs of
the built-in operators name those operators.
"""

from __future__ import annotations

import math
import warnings
from math import log as log_from_math

import numpy as np
import pytest

import prefixscan as ps
from prefixscan import _normalize
from prefixscan.primitives.recurrence.affine import AFFINE, AFFINE_BACKWARD, COMPLEX_AFFINE
from prefixscan.testing import (
    add_pair_monoid,
    affine_data,
    affine_monoid,
    assert_scan_equal,
    first_nonzero_monoid,
    matmul2_monoid,
    poisoned,
    random_array,
    reference_scan,
    reference_segmented_scan,
    tolerance_for,
)

ERRORS = (ValueError, TypeError)


@pytest.fixture
def backend_calls(monkeypatch):
    """The backend entry points that ran during the test: each backend's scan and
    segmented scan."""
    import importlib
    import importlib.util

    entries = [("prefixscan.backends.cpu", ("run_scan", "run_scan_planned")),
               ("prefixscan.primitives.segmented.cpu", ("segmented_scan",)),
               ("prefixscan.backends.triton", ("run_scan", "run_scan_planned"))]
    if importlib.util.find_spec("triton") is not None:  # the primitives' GPU modules import triton
        entries.append(("prefixscan.primitives.segmented.triton", ("segmented_scan",)))
    calls = []
    for module_name, names in entries:
        module = importlib.import_module(module_name)
        for name in names:
            def spy(*args, _original=getattr(module, name), _name=f"{module_name}.{name}", **kwargs):
                calls.append(_name)
                return _original(*args, **kwargs)

            monkeypatch.setattr(module, name, spy)
    return calls


def refused(backend, backend_calls, x, op, error=ERRORS, **kwargs):
    """Scan ``x`` (NumPy data, put on the backend) with ``op`` and a poisoned out:
    the error, raised before any backend ran, naming ``op``; out untouched."""
    fields = x if isinstance(x, tuple) else (x,)
    outs = tuple(backend.asarray(poisoned(f.shape, f.dtype)) for f in fields)  # 1-D x: the result's shape
    before = [backend.to_numpy(o).copy() for o in outs]
    with pytest.raises(error) as excinfo:
        ps.scan(backend.asarray(x), op, out=outs if isinstance(x, tuple) else outs[0], backend=backend.backend,
                **kwargs)
    assert backend_calls == [], f"work started before the error: {backend_calls}"
    for o, b in zip(outs, before):
        np.testing.assert_array_equal(backend.to_numpy(o), b)
    msg = str(excinfo.value)
    assert msg.startswith("op") or "op=" in msg, msg
    return msg


# ---------------------------------------------------------------------------
# combine returns as many fields as the monoid has


def too_few(a, b):
    a0, a1 = a
    b0, b1 = b
    return (a0 + b0,)


def too_many(a, b):
    a0, a1 = a
    b0, b1 = b
    return a0 + b0, a1 + b1, a0


def not_a_tuple(a, b):
    return a[0] + b[0]


def tuple_of_one(a, b):
    return (a + b,)


@pytest.mark.parametrize("combine,said", [(too_few, "returned 1 field(s), but 2 were expected"),
                                          (too_many, "returned 3 field(s), but 2 were expected"),
                                          (not_a_tuple, "returned one ndarray, but 2 fields were expected")],
                         ids=lambda v: getattr(v, "__name__", ""))
@pytest.mark.parametrize("n", [10, 8193])  # the NumPy path and the compiled one
def test_combine_returning_another_number_of_fields_is_refused(backend, backend_calls, rng, combine, said, n):
    x = (random_array(rng, "float32", n, "add"), random_array(rng, "float32", n, "add"))
    msg = refused(backend, backend_calls, x, ps.Monoid(combine, (0, 0)))
    assert said in msg and repr(combine.__name__) in msg


def test_combine_of_one_field_returning_a_tuple_is_refused(backend, backend_calls, rng):
    msg = refused(backend, backend_calls, random_array(rng, "int32", 10, "add"), ps.Monoid(tuple_of_one, 0))
    assert "tuple of 1" in msg and "one array" in msg


# ---------------------------------------------------------------------------
# The identity: a number the accumulator holds, for which the identity law holds


def add(a, b):
    return a + b


def mul(a, b):
    return a * b


def largest(a, b):
    return ps.maximum(a, b)


BAD_IDENTITIES = [
    # (combine, identity, dtype, error, words of the message)
    (add, None, "float64", TypeError, "must be a number"),
    (add, None, "int32", TypeError, "must be a number"),
    (add, "a", "float32", TypeError, "must be a number"),
    (add, 0.5, "int64", ValueError, "0.5 is not a finite integer"),
    (add, 300, "uint8", ValueError, "300 is out of the range"),
    (add, -1, "uint16", ValueError, "-1 is out of the range"),
    (add, 2**70, "int64", ValueError, "out of the range"),
    (add, 1j, "float64", TypeError, "complex"),
    (add, 1, "int32", ValueError, "1 is not an identity"),
    (add, 1, "float32", ValueError, "1.0 is not an identity"),
    (add, math.inf, "float64", ValueError, "inf is not an identity"),
    (add, math.nan, "float64", ValueError, "returned NaN for every value"),
    (mul, 0, "int16", ValueError, "0 is not an identity"),
    (mul, 0.0, "complex64", ValueError, "is not an identity"),
    (largest, 0, "int32", ValueError, "0 is not an identity"),  # not below the negative values
    (largest, -128, "int16", ValueError, "-128 is not an identity"),  # int8's lowest, not int16's
    (add, lambda dtype: 1, "int64", ValueError, "1 is not an identity"),
    (add, lambda dtype: np.iinfo(dtype).max, "float32", ValueError, "raised ValueError"),
]


@pytest.mark.parametrize("combine,identity,dtype,error,said", BAD_IDENTITIES,
                         ids=[f"{c.__name__}-{'callable' if callable(i) else repr(i)}-{d}-{k}"
                              for k, (c, i, d, _, _) in enumerate(BAD_IDENTITIES)])
def test_a_wrong_identity_is_refused(backend, backend_calls, rng, combine, identity, dtype, error, said):
    x = random_array(rng, dtype, 12, "add")
    msg = refused(backend, backend_calls, x, ps.Monoid(combine, identity, name="mine"), error=error, inclusive=False)
    assert said in msg and "'mine'" in msg, msg


def test_the_message_shows_the_failing_law(rng):
    with pytest.raises(ValueError) as excinfo:
        ps.scan(random_array(rng, "int32", 12, "add"), ps.Monoid(add, 1, name="plus"))
    msg = str(excinfo.value)
    assert msg.startswith("op: 1 is not an identity of monoid 'plus' for dtype int32: combine(1, 1) returned 2, "
                          "not 1;"), msg
    assert "combine(e, v) == v == combine(v, e)" in msg


def left_identity_only(f, g):  # (1, 0) on the left leaves (a, b) alone; on the right it doubles b
    a1, b1 = f
    a2, b2 = g
    return a1 * a2, 2 * b1 + b2


@pytest.mark.parametrize("identity", [(0, 0), (1, 1), (0, 1)])
def test_a_wrong_struct_identity_is_refused_field_by_field(backend, backend_calls, rng, identity):
    a, b = affine_data(rng, 12, "float64")
    msg = refused(backend, backend_calls, (a, b), ps.Monoid(AFFINE.combine, identity, name="affine"))
    shown = tuple(float(v) for v in identity)  # as the accumulator dtype holds it
    assert f"op: {shown!r} is not an identity of monoid 'affine' for dtypes (float64, float64)" in msg, msg


def test_a_one_sided_identity_is_refused(rng):
    a, b = affine_data(rng, 12, "int64")
    with pytest.raises(ValueError, match=r"combine\(\(.*\), \(1, 0\)\) returned"):
        ps.scan((a, b), ps.Monoid(left_identity_only, (1, 0), name="left_only"))


# Monoids whose identities are right, on every dtype they apply to.

INTS = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]
FLOATS = ["float16", "float32", "float64"]
KIND_DTYPES = {"b": ["bool"], "i": INTS[:4], "u": INTS[4:], "f": FLOATS, "c": ["complex64", "complex128"]}


def _builtin_cases():
    for name, monoid in ps.BUILTIN_OPS.items():
        for kind in monoid.dtype_kinds:
            for dtype in KIND_DTYPES[kind]:
                yield name, dtype


@pytest.mark.parametrize("name,dtype", list(_builtin_cases()))
def test_builtin_operators_pass_on_every_dtype_they_take(name, dtype, rng):
    # A fresh Monoid of the built-in's combine and identity: checked here, not earlier in the process.
    builtin = ps.BUILTIN_OPS[name]
    fresh = ps.Monoid(builtin.combine, builtin.identity, name=name)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the probe's overflow and invalid values stay quiet
        identity = _normalize.check_monoid(fresh, (dtype,))
    assert identity[0].dtype == np.dtype(dtype)
    # The built-in itself, exclusive (the identity comes first), accumulating in the dtype.
    x = random_array(rng, dtype, 40, name)
    got = ps.scan(x, name, inclusive=False, dtype=dtype)
    assert_scan_equal(got, reference_scan(x, name, inclusive=False, dtype=dtype),
                      **tolerance_for(x, name, inclusive=False, dtype=dtype))
    assert ps.scan(x, name, inclusive=False, dtype=dtype)[0] == identity[0]


def positive_mul(a, b):
    """A product defined on positive numbers only: NaN (0 * log) for negative ones."""
    return a * b + 0.0 * ps.log(a) * ps.log(b)


def mean_count(p, q):
    """(count, mean) pairs merged: divides by the count (0 / 0 for two identities)."""
    n1, m1 = p
    n2, m2 = q
    n = n1 + n2
    return n, (n1 * m1 + n2 * m2) / n


def exploding_add(a, b):
    c = a + b
    if (c > 50).any():
        raise ValueError("combine: boom")
    return c


def lowest(dtype):
    return np.iinfo(dtype).min if np.dtype(dtype).kind in "iu" else -np.inf


GOOD = [
    (AFFINE, INTS + FLOATS + ["complex128"]),
    (AFFINE_BACKWARD, ["int32", "float64"]),
    (affine_monoid(), ["int64", "uint16", "float32"]),
    (COMPLEX_AFFINE, ["float32", "float64"]),
    (matmul2_monoid(), INTS + FLOATS),
    (add_pair_monoid(), ["int32", "float64"]),
    (first_nonzero_monoid(), INTS + FLOATS),
    (ps.Monoid(positive_mul, 1.0, name="positive_mul"), FLOATS),
    (ps.Monoid(mean_count, (0, 0), name="mean_count"), FLOATS),
    (ps.Monoid(exploding_add, 0, name="exploding_add"), ["int64"]),
    (ps.Monoid(largest, lowest, name="callable_lowest"), INTS + FLOATS),
]


@pytest.mark.parametrize("monoid,dtypes", GOOD, ids=[m.name for m, _ in GOOD])
def test_valid_monoids_pass(monoid, dtypes):
    fresh = ps.Monoid(monoid.combine, monoid.identity, name=monoid.name)
    nfields = len(monoid.identity) if isinstance(monoid.identity, tuple) else 1
    for dtype in dtypes:
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # mean_count's 0 / 0 and the like stay quiet
            identity = _normalize.check_monoid(fresh, (dtype,) * nfields)
        assert [e.dtype for e in identity] == [np.dtype(dtype)] * nfields


def test_the_lifted_monoid_of_segmented_scans_passes(rng):
    x = random_array(rng, "int32", 30, "add")
    offsets = np.array([0, 4, 4, 17])
    for op in ("add", "max", AFFINE):
        data = affine_data(rng, 30, "int32") if op is AFFINE else x
        for reverse in (False, True):
            got = ps.segmented_scan(data, op, offsets=offsets, reverse=reverse, inclusive=False)
            want = reference_segmented_scan(data, op, offsets=offsets, reverse=reverse, inclusive=False)
            for g, w in zip(got if op is AFFINE else (got,), want if op is AFFINE else (want,)):
                assert_scan_equal(g, w)


def test_a_monoid_defined_on_positive_numbers_scans_them(backend, rng):
    x = rng.uniform(0.5, 2.0, 37)
    m = ps.Monoid(positive_mul, 1.0, name="positive_mul")
    got = backend.to_numpy(ps.scan(backend.asarray(x), m, inclusive=False, backend=backend.backend))
    np.testing.assert_allclose(got, np.concatenate([[1.0], np.cumprod(x)[:-1]]), rtol=1e-12)


# Once per monoid and accumulator dtypes

@pytest.fixture
def probes(monkeypatch):
    """The names of the monoids probed during the test, in order."""
    seen = []
    original = _normalize.probe

    def spy(monoid, identity):
        seen.append(monoid.name)
        return original(monoid, identity)

    monkeypatch.setattr(_normalize, "probe", spy)
    return seen


def test_the_checks_run_once_per_monoid_and_dtype(probes):
    m = ps.Monoid(add, 0, name="plus")
    for n in (3, 4, 5):  # lists: no plan of the Scan is reused, every call checks its arrays
        ps.scan(list(range(n)), m)
        ps.make_scan(m)(list(range(n)))
    assert probes == ["plus"]
    ps.scan(np.ones(3, np.float32), m)
    ps.scan(np.ones(4, np.float32), m, inclusive=False)
    assert probes == ["plus", "plus"]
    m.identity = 1  # replaced: checked again (by a call that plans), and refused
    with pytest.raises(ValueError, match="not an identity"):
        ps.scan(np.ones(5, np.float32), m)
    assert probes == ["plus"] * 3


def test_segmented_scans_check_once(probes):
    m = ps.Monoid(add, 0, name="plus")
    for n in (6, 7, 8):
        for reverse in (False, True):
            ps.segmented_scan(np.arange(n), m, offsets=[0, 2], reverse=reverse)
    assert probes.count("plus") == 1
    assert probes.count("segmented_plus") == 2  # one lifted monoid per direction, each checked once


def test_a_failing_combine_is_left_to_the_scan():
    """The probe does not refuse a combine that raises on some of its values: it
    scans data it is defined on, and the scan reports the error on other data."""
    m = ps.Monoid(exploding_add, 0, name="exploding_add")
    np.testing.assert_array_equal(ps.scan(np.ones(5, np.int64), m), np.arange(1, 6))
    with pytest.raises(ValueError, match="boom"):
        ps.scan(np.ones(100, np.int64), m)


# ---------------------------------------------------------------------------
# math functions in a combine


def math_exp(a, b):
    return math.exp(a) * 0 + a + b


def math_log(a, b):
    return a + b + 0 * math.log(a)


def imported_log(a, b):
    return a + b + 0 * log_from_math(b)


def math_log1p(a, b):
    return a + b + 0 * math.log1p(a)


def math_sqrt(a, b):
    return a + b + 0 * math.sqrt(a * a)


def python_float(a, b):
    return a + b + 0 * float(a)


@pytest.mark.parametrize("combine,said", [
    (math_exp, "calls math.exp, which takes one number, not arrays; combine runs on whole arrays and in GPU "
               "kernels: use prefixscan.exp for math.exp"),
    (math_log, "calls math.log, which takes one number, not arrays; combine runs on whole arrays and in GPU "
               "kernels: use prefixscan.log for math.log"),
    (imported_log, "calls math.log, which takes one number"),
    (math_log1p, "use prefixscan.log1p for math.log1p"),
    (math_sqrt, "calls math.sqrt, which takes one number, not arrays; combine runs on whole arrays and in GPU "
                "kernels: write the rest with operators and the helpers prefixscan.where"),
    (python_float, "converts an array to a Python number"),
], ids=lambda v: getattr(v, "__name__", ""))
@pytest.mark.parametrize("n", [10, 8193])  # Numba compiles math.exp: the compiled path must refuse it too
def test_math_functions_in_combine_name_the_prefixscan_twin(backend, backend_calls, rng, combine, said, n):
    msg = refused(backend, backend_calls, rng.uniform(1, 2, n), ps.Monoid(combine, 0.0), error=TypeError)
    assert msg.startswith(f"op: the combine of monoid {combine.__name__!r} ") and said in msg, msg


# ---------------------------------------------------------------------------
# Messages that name the argument: dtype, init of a struct monoid, dask segments


@pytest.mark.parametrize("dtype", ["U3", "S4", object, "M8[ns]", "V8", np.dtype([("a", "i4")])],
                         ids=["U3", "S4", "object", "datetime64", "void", "structured"])
def test_a_dtype_that_is_not_numeric_is_named(backend, backend_calls, dtype):
    x = backend.asarray(np.arange(6, dtype=np.int32))
    for call in (lambda: ps.scan(x, dtype=dtype, backend=backend.backend),
                 lambda: ps.make_scan(dtype=dtype, backend=backend.backend)(x),
                 lambda: ps.cumsum(x, dtype=dtype)):
        with pytest.raises(TypeError) as excinfo:
            call()
        msg = str(excinfo.value)
        assert msg.startswith("dtype: ") and "is not a numeric dtype" in msg, msg
    assert backend_calls == []


def test_an_operator_refusing_the_requested_dtype_says_dtype_once():
    with pytest.raises(TypeError) as excinfo:
        ps.scan(np.arange(5), "xor", dtype=np.float64)
    msg = str(excinfo.value)
    assert "op='xor' does not apply to dtype=float64" in msg and "dtype of dtype" not in msg, msg


@pytest.mark.parametrize("init,error,said", [(1.0, TypeError, "got float 1.0"),
                                             ([1, 0], TypeError, "got list [1, 0]"),
                                             (np.ones(2), TypeError, "got ndarray of shape (2,)"),
                                             ((1, 0, 0), ValueError, "got a tuple of 3")])
def test_init_of_the_wrong_structure_for_a_struct_monoid_is_named(backend, backend_calls, rng, init, error, said):
    a, b = (backend.asarray(f) for f in affine_data(rng, 10, "float64"))
    scan = ps.make_scan(AFFINE, backend=backend.backend)
    scan((a, b))  # a plan for this signature: the seed is checked on the planned path too
    backend_calls.clear()
    for call in (lambda: ps.scan((a, b), AFFINE, init=init, backend=backend.backend),
                 lambda: scan((a, b), init=init),
                 lambda: ps.segmented_scan((a, b), AFFINE, offsets=[0, 4], init=init, backend=backend.backend)):
        with pytest.raises(error) as excinfo:
            call()
        msg = str(excinfo.value)
        assert msg.startswith("init: expected a tuple of 2 seeds for a struct monoid") and said in msg, msg
    assert backend_calls == []


def test_a_builtin_operator_refuses_a_tuple_by_name(rng):
    x = random_array(rng, "int32", 10, "max")
    for op in ("max", "min", "and", "or", "xor", "logaddexp"):
        with pytest.raises(ValueError, match=rf"^x: op '{op}' takes a single array, got a tuple of 2$"):
            ps.scan((x, x), op)


@pytest.mark.parametrize("argument", ["flags", "keys"])
def test_dask_segments_message_says_why_they_are_needed(rng, argument):
    da = pytest.importorskip("dask.array")
    x = da.from_array(random_array(rng, "int32", 40, "add"), chunks=10)
    given = np.zeros(40, bool) if argument == "flags" else np.repeat(np.arange(4), 10)
    with pytest.raises(TypeError) as excinfo:
        ps.segmented_scan(x, **{argument: da.from_array(given, chunks=10)})
    msg = str(excinfo.value)
    assert msg.startswith(f"{argument}: pass a NumPy array, not a dask array") and "small" not in msg, msg
    assert "one per element of x" in msg and f"{argument}.compute()" in msg and "offsets=" in msg, msg


# ---------------------------------------------------------------------------
# The NumPy ufuncs of the built-in operators

UFUNCS = [(np.add, "add", "int32"), (np.multiply, "mul", "float64"), (np.maximum, "max", "float32"),
          (np.minimum, "min", "int16"), (np.bitwise_and, "and", "uint8"), (np.bitwise_or, "or", "bool"),
          (np.bitwise_xor, "xor", "int64"), (np.logaddexp, "logaddexp", "float64")]


@pytest.mark.parametrize("ufunc,name,dtype", UFUNCS, ids=[n for _, n, _ in UFUNCS])
def test_the_ufunc_of_a_builtin_operator_is_that_operator(backend, rng, ufunc, name, dtype):
    assert ps.monoid.resolve_op(ufunc) is ps.BUILTIN_OPS[name]
    x = random_array(rng, dtype, (3, 17), name)
    for kwargs in (dict(), dict(axis=1, inclusive=False, reverse=True)):
        got = backend.to_numpy(ps.scan(backend.asarray(x), ufunc, backend=backend.backend, **kwargs))
        assert_scan_equal(got, backend.to_numpy(ps.scan(backend.asarray(x), name, backend=backend.backend,
                                                        **kwargs)))
        assert_scan_equal(got, reference_scan(x, name, **kwargs), **tolerance_for(x, name, **kwargs))
    assert repr(ps.make_scan(ufunc)).startswith(f"Scan(op={name!r}")
    flat = x.reshape(-1)
    got = backend.to_numpy(ps.segmented_scan(backend.asarray(flat), ufunc, offsets=[0, 5, 40],
                                             backend=backend.backend))
    assert_scan_equal(got, reference_segmented_scan(flat, name, offsets=[0, 5, 40]), **tolerance_for(flat, name))


@pytest.mark.parametrize("ufunc", [np.subtract, np.divide, np.fmax, np.logical_and, np.power, np.hypot])
def test_other_ufuncs_are_refused_with_the_list(backend, backend_calls, ufunc):
    msg = refused(backend, backend_calls, np.arange(1, 7, dtype=np.float64), ufunc, error=ValueError)
    assert msg.startswith(f"op: numpy.{ufunc.__name__} is not one of the ufuncs"), msg
    for accepted in ("numpy.add", "numpy.multiply", "numpy.maximum", "numpy.minimum", "numpy.bitwise_and",
                     "numpy.bitwise_or", "numpy.bitwise_xor", "numpy.logaddexp"):
        assert accepted in msg, msg
    with pytest.raises(ValueError, match="op: numpy"):
        ps.make_scan(ufunc)


def test_the_docs_name_the_ufuncs():
    doc = " ".join(ps.scan.__doc__.split())
    assert "numpy.add" in doc and "numpy.logaddexp" in doc
