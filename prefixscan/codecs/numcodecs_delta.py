"""numcodecs codec: q-th order, s-strided delta coding (SAM's higher-order and
tuple-based prefix sums, Maleki, Yang & Burtscher, PLDI 2016, section 2).

``Delta(order=q, tuple_size=s, dtype=...)`` encodes a chunk as q rounds of
``d[j] -= d[j - s]`` over its flattened elements and decodes it with the inclusive
sum scan applied q times per stream (:func:`prefixscan.delta_decode`).  The round
trip is exact: integers wrap around, and floats are coded as the integers that
hold their bit patterns (float32 as int32, ...; :mod:`._parameters`), never by
subtracting floats.  ``dtype`` is the data's dtype: typed data of another dtype
is refused (viewed as ``dtype`` it would come back as other numbers: float64
data through the default int64 codec as int64 bit patterns); untyped buffers
(bytes, uint8 arrays) are read as ``dtype``.  Host buffers go through NumPy;
device arrays (CuPy, torch) stay on the device and come back as their own type.
The codec id ``prefixscan.delta`` is registered with numcodecs when this module
is imported and through the ``numcodecs.codecs`` entry point, so Zarr format 2
arrays (``filters=[Delta(...)]``) reopen by name.  Zarr format 3 arrays take
:class:`prefixscan.codecs.zarr3.Delta` instead.

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
from ..primitives.delta.api import delta_decode, delta_encode
from ._parameters import (bits, check_dtype, check_float_coding, check_length, check_order_and_tuple_size,
                          code_dtype, from_bits, in_native_order, refuse_lossy_encode)

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
        The dtype of the data (integer or float, default int64): typed chunks
        must have it (a chunk of another dtype raises TypeError naming both; one
        of the same dtype in the other byte order is converted), untyped buffers
        are read as it.  Floats are coded by their bit patterns, so their round
        trip is exact too.
    floats:
        ``"bits"`` (the default, stored in the configuration); ``"differences"``
        is what a configuration without the entry means: float chunks written as
        float differences by earlier versions, which this codec decodes but
        never writes.
    """

    codec_id = "prefixscan.delta"

    def __init__(self, order: int = 1, tuple_size: int = 1, dtype="int64", floats: str = "bits"):
        self.order, self.tuple_size = check_order_and_tuple_size(order, tuple_size)
        self.dtype = check_dtype(dtype)
        self.floats = check_float_coding(floats)

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config.pop("id", None)
        config.setdefault("floats", "differences")  # written before the entry existed
        return cls(**config)

    def _legacy(self) -> bool:
        """Float data written as float differences (decoded as floats, not bits)."""
        return self.floats == "differences" and self.dtype.kind == "f"

    def _check_length(self, n: int) -> None:
        check_length(n, self.tuple_size)

    def _check_typed(self, dtype, where: str) -> None:
        """A typed chunk must hold this codec's kind of data, of its width."""
        name = str(dtype).replace("torch.", "")
        try:
            got = np.dtype(name)
        except TypeError:  # bfloat16: no NumPy dtype
            raise TypeError(f"Delta(dtype={self.dtype.str!r}) got {where} of dtype {name}: not a dtype "
                            "this codec can be configured with") from None
        if got.itemsize == 1 and self.dtype.itemsize > 1 and got.kind in "iu":
            return  # bytes: read as the codec's dtype
        if (got.kind == "f") != (self.dtype.kind == "f") or got.itemsize != self.dtype.itemsize:
            raise TypeError(f"Delta(dtype={self.dtype.str!r}) got {where} of dtype {got}: decoded, it would "
                            f"come back as {self.dtype} values; create the codec with dtype={got.str!r}")

    def encode(self, buf):
        refuse_lossy_encode(self.floats, self.dtype)
        if _on_device(buf):
            self._check_typed(buf.dtype, "a device array")
            flat = bits(buf.reshape(-1))
            self._check_length(flat.shape[0])
            return delta_encode(flat, self.order, self.tuple_size)
        if isinstance(buf, np.ndarray):
            self._check_typed(buf.dtype, "an array")
            if buf.dtype != self.dtype and buf.dtype.itemsize == self.dtype.itemsize:
                buf = buf.astype(self.dtype)  # the same numbers in the codec's byte order
        arr = ensure_contiguous_ndarray(buf).view(code_dtype(self.dtype)).reshape(-1)
        self._check_length(arr.size)
        return in_native_order(delta_encode, arr, self.order, self.tuple_size)

    def decode(self, buf, out=None):
        if self._legacy() and not _on_device(buf):
            enc = ensure_contiguous_ndarray(buf).view(self.dtype).reshape(-1)
            self._check_length(enc.size)
            return ndarray_copy(in_native_order(delta_decode, enc, self.order, self.tuple_size), out)
        if _on_device(buf):
            flat = bits(buf.reshape(-1))
            self._check_length(flat.shape[0])
            dec = from_bits(delta_decode(flat, self.order, self.tuple_size), self.dtype)
            if out is None:
                return dec
            out.reshape(-1)[...] = dec
            return out
        enc = ensure_contiguous_ndarray(buf).view(code_dtype(self.dtype)).reshape(-1)
        self._check_length(enc.size)
        dec = in_native_order(delta_decode, enc, self.order, self.tuple_size).view(self.dtype)
        return ndarray_copy(dec, out)

    def get_config(self):
        return {"id": self.codec_id, "order": self.order, "tuple_size": self.tuple_size,
                "dtype": self.dtype.str, "floats": self.floats}

    def __repr__(self):
        floats = "" if self.floats == "bits" else f", floats={self.floats!r}"
        return f"Delta(order={self.order}, tuple_size={self.tuple_size}, dtype={self.dtype.str!r}{floats})"


def _on_device(buf) -> bool:
    if isinstance(buf, (bytes, bytearray, memoryview, np.ndarray)):
        return False
    try:
        return inspect_array(buf).device == "cuda" or type(buf).__module__.startswith("torch")
    except TypeError:
        return False


registry.register_codec(Delta)
