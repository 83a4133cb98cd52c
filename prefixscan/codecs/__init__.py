"""Delta-coding codecs for chunked array stores: q-th order, s-strided
differences, decoded by SAM's higher-order and tuple-based prefix sums (Maleki,
Yang & Burtscher, PLDI 2016, section 2).

* :class:`Delta` (:mod:`.numcodecs_delta`) is a numcodecs codec, id
  ``prefixscan.delta``: numcodecs pipelines and Zarr format 2 filters.
* :class:`prefixscan.codecs.zarr3.Delta` (:mod:`.zarr3`) is the Zarr format 3
  array-to-array codec, named ``prefixscan.delta`` in stored metadata.  Import
  it from its module: this package does not import zarr.

Both round-trip every chunk exactly: integers wrap around, and float data are
coded as the integers that hold their bit patterns (float differences would
not undo exactly).  Both need the ``codecs`` extra (numcodecs; zarr>=3 for
format 3).
"""

from .numcodecs_delta import Delta

__all__ = ["Delta"]
