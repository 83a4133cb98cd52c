"""segmented_scan (primitives/segmented/) by flags, offsets and keys, against the
plain-loop reference of prefixscan.testing.
"""

from __future__ import annotations

import numpy as np
import pytest

import prefixscan as ps
from prefixscan.testing import (
    affine_data,
    affine_monoid,
    assert_scan_equal,
    poisoned,
    random_array,
    reference_segmented_scan,
    tolerance_for,
)


def _random_flags(rng, n, p=0.15):
    f = rng.random(n) < p
    return f


def _random_offsets(rng, n, k):
    inner = np.sort(rng.integers(0, n + 1, size=k)) if n else np.zeros(k, dtype=np.int64)
    offs = np.concatenate([[0], inner])
    return offs.astype(np.int64)


def _random_keys(rng, n):
    runs = rng.integers(1, 6, size=n)
    keys = np.repeat(rng.integers(0, 4, size=n), runs)[:n]
    return keys


SEG_OPS = [("add", "int32"), ("add", "float64"), ("max", "float32"), ("mul", "int64"), ("xor", "uint8"),
           ("min", "int16"), ("logaddexp", "float64")]


def _seg_check(got, expected, op):
    rtol = 1e-12 if (op == "logaddexp") else 0.0
    if np.asarray(expected).dtype.kind in "biu":
        rtol = None
    assert_scan_equal(got, expected, rtol=rtol, n=1)


@pytest.mark.parametrize("reverse", [False, True], ids=["fwd", "rev"])
@pytest.mark.parametrize("inclusive", [True, False], ids=["inc", "exc"])
@pytest.mark.parametrize("op,dtype", SEG_OPS, ids=[f"{o}-{d}" for o, d in SEG_OPS])
@pytest.mark.parametrize("how", ["flags", "offsets", "keys"])
def test_segmented(rng, how, op, dtype, inclusive, reverse):
    for n in [1, 2, 17, 300]:
        x = random_array(rng, dtype, n, op)
        if how == "flags":
            flags = _random_flags(rng, n)
            flags[0] = bool(rng.integers(2))  # element 0 starts a segment either way
            kw = dict(flags=flags)
        elif how == "offsets":
            offs = _random_offsets(rng, n, int(rng.integers(0, 8)))
            kw = dict(offsets=offs)
        else:
            keys = _random_keys(rng, n)
            kw = dict(keys=keys)
        expected = reference_segmented_scan(x, op, inclusive=inclusive, reverse=reverse, **kw)
        got = ps.segmented_scan(x, op, inclusive=inclusive, reverse=reverse, **kw)
        assert isinstance(got, np.ndarray)
        _seg_check(got, expected, op)


def test_segmented_offsets_empty_segments_and_trailing_n():
    x = np.arange(1, 11, dtype=np.int64)
    # Segments [0,0) [0,3) [3,3) [3,7) [7,10) [10,10): empty ones included, trailing n.
    offs = np.array([0, 0, 3, 3, 7, 10])
    np.testing.assert_array_equal(ps.segmented_scan(x, offsets=offs), [1, 3, 6, 4, 9, 15, 22, 8, 17, 27])
    np.testing.assert_array_equal(ps.segmented_scan(x, offsets=offs, inclusive=False),
                                  [0, 1, 3, 0, 4, 9, 15, 0, 8, 17])
    np.testing.assert_array_equal(ps.segmented_scan(x, offsets=offs, reverse=True),
                                  [6, 5, 3, 22, 18, 13, 7, 27, 19, 10])
    np.testing.assert_array_equal(ps.segmented_scan(x, offsets=offs, reverse=True, inclusive=False),
                                  [5, 3, 0, 18, 13, 7, 0, 19, 10, 0])
    # Same segmentation as a Python list, as int32, as flags and as keys.
    np.testing.assert_array_equal(ps.segmented_scan(x, offsets=[0, 3, 7]), [1, 3, 6, 4, 9, 15, 22, 8, 17, 27])
    np.testing.assert_array_equal(ps.segmented_scan(x, offsets=np.array([0, 3, 7, 10], np.int32)),
                                  [1, 3, 6, 4, 9, 15, 22, 8, 17, 27])
    flags = np.zeros(10, bool)
    flags[[3, 7]] = True
    np.testing.assert_array_equal(ps.segmented_scan(x, flags=flags), [1, 3, 6, 4, 9, 15, 22, 8, 17, 27])
    keys = np.array([5, 5, 5, 2, 2, 2, 2, 5, 5, 5])
    np.testing.assert_array_equal(ps.segmented_scan(x, keys=keys), [1, 3, 6, 4, 9, 15, 22, 8, 17, 27])


