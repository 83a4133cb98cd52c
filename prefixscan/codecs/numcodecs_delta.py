"""numcodecs codec: q-th order, s-strided delta coding (SAM's higher-order and
tuple-based prefix sums, Maleki, Yang & Burtscher, PLDI 2016, section 2).

``Delta(order=q, tuple_size=s, dtype=...)`` encodes a chunk as q rounds of
``d[j] -= d[j - s]`` over its flattened elements and decodes it with the inclusive
sum scan applied q times per stream (:func:`prefixscan.delta_decode`); for
integers the round trip is exact, wrap-around included.  Host buffers go through
NumPy; device arrays (CuPy, torch) stay on the device and come back as their own
type.  The codec id ``prefixscan.delta`` is registered with numcodecs when this
module is imported and through the ``numcodecs.codecs`` entry point, so Zarr
format 2 arrays (``filters=[Delta(...)]``) reopen by name.  Zarr format 3 arrays
take :class:`prefixscan.codecs.zarr3.Delta` instead.

Needs numcodecs (the ``codecs`` extra).
"""

from __future__ import annotations

import numpy as np

from .._install_hint import install_command

try:
    from numcodecs import registry
    from numcodecs.abc import Codec
    from numcodecs.compat import ensure_contiguous_ndarray, ndarray_copy
except ImportError as exc:  # pragma: no cover - exercised only without numcodecs
    raise ImportError(f"prefixscan.codecs needs numcodecs: {install_command('codecs')}") from exc

from .._arrays import inspect_array
from ..algorithms.delta import delta_decode, delta_encode
from ._parameters import check_dtype, check_length, check_order_and_tuple_size

__all__ = ["Delta"]


class Delta(Codec):
    """Delta coding of order ``order`` over ``tuple_size`` interleaved streams.

    Parameters
    ----------
    order:
        Number of difference rounds (1 to 8 is typical); decoding applies the
        prefix sum that many times.
    tuple_size:
        Elements ``m, m + s, m + 2s, ...`` form stream m; use the record size of
        interleaved data (3 for RGB pixels, 2 for complex pairs ...).  It must
        divide the number of elements of every chunk.
    dtype:
        The dtype of the data; chunks are viewed as this dtype.
    """

    codec_id = "prefixscan.delta"

    def __init__(self, order: int = 1, tuple_size: int = 1, dtype="int64"):
        self.order, self.tuple_size = check_order_and_tuple_size(order, tuple_size)
        self.dtype = check_dtype(dtype)

    def _check_length(self, n: int) -> None:
        check_length(n, self.tuple_size)

    def encode(self, buf):
        if _on_device(buf):
            flat = buf.reshape(-1)
            self._check_length(flat.shape[0])
            return delta_encode(flat, self.order, self.tuple_size)
        arr = ensure_contiguous_ndarray(buf).view(self.dtype).reshape(-1)
        self._check_length(arr.size)
        # Results come in native byte order; the stored bytes are those of the codec's dtype.
        return delta_encode(arr, self.order, self.tuple_size).astype(self.dtype, copy=False)

    def decode(self, buf, out=None):
        if _on_device(buf):
            flat = buf.reshape(-1)
            self._check_length(flat.shape[0])
            dec = delta_decode(flat, self.order, self.tuple_size)
            if out is None:
                return dec
            out.reshape(-1)[...] = dec
            return out
        enc = ensure_contiguous_ndarray(buf).view(self.dtype).reshape(-1)
        self._check_length(enc.size)
        dec = delta_decode(enc, self.order, self.tuple_size).astype(self.dtype, copy=False)
        return ndarray_copy(dec, out)

    def get_config(self):
        return {"id": self.codec_id, "order": self.order, "tuple_size": self.tuple_size,
                "dtype": self.dtype.str}

    def __repr__(self):
        return f"Delta(order={self.order}, tuple_size={self.tuple_size}, dtype={self.dtype.str!r})"


def _on_device(buf) -> bool:
    if isinstance(buf, (bytes, bytearray, memoryview, np.ndarray)):
        return False
    try:
        return inspect_array(buf).device == "cuda" or type(buf).__module__.startswith("torch")
    except TypeError:
        return False


registry.register_codec(Delta)
