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

Two hostile inputs on the CPU backend, on both of its paths (lengths below 8192 take
NumPy, longer ones the compiled kernels): NumPy arrays of non-native byte order
(inputs, seeds, keys, coefficients, ``out``), whose results must be bit for bit
those of native arrays; and a combine that raises part-way
(:mod:`prefixscan.testing.failing`), after which ``out`` and ``x`` must be as
they were, bit for bit.

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
from prefixscan.backends.triton.registry import STRATEGY_NAMES  # noqa: E402
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
        segments = {"keys": np.cumsum(starts).astype(np.int32) % 3}
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
    got = ps.segmented_scan(x, op, inclusive=inclusive, reverse=reverse,
                            **{k: backend.asarray(v) for k, v in segments.items()})
    tolerance = tolerance_for(x_np, op) if isinstance(op, str) else {}
    if isinstance(op, str) and np.dtype(dtype).kind == "f" and op not in ("max", "min", "add"):
        tolerance = {"n": n}
    elif isinstance(op, str) and op == "add" and np.dtype(dtype).kind == "f":
        tolerance = {"n": n, "rtol": 0.0}  # exact small-integer data
    assert_scan_equal(backend.to_numpy(got), expected, err_msg=f"{op} {dtype} n={n} {segments}", **tolerance)


def test_segmented_scan(backend):
    fuzz(backend, _segmented, share=0.6)


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
    expected = reference_linear_recurrence(a_np, b_np, init=init_np, axis=axis, reverse=reverse)
    layout = data.draw(st.sampled_from(LAYOUTS), label="layout")
    a, b = place(backend, a_np, layout), place(backend, b_np, layout)
    got = ps.linear_recurrence(a, b, init=init, axis=axis, reverse=reverse)
    assert_scan_equal(backend.to_numpy(got), expected, rtol=0.0, err_msg=f"{dtype} {shape} axis={axis} {how}")


def test_linear_recurrence(backend):
    fuzz(backend, _linear_recurrence, share=0.6)


# ---------------------------------------------------------------------------
# Host arrays of non-native byte order, on both CPU paths: every function gives
# bit for bit what it gives for the same values in native byte order, and an
# ``out`` of non-native byte order is written with those values.

#: Lengths for the CPU backend's NumPy path, its compiled kernels (from 8192) and the
#: integer sums NumPy runs as one accumulate below 2^17.
HOST_LENGTHS = st.one_of(st.integers(0, 2500), st.integers(8192, 20000), st.just((1 << 17) + 1))