def test_segmented_single_segment_is_scan(rng):
    x = random_array(rng, "int32", 500, "add")
    for kw in [dict(), dict(inclusive=False), dict(reverse=True), dict(reverse=True, inclusive=False)]:
        expected = ps.scan(x, "add", **kw)
        np.testing.assert_array_equal(ps.segmented_scan(x, "add", offsets=[0], **kw), expected)
        np.testing.assert_array_equal(ps.segmented_scan(x, "add", flags=np.zeros(500, bool), **kw), expected)
        np.testing.assert_array_equal(ps.segmented_scan(x, "add", keys=np.zeros(500, np.int8), **kw), expected)
    # Every element its own segment.
    np.testing.assert_array_equal(ps.segmented_scan(x, "add", flags=np.ones(500, bool)), x)
    np.testing.assert_array_equal(ps.segmented_scan(x, "add", offsets=np.arange(500)), x)
    np.testing.assert_array_equal(ps.segmented_scan(x, "add", keys=np.arange(500)), x)


@pytest.mark.parametrize("reverse", [False, True], ids=["fwd", "rev"])
@pytest.mark.parametrize("inclusive", [True, False], ids=["inc", "exc"])
def test_segmented_affine(rng, inclusive, reverse):
    for n in [1, 5, 64, 257]:
        a, b = affine_data(rng, n, "int64")
        offs = _random_offsets(rng, n, 5)
        expected = reference_segmented_scan((a, b), affine_monoid(), offsets=offs, inclusive=inclusive,
                                            reverse=reverse)
        got = ps.segmented_scan((a, b), affine_monoid(), offsets=offs, inclusive=inclusive, reverse=reverse)
        assert isinstance(got, tuple) and len(got) == 2
        for g, e in zip(got, expected):
            assert_scan_equal(g, e)
        flags = _random_flags(rng, n, 0.2)
        expected = reference_segmented_scan((a, b), affine_monoid(), flags=flags, inclusive=inclusive,
                                            reverse=reverse)
        got = ps.segmented_scan((a, b), affine_monoid(), flags=flags, inclusive=inclusive, reverse=reverse)
        for g, e in zip(got, expected):
            assert_scan_equal(g, e)


def test_segmented_dtype_kept_and_wraps():
    x = np.array([100, 100, 100, 100], dtype=np.int8)
    got = ps.segmented_scan(x, offsets=[0, 2])
    assert got.dtype == np.int8
    np.testing.assert_array_equal(got, np.array([100, -56, 100, -56], np.int8))


def test_segmented_empty():
    x = np.empty(0, dtype=np.float32)
    assert ps.segmented_scan(x, offsets=np.array([0])).shape == (0,)
    assert ps.segmented_scan(x, flags=np.empty(0, bool)).shape == (0,)
    assert ps.segmented_scan(x, keys=np.empty(0, np.int64)).shape == (0,)


@pytest.mark.parametrize("inclusive", [True, False], ids=["inc", "exc"])
@pytest.mark.parametrize("n", [0, 1, 2])
def test_segmented_tiny_torch_tensors_in_reverse(rng, n, inclusive):
    """A reversed host result of at most one element keeps a negative stride,
    which NumPy calls contiguous and torch.from_numpy refuses: it crashed."""
    torch = pytest.importorskip("torch")
    x = random_array(rng, "float64", n, "add")
    for given in (dict(offsets=[0]), dict(flags=np.ones(n, bool)), dict(keys=np.arange(n))):
        tensors = {k: torch.from_numpy(np.asarray(v)) for k, v in given.items()}
        got = ps.segmented_scan(torch.from_numpy(x), inclusive=inclusive, reverse=True, init=1.5, **tensors)
        assert isinstance(got, torch.Tensor) and got.shape == (n,)
        np.testing.assert_array_equal(got.numpy(), reference_segmented_scan(x, inclusive=inclusive, reverse=True,
                                                                            init=1.5, **given))


