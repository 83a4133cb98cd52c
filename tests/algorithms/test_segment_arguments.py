"""The segment arguments on every backend: ``offsets`` (of ``segmented_scan`` and
``linear_recurrence``: one rule, checked as the values they are whatever their
dtype and byte order) and ``keys`` (one dtype rule, compared with NumPy's ``==``).

The CPU sizes straddle the compiled path's threshold (NumPy below it, Numba
kernels from it on); the interpreter's sizes span several of its tiles.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import prefixscan as ps
from prefixscan.backends.cpu.compiled import SMALL_SCAN
from prefixscan.testing import poisoned, random_array, reference_linear_recurrence, reference_segmented_scan


def _sizes(backend) -> list[int]:
    """One size on the CPU's NumPy path and one on its compiled path; several tiles on devices."""
    if backend.name == "cpu":
        return [37, SMALL_SCAN + 37]
    if backend.name == "triton-interpreter":
        return [70]
    return [37, 100_003]


def _place(backend, given):
    """``given`` (a list, or a NumPy array of any dtype and byte order) as the backend
    passes it: NumPy arrays as they are on the host (x on the CPU takes host arrays
    on any backend), native arrays as tensors on a GPU; None where a GPU cannot take it."""
    if isinstance(given, list) or backend.device in (None, "cpu") and not given.dtype.isnative:
        return given
    if not given.dtype.isnative:
        return None  # a big-endian host array is on another device than CUDA tensors
    return backend.asarray(given)


def _random_offsets(rng, n: int) -> np.ndarray:
    """Starts of random segments, with empty segments (repeats) and sometimes the final n."""
    heads = np.flatnonzero(rng.random(n) < 0.1)
    repeats = heads[:3]
    tail = [n] if rng.random() < 0.5 else []
    return np.sort(np.concatenate([[0], heads, repeats, tail])).astype(np.int64)


OFFSET_FORMS = ["int64", "int32", "uint16", "uint32", "uint64", ">i8", ">i4", ">u4", ">u8", "list"]


def _offsets_as(offsets: np.ndarray, form: str):
    return offsets.tolist() if form == "list" else offsets.astype(form)


@pytest.mark.parametrize("form", OFFSET_FORMS)
def test_offsets_of_any_integer_dtype_and_byte_order(backend, rng, form):
    """Unsigned and big-endian offsets mean what their values say, on both CPU paths and on devices."""
    for n in _sizes(backend):
        if form != "list" and np.iinfo(np.dtype(form)).max < n:
            continue  # offsets up to n do not fit this dtype
        x = random_array(rng, "int64", n, "add")
        offsets = _random_offsets(rng, n)
        given = _place(backend, _offsets_as(offsets, form))
        if given is None:
            pytest.skip("a big-endian host array does not go with device arrays")
        for inclusive, reverse, init in ((True, False, None), (False, True, 3)):
            expected = reference_segmented_scan(x, offsets=offsets, inclusive=inclusive, reverse=reverse, init=init)
            got = ps.segmented_scan(backend.asarray(x), offsets=given, inclusive=inclusive, reverse=reverse,
                                    init=init, backend=backend.backend)
            np.testing.assert_array_equal(backend.to_numpy(got), expected, err_msg=f"n={n} {form}")


BAD_OFFSETS = [
    # (values, form, what the message must show)
    ([0, 2**63 + 2**62, 5], "uint64", "13835058055282163712"),  # not a negative int64
    ([0, 2**64 - 1], "uint64", "18446744073709551615"),
    ([0, 2**63], ">u8", "9223372036854775808"),
    ([0, 30, 20], "uint64", "non-decreasing"),  # np.diff of unsigned values wraps
    ([0, 30, 20], "uint32", "non-decreasing"),
    ([0, 30, 20], ">u4", "non-decreasing"),
    ([0, 2**62, 5], ">i8", "4611686018427387904"),
    ([0, -1], "int64", "-1"),
    ([0, 2**70], "list", "1180591620717411303424"),
    ([0, 5, -(2**63)], "int64", "-9223372036854775808"),  # the difference of these two wraps in int64
    ([4, 5], "uint16", "start at 0"),
]