def draw_host_shape(data) -> tuple:
    """One axis, or a few rows of one long axis, on either side of the compiled path's threshold."""
    n = data.draw(HOST_LENGTHS, label="elements")
    if n < 16 or data.draw(st.booleans(), label="1-D"):
        return (n,)
    rows = data.draw(st.sampled_from([2, 3, 7, 64]), label="rows")
    return (rows, n // rows)


def swapped(a: np.ndarray) -> np.ndarray:
    """The values of ``a`` stored in the other byte order."""
    return a.astype(a.dtype.newbyteorder("S"))


def _results_of(value) -> tuple:
    return value if isinstance(value, tuple) else (value,)


def _results(value) -> list:
    return [np.asarray(v) for v in (value if isinstance(value, tuple) else (value,))]


def assert_same_bits(got, expected, what: str) -> None:
    for g, e in zip(_results(got), _results(expected), strict=True):
        assert g.dtype.isnative, f"{what}: a result in byte order {g.dtype.str}"
        assert g.dtype == e.dtype and g.shape == e.shape, f"{what}: {g.dtype}{g.shape} != {e.dtype}{e.shape}"
        assert g.tobytes() == e.tobytes(), f"{what}: differs from the result in native byte order"


def _byte_order_case(data, rng):
    """``(what, run, arrays, takes_out)``: ``run(arrays, out)`` calls one public function
    on the host arrays ``arrays`` (a dict: each may be handed over swapped)."""
    what = data.draw(st.sampled_from(["scan", "cumulative", "segmented_scan", "compact", "partition", "delta",
                                      "linear_recurrence"]), label="function")
    shape = draw_host_shape(data)
    multibyte = [d for d in ALL_DTYPES if np.dtype(d).itemsize > 1]
    if what == "linear_recurrence":
        dtype = data.draw(st.sampled_from(["float32", "float64", "complex128"]), label="dtype")
        axis = data.draw(st.integers(-len(shape), len(shape) - 1), label="axis")
        a = random_array(rng, dtype, shape, "mul") * np.asarray(0.5, dtype)
        lanes = shape[:axis % len(shape)] + shape[axis % len(shape) + 1:]
        arrays = {"a": a, "b": random_array(rng, dtype, shape, "add", exact=False),
                  "init": random_array(rng, dtype, lanes, "add")}
        reverse = data.draw(st.booleans(), label="reverse")
        return what, (lambda v, out: ps.linear_recurrence(v["a"], v["b"], init=v["init"], axis=axis,
                                                          reverse=reverse)), arrays, False
    if what in ("compact", "partition"):
        dtype = data.draw(st.sampled_from(multibyte), label="dtype")
        arrays = {"x": random_array(rng, dtype, shape, "add", exact=False)}
        mask = rng.random(shape) < data.draw(st.sampled_from([0.0, 0.3, 1.0]), label="keep probability")
        return what, (lambda v, out: getattr(ps, what)(v["x"], mask)), arrays, False
    if what == "delta":
        dtype = data.draw(st.sampled_from([d for d in INTEGER_DTYPES + FLOAT_DTYPES if np.dtype(d).itemsize > 1]),
                          label="dtype")
        order, axis = data.draw(st.integers(1, 3), label="order"), data.draw(st.sampled_from([0, -1]), label="axis")
        s = data.draw(st.sampled_from([s for s in (1, 2, 3) if shape[axis] % s == 0]), label="tuple_size")
        arrays = {"x": random_array(rng, dtype, shape, "add")}
        decode = data.draw(st.booleans(), label="decode")
        fn = ps.delta_decode if decode else ps.delta_encode
        return what, (lambda v, out: fn(v["x"], order, s, axis=axis)), arrays, False
    op = data.draw(st.sampled_from(["add", "mul", "max", "min", "xor"]), label="op")
    dtype = data.draw(st.sampled_from([d for d in multibyte if op_applies(op, d)]), label="dtype")
    inclusive, reverse = data.draw(st.booleans(), label="inclusive"), data.draw(st.booleans(), label="reverse")
    x = random_array(rng, dtype, shape, op)
    if what == "segmented_scan":
        x = x.reshape(-1)
        starts = rng.random(x.size) < 0.01
        how = data.draw(st.sampled_from(["flags", "offsets", "keys"]), label="segments")
        segments = {"flags": starts, "offsets": np.concatenate([[0], np.flatnonzero(starts)]).astype(np.int64),
                    "keys": np.cumsum(starts).astype(data.draw(st.sampled_from(["int32", "int64", "float64"]),
                                                               label="key dtype"))}[how]
        arrays = {"x": x, how: segments, "init": random_init(rng, dtype, (), op)}
        return what, (lambda v, out: ps.segmented_scan(v["x"], op, inclusive=inclusive, reverse=reverse,
                                                       init=v["init"], out=out, **{how: v[how]})), arrays, True
    axis = draw_axis(data, shape)
    if what == "cumulative":
        name = data.draw(st.sampled_from({"add": ["cumsum"], "mul": ["cumprod"], "max": ["cummax"],
                                          "min": ["cummin"], "xor": ["cumsum"]}[op]), label="drop-in")
        fn = getattr(ps, name)
        return what, (lambda v, out: fn(v["x"], axis=axis, out=out, exclusive=not inclusive, reverse=reverse)), \
            {"x": x}, True
    order = data.draw(st.integers(1, 1 if op == "mul" and np.dtype(dtype).kind in "fc" else 3), label="order")
    s = data.draw(st.integers(1, 3), label="tuple_size")
    x = random_array(rng, dtype, draw_shape_like(shape, s, axis), op)
    arrays = {"x": x}
    if data.draw(st.booleans(), label="init"):
        arrays["init"] = random_init(rng, dtype, _seed_shape(x.shape, axis, s), op)
    return what, (lambda v, out: ps.scan(v["x"], op, axis=axis, inclusive=inclusive, reverse=reverse,
                                         init=v.get("init"), order=order, tuple_size=s, out=out)), arrays, True


def _byte_order(backend, data):
    rng = _rng(data)
    what, run, arrays, takes_out = _byte_order_case(data, rng)
    layout = data.draw(st.sampled_from(LAYOUTS), label="layout")
    native = {k: place(backend, v, layout) if k == "x" else v for k, v in arrays.items()}
    # x always swapped; every other array (seeds, keys, coefficients) as drawn.
    turned = {k: place(backend, swapped(v), layout) if k == "x" else
              (swapped(np.asarray(v)) if data.draw(st.booleans(), label=f"swap {k}") else v)
              for k, v in arrays.items()}
    large = np.asarray(arrays["x" if "x" in arrays else "a"]).size >= 8192
    hypothesis.event(f"{what} on the {'compiled' if large else 'NumPy'} path")
    with np.errstate(all="ignore"):
        expected = run(native, None)
        got = run(turned, None)
        assert_same_bits(got, expected, what)
        assert_unchanged(backend, turned["x"] if "x" in turned else turned["a"],
                         arrays["x"] if "x" in arrays else arrays["a"], "the swapped input")
        if takes_out and data.draw(st.booleans(), label="swapped out="):
            out = swapped(poisoned(expected.shape, expected.dtype))
            assert run(turned, out) is out
            assert out.astype(expected.dtype).tobytes() == expected.tobytes(), f"{what}: the swapped out"


def test_swapped_byte_order(backend):
    if backend.device is not None:
        pytest.skip("torch tensors come in the machine's byte order only")
    fuzz(backend, _byte_order)


# ---------------------------------------------------------------------------
# A combine that raises part-way (prefixscan.testing.failing): the error reaches the
# caller and ``out`` (and ``x``) are left as they were, bit for bit; without the poison
# the same call gives the sum.

def _bounded(x: np.ndarray, order: int, s: int, axis: int | None, reverse: bool) -> np.ndarray:
    """Data whose order-q sums (in the scan's direction) stay as small as ``x``: its q-th
    differences, so that no partial sum nears the poison."""
    if order == 1:
        return x
    flat = x.reshape(-1) if axis is None else x
    ax = -1 if axis is None else axis
    d = np.flip(ps.delta_encode(np.flip(flat, ax), order, s, axis=ax), ax) if reverse else \
        ps.delta_encode(flat, order, s, axis=ax)
    return np.ascontiguousarray(d).reshape(x.shape)


def _failing_combine(backend, data):
    from prefixscan.testing.failing import POISON, CombineFailed, poison_data, raising_sum_monoid

    rng = _rng(data)
    kind = data.draw(st.sampled_from(["scan", "make_scan", "struct", "segmented_scan"]), label="call")
    dtype = data.draw(st.sampled_from(["int32", "int64", "float32", "float64"]), label="dtype")
    shape = draw_host_shape(data)
    if kind == "segmented_scan":
        shape = (int(np.prod(shape)),)
    large = int(np.prod(shape)) >= 8192
    axis = None if kind == "segmented_scan" else draw_axis(data, shape)
    # Each kernel signature of a user monoid compiles once per process: fewer variants when large.
    order = data.draw(st.integers(1, 2 if large else 3), label="order") if kind != "segmented_scan" else 1
    s = data.draw(st.integers(1, 2 if large else 3), label="tuple_size") if kind != "segmented_scan" else 1
    shape = draw_shape_like(shape, s, axis)
    inclusive, reverse = data.draw(st.booleans(), label="inclusive"), data.draw(st.booleans(), label="reverse")
    init = dtype_init = None
    if order == 1 and data.draw(st.booleans(), label="init"):
        init = dtype_init = np.asarray(rng.integers(-100, 101)).astype(dtype)[()]
    x = _bounded(poison_data(rng, shape, dtype), order, s, axis, reverse)
    size = x.size
    count = data.draw(st.sampled_from([0, 1, 1, 2]), label="poisoned elements") if size else 0
    positions = data.draw(st.lists(st.integers(0, max(size - 1, 0)), min_size=count, max_size=count),
                          label="poisoned")
    x.reshape(-1)[positions] = POISON
    fields = (x, poison_data(rng, shape, dtype)) if kind == "struct" else (x,)
    if kind == "struct" and init is not None:
        init = (init, init)  # one seed per field
    kw = dict(inclusive=inclusive, reverse=reverse)
    if kind == "segmented_scan":
        starts = rng.random(size) < data.draw(st.sampled_from([0.0, 0.01, 0.3]), label="segment starts")
        how = data.draw(st.sampled_from(["flags", "offsets", "keys"]), label="segments")
        segments = {"flags": starts, "offsets": np.concatenate([[0], np.flatnonzero(starts)]).astype(np.int64),
                    "keys": np.cumsum(starts).astype(np.int32)}[how]
        expected = (reference_segmented_scan(x, "add", **{how: segments}, **kw)
                    + (0 if init is None else init)).astype(dtype)
        expected = (expected,)
    else:
        kw.update(axis=axis, order=order, tuple_size=s)
        expected = tuple(reference_scan(f, "add", init=dtype_init, **kw) for f in fields)
    monoid = raising_sum_monoid(len(fields))
    layout = data.draw(st.sampled_from(LAYOUTS if kind != "segmented_scan" else ("C",)), label="layout")
    placed = tuple(place(backend, f, layout) for f in fields)
    in_place = (kind == "scan" and expected[0].shape == x.shape and layout == "C"
                and data.draw(st.booleans(), label="out=x"))
    outs = placed if in_place else tuple(backend.asarray(poisoned(e.shape, e.dtype)) for e in expected)
    before = snapshot(backend, outs)
    inputs = snapshot(backend, placed)
    arg = placed if kind == "struct" else placed[0]
    out = outs if kind == "struct" else outs[0]
    try:
        if kind == "make_scan":
            scanner = ps.make_scan(monoid, backend=backend.backend, **kw)
            got = scanner(arg, init=init, out=out)
            got = scanner(arg, init=init, out=out)  # the planned call
        elif kind == "segmented_scan":
            got = ps.segmented_scan(arg, monoid, init=init, out=out, **{how: segments}, **kw)
        else:
            got = ps.scan(arg, monoid, init=init, out=out, backend=backend.backend, **kw)
    except CombineFailed:
        hypothesis.event(f"raised on the {'compiled' if large else 'NumPy'} path")
        assert positions, "a combine without poison raised"
        assert_unchanged(backend, outs, before, "out of a scan that raised")
        if not in_place:
            assert_unchanged(backend, placed, inputs)
        return
    hypothesis.event(f"returned on the {'compiled' if large else 'NumPy'} path")
    assert all(g is o for g, o in zip(_results_of(got), outs, strict=True)), "scan(out=) must return out itself"
    for g, e in zip(_results(backend.to_numpy(got)), expected):
        assert_scan_equal(g, e, rtol=0.0, err_msg=f"{kind} {dtype} {shape} {kw} poisoned at {positions}")


def test_failing_combine_leaves_out_untouched(backend):
    if backend.is_triton:
        pytest.skip("a combine raises only on the CPU backend: compiled Triton kernels cannot raise, and the "
                    "interpreter writes out tile by tile and reports the error as its own InterpreterError")
    fuzz(backend, _failing_combine, share=0.5)
