"""Differential fuzzing: every public scan primitive on every backend present,
against the plain-loop reference of :mod:`prefixscan.testing`.

Hypothesis draws the structure of a case -- shape (0- and 1-sized axes
included), memory layout (C, Fortran, strided views, negative strides,
transposed views), dtype, operator (built-ins, and the affine and 2x2-matrix
monoids on random data), axis, inclusive/reverse, init, order, tuple size,
output dtype, ``out=``, the CPU scan network or GPU meta-strategy -- and a seed
for the data, which :func:`prefixscan.testing.random_array` and friends make
(full-range integers that wrap; floats whose rounding the tolerance rule
covers).  Results must match the reference bitwise for integers and bools and
within :func:`prefixscan.testing.assert_scan_equal`'s rule for floats, and the
inputs must come back unchanged.

Backends (the ``backend`` fixture, :func:`prefixscan.testing.backends_under_test`):
NumPy arrays on the CPU backend; CPU torch tensors with ``backend="triton"``
under ``TRITON_INTERPRET=1`` (a launch costs about 0.1 s there: fewer and
smaller cases); CUDA tensors on the compiled kernels when a GPU is present
(more and longer cases).  Functions without a ``backend=`` argument
(``compact``, ``segmented_scan``, ``linear_recurrence``) run wherever the array
type sends them.

tests/test_fuzz_hostile.py fuzzes, with these helpers, inputs of non-native byte
order and combines that raise part-way.

Profiles, chosen by ``PREFIXSCAN_FUZZ_PROFILE``: ``ci`` (the default: a bounded
number of examples, derandomized so every run draws the same cases), ``gpu``
(many more, for the device machine) and ``dev`` (``ci``'s counts with fresh
random draws each run).  No example database is written.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import prefixscan as ps  # noqa: E402
from prefixscan.backends.triton.planning.registry import STRATEGY_NAMES  # noqa: E402
from prefixscan.testing import (  # noqa: E402
    ALL_DTYPES,
    BUILTIN_OP_NAMES,
    FLOAT_DTYPES,
    INTEGER_DTYPES,
    affine_data,
    affine_monoid,
    assert_scan_equal,
    matmul2_data,
    matmul2_monoid,
    op_applies,
    poisoned,
    random_array,
    random_init,
    reference_argsort,
    reference_compact,
    reference_delta_decode,
    reference_delta_encode,
    reference_linear_recurrence,
    reference_scan,
    reference_segmented_scan,
    tolerance_for,
    valid_op_dtypes,
)

# ---------------------------------------------------------------------------
# Profiles and per-backend sizes.

_COMMON = dict(deadline=None, database=None, print_blob=True,
               suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                      HealthCheck.filter_too_much])
settings.register_profile("ci", max_examples=100, derandomize=True, **_COMMON)
settings.register_profile("gpu", max_examples=400, derandomize=True, **_COMMON)
settings.register_profile("dev", max_examples=100, derandomize=False, **_COMMON)
PROFILE = os.environ.get("PREFIXSCAN_FUZZ_PROFILE", "ci")
FUZZ = settings.get_profile(PROFILE)

#: Examples per backend, as a fraction of the profile's count.
EXAMPLE_SHARE = {"cpu": 1.0, "triton-interpreter": 0.3, "cuda": 2.0}


@dataclass(frozen=True)
class Sizes:
    """How big a case may be on one backend."""

    dim: int  # the longest axis of an N-D array
    length: int  # the longest 1-D array (the interpreter's tiles hold 32 elements)


SIZES = {"cpu": Sizes(7, 2500), "triton-interpreter": Sizes(5, 300), "cuda": Sizes(12, 30000)}

CPU_ALGORITHMS = (None, "serial", "kogge_stone", "sklansky", "brent_kung", "reduce_then_scan")


def fuzz(backend, body: Callable[[Any, Any], None], share: float = 1.0) -> None:
    """Run ``body(backend, data)`` as a Hypothesis test with the profile's
    number of examples scaled for the backend (and by ``share``)."""
    examples = max(2, int(FUZZ.max_examples * EXAMPLE_SHARE.get(backend.name, 1.0) * share))

    @settings(FUZZ, max_examples=examples)
    @given(data=st.data())
    def run(data):
        body(backend, data)

    run()


# ---------------------------------------------------------------------------
# Drawing cases.

def draw_shape(data, backend) -> tuple[int, ...]:
    """1-3 axes of 0..dim elements, or (a quarter of the time) one long axis."""
    size = SIZES[backend.name]
    if data.draw(st.integers(0, 3), label="long") == 0:
        lengths = st.one_of(st.integers(0, 70), st.integers(70, size.length))  # one tile, several tiles
        return (data.draw(lengths, label="length"),)
    ndim = data.draw(st.integers(1, 3), label="ndim")
    dims = st.sampled_from([0, 1] + 4 * list(range(2, size.dim + 1)))  # empty and single axes, less often
    return tuple(data.draw(st.lists(dims, min_size=ndim, max_size=ndim), label="shape"))


def draw_axis(data, shape: tuple) -> int | None:
    """None (the flattened array) or an axis of ``shape``, negative ones included."""
    return data.draw(st.one_of(st.none(), st.integers(-len(shape), len(shape) - 1)), label="axis")


def draw_shape_like(shape: tuple, s: int, axis: int | None) -> tuple:
    """``shape`` with the scanned lane's length rounded up to a multiple of the
    tuple size (the last axis's, for the flattened array)."""
    shape = list(shape)
    k = len(shape) - 1 if axis is None else axis
    shape[k] = -(-shape[k] // s) * s
    return tuple(shape)


LAYOUTS = ("C", "F", "strided", "negative", "transposed")


def place(backend, a: np.ndarray, layout: str):
    """``a``'s values on the backend, in memory laid out as ``layout``:
    contiguous (C), Fortran order, a view of every other element of a larger
    buffer, a view with negative strides (NumPy only: torch has none; a strided
    view instead) or a transposed view of a contiguous buffer."""
    ndim = a.ndim
    if layout == "negative" and backend.device is not None:
        layout = "strided"
    if layout == "F":
        return _torch_view(backend, np.asfortranarray(a), lambda t: t)
    if layout == "strided":
        buffer = poisoned(tuple(2 * d + 1 for d in a.shape), a.dtype)
        every_other = (slice(1, None, 2),) * ndim
        buffer[every_other] = a
        return _torch_view(backend, buffer, lambda t: t[every_other], lambda b: b[every_other])
    if layout == "negative":
        flipped = np.ascontiguousarray(np.flip(a))
        return np.flip(flipped)
    if layout == "transposed" and ndim > 1:
        order = tuple(range(ndim))[::-1]
        buffer = np.ascontiguousarray(a.transpose(order))
        return _torch_view(backend, buffer, lambda t: t.permute(order), lambda b: b.transpose(order))
    return backend.asarray(a)


def _torch_view(backend, buffer: np.ndarray, torch_view, numpy_view=None):
    if backend.device is None:
        return (numpy_view or (lambda b: b))(buffer)
    import torch

    return torch_view(torch.from_numpy(buffer).to(backend.device))


def place_all(backend, x, layout: str):
    return tuple(place(backend, f, layout) for f in x) if isinstance(x, tuple) else place(backend, x, layout)


def snapshot(backend, x):
    return tuple(backend.to_numpy(f).copy() for f in x) if isinstance(x, tuple) else backend.to_numpy(x).copy()


def assert_unchanged(backend, x, before, what: str = "x"):
    now = snapshot(backend, x)
    for got, was in zip(now if isinstance(now, tuple) else (now,), before if isinstance(before, tuple) else (before,)):
        np.testing.assert_array_equal(got, was, err_msg=f"{what} was modified")


def _rng(data) -> np.random.Generator:
    return np.random.default_rng(data.draw(st.integers(0, 2**32 - 1), label="seed"))


def _dtypes_for(backend) -> list[str]:
    # Triton has no complex types: the GPU backend refuses complex scans (test_complex_refused_clearly).
    return [d for d in ALL_DTYPES if not (backend.is_triton and np.dtype(d).kind == "c")]


# ---------------------------------------------------------------------------
# scan with built-in operators.

def _output_dtype(data, dtype: str, op: str) -> str | None:
    kind = np.dtype(dtype).kind
    if kind == "b" and op in ("add", "mul"):
        return data.draw(st.sampled_from(["int32", "int64", "uint8"]), label="dtype=")
    choices: list = [None]
    if kind in "iu" and op in ("add", "mul", "xor"):
        choices += ["int64", "uint32"]
    if kind == "f" and op in ("add", "mul", "max", "min"):
        choices += ["float64"]
    return data.draw(st.sampled_from(choices), label="dtype=")


def _scan_builtin(backend, data):
    rng = _rng(data)
    op = data.draw(st.sampled_from(BUILTIN_OP_NAMES), label="op")
    dtype = data.draw(st.sampled_from([d for d in _dtypes_for(backend) if op_applies(op, d)]), label="dtype")
    # q-fold float products leave the float range, and their rounding errors grow
    # faster than the tolerance rule allows: order 1 for them.
    order = data.draw(st.integers(1, 1 if op == "mul" and np.dtype(dtype).kind in "fc" else 3), label="order")
    s = data.draw(st.integers(1, 3), label="tuple_size")
    shape0 = draw_shape(data, backend)
    axis = draw_axis(data, shape0)
    shape = draw_shape_like(shape0, s, axis)
    inclusive = data.draw(st.booleans(), label="inclusive")
    reverse = data.draw(st.booleans(), label="reverse")
    out_dtype = _output_dtype(data, dtype, op)
    acc = out_dtype or dtype
    exact = data.draw(st.booleans(), label="exact floats")
    x_np = random_array(rng, dtype, shape, op, exact=exact)
    init = _draw_init(data, rng, acc, op, shape, axis, s, backend)
    kwargs = dict(axis=axis, inclusive=inclusive, reverse=reverse, init=init, order=order, tuple_size=s,
                  dtype=out_dtype)
    expected = reference_scan(x_np, op, **kwargs)
    tolerance = tolerance_for(x_np, op, **kwargs)
    layout = data.draw(st.sampled_from(LAYOUTS), label="layout")
    x = place(backend, x_np, layout)
    before = snapshot(backend, x)
    call = dict(kwargs, backend=backend.backend)
    if backend.is_triton:
        call["strategy"] = data.draw(st.sampled_from((None,) + STRATEGY_NAMES), label="strategy")
    else:
        call["algorithm"] = data.draw(st.sampled_from(CPU_ALGORITHMS), label="algorithm")
    out = None
    if data.draw(st.booleans(), label="out="):
        out = backend.asarray(poisoned(expected.shape, expected.dtype))
        call["out"] = out
    if init is not None and backend.device is not None and np.ndim(init):
        call["init"] = backend.asarray(np.asarray(init))
    got = ps.scan(x, op, **call)
    if out is not None:
        assert got is out, "scan(out=) must return out itself"
    assert_unchanged(backend, x, before)
    assert_scan_equal(backend.to_numpy(got), expected, err_msg=f"{op} {dtype} {shape} {call}", **tolerance)


def _seed_shape(shape: tuple, axis: int | None, s: int) -> tuple:
    lane = () if axis is None else shape[:axis % len(shape)] + shape[axis % len(shape) + 1:]
    return lane + ((s,) if s > 1 else ())


def _draw_init(data, rng, dtype: str, op: str, shape: tuple, axis, s: int, backend):
    """None, a scalar, or one seed per lane and stream."""
    how = data.draw(st.sampled_from(["none", "scalar", "array"]), label="init")
    if how == "none":
        return None
    if how == "scalar":
        return random_init(rng, dtype, (), op)
    return random_init(rng, dtype, _seed_shape(shape, axis, s), op)


def test_scan_builtin_operators(backend):
    fuzz(backend, _scan_builtin, share=1.5)


# ---------------------------------------------------------------------------
# scan with user monoids: random affine maps and 2x2 integer matrices.

def _scan_monoid(backend, data):
    rng = _rng(data)
    kind = data.draw(st.sampled_from(["affine-int", "affine-float", "matmul2"]), label="monoid")
    order = data.draw(st.integers(1, 3 if kind != "affine-float" else 1), label="order")
    s = data.draw(st.integers(1, 3), label="tuple_size")
    shape0 = draw_shape(data, backend)
    axis = draw_axis(data, shape0)
    shape = draw_shape_like(shape0, s, axis)
    if kind == "matmul2":
        dtype = data.draw(st.sampled_from(["int32", "int64", "uint32"]), label="dtype")
        monoid, x_np = matmul2_monoid(), matmul2_data(rng, shape, dtype)
    elif kind == "affine-int":
        dtype = data.draw(st.sampled_from(INTEGER_DTYPES), label="dtype")
        small = data.draw(st.booleans(), label="small")
        monoid, x_np = affine_monoid(), affine_data(rng, shape, dtype, small=small)
    else:
        dtype = data.draw(st.sampled_from(["float32", "float64"]), label="dtype")
        monoid, x_np = affine_monoid(), affine_data(rng, shape, dtype)
    inclusive = data.draw(st.booleans(), label="inclusive")
    reverse = data.draw(st.booleans(), label="reverse")
    init = None
    if data.draw(st.booleans(), label="init"):
        seed_shape = _seed_shape(shape, axis, s)
        init = tuple(np.asarray(f) for f in (matmul2_data if kind == "matmul2" else affine_data)(
            rng, seed_shape, dtype))
    kwargs = dict(axis=axis, inclusive=inclusive, reverse=reverse, init=init, order=order, tuple_size=s)
    expected = reference_scan(x_np, monoid, **kwargs)
    tolerance = tolerance_for(x_np, monoid, **kwargs)
    layout = data.draw(st.sampled_from(LAYOUTS), label="layout")
    x = place_all(backend, x_np, layout)
    before = snapshot(backend, x)
    call = dict(kwargs, backend=backend.backend)
    if init is not None:
        call["init"] = tuple(backend.asarray(f) for f in init)
    if backend.is_triton:
        call["strategy"] = data.draw(st.sampled_from((None,) + STRATEGY_NAMES), label="strategy")
    else:
        call["algorithm"] = data.draw(st.sampled_from(CPU_ALGORITHMS), label="algorithm")
    got = ps.scan(x, monoid, **call)
    assert_unchanged(backend, x, before)
    assert_scan_equal(backend.to_numpy(got), expected, err_msg=f"{kind} {dtype} {shape} {kwargs}", **tolerance)


def test_scan_monoids(backend):
    fuzz(backend, _scan_monoid)


# ---------------------------------------------------------------------------
# Delta coding: reference encode and decode, and the exact round trip.

def _delta(backend, data):
    rng = _rng(data)
    dtype = data.draw(st.sampled_from(INTEGER_DTYPES + FLOAT_DTYPES), label="dtype")
    order = data.draw(st.integers(1, 4), label="order")
    s = data.draw(st.integers(1, 3), label="tuple_size")
    shape0 = draw_shape(data, backend)
    axis = data.draw(st.integers(-len(shape0), len(shape0) - 1), label="axis")
    shape = draw_shape_like(shape0, s, axis)
    # Floats: small integers, so that differences and sums are exact and the round trip too.
    x_np = random_array(rng, dtype, shape, "add", exact=True)
    layout = data.draw(st.sampled_from(LAYOUTS), label="layout")
    x = place(backend, x_np, layout)
    before = snapshot(backend, x)
    d = ps.delta_encode(x, order, s, axis=axis, backend=backend.backend)
    assert_unchanged(backend, x, before)
    expected = reference_delta_encode(x_np, order, s, axis=axis)
    assert_scan_equal(backend.to_numpy(d), expected, rtol=0.0, err_msg=f"encode {dtype} {shape} {order} {s} {axis}")
    d_np = backend.to_numpy(d)
    d_placed = place(backend, d_np, data.draw(st.sampled_from(LAYOUTS), label="layout of d"))
    y = ps.delta_decode(d_placed, order, s, axis=axis, backend=backend.backend)
    assert_scan_equal(backend.to_numpy(y), reference_delta_decode(d_np, order, s, axis=axis), rtol=0.0,
                      err_msg=f"decode {dtype} {shape} {order} {s} {axis}")
    np.testing.assert_array_equal(backend.to_numpy(y), x_np, err_msg="the round trip")


def test_delta_coding(backend):
    fuzz(backend, _delta)


# ---------------------------------------------------------------------------
# Segmented scans (host arrays), compaction and linear recurrences.

#: How index arguments (offsets) come: NumPy dtypes (unsigned and big-endian ones
#: included) or a list of ints.
INDEX_FORMS = ("int64", "int32", "uint16", "uint32", "uint64", ">i8", ">i4", ">u4", ">u8", "list")


def draw_index_argument(data, backend, values: np.ndarray, label: str = "offsets form"):
    """The non-negative integers ``values`` as an index argument in a drawn form: a
    list, or an array of a drawn dtype and byte order.  Host arrays stay NumPy where
    x is on the CPU (big-endian ones included: torch has none), native ones go to
    the device as tensors of that dtype (unsigned tensors on the Triton backend)."""
    form = data.draw(st.sampled_from(INDEX_FORMS), label=label)
    return values.tolist() if form == "list" else place_host_argument(backend, values.astype(form))


def place_host_argument(backend, arr: np.ndarray):
    """A NumPy argument as the backend's call passes it: NumPy for the CPU backend,
    and for x on the CPU where it is big-endian (torch has no such tensors); else a
    tensor of its dtype on the backend's device (native byte order on a GPU)."""
    if backend.device is None or backend.device == "cpu" and not arr.dtype.isnative:
        return arr
    return backend.asarray(arr if arr.dtype.isnative else arr.astype(arr.dtype.newbyteorder("=")))


def _draw_length(data, backend) -> int:
    """A 1-D length; on the CPU sometimes past the compiled path's threshold (the
    Numba kernels run from SMALL_SCAN elements on, NumPy below)."""
    if backend.name == "cpu" and data.draw(st.booleans(), label="compiled size"):
        from prefixscan.backends.cpu.compiled import SMALL_SCAN

        return data.draw(st.integers(SMALL_SCAN, SMALL_SCAN + 300), label="n")
    return data.draw(st.integers(0, SIZES[backend.name].length), label="n")


def _segmented(backend, data):
    rng = _rng(data)
    n = data.draw(st.integers(0, SIZES[backend.name].length), label="n")
    kind = data.draw(st.sampled_from(["builtin", "affine"]), label="operator")
    how = data.draw(st.sampled_from(["flags", "offsets", "keys"]), label="segments")
    inclusive = data.draw(st.booleans(), label="inclusive")
    reverse = data.draw(st.booleans(), label="reverse")
    p = data.draw(st.sampled_from([0.0, 0.05, 0.3, 1.0]), label="segment start probability")
    starts = rng.random(n) < p
    if how == "flags":
        segments = {"flags": starts}
    elif how == "offsets":
        offsets = np.flatnonzero(starts)
        offsets = np.concatenate([[0], offsets[offsets > 0]]).astype(np.int64)
        if data.draw(st.booleans(), label="empty segments"):
            offsets = np.sort(np.concatenate([offsets, rng.integers(0, n + 1, size=3)]))
            offsets[0] = 0
        segments = {"offsets": offsets}
    else:
        keys = (np.cumsum(starts) % 3).astype(data.draw(st.sampled_from(["int32", "uint64", ">i4", "float32"]),
                                                        label="keys dtype"))
        if keys.dtype.kind == "f" and n:  # -0.0 continues a run of 0.0; every NaN starts one
            keys[keys == 0] = np.where(rng.random(int((keys == 0).sum())) < 0.5, -0.0, 0.0)
            keys[rng.random(n) < 0.02] = np.nan
        segments = {"keys": keys}
    if kind == "builtin":
        op, dtype = data.draw(st.sampled_from([(o, d) for o, d in valid_op_dtypes()
                                               if np.dtype(d).kind != "c" or backend.device is None]),
                              label="op, dtype")
        if np.dtype(dtype).kind == "b" and op in ("add", "mul"):
            op = "xor"
        x_np = random_array(rng, dtype, n, op, exact=True)
    else:
        op, dtype = affine_monoid(), data.draw(st.sampled_from(["int32", "int64", "uint16"]), label="dtype")
        x_np = affine_data(rng, n, dtype, small=False)
    expected = reference_segmented_scan(x_np, op, inclusive=inclusive, reverse=reverse, **segments)
    x = place_all(backend, x_np, "C")
    if how == "offsets":
        given = draw_index_argument(data, backend, segments["offsets"])
    else:
        given = place_host_argument(backend, segments[how])
    got = ps.segmented_scan(x, op, inclusive=inclusive, reverse=reverse, **{how: given})
    tolerance = tolerance_for(x_np, op) if isinstance(op, str) else {}
    if isinstance(op, str) and np.dtype(dtype).kind == "f" and op not in ("max", "min", "add"):
        tolerance = {"n": n}
    elif isinstance(op, str) and op == "add" and np.dtype(dtype).kind == "f":
        tolerance = {"n": n, "rtol": 0.0}  # exact small-integer data
    assert_scan_equal(backend.to_numpy(got), expected, err_msg=f"{op} {dtype} n={n} {segments}", **tolerance)


def test_segmented_scan(backend):
    fuzz(backend, _segmented, share=0.6)


def _segmented_index_forms(backend, data):
    """Segments in every index form (offsets of any integer dtype and byte order, as
    lists; keys of several dtypes, big-endian ones, floats with -0.0 and NaN) on
    both CPU paths: the compiled one from SMALL_SCAN elements on.  Sums of small
    integers (exact in float64), so that the cases compile few kernels."""
    rng = _rng(data)
    n = _draw_length(data, backend)
    dtype = data.draw(st.sampled_from(["int64", "float64"]), label="dtype")
    how = data.draw(st.sampled_from(["offsets", "keys"]), label="segments")
    inclusive = data.draw(st.booleans(), label="inclusive")
    reverse = data.draw(st.booleans(), label="reverse")
    starts = rng.random(n) < data.draw(st.sampled_from([0.0, 0.01, 0.3]), label="segment start probability")
    if how == "offsets":
        offsets = np.concatenate([[0], np.flatnonzero(starts[1:]) + 1]).astype(np.int64)
        if data.draw(st.booleans(), label="empty segments and the final n"):
            offsets = np.sort(np.concatenate([offsets, rng.integers(0, n + 1, size=3), [n]]))
        expected_by, given = {"offsets": offsets}, draw_index_argument(data, backend, offsets)
    else:
        keys = (np.cumsum(starts) % 3).astype(data.draw(st.sampled_from(["int32", "uint64", ">i4", ">f8", "float32"]),
                                                        label="keys dtype"))
        if keys.dtype.kind == "f" and n:  # -0.0 continues a run of 0.0; every NaN starts one
            keys[keys == 0] = np.where(rng.random(int((keys == 0).sum())) < 0.5, -0.0, 0.0)
            keys[rng.random(n) < 0.01] = np.nan
        expected_by, given = {"keys": keys}, place_host_argument(backend, keys)
    x_np = rng.integers(-50, 50, size=n).astype(dtype)
    init = data.draw(st.sampled_from([None, 7]), label="init")
    expected = reference_segmented_scan(x_np, inclusive=inclusive, reverse=reverse, init=init, **expected_by)
    got = ps.segmented_scan(backend.asarray(x_np), inclusive=inclusive, reverse=reverse, init=init,
                            backend=backend.backend, **{how: given})
    np.testing.assert_array_equal(backend.to_numpy(got), expected, err_msg=f"n={n} {dtype} {expected_by}")


def test_segmented_scan_index_forms(backend):
    fuzz(backend, _segmented_index_forms, share=0.4)


def _flawed_offsets(data, rng, n: int) -> tuple[list, str]:
    """Offsets for n elements with one flaw, as Python ints, and the index form to give
    them in (one that holds the flawed value)."""
    flaw = data.draw(st.sampled_from(["2**63 or more", "past n", "decreasing", "not at 0", "negative"]),
                     label="flaw")
    values = [0] + sorted(rng.integers(0, n + 1, size=data.draw(st.integers(0, 4), label="count")).tolist())
    forms = list(INDEX_FORMS)
    if flaw == "2**63 or more":  # the value an unsigned-to-int64 cast would make negative
        values.insert(data.draw(st.integers(1, len(values)), label="at"), 2**63 + int(rng.integers(0, 2**63)))
        forms = ["uint64", ">u8", "list"]
    elif flaw == "past n":
        values.append(n + 1 + int(rng.integers(0, 1000)))
    elif flaw == "decreasing":
        high = int(rng.integers(1, n + 2))
        values += [high, int(rng.integers(0, high))]
    elif flaw == "not at 0":
        values[0] = int(rng.integers(1, n + 2))
    else:
        values.append(-int(rng.integers(1, 2**31)))
        forms = ["int64", "int32", ">i8", ">i4", "list"]
    return values, data.draw(st.sampled_from(forms), label="offsets form")


def _offsets_refused(backend, data):
    """Flawed offsets in any index form, unsigned and big-endian ones included, are
    refused with a ValueError naming offsets before any work, by segmented_scan and
    linear_recurrence alike: never cast, wrapped and used."""
    rng = _rng(data)
    n = _draw_length(data, backend)
    values, form = _flawed_offsets(data, rng, n)
    given = values if form == "list" else place_host_argument(backend, np.array(values).astype(form))
    x_np = random_array(rng, "float64", n, "add")
    out = backend.asarray(poisoned((n,), "float64"))
    before = backend.to_numpy(out).copy()
    with pytest.raises(ValueError, match="offsets"):
        ps.segmented_scan(backend.asarray(x_np), offsets=given, out=out, backend=backend.backend)
    np.testing.assert_array_equal(backend.to_numpy(out), before, err_msg="out was written")
    with pytest.raises(ValueError, match="offsets"):
        ps.linear_recurrence(backend.asarray(x_np), backend.asarray(x_np), offsets=given, backend=backend.backend)


def test_offsets_refused(backend):
    fuzz(backend, _offsets_refused, share=0.5)


def _compact(backend, data):
    rng = _rng(data)
    dtype = data.draw(st.sampled_from(_dtypes_for(backend)), label="dtype")
    shape = draw_shape(data, backend)
    x_np = random_array(rng, dtype, shape, "add")
    p = data.draw(st.sampled_from([0.0, 0.1, 0.5, 1.0]), label="keep probability")
    mask_np = rng.random(shape) < p
    layout = data.draw(st.sampled_from(LAYOUTS), label="layout")
    x, mask = place(backend, x_np, layout), place(backend, mask_np, layout)
    before = snapshot(backend, x)
    got = ps.compact(x, mask)
    assert_unchanged(backend, x, before)
    assert_scan_equal(backend.to_numpy(got), reference_compact(x_np, mask_np), rtol=0.0,
                      err_msg=f"{dtype} {shape} {layout}")


def test_compact(backend):
    fuzz(backend, _compact, share=0.6)


def _linear_recurrence(backend, data):
    rng = _rng(data)
    dtype = data.draw(st.sampled_from(INTEGER_DTYPES + ["float32", "float64"]), label="dtype")
    shape = draw_shape(data, backend)
    axis = data.draw(st.integers(-len(shape), len(shape) - 1), label="axis")
    if np.dtype(dtype).kind == "f":
        # a in {-1, 1} and small integer b: every h is an exactly representable integer.
        a_np = rng.choice([-1.0, 1.0], size=shape).astype(dtype)
        b_np = rng.integers(-4, 5, size=shape).astype(dtype)
    else:
        a_np, b_np = affine_data(rng, shape, dtype, small=False)
    lane_shape = shape[:axis % len(shape)] + shape[axis % len(shape) + 1:]
    how = data.draw(st.sampled_from(["none", "scalar", "lanes"]), label="init")
    init_np = init = None
    if how == "scalar":
        init_np = init = np.asarray(rng.integers(-3, 4)).astype(dtype)[()]
    elif how == "lanes":
        init_np = np.asarray(rng.integers(-3, 4, size=lane_shape)).astype(dtype)
        init = backend.asarray(init_np)
    reverse = data.draw(st.booleans(), label="reverse")
    layout = data.draw(st.sampled_from(LAYOUTS), label="layout")
    a, b = place(backend, a_np, layout), place(backend, b_np, layout)
    if data.draw(st.booleans(), label="packed sequences"):
        _packed_recurrence(backend, data, rng, a_np, b_np, a, b, axis, reverse, dtype, how)
        return
    expected = reference_linear_recurrence(a_np, b_np, init=init_np, axis=axis, reverse=reverse)
    got = ps.linear_recurrence(a, b, init=init, axis=axis, reverse=reverse)
    assert_scan_equal(backend.to_numpy(got), expected, rtol=0.0, err_msg=f"{dtype} {shape} axis={axis} {how}")


def _packed_recurrence(backend, data, rng, a_np, b_np, a, b, axis: int, reverse: bool, dtype: str, how: str):
    """``linear_recurrence`` with ``offsets`` (any index form; empty sequences, the
    final n given or not) and the final states, against the reference run on each
    sequence alone; an empty sequence's final state is its seed."""
    axis %= a_np.ndim
    n = a_np.shape[axis]
    cuts = np.sort(rng.integers(0, n + 1, size=data.draw(st.integers(0, 4), label="cuts")))
    offsets = np.concatenate([[0], cuts]).astype(np.int64)
    bounds = offsets if offsets[-1] == n else np.append(offsets, n)
    count = len(bounds) - 1
    seed_shape = a_np.shape[:axis] + (count,) + a_np.shape[axis + 1:]
    init_np = init = None
    if how == "scalar":
        init_np = init = np.asarray(rng.integers(-3, 4)).astype(dtype)[()]
    elif how == "lanes":
        init_np = np.asarray(rng.integers(-3, 4, size=seed_shape)).astype(dtype)
        init = backend.asarray(init_np)
    hs, finals = [], []
    for k, (start, end) in enumerate(zip(bounds[:-1], bounds[1:])):
        seed = None if init_np is None else np.broadcast_to(init_np, seed_shape).take(k, axis=axis)
        piece = np.arange(start, end)
        h = reference_linear_recurrence(a_np.take(piece, axis=axis), b_np.take(piece, axis=axis), init=seed,
                                        axis=axis, reverse=reverse)
        hs.append(h)
        lanes = a_np.shape[:axis] + a_np.shape[axis + 1:]
        if end > start:
            finals.append(h.take(0 if reverse else end - start - 1, axis=axis))
        else:
            finals.append(np.zeros(lanes, dtype) if seed is None else np.broadcast_to(seed, lanes))
    if not count:  # no sequence at all (an empty axis, offsets [0])
        hs, finals = [np.zeros(a_np.shape, dtype)], [np.zeros(seed_shape, dtype)]
    else:
        finals = [np.expand_dims(f, axis) for f in finals]
    given = draw_index_argument(data, backend, offsets)
    got, final = ps.linear_recurrence(a, b, init=init, axis=axis, reverse=reverse, offsets=given, return_final=True)
    what = f"{dtype} {a_np.shape} axis={axis} {how} offsets={offsets.tolist()}"
    assert_scan_equal(backend.to_numpy(got), np.concatenate(hs, axis=axis), rtol=0.0, err_msg=what)
    assert_scan_equal(backend.to_numpy(final), np.concatenate(finals, axis=axis), rtol=0.0, err_msg=f"final {what}")


def test_linear_recurrence(backend):
    fuzz(backend, _linear_recurrence, share=0.6)


# ---------------------------------------------------------------------------
# sort and argsort (the interpreter's digit passes cost too much for fuzzing:
# tests/algorithms/test_sort.py runs them on chosen cases).

SORT_DTYPES = INTEGER_DTYPES + ["bool", "float16", "float32", "float64"]


def _sort(backend, data):
    rng = _rng(data)
    dtype = data.draw(st.sampled_from(SORT_DTYPES), label="dtype")
    shape = draw_shape(data, backend)
    axis = draw_axis(data, shape)
    descending = data.draw(st.booleans(), label="descending")
    kind = np.dtype(dtype).kind
    width = 8 * np.dtype(dtype).itemsize
    key_bits = data.draw(st.sampled_from([None, 1, 3, min(9, width)]), label="key_bits") if kind in "iu" else None
    pool = random_array(rng, dtype, (max(1, int(np.prod(shape)) // 3),))
    if kind == "f":
        pool[rng.random(pool.shape) < 0.2] = np.nan
        pool[rng.random(pool.shape) < 0.1] = -0.0
    if key_bits is not None:
        pool = (np.abs(pool.astype(np.int64)) % (1 << min(key_bits, 8 * pool.itemsize - 1))).astype(dtype)
    x_np = pool[rng.integers(0, pool.size, shape)]
    layout = data.draw(st.sampled_from(LAYOUTS), label="layout")
    x = place(backend, x_np, layout)
    before = snapshot(backend, x)
    expected = reference_argsort(x_np, axis=axis, descending=descending)
    what = f"{dtype} {shape} axis={axis} descending={descending} key_bits={key_bits} {layout}"
    got = ps.argsort(x, axis=axis, descending=descending, key_bits=key_bits, backend=backend.backend)
    np.testing.assert_array_equal(backend.to_numpy(got), expected, err_msg=what)
    values = place(backend, rng.standard_normal(shape), layout)
    keys, moved = ps.sort(x, axis=axis, descending=descending, key_bits=key_bits, values=values,
                          backend=backend.backend)
    flat = (lambda a: a.reshape(-1)) if axis is None else (lambda a: a)
    along = 0 if axis is None else axis
    sorted_bits = np.take_along_axis(flat(x_np).view(f"u{x_np.itemsize}"), expected, along)
    np.testing.assert_array_equal(backend.to_numpy(keys).view(f"u{x_np.itemsize}"), sorted_bits, err_msg=what)
    np.testing.assert_array_equal(backend.to_numpy(moved), np.take_along_axis(flat(backend.to_numpy(values)),
                                                                              expected, along), err_msg=what)
    assert_unchanged(backend, x, before)


def test_sort(backend):
    if backend.name == "triton-interpreter":
        pytest.skip("a digit pass costs the interpreter 0.03 s a tile: tests/algorithms/test_sort.py has its cases")
    fuzz(backend, _sort, share=0.5)