@pytest.mark.parametrize("values,form,shown", BAD_OFFSETS, ids=[f"{i}" for i in range(len(BAD_OFFSETS))])
def test_offsets_out_of_range_or_decreasing_are_refused_before_work(backend, values, form, shown):
    for n in _sizes(backend) + ([20000] if backend.name == "cpu" else []):
        given = values if form == "list" else np.array(values, dtype=np.int64 if values[-1] < 0 else np.uint64)
        given = _place(backend, given if form == "list" else given.astype(form))
        if given is None:
            pytest.skip("a big-endian host array does not go with device arrays")
        out = backend.asarray(poisoned((n,), "float64"))
        before = backend.to_numpy(out).copy()
        with pytest.raises(ValueError, match="offsets") as excinfo:
            ps.segmented_scan(backend.asarray(np.ones(n)), offsets=given, out=out, backend=backend.backend)
        assert shown in str(excinfo.value), str(excinfo.value)
        np.testing.assert_array_equal(backend.to_numpy(out), before)


def test_offsets_that_are_not_integers_are_refused(backend):
    x = backend.asarray(np.ones(10))
    for given in ([0.0, 2.5], np.array([0.0, 5.0]), [True, False], np.array([[0, 5]]), [0, "5"]):
        with pytest.raises(TypeError, match="offsets"):
            ps.segmented_scan(x, offsets=given, backend=backend.backend)
    with pytest.raises(ValueError, match="offsets"):
        ps.segmented_scan(x, offsets=[], backend=backend.backend)


# ---------------------------------------------------------------------------
# One meaning of offsets: linear_recurrence takes what segmented_scan takes.

SAME_OFFSETS = [
    # (offsets for n = 9, the bounds of the sequences they give)
    ([0, 3, 3, 9], [0, 3, 3, 9]),  # an empty sequence
    ([0, 3], [0, 3, 9]),  # the final n left out
    ([0, 3, 9], [0, 3, 9]),
    ([0], [0, 9]),
    ([0, 9, 9], [0, 9, 9]),  # an empty last sequence
    ([0, 0, 4], [0, 0, 4, 9]),  # an empty first one
]


def _pieces(a, b, init, bounds, reverse):
    """Each sequence on its own with the reference: (h, final states)."""
    hs, finals = [], []
    for k, (s, e) in enumerate(zip(bounds[:-1], bounds[1:])):
        seed = None if init is None else init[:, k]
        h = reference_linear_recurrence(a[:, s:e], b[:, s:e], init=seed, axis=1, reverse=reverse)
        hs.append(h)
        if e > s:
            finals.append(h[:, 0 if reverse else -1])
        else:  # no step: the seed, or 0
            finals.append(np.zeros(a.shape[0], a.dtype) if seed is None else seed)
    return np.concatenate(hs, axis=1), np.stack(finals, axis=1)


@pytest.mark.parametrize("offsets,bounds", SAME_OFFSETS, ids=[str(o) for o, _ in SAME_OFFSETS])
def test_linear_recurrence_takes_the_offsets_segmented_scan_takes(backend, rng, offsets, bounds):
    n = 9
    b = rng.integers(-9, 10, size=(2, n)).astype(np.float64)
    x = backend.asarray(b[0])
    # A recurrence with a = 1 is a segmented sum: the same segments, the same sums.
    ones = np.ones((2, n))
    summed = backend.to_numpy(ps.linear_recurrence(backend.asarray(ones), backend.asarray(b), offsets=offsets,
                                                   backend=backend.backend))
    np.testing.assert_array_equal(summed[0], backend.to_numpy(ps.segmented_scan(x, offsets=offsets,
                                                                                backend=backend.backend)))
    a = rng.uniform(0.2, 0.9, size=(2, n))
    for reverse in (False, True):
        for form in ("list", "uint32", ">i8"):
            given = _place(backend, _offsets_as(np.array(offsets), form))
            if given is None:
                continue
            init = rng.normal(size=(2, len(bounds) - 1))
            h, final = ps.linear_recurrence(backend.asarray(a), backend.asarray(b), init=backend.asarray(init),
                                            offsets=given, return_final=True, reverse=reverse,
                                            backend=backend.backend)
            eh, ef = _pieces(a, b, init, bounds, reverse)
            np.testing.assert_allclose(backend.to_numpy(h), eh, rtol=1e-12, err_msg=f"{form} reverse={reverse}")
            np.testing.assert_allclose(backend.to_numpy(final), ef, rtol=1e-12, err_msg=f"{form} reverse={reverse}")


