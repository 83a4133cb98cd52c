"""The checked description of one scan, as a backend receives it (a leaf module).

:class:`ScanConfig` is what a scan computes, independent of the data (operator,
axis, direction, order, tuple size, dtype, backend choice); :class:`ScanRequest`
adds the arrays of one call after every check has passed.  Both are built by
:mod:`prefixscan._normalize` (the only place that checks arguments); backends
import the types from here and never the checks.  Imports nothing of prefixscan
but the leaf modules :mod:`prefixscan._arrays` and :mod:`prefixscan.monoid`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ._arrays import ArrayRef
from .monoid import Monoid

__all__ = ["ScanConfig", "ScanRequest", "np_dtype"]


@dataclass(frozen=True)
class ScanConfig:
    """What a scan computes, independent of the data (the reusable part)."""

    monoid: Monoid
    axis: int | None
    inclusive: bool
    reverse: bool
    order: int
    tuple_size: int
    dtype: str | None
    backend: str | None
    algorithm: str
    deterministic: bool = False
    strategy: str = "auto"


@dataclass
class ScanRequest:
    """One scan, fully checked: what a backend receives."""

    config: ScanConfig
    fields: list[ArrayRef]
    struct: bool  # x was a tuple of arrays
    device: str
    shape: tuple  # input shape
    axis: int | None  # normalized non-negative axis, None for flattened
    lane_len: int
    acc_dtypes: tuple[str, ...]
    out_dtypes: tuple[str, ...]
    out_shape: tuple
    init: tuple | None  # one value per field (scalar or array), None when absent
    init_shape: tuple  # shape init values broadcast to: lanes (+ (tuple_size,))
    out: list[ArrayRef] | None = None  # the backend writes the result here
    identity: tuple = field(default=())
    # An out= of another dtype than the result: the backend writes a fresh result,
    # which the caller casts into these arrays once the scan has succeeded.
    cast_out: list[ArrayRef] | None = None

    def rebind(self, x, out) -> "ScanRequest":
        """The same checked request for other tensors of the same signature."""
        fields = [ArrayRef(x, f.library, f.device, f.shape, f.dtype) for f in self.fields]
        outs = None if self.out is None else [ArrayRef(out, o.library, o.device, o.shape, o.dtype)
                                              for o in self.out]
        new = object.__new__(ScanRequest)  # a shallow copy, without copy.copy's overhead
        new.__dict__.update(self.__dict__)
        new.fields, new.out = fields, outs
        if self.cast_out is not None:
            new.cast_out = [ArrayRef(out, o.library, o.device, o.shape, o.dtype) for o in self.cast_out]
        return new

    @property
    def lanes_shape(self) -> tuple:
        """x's shape without the scanned axis (``()`` for a flattened scan)."""
        if self.axis is None:
            return ()
        return self.shape[: self.axis] + self.shape[self.axis + 1:]


def np_dtype(name: str) -> np.dtype:
    """The NumPy dtype that holds values of the dtype ``name`` on the host
    (bfloat16, which NumPy lacks, is held as float32)."""
    return np.dtype("float32" if name == "bfloat16" else name)
