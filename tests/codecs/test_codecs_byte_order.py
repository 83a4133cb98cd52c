"""The numcodecs Delta codec with a dtype of non-native byte order (Zarr format 2
stores big-endian data as ``>i4``, ``>f8``, ...): the encoded bytes are those of
the codec's dtype, and the round trip is exact, on both CPU paths."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("numcodecs")

from prefixscan.codecs.numcodecs_delta import Delta  # noqa: E402


@pytest.mark.parametrize("n", [98, 20010])
@pytest.mark.parametrize("dtype", [">i4", ">i8", ">u2", ">f8"])
def test_swapped_dtype_round_trip(rng, n, dtype):
    codec = Delta(order=2, tuple_size=2, dtype=dtype)
    x = rng.integers(-1000, 1000, n).astype(dtype) if dtype[1] != "u" else rng.integers(0, 60000, n).astype(dtype)
    native = Delta(order=2, tuple_size=2, dtype=np.dtype(dtype).newbyteorder("="))
    encoded = np.asarray(codec.encode(x))
    # Floats are coded as the integers of their width holding their bit patterns (lossless).
    coded = np.dtype(dtype[0] + "i" + dtype[2:]) if dtype[1] == "f" else np.dtype(dtype)
    assert encoded.dtype == coded
    # The same differences as the native codec's, stored in the codec's byte order.
    np.testing.assert_array_equal(encoded, np.asarray(native.encode(x.astype(native.dtype))).astype(coded))
    decoded = codec.decode(encoded.tobytes())
    assert np.asarray(decoded).tobytes() == x.tobytes()
    out = np.empty(n, dtype)
    codec.decode(encoded.tobytes(), out=out)
    assert out.tobytes() == x.tobytes()
