"""sort, argsort, unique and run_length_encode (primitives/sort/) on every backend
present, against the plain-loop references of prefixscan.testing and NumPy.

Each body runs on the CPU (NumPy below the compiled threshold, the Numba radix sort
from it on), in the Triton interpreter on CPU torch tensors (Onesweep's kernels with
32-key tiles and a look-back window of 4, so that a few hundred keys cross several
windows) and on a GPU.  A digit pass costs the interpreter about 0.03 s a tile, so
its cases are few and small: one tile per dtype, several tiles where the look-back
is what is tested.  Keys are drawn from a pool a third of their number (equal keys:
stability shows), integers over their whole range, floats with NaNs of both signs
and other payloads, -0.0 and 0.0, infinities and subnormals; sorted keys are
compared bit for bit (-0.0 stays -0.0).  What only the kernels have (tiles, the
passes skipped, the launches) is in tests/backends/triton/test_sort.py, the
argument checks in tests/algorithms/test_sort_arguments.py.
"""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

import prefixscan as ps
from prefixscan.backends.cpu.compiled import SMALL_SCAN
from prefixscan.testing import reference_argsort, reference_run_length_encode, reference_unique

DTYPES = ["bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64", "float16", "float32",
          "float64", "bfloat16"]
#: Float dtypes' bits: (storage, +inf's bits).
FLOAT_BITS = {"float16": (np.uint16, 0x7C00), "float32": (np.uint32, 0x7F800000),
              "float64": (np.uint64, 0x7FF0000000000000)}


def interpreted(backend) -> bool:
    return backend.name == "triton-interpreter"