# ---------------------------------------------------------------------------
# Every backend present (cpu; the Triton kernel in its interpreter, or on CUDA):
# one body, the backend's arrays in and out.  Interpreter tiles hold 32 elements,
# so these sizes put segments across tile boundaries and tiles without heads.

BACKEND_SIZES = [1, 31, 32, 33, 97, 160]


def _segments_for(rng, how, n, backend, kind="random"):
    """(keyword, NumPy description) of a segmentation of n elements."""
    if kind == "one":  # one segment covering everything
        heads = np.zeros(n, bool)
    elif kind == "singletons":
        heads = np.ones(n, bool)
    elif kind == "long":  # segments longer than a tile
        heads = rng.random(n) < 0.02
    else:
        heads = rng.random(n) < 0.12
    if how == "flags":
        return "flags", heads
    if how == "keys":
        return "keys", (np.cumsum(heads | (rng.random(n) < 0.0)) * 3 - 7).astype(np.int16)
    offs = np.flatnonzero(heads)
    extra = offs[: 2] if kind == "random" else offs[:0]  # empty segments
    return "offsets", np.sort(np.concatenate([[0], offs, extra, [n] if n % 2 else []])).astype(np.int64)


def _run(backend, x, op, name, given, **kwargs):
    return backend.to_numpy(ps.segmented_scan(backend.asarray(x), op, backend=backend.backend,
                                              **{name: backend.asarray(given)}, **kwargs))


@pytest.mark.parametrize("inclusive,reverse", [(True, False), (False, False), (True, True), (False, True)],
                         ids=["inc", "exc", "inc-rev", "exc-rev"])
@pytest.mark.parametrize("how", ["flags", "offsets", "keys"])
def test_every_backend(backend, rng, how, inclusive, reverse):
    for n in BACKEND_SIZES:
        x = random_array(rng, "int32", n, "add")
        name, given = _segments_for(rng, how, n, backend)
        # Interpreted (about 0.1 s a launch): one init per length, both across the lengths.
        for init in (None, -5) if backend.name != "triton-interpreter" else ((None, -5)[n % 2],):
            expected = reference_segmented_scan(x, "add", inclusive=inclusive, reverse=reverse, init=init,
                                                **{name: given})
            got = _run(backend, x, "add", name, given, inclusive=inclusive, reverse=reverse, init=init)
            np.testing.assert_array_equal(got, expected, err_msg=f"n={n} init={init}")


@pytest.mark.parametrize("kind", ["one", "singletons", "long"])
@pytest.mark.parametrize("how", ["flags", "offsets", "keys"])
def test_every_backend_shapes_of_segments(backend, rng, how, kind):
    n = 97
    x = random_array(rng, "int64", n, "add")
    name, given = _segments_for(rng, how, n, backend, kind)
    for reverse in (False, True):
        expected = reference_segmented_scan(x, "add", reverse=reverse, **{name: given})
        np.testing.assert_array_equal(_run(backend, x, "add", name, given, reverse=reverse), expected)
    if kind == "one":
        np.testing.assert_array_equal(_run(backend, x, "add", name, given), np.cumsum(x))
    if kind == "singletons":
        np.testing.assert_array_equal(_run(backend, x, "add", name, given), x)


BACKEND_OPS = [("max", "float32"), ("min", "uint8"), ("xor", "int16"), ("mul", "int64"), ("or", "bool"),
               ("logaddexp", "float32")]


@pytest.mark.parametrize("op,dtype", BACKEND_OPS, ids=[f"{o}-{d}" for o, d in BACKEND_OPS])
def test_every_backend_operators(backend, rng, op, dtype):
    n = 75
    x = random_array(rng, dtype, n, op)
    name, given = _segments_for(rng, "offsets", n, backend)
    for inclusive, reverse in [(True, False), (False, True)]:
        expected = reference_segmented_scan(x, op, inclusive=inclusive, reverse=reverse, **{name: given})
        got = _run(backend, x, op, name, given, inclusive=inclusive, reverse=reverse)
        assert got.dtype == x.dtype
        assert_scan_equal(got, expected, **tolerance_for(x, op))