@pytest.mark.parametrize("values,form,shown", BAD_OFFSETS, ids=[f"{i}" for i in range(len(BAD_OFFSETS))])
def test_linear_recurrence_refuses_what_segmented_scan_refuses(backend, values, form, shown):
    n = 60
    given = values if form == "list" else np.array(values, dtype=np.int64 if values[-1] < 0 else np.uint64)
    given = _place(backend, given if form == "list" else given.astype(form))
    if given is None:
        pytest.skip("a big-endian host array does not go with device arrays")
    a = backend.asarray(np.full((2, n), 0.5))
    with pytest.raises(ValueError, match="offsets") as excinfo:
        ps.linear_recurrence(a, a, offsets=given, backend=backend.backend)
    assert shown in str(excinfo.value), str(excinfo.value)


def test_linear_recurrence_offsets_of_an_empty_axis(backend):
    a = backend.asarray(np.zeros((2, 0)))
    h, final = ps.linear_recurrence(a, a, offsets=[0], return_final=True, backend=backend.backend)
    assert backend.to_numpy(h).shape == (2, 0) and backend.to_numpy(final).shape == (2, 0)
    init = np.array([[1.5, -2.0], [3.0, 4.0]])
    h, final = ps.linear_recurrence(a, a, offsets=[0, 0, 0], init=backend.asarray(init), return_final=True,
                                    backend=backend.backend)
    np.testing.assert_array_equal(backend.to_numpy(final), init)


def test_linear_recurrence_offsets_on_the_compiled_path(rng):
    """Packed sequences with empty ones at the compiled CPU path's size."""
    n = SMALL_SCAN + 5
    a, b = rng.uniform(0.2, 0.9, size=(1, n)), rng.normal(size=(1, n))
    offsets = np.array([0, 100, 100, 5000, n, n], dtype=">u8")
    init = rng.normal(size=(1, 5))
    h, final = ps.linear_recurrence(a, b, init=init, offsets=offsets, return_final=True)
    eh, ef = _pieces(a, b, init, [0, 100, 100, 5000, n, n], False)
    np.testing.assert_allclose(h, eh, rtol=1e-10)
    np.testing.assert_allclose(final, ef, rtol=1e-10)


# ---------------------------------------------------------------------------
# keys: one dtype rule, compared with NumPy's ==.

def _float_keys(rng, n: int) -> np.ndarray:
    """Runs of keys among 0.0, -0.0 (equal to 0.0), NaN (equal to nothing), inf and a few numbers."""
    choices = np.array([0.0, -0.0, np.nan, np.inf, -1.5, 2.0, 2.0])
    runs = rng.integers(1, 5, size=n)
    return np.repeat(rng.choice(choices, size=n), runs)[:n]


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "bfloat16"])
def test_float_keys_compare_as_numpy_does(backend, rng, dtype):
    """A segment starts where keys[i] != keys[i - 1]: -0.0 continues a run of 0.0, every
    NaN starts one; the same on every backend for every float dtype."""
    if dtype == "bfloat16" and backend.device is None:
        pytest.skip("NumPy has no bfloat16 (the CPU backend's torch tensors: test_bfloat16_keys_on_the_cpu)")
    for n in _sizes(backend):
        x = random_array(rng, "int32", n, "add")
        keys = _float_keys(rng, n)
        heads = np.ones(n, bool)
        heads[1:] = keys[1:] != keys[:-1]
        assert not heads[1:].all() and heads[1:].any()
        expected = reference_segmented_scan(x, flags=heads)
        np.testing.assert_array_equal(expected, reference_segmented_scan(x, keys=keys))
        if dtype == "bfloat16":
            import torch

            given = torch.from_numpy(keys).to(torch.bfloat16).to(backend.device)
        else:
            given = backend.asarray(keys.astype(dtype))
        for reverse in (False, True):
            got = ps.segmented_scan(backend.asarray(x), keys=given, reverse=reverse, backend=backend.backend)
            np.testing.assert_array_equal(backend.to_numpy(got), reference_segmented_scan(x, flags=heads,
                                                                                            reverse=reverse),
                                          err_msg=f"n={n} {dtype} reverse={reverse}")


def test_bfloat16_keys_on_the_cpu(rng):
    torch = pytest.importorskip("torch")
    for n in (37, SMALL_SCAN + 37):
        x = random_array(rng, "int32", n, "add")
        keys = _float_keys(rng, n)
        got = ps.segmented_scan(torch.from_numpy(x), keys=torch.from_numpy(keys).to(torch.bfloat16), backend="cpu")
        np.testing.assert_array_equal(got.numpy(), reference_segmented_scan(x, keys=keys))