def random_keys(rng, dtype: str, n: int) -> np.ndarray:
    """``n`` keys of ``dtype`` (bfloat16: float32 values that bfloat16 holds exactly)
    from a pool of about n / 3 values."""
    pool_size = max(1, n // 3)
    if dtype == "bool":
        return rng.random(n) < 0.5
    if dtype == "bfloat16":
        import torch

        return torch.from_numpy(random_keys(rng, "float32", n)).to(torch.bfloat16).float().numpy()
    if np.dtype(dtype).kind in "iu":
        info = np.iinfo(dtype)
        pool = rng.integers(info.min, info.max, pool_size, dtype=dtype, endpoint=True)
    else:
        storage, inf = FLOAT_BITS[dtype]
        sign = 1 << (8 * np.dtype(dtype).itemsize - 1)
        special = np.array([inf | 1, inf | (inf >> 1), sign | inf | 3, sign, 0, inf, sign | inf, 1, sign | 1],
                           dtype=storage).view(dtype)  # NaNs, -0.0, 0.0, +-inf, +-the smallest subnormal
        normal = (rng.standard_normal(pool_size) * 10.0 ** rng.integers(-3, 4, pool_size)).astype(dtype)
        pool = np.concatenate([normal, special])
    return pool[rng.integers(0, pool.size, n)]


def place(backend, keys: np.ndarray, dtype: str):
    """Keys in the backend's array type (bfloat16: a torch tensor, on the CPU too)."""
    if dtype != "bfloat16":
        return backend.asarray(keys.astype(dtype))
    import torch

    return torch.from_numpy(keys).to(backend.device or "cpu").to(torch.bfloat16)


def bits(a) -> np.ndarray:
    """An array's or tensor's elements as unsigned integers of their width."""
    if type(a).__module__.startswith("torch"):
        import torch

        a = a.detach().cpu()
        if a.dtype == torch.bfloat16:
            return a.view(torch.int16).numpy().view(np.uint16)
        a = a.numpy()
    a = np.ascontiguousarray(a)
    return a.view(np.dtype(f"u{a.dtype.itemsize}"))


def sizes(backend) -> list[int]:
    """Lengths: the CPU's NumPy path and its compiled path; one tile in the interpreter."""
    if backend.name == "cpu":
        return [1, 2, 97, SMALL_SCAN + 1]
    if interpreted(backend):
        return [20]
    return [1, 31, 4097, 1_000_003]


def check_sorted(backend, xb, got_keys, perm: np.ndarray, *, axis=-1, descending=False):
    """``perm`` is the reference's permutation and ``got_keys`` x's bits in that order."""
    x = backend.to_numpy(xb)
    expected = reference_argsort(x, axis=axis, descending=descending)
    np.testing.assert_array_equal(perm, expected)
    flat = bits(xb).reshape(-1) if axis is None else bits(xb)
    np.testing.assert_array_equal(bits(got_keys), np.take_along_axis(flat, expected, 0 if axis is None else axis))


def sort_with_index(backend, xb, axis=-1, **kwargs):
    """``(sorted keys, permutation)`` from one sort carrying each key's index along
    ``axis`` as its value (and, off the interpreter, the same permutation from argsort)."""
    shape = tuple(xb.shape)
    if axis is None:  # int32: the compiled CPU sort moves it as argsort moves its indices (one Numba form)
        index = np.arange(int(np.prod(shape)), dtype=np.int32).reshape(shape)
    else:
        ax = axis % len(shape)
        index = np.broadcast_to(np.arange(shape[ax], dtype=np.int32).reshape((-1,) + (1,) * (len(shape) - ax - 1)),
                                shape).copy()
    keys, moved = ps.sort(xb, axis=axis, values=backend.asarray(index), backend=backend.backend, **kwargs)
    perm = backend.to_numpy(moved)
    if axis is None:
        perm = perm.reshape(-1)
    if not interpreted(backend):
        np.testing.assert_array_equal(backend.to_numpy(ps.argsort(xb, axis=axis, backend=backend.backend, **kwargs)),
                                      perm)
    return keys, perm


@pytest.mark.parametrize("dtype", DTYPES)
def test_every_dtype(backend, rng, dtype):
    """argsort and sort ascending, and a descending sort carrying the indices as
    values, against the reference; the interpreter runs one sort per dtype (a 64-bit
    key takes 16 passes there): the keys alone ascending, or descending with values,
    in turn."""
    if dtype == "bfloat16" and not backend.is_triton:
        pytest.importorskip("torch")
    turn = DTYPES.index(dtype) % 2
    for n in sizes(backend):
        keys = random_keys(rng, dtype, n)
        xb = place(backend, keys, dtype)
        before = bits(xb).copy()
        expected = reference_argsort(keys)
        if not interpreted(backend):
            perm = ps.argsort(xb, backend=backend.backend)
            assert type(perm) is type(xb) and backend.to_numpy(perm).dtype == np.int64
            np.testing.assert_array_equal(backend.to_numpy(perm), expected)
        if not interpreted(backend) or turn == 0:
            got = ps.sort(xb, backend=backend.backend)
            assert type(got) is type(xb) and got.dtype == xb.dtype and got.shape == xb.shape
            check_sorted(backend, xb, got, expected)
        if not interpreted(backend) or turn == 1:
            got, perm = sort_with_index(backend, xb, descending=True)
            check_sorted(backend, xb, got, perm, descending=True)
        np.testing.assert_array_equal(bits(xb), before)  # the input is left as it was


def test_stable_across_tiles_and_look_back_windows(backend, rng):
    """Few distinct keys over many tiles: each digit's count is carried by look-back
    past the window (the interpreter's 4 tiles); ascending int8, and descending int64
    keys sorted on 3 bits (one pass)."""
    n = {"cpu": SMALL_SCAN + 3, "triton-interpreter": 165}.get(backend.name, 1_000_003)
    small = rng.integers(0, 8, n)
    xb = backend.asarray(small.astype(np.int8))
    np.testing.assert_array_equal(backend.to_numpy(ps.argsort(xb, backend=backend.backend)),
                                  np.argsort(small, kind="stable"))
    xb = backend.asarray(small.astype(np.int64))
    perm = backend.to_numpy(ps.argsort(xb, descending=True, key_bits=3, backend=backend.backend))
    np.testing.assert_array_equal(perm, np.argsort(-small, kind="stable"))
    np.testing.assert_array_equal(perm, reference_argsort(small, descending=True))


def test_values_move_with_their_keys(backend, rng):
    """One values array (moved by the passes themselves), a tuple of them (following the
    permutation, complex values too), over several tiles and every pass of float16 keys."""
    n = {"cpu": SMALL_SCAN + 5, "triton-interpreter": 40}.get(backend.name, 100_003)
    keys = random_keys(rng, "float16", n)
    xb = backend.asarray(keys)
    v1 = rng.standard_normal(n).astype(np.float32)
    v2 = (rng.standard_normal(n) + 1j * rng.standard_normal(n)).astype(np.complex64)
    v3 = rng.integers(-100, 100, n).astype(np.int16)
    expected = reference_argsort(keys)
    got, moved = ps.sort(xb, values=backend.asarray(v1), backend=backend.backend)
    check_sorted(backend, xb, got, expected)
    np.testing.assert_array_equal(backend.to_numpy(moved), v1[expected])
    got, moved = ps.sort(xb, values=(backend.asarray(v2), backend.asarray(v3)), backend=backend.backend)
    assert isinstance(moved, tuple) and len(moved) == 2
    check_sorted(backend, xb, got, expected)
    np.testing.assert_array_equal(backend.to_numpy(moved[0]), v2[expected])
    np.testing.assert_array_equal(backend.to_numpy(moved[1]), v3[expected])


def test_rows_sorted_independently(backend, rng):
    """Rows of a 2-D array along the last axis and along the first: random, already
    sorted, reversed and all-equal rows side by side."""
    length = {"cpu": 2100, "triton-interpreter": 37}.get(backend.name, 5003)
    pool = np.array([3, 9, 1, 14, 7, 0, 12], np.uint8)
    rows = np.stack([pool[rng.integers(0, pool.size, length)], np.sort(pool[rng.integers(0, 7, length)]),
                     np.sort(pool[rng.integers(0, 7, length)])[::-1], np.full(length, 9, np.uint8)])
    xb = backend.asarray(rows)
    keys, perm = sort_with_index(backend, xb)
    check_sorted(backend, xb, keys, perm)
    np.testing.assert_array_equal(perm[1], np.arange(length))  # sorted stays, equal keys in input order
    np.testing.assert_array_equal(perm[3], np.arange(length))
    if not interpreted(backend):
        xb = backend.asarray(rows.T.copy())
        keys, perm = sort_with_index(backend, xb, axis=0, descending=True)
        check_sorted(backend, xb, keys, perm, axis=0, descending=True)


@pytest.mark.parametrize("axis", [0, 1, -1, None])
def test_axes_of_a_3d_array(backend, rng, axis):
    shape = (2, 3, 5) if interpreted(backend) else (5, 2000, 3)
    x = rng.integers(0, 16, shape).astype(np.int16)  # one digit pass in the interpreter
    xb = backend.asarray(x)
    keys, perm = sort_with_index(backend, xb, axis=axis)
    assert perm.shape == ((x.size,) if axis is None else x.shape)
    check_sorted(backend, xb, keys, perm, axis=axis)


def test_empty_one_and_all_equal(backend, rng):
    for shape in [(0,), (3, 0), (0, 4)]:
        xb = backend.asarray(np.zeros(shape, np.float32))
        assert backend.to_numpy(ps.sort(xb, backend=backend.backend)).shape == shape
        perm = ps.argsort(xb, backend=backend.backend)
        assert backend.to_numpy(perm).shape == shape and backend.to_numpy(perm).dtype == np.int64
        _, moved = ps.sort(xb, values=backend.asarray(np.ones(shape, np.int32)), backend=backend.backend)
        assert backend.to_numpy(moved).shape == shape
    xb = backend.asarray(np.array([-2.5]))
    assert backend.to_numpy(ps.sort(xb, descending=True, backend=backend.backend)).tolist() == [-2.5]
    assert backend.to_numpy(ps.argsort(xb, backend=backend.backend)).tolist() == [0]
    n = {"triton-interpreter": 70}.get(backend.name, SMALL_SCAN + 7)
    same = np.full(n, rng.integers(1, 1 << 40), np.int64)  # every digit pass skipped
    got, moved = ps.sort(backend.asarray(same), values=backend.asarray(np.arange(n, dtype=np.int32)),
                         backend=backend.backend)
    np.testing.assert_array_equal(backend.to_numpy(got), same)
    np.testing.assert_array_equal(backend.to_numpy(moved), np.arange(n))
    np.testing.assert_array_equal(backend.to_numpy(ps.argsort(backend.asarray(same), descending=True,
                                                              backend=backend.backend)), np.arange(n))


def test_unique(backend, rng):
    n = {"cpu": SMALL_SCAN + 11, "triton-interpreter": 20}.get(backend.name, 100_003)
    for dtype in (["float32"] if interpreted(backend) else ["float32", "int64", "bool", "uint8"]):
        x = random_keys(rng, dtype, n)
        xb = backend.asarray(x)
        values, index, inverse, counts = ps.unique(xb, return_index=True, return_inverse=True, return_counts=True,
                                                   backend=backend.backend)
        expected = reference_unique(x)
        np.testing.assert_array_equal(bits(values), bits(expected[0]))
        for got, want in zip((index, inverse, counts), expected[1:]):
            assert type(got) is type(xb)
            np.testing.assert_array_equal(backend.to_numpy(got), want)
        np.testing.assert_array_equal(backend.to_numpy(values), np.unique(x))
        if not interpreted(backend):
            np.testing.assert_array_equal(bits(ps.unique(xb, backend=backend.backend)), bits(expected[0]))
    empty = ps.unique(backend.asarray(np.zeros(0, np.int32)), return_counts=True, backend=backend.backend)
    assert [backend.to_numpy(e).shape for e in empty] == [(0,), (0,)]


def test_run_length_encode(backend, rng):
    n = {"triton-interpreter": 60}.get(backend.name, 100_003)
    x = np.repeat(random_keys(rng, "float64", n // 2), rng.integers(1, 4, n // 2))[:n]
    x[rng.integers(0, n, 5)] = np.nan  # a NaN is a run of its own, even next to a NaN
    x[:4] = [np.nan, np.nan, -0.0, 0.0]  # -0.0 and 0.0 are one run
    xb = backend.asarray(x)
    values, counts = ps.run_length_encode(xb, backend=backend.backend)
    expected = reference_run_length_encode(x)
    np.testing.assert_array_equal(bits(values), bits(expected[0]))
    np.testing.assert_array_equal(backend.to_numpy(counts), expected[1])
    assert backend.to_numpy(counts).dtype == np.int64 and int(backend.to_numpy(counts).sum()) == n
    for given in ([], [7]):
        v, c = ps.run_length_encode(backend.asarray(np.array(given, np.int32)), backend=backend.backend)
        assert backend.to_numpy(v).tolist() == given and backend.to_numpy(c).tolist() == [1] * len(given)


# ---------------------------------------------------------------------------
# The CPU backend's two paths.

def test_cpu_paths_agree_at_the_compiled_threshold(rng):
    """NumPy below SMALL_SCAN, the radix sort from it on, and rows of at most 32 keys
    (NumPy there too) give the reference's result, for every mapping."""
    for dtype in ("int32", "float64", "uint16", "bool"):
        for n in (SMALL_SCAN - 1, SMALL_SCAN, SMALL_SCAN + 1):
            x = random_keys(rng, dtype, n)
            for descending in (False, True):
                perm = ps.argsort(x, descending=descending)
                np.testing.assert_array_equal(perm, reference_argsort(x, descending=descending))
    x = random_keys(rng, "float32", 300 * 32).reshape(300, 32)
    np.testing.assert_array_equal(ps.argsort(x), reference_argsort(x))


def test_cpu_threaded_rows_and_short_rows(rng):
    """Rows past the threaded threshold split over threads; a row of 33 keys (the
    radix sort) and keys whose high digits are constant (those passes skipped)."""
    from prefixscan.primitives.sort import compiled

    x = random_keys(rng, "float32", (compiled.THREADED_FROM // 33 + 7) * 33).reshape(-1, 33)
    perm = ps.argsort(x)
    np.testing.assert_array_equal(perm, reference_argsort(x))
    low = rng.integers(0, 1 << 20, SMALL_SCAN + 1).astype(np.int64)
    np.testing.assert_array_equal(ps.argsort(low), np.argsort(low, kind="stable"))


def test_cpu_key_bits_outside_the_range_is_an_error(rng):
    """On the CPU a key outside [0, 2**key_bits) raises, on both paths, whatever its row."""
    for n in (100, SMALL_SCAN + 1):
        x = rng.integers(0, 8, (3, n)).astype(np.int32)
        np.testing.assert_array_equal(ps.argsort(x, key_bits=3), np.argsort(x, kind="stable"))
        for bad in (8, -1):
            y = x.copy()
            y[2, n // 2] = bad
            with pytest.raises(ValueError, match=r"key_bits=3: x has a key outside \[0, 2\*\*3\)"):
                ps.argsort(y, key_bits=3)


def test_cpu_odd_inputs(rng):
    """Non-native byte order, strided and read-only inputs, and bfloat16 tensors (sorted
    widened to float32, returned as bfloat16)."""
    x = random_keys(rng, "float64", SMALL_SCAN + 1)
    swapped = x.astype(">f8")
    np.testing.assert_array_equal(ps.argsort(swapped), reference_argsort(x))
    np.testing.assert_array_equal(bits(ps.sort(swapped)), bits(x[reference_argsort(x)]))
    strided = np.stack([x, x])[:, ::2]
    strided.flags.writeable = False
    np.testing.assert_array_equal(ps.argsort(strided, axis=None), reference_argsort(strided, axis=None))
    torch = pytest.importorskip("torch")
    t = torch.from_numpy(random_keys(rng, "bfloat16", 500)).to(torch.bfloat16)
    got = ps.sort(t, descending=True, backend="cpu")
    assert got.dtype == torch.bfloat16
    perm = reference_argsort(t, descending=True)
    np.testing.assert_array_equal(bits(got), bits(t)[perm])


def test_cpu_without_numba():
    """Where Numba is missing the CPU backend sorts with NumPy, at every size."""
    code = ("import sys; sys.modules['numba'] = None\n"
            "import numpy as np, prefixscan as ps\n"
            "x = np.random.default_rng(1).integers(0, 50, 20000)\n"
            "assert (ps.argsort(x) == np.argsort(x, kind='stable')).all()\n"
            "assert (ps.sort(x, values=-x)[1] == -np.sort(x, kind='stable')).all()\n"
            "print('ok')\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert done.stdout.strip() == "ok", done.stderr[-2000:]
