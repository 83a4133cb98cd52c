"""Delta coding: q-th order, s-strided differences and their inverse scan.

``delta_encode`` applies ``D = I - Z^s`` q times along an axis (``Z^s`` delays
by s elements, zeros shifted in): the first s elements are kept and
``d[j] -= d[j - s]`` elsewhere, q rounds.  ``delta_decode`` inverts it with the
inclusive sum scan applied q times per stream, ``scan(d, "add", order=q,
tuple_size=s)``: the higher-order and tuple-based prefix sums of SAM (Maleki,
Yang & Burtscher, "Higher-order and tuple-based massively-parallel prefix
sums", PLDI 2016, section 2).  For integers the round trip is exact,
wrap-around included.  On the GPU both directions read and write each element
once whatever the order.
"""

from __future__ import annotations

from ..._arrays import from_native
from ..._typing import ArrayLike, BackendName
from ...dispatch import implementation, select_backend
from ..scan.api import scan
from . import IMPLEMENTATIONS
from .checks import check_delta_args

__all__ = ["delta_encode", "delta_decode"]


def delta_encode(x: ArrayLike, order: int = 1, tuple_size: int = 1, *, axis: int = -1,
                 backend: BackendName | None = None) -> ArrayLike:
    """q-th order, s-strided differences along ``axis``: q times ``d[j] -= d[j - s]`` for j >= s.

    Parameters
    ----------
    x : array
        A numeric array (not bool) of any type :func:`prefixscan.scan` takes,
        at least 1-D.
    order : int, default 1
        q, the number of difference rounds.
    tuple_size : int, default 1
        s, the stride: element ``m + j*s`` belongs to stream m (3 for RGB
        pixels); it must divide the length of ``axis``.
    axis : int, default -1
        The coded axis.
    backend : {None, "cpu", "triton"}, default None
        As in :func:`prefixscan.scan`.  The GPU backend runs one kernel that
        reads and writes each element once, whatever the order.

    Returns
    -------
    array
        x's shape and dtype, of the caller's array type; x is not modified.
        :func:`delta_decode` inverts it exactly for integers.

    Examples
    --------
    >>> import numpy as np, prefixscan
    >>> prefixscan.delta_encode(np.array([1, 4, 9, 16, 25]), order=2)
    array([1, 2, 2, 2, 2])
    """
    ref, axis, order, tuple_size = check_delta_args(x, axis, order, tuple_size)
    if ref.library == "dask":
        from . import dask as chunked  # imports dask: x is a dask array

        return chunked.delta_encode(x, order, tuple_size, axis=axis, backend=backend)
    chosen = select_backend(backend, ref.device)
    d = implementation("delta_encode", IMPLEMENTATIONS, chosen).delta_encode(ref, order, tuple_size, axis)
    return from_native(d, ref, chosen.NATIVE_LIBRARY, ref.dtype)


def delta_decode(d: ArrayLike, order: int = 1, tuple_size: int = 1, *, axis: int = -1,
                 backend: BackendName | None = None) -> ArrayLike:
    """Inverse of :func:`delta_encode`: the inclusive sum scan, ``order`` times, per stream.

    Same arguments as :func:`delta_encode`.  It is ``prefixscan.scan(d, "add",
    axis=axis, order=order, tuple_size=tuple_size)``, which the GPU backend
    runs in one pass whatever the order.  Integers round-trip exactly
    (wrap-around included); floats up to rounding.

    Examples
    --------
    >>> import numpy as np, prefixscan
    >>> prefixscan.delta_decode(np.array([1, 2, 2, 2, 2]), order=2)
    array([ 1,  4,  9, 16, 25])
    """
    _, axis, order, tuple_size = check_delta_args(d, axis, order, tuple_size)
    return scan(d, "add", axis=axis, order=order, tuple_size=tuple_size, backend=backend)