@pytest.mark.parametrize("dtype", ["bool", "int8", "uint16", "int32", "uint64", ">i4", ">f8", ">u8"])
def test_integer_bool_and_big_endian_keys(backend, rng, dtype):
    for n in _sizes(backend):
        x = random_array(rng, "int64", n, "add")
        keys = np.repeat(rng.integers(0, 2 if dtype == "bool" else 3, size=n), rng.integers(1, 4, size=n))[:n]
        keys = keys.astype(dtype)
        given = _place(backend, keys)
        if given is None:
            pytest.skip("a big-endian host array does not go with device arrays")
        got = ps.segmented_scan(backend.asarray(x), keys=given, backend=backend.backend)
        np.testing.assert_array_equal(backend.to_numpy(got), reference_segmented_scan(x, keys=keys))


NOT_KEYS = [
    ("object", lambda n: np.arange(n).astype(object)),
    ("datetime64", lambda n: np.arange(n).astype("datetime64[s]")),
    ("timedelta64", lambda n: np.arange(n).astype("timedelta64[s]")),
    ("structured", lambda n: np.zeros(n, [("a", "i4")])),
    ("str", lambda n: np.array(["a"] * n)),
    ("bytes", lambda n: np.array([b"a"] * n)),
    ("complex", lambda n: np.zeros(n, np.complex64)),
]


@pytest.mark.parametrize("kind,make", NOT_KEYS, ids=[k for k, _ in NOT_KEYS])
def test_keys_that_are_not_numbers_are_refused_before_work(backend, kind, make):
    for n in _sizes(backend):
        keys = make(n)
        if backend.device not in (None, "cpu"):
            if kind != "complex":
                continue  # the host array is refused as being on another device
            keys = backend.asarray(keys)
        out = backend.asarray(poisoned((n,), "float64"))
        before = backend.to_numpy(out).copy()
        with pytest.raises(TypeError, match=r"\bkeys\b"):
            ps.segmented_scan(backend.asarray(np.ones(n)), keys=keys, out=out, backend=backend.backend)
        np.testing.assert_array_equal(backend.to_numpy(out), before)


def test_complex_keys_are_refused_as_tensors_too():
    torch = pytest.importorskip("torch")
    x = torch.ones(10)
    for backend in ("cpu",):
        with pytest.raises(TypeError, match=r"\bkeys\b"):
            ps.segmented_scan(x, keys=torch.zeros(10, dtype=torch.complex64), backend=backend)


# ---------------------------------------------------------------------------
# dask arrays: the same checks on the host description.

def test_dask_offsets_checked_as_values():
    da = pytest.importorskip("dask.array")
    x_np = np.arange(1, 41, dtype=np.int64)
    x = da.from_array(x_np, chunks=7)
    offsets = np.array([0, 5, 5, 19, 33], dtype=">u8")
    expected = reference_segmented_scan(x_np, offsets=offsets.astype(np.int64))
    np.testing.assert_array_equal(ps.segmented_scan(x, offsets=offsets).compute(), expected)
    for bad in (np.array([0, 2**63 + 5], np.uint64), np.array([0, 20, 10], np.uint32)):
        with pytest.raises(ValueError, match="offsets"):
            ps.segmented_scan(x, offsets=bad)
    with pytest.raises(TypeError, match=re.escape("keys")):
        ps.segmented_scan(x, keys=np.arange(40).astype("datetime64[s]"))


def test_masked_segment_descriptions_are_refused():
    """A mask would be dropped silently: refused, naming the argument."""
    x = np.arange(10.0)
    offsets = np.ma.masked_array([0, 4, 20], mask=[False, False, True])
    for name, given in (("offsets", offsets), ("keys", np.ma.masked_array(np.zeros(10), mask=np.eye(10)[0])),
                        ("flags", np.ma.masked_array(np.zeros(10, bool), mask=np.eye(10, dtype=bool)[0]))):
        with pytest.raises(TypeError, match=rf"\b{name}\b.*masked"):
            ps.segmented_scan(x, **{name: given})
    with pytest.raises(TypeError, match=r"\boffsets\b.*masked"):
        ps.linear_recurrence(np.ones((2, 10)), np.ones((2, 10)), offsets=offsets)