@pytest.mark.parametrize("monoid_name", ["affine", "matmul2"])
@pytest.mark.parametrize("how", ["flags", "offsets"])
def test_every_backend_non_commutative_struct(backend, rng, how, monoid_name):
    from prefixscan.testing import matmul2_data, matmul2_monoid

    n = 70
    if monoid_name == "affine":
        x, monoid, init = affine_data(rng, n, "int64"), affine_monoid(), (3, -2)
    else:
        x, monoid, init = matmul2_data(rng, n, "int64"), matmul2_monoid(), (1, 2, 0, 1)
    name, given = _segments_for(rng, how, n, backend)
    for inclusive, reverse, seed in [(True, False, None), (False, False, init), (True, True, init),
                                     (False, True, None)]:
        expected = reference_segmented_scan(x, monoid, inclusive=inclusive, reverse=reverse, init=seed,
                                            **{name: given})
        got = backend.to_numpy(ps.segmented_scan(backend.asarray(x), monoid, inclusive=inclusive, reverse=reverse,
                                                 init=seed, backend=backend.backend,
                                                 **{name: backend.asarray(given)}))
        assert isinstance(got, tuple) and len(got) == len(x)
        for g, e in zip(got, expected):
            np.testing.assert_array_equal(g, e)


def test_every_backend_dtype_and_out(backend, rng):
    n = 67
    x = random_array(rng, "int8", n, "add")
    name, given = _segments_for(rng, "flags", n, backend)
    expected = reference_segmented_scan(x, "add", dtype="int32", **{name: given})
    got = _run(backend, x, "add", name, given, dtype="int32")
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, expected)
    out = backend.asarray(poisoned((n,), "int32"))
    result = ps.segmented_scan(backend.asarray(x), "add", dtype="int32", out=out, backend=backend.backend,
                               **{name: backend.asarray(given)})
    assert result is out
    np.testing.assert_array_equal(backend.to_numpy(out), expected)
    # out aliasing x (in place)
    y = backend.asarray(x.astype(np.int32))
    ps.segmented_scan(y, "add", out=y, inclusive=False, backend=backend.backend, **{name: backend.asarray(given)})
    np.testing.assert_array_equal(backend.to_numpy(y),
                                  reference_segmented_scan(x.astype(np.int32), inclusive=False, **{name: given}))


BAD_SEGMENTS = [
    ("flags", dict(flags=np.zeros(9, bool)), ValueError),
    ("flags", dict(flags=np.zeros(10, np.int8)), TypeError),
    ("offsets", dict(offsets=np.array([1, 5])), ValueError),
    ("offsets", dict(offsets=np.array([0, 6, 4])), ValueError),
    ("offsets", dict(offsets=np.array([0, 11])), ValueError),
    ("offsets", dict(offsets=np.array([0.0, 2.5])), TypeError),
    ("offsets", dict(offsets=np.zeros(0, np.int64)), ValueError),
    ("keys", dict(keys=np.zeros(11, np.int32)), ValueError),
    (("flags", "offsets", "keys"), dict(flags=np.zeros(10, bool), offsets=np.array([0])), ValueError),
    ("init", dict(offsets=np.array([0]), init=np.ones(3)), ValueError),
    ("out", dict(offsets=np.array([0]), out=np.zeros(9, np.int64)), ValueError),
    ("out", dict(offsets=np.array([0]), out=np.zeros(10, np.uint64)), TypeError),  # int64 casts to it unsafely
    ("out", dict(offsets=np.array([0]), out=np.zeros(10, bool)), TypeError),
]


@pytest.mark.parametrize("names,kwargs,error", BAD_SEGMENTS, ids=[f"{i}" for i in range(len(BAD_SEGMENTS))])
def test_every_backend_refuses_before_work(backend, names, kwargs, error):
    import re

    x = np.arange(1, 11, dtype=np.int64)
    out = backend.asarray(poisoned((10,), "int64"))
    before = backend.to_numpy(out).copy()
    args = {k: (backend.asarray(v) if isinstance(v, np.ndarray) and k not in ("init",) else v)
            for k, v in kwargs.items()}
    args.setdefault("out", out)
    with pytest.raises(error) as excinfo:
        ps.segmented_scan(backend.asarray(x), "add", backend=backend.backend, **args)
    names = (names,) if isinstance(names, str) else names
    assert any(re.search(rf"\b{n}\b", str(excinfo.value)) for n in names), str(excinfo.value)
    np.testing.assert_array_equal(backend.to_numpy(out), before)
