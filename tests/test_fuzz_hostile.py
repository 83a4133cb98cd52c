"""Differential fuzzing with hostile inputs, on the CPU backend's two paths (lengths
below 8192 take NumPy, longer ones the compiled kernels); the drawing helpers and
profiles are tests/test_fuzz.py's.

* NumPy arrays of non-native byte order (inputs, seeds, keys, coefficients and
  ``out``): every public function returns bit for bit what it returns for the same
  values in native byte order, and writes a swapped ``out`` with those values.
* A combine that raises part-way (:mod:`prefixscan.testing.failing`): the error
  reaches the caller, ``out`` and ``x`` are as they were, bit for bit, and the same
  call without the poison gives the sum (the plain-loop reference).
"""

from __future__ import annotations

import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import strategies as st  # noqa: E402

import prefixscan as ps  # noqa: E402
from prefixscan.testing import (  # noqa: E402
    ALL_DTYPES,
    FLOAT_DTYPES,
    INTEGER_DTYPES,
    assert_scan_equal,
    op_applies,
    poisoned,
    random_array,
    random_init,
    reference_scan,
    reference_segmented_scan,
)
from prefixscan.testing.failing import POISON, CombineFailed, poison_data, raising_sum_monoid  # noqa: E402

from .test_fuzz import (  # noqa: E402
    LAYOUTS,
    _rng,
    _seed_shape,
    assert_unchanged,
    draw_axis,
    draw_shape_like,
    fuzz,
    place,
    snapshot,
)

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
