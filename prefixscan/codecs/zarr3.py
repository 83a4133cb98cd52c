"""Zarr format 3 codec: q-th order, s-strided delta coding as an array-to-array
codec (SAM's higher-order and tuple-based prefix sums, Maleki, Yang & Burtscher,
PLDI 2016, section 2).

``zarr.create_array(..., filters=[Delta(order=q, tuple_size=s)])`` encodes each
chunk as q rounds of ``d[j] -= d[j - s]`` over its elements in C order and
decodes it with the inclusive sum scan applied q times per stream
(:func:`prefixscan.delta_decode`).  Every chunk round-trips exactly: integers
wrap around, and float chunks are coded as the integers that hold their bit
patterns (float32 as int32, ...; :mod:`._parameters`), never by subtracting
floats, whose differences would not undo exactly; the coded chunk keeps the
array's float data type, its values being those integer differences' bits.
The data type comes from the array, so the stored configuration is only
``{"order": q, "tuple_size": s, "floats": "bits"}`` under the name
``prefixscan.delta``; a configuration without ``floats`` was written by earlier
versions, which coded float chunks by their float differences: those are still
decoded (as floats), never written.
Zarr finds the class by that name when it reopens an array: importing this
module registers it, and so does the ``zarr.codecs`` entry point of an
installed prefixscan (for readers that never import prefixscan themselves).
Chunks on the GPU (zarr's GPU buffers) are coded there.

Zarr format 2 arrays use the numcodecs codec :class:`prefixscan.codecs.Delta`.
Needs zarr>=3 (the ``codecs`` extra).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .._install_hint import install_command

try:
    from zarr.abc.codec import ArrayArrayCodec
    from zarr.registry import register_codec
except ImportError as exc:  # pragma: no cover - exercised only without zarr 3
    raise ImportError(f"prefixscan.codecs.zarr3 needs zarr>=3: {install_command('codecs')}") from exc

from ..primitives.delta.api import delta_decode, delta_encode
from ._parameters import (bits, check_dtype, check_float_coding, check_length, check_order_and_tuple_size,
                          from_bits, in_native_order, refuse_lossy_encode)

__all__ = ["CODEC_NAME", "Delta"]

#: The codec's name in stored Zarr metadata (and its ``zarr.codecs`` entry point).
CODEC_NAME = "prefixscan.delta"


@dataclass(frozen=True)
class Delta(ArrayArrayCodec):
    """Delta coding of order ``order`` over ``tuple_size`` interleaved streams.

    Parameters
    ----------
    order:
        Number of difference rounds (1 to 8 is typical); decoding applies the
        prefix sum that many times.
    tuple_size:
        Elements ``m, m + s, m + 2s, ...`` of a chunk (flattened in C order)
        form stream m; it must divide the number of elements of a chunk.
    """

    is_fixed_size = True

    order: int
    tuple_size: int
    floats: str

    def __init__(self, *, order: int = 1, tuple_size: int = 1, floats: str = "bits") -> None:
        order, tuple_size = check_order_and_tuple_size(order, tuple_size)
        object.__setattr__(self, "order", order)
        object.__setattr__(self, "tuple_size", tuple_size)
        object.__setattr__(self, "floats", check_float_coding(floats))

    @classmethod
    def from_dict(cls, data: dict) -> Delta:
        if not isinstance(data, dict) or data.get("name") != CODEC_NAME:
            raise ValueError(f"expected a {CODEC_NAME!r} codec configuration, got {data!r}")
        configuration = data.get("configuration") or {}
        unknown = set(configuration) - {"order", "tuple_size", "floats"}
        if unknown:
            raise ValueError(f"{CODEC_NAME}: unknown configuration keys {sorted(unknown)}")
        return cls(**{"floats": "differences", **configuration})  # no entry: written by earlier versions

    def to_dict(self) -> dict:
        return {"name": CODEC_NAME, "configuration": {"order": self.order, "tuple_size": self.tuple_size,
                                                       "floats": self.floats}}

    def validate(self, *, shape, dtype, chunk_grid) -> None:
        check_dtype(dtype.to_native_dtype())
        chunk_shape = getattr(chunk_grid, "chunk_shape", None)  # regular grids: every chunk this shape
        if chunk_shape is not None:
            check_length(math.prod(chunk_shape), self.tuple_size)

    def compute_encoded_size(self, input_byte_length: int, _chunk_spec) -> int:
        return input_byte_length

    def _encode_sync(self, chunk_array, chunk_spec):
        refuse_lossy_encode(self.floats, chunk_array.dtype)
        return self._code(delta_encode, chunk_array, chunk_spec)

    def _decode_sync(self, chunk_array, chunk_spec):
        return self._code(delta_decode, chunk_array, chunk_spec)

    async def _encode_single(self, chunk_array, chunk_spec):
        return self._encode_sync(chunk_array, chunk_spec)

    async def _decode_single(self, chunk_array, chunk_spec):
        return self._decode_sync(chunk_array, chunk_spec)

    def _code(self, direction, chunk_array, chunk_spec):
        """Apply delta_encode or delta_decode to the chunk's elements in C order
        (a float chunk's bit patterns, as integers of its width)."""
        array = chunk_array.as_ndarray_like()  # NumPy on the host, CuPy for zarr's GPU buffers
        if self.floats == "differences" and array.dtype.kind == "f":  # written by earlier versions
            flat = array.reshape(-1)
            check_length(flat.shape[0], self.tuple_size)
            coded = in_native_order(direction, flat, self.order, self.tuple_size)
            return chunk_spec.prototype.nd_buffer.from_ndarray_like(coded.reshape(array.shape))
        flat = bits(array.reshape(-1))
        check_length(flat.shape[0], self.tuple_size)
        coded = from_bits(in_native_order(direction, flat, self.order, self.tuple_size), array)
        return chunk_spec.prototype.nd_buffer.from_ndarray_like(coded.reshape(array.shape))


register_codec(CODEC_NAME, Delta)
