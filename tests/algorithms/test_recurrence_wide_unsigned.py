"""linear_recurrence on torch uint16/uint32/uint64 tensors, for which torch has no
add (nor index_add, index_fill, index_select): computed in the signed type of
the same width (the same arithmetic modulo 2**bits), exact, with init's values
still checked against the unsigned type."""

from __future__ import annotations

import numpy as np
import pytest

import prefixscan as ps
from prefixscan.testing import backends_under_test, reference_linear_recurrence

TORCH = [b for b in backends_under_test() if b.device is not None]
pytestmark = pytest.mark.skipif(not TORCH, reason="torch is not installed")
WIDE_UNSIGNED = ("uint16", "uint32", "uint64")


@pytest.fixture(params=range(len(TORCH)), ids=[b.name for b in TORCH])
def torch_backend(request):
    return TORCH[request.param]


@pytest.mark.parametrize("dtype", WIDE_UNSIGNED)
def test_scalar_init(dtype, torch_backend):
    a = np.ones(3, dtype)
    got = ps.linear_recurrence(torch_backend.asarray(a), torch_backend.asarray(a), init=1,
                               backend=torch_backend.backend)
    assert str(got.dtype) == f"torch.{dtype}"
    np.testing.assert_array_equal(torch_backend.to_numpy(got), np.array([2, 3, 4], dtype))


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("dtype", WIDE_UNSIGNED)
def test_wrapping_values_match_the_reference(dtype, reverse, torch_backend):
    rng = np.random.default_rng(7)
    top = np.iinfo(dtype).max
    a = rng.integers(0, top, size=(3, 11), dtype=dtype, endpoint=True)
    b = rng.integers(0, top, size=(3, 11), dtype=dtype, endpoint=True)
    init = rng.integers(0, top, size=(3,), dtype=dtype, endpoint=True)
    expected = reference_linear_recurrence(a, b, init=init, reverse=reverse)
    on = torch_backend.asarray
    h, final = ps.linear_recurrence(on(a), on(b), init=on(init), reverse=reverse, return_final=True,
                                    backend=torch_backend.backend)
    np.testing.assert_array_equal(torch_backend.to_numpy(h), expected)
    np.testing.assert_array_equal(torch_backend.to_numpy(final), expected[:, 0 if reverse else -1])
    # host init (NumPy) and Python int init give the same
    h2 = ps.linear_recurrence(on(a), on(b), init=init, reverse=reverse, backend=torch_backend.backend)
    np.testing.assert_array_equal(torch_backend.to_numpy(h2), expected)


@pytest.mark.parametrize("dtype", WIDE_UNSIGNED)
def test_packed_sequences(dtype, torch_backend):
    a = np.array([2, 3, 1, 5, 7], dtype)
    b = np.array([1, 1, 4, 2, 3], dtype)
    offsets = [0, 2, 5]
    init = np.array([3, 1], dtype)
    on = torch_backend.asarray
    h, final = ps.linear_recurrence(on(a), on(b), init=on(init), offsets=offsets, return_final=True,
                                    backend=torch_backend.backend)
    first = reference_linear_recurrence(a[:2], b[:2], init=init[0])
    second = reference_linear_recurrence(a[2:], b[2:], init=init[1])
    np.testing.assert_array_equal(torch_backend.to_numpy(h), np.concatenate([first, second]))
    np.testing.assert_array_equal(torch_backend.to_numpy(final), [first[-1], second[-1]])
    h0 = ps.linear_recurrence(on(a), on(b), offsets=offsets, backend=torch_backend.backend)
    np.testing.assert_array_equal(torch_backend.to_numpy(h0), np.concatenate(
        [reference_linear_recurrence(a[:2], b[:2]), reference_linear_recurrence(a[2:], b[2:])]))


@pytest.mark.parametrize("dtype", WIDE_UNSIGNED)
def test_init_out_of_range_refused(dtype, torch_backend):
    a = torch_backend.asarray(np.ones(3, dtype))
    with pytest.raises(ValueError, match=f"out of the range of the accumulator dtype {dtype}"):
        ps.linear_recurrence(a, a, init=-1, backend=torch_backend.backend)


@pytest.mark.parametrize("dtype", WIDE_UNSIGNED)
def test_cpu_tensors_default_backend(dtype):
    torch = pytest.importorskip("torch")
    a = torch.ones(3, dtype=getattr(torch, dtype))
    got = ps.linear_recurrence(a, a, init=1)  # CPU tensors, CPU backend
    assert got.dtype == a.dtype
    np.testing.assert_array_equal(got.numpy(), np.array([2, 3, 4], dtype))
