"""prefixscan.codecs.Delta through numcodecs' own codec checks."""

import numpy as np
import pytest

numcodecs = pytest.importorskip("numcodecs")
from numcodecs.tests.common import check_config, check_encode_decode  # noqa: E402

from prefixscan.codecs import Delta  # noqa: E402

INT_DTYPES = ["int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64"]


def wrapping_data(dtype, n, seed):
    info = np.iinfo(dtype)
    rng = np.random.default_rng(seed)
    x = rng.integers(info.min, info.max, size=n, dtype=dtype, endpoint=True)
    x[x == 0] = 1
    return x


@pytest.mark.parametrize("dtype", INT_DTYPES)
@pytest.mark.parametrize("order,tuple_size", [(1, 1), (2, 1), (3, 2), (5, 5), (8, 8), (1, 32), (4, 3)])
def test_numcodecs_round_trip(dtype, order, tuple_size):
    codec = Delta(order=order, tuple_size=tuple_size, dtype=dtype)
    n = 96 * 5 * 7  # divisible by every tuple size above
    arr = wrapping_data(dtype, n, order * 100 + tuple_size)  # full range: differences wrap
    check_encode_decode(arr, codec)
    check_encode_decode(arr.reshape(96, 35), codec)
    enc = codec.encode(arr)
    assert enc.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(codec.decode(enc), arr)


def test_encoded_values_are_differences():
    x = np.array([100, 102, 104, 107, 111], dtype="i4")
    np.testing.assert_array_equal(Delta(dtype="i4").encode(x), [100, 2, 2, 3, 4])
    np.testing.assert_array_equal(Delta(order=2, dtype="i4").encode(x), [100, -98, 0, 1, 1])
    np.testing.assert_array_equal(Delta(tuple_size=2, dtype="i4").encode(x[:4]), [100, 102, 4, 5])


def test_config_registry_and_repr():
    codec = Delta(order=3, tuple_size=4, dtype="<u2")
    check_config(codec)
    # numcodecs' check_repr evaluates in its own namespace, where Delta is its codec.
    assert repr(eval(repr(codec), {"Delta": Delta})) == repr(codec) == "Delta(order=3, tuple_size=4, dtype='<u2')"
    again = numcodecs.get_codec(codec.get_config())
    assert isinstance(again, Delta) and again.get_config() == codec.get_config()


def test_errors_name_the_argument():
    with pytest.raises(ValueError, match="order"):
        Delta(order=0)
    with pytest.raises(ValueError, match="tuple_size"):
        Delta(tuple_size=0)
    with pytest.raises(ValueError, match="tuple_size"):
        Delta(tuple_size=3, dtype="i4").encode(np.arange(10, dtype="i4"))


def test_torch_tensors_stay_tensors():
    torch = pytest.importorskip("torch")
    x = torch.from_numpy(wrapping_data("int32", 600, 7))
    codec = Delta(order=2, tuple_size=3, dtype="int32")
    enc = codec.encode(x)
    assert isinstance(enc, torch.Tensor)
    assert torch.equal(codec.decode(enc), x)
