"""The plain arguments of the scan's custom operator, as a small frozen dataclass.

A custom operator takes tensors and plain ints, bools and strings only (a
:class:`~prefixscan.Monoid` cannot cross the dispatcher), so a scan is named by
its built-in operator and flags.  :class:`ScanParams` holds them in Python and
unpacks in the operator's argument order; it builds the checked
:class:`~prefixscan._request.ScanConfig` of :mod:`prefixscan._normalize`, once
per argument set.  The recurrence's :class:`RecurrenceParams` follows the same
pattern (:mod:`prefixscan.primitives.recurrence.torch_ops`).
"""

from __future__ import annotations

import functools
from dataclasses import astuple, dataclass
from typing import Optional

from ..._normalize import make_config
from ..._request import ScanConfig
from ...caches import register_cache

__all__ = ["ScanParams", "DIFFERENTIABLE_OPS"]

#: The built-in operators with a gradient (the affine monoid has one through
#: ``linear_recurrence``).
DIFFERENTIABLE_OPS = ("add", "mul", "max", "min", "logaddexp")


@dataclass(frozen=True)
class ScanParams:
    """A scan with a built-in operator along a non-negative ``axis`` (see
    :func:`prefixscan.scan`); the fields are the operator's arguments in order."""

    op: str
    axis: int
    inclusive: bool = True
    reverse: bool = False
    order: int = 1
    tuple_size: int = 1
    dtype: Optional[str] = None
    backend: Optional[str] = None
    algorithm: str = "auto"
    deterministic: bool = False
    strategy: str = "auto"

    @classmethod
    def from_config(cls, config: ScanConfig, axis: int) -> "ScanParams":
        return cls(config.monoid.name, axis, config.inclusive, config.reverse, config.order, config.tuple_size,
                   config.dtype, config.backend, config.algorithm, config.deterministic, config.strategy)

    def args(self) -> tuple:
        return astuple(self)

    def config(self) -> ScanConfig:
        return _scan_config(*astuple(self))


# Configs are checked once per argument set: the operators run on every call.
@functools.lru_cache(maxsize=256)
def _scan_config(op, axis, inclusive, reverse, order, tuple_size, dtype, backend, algorithm, deterministic,
                 strategy) -> ScanConfig:
    return make_config(op, axis=axis, inclusive=inclusive, reverse=reverse, order=order, tuple_size=tuple_size,
                       dtype=dtype, backend=backend, algorithm=algorithm, deterministic=deterministic,
                       strategy=strategy)


register_cache("prefixscan.primitives.scan.params.configs", _scan_config.cache_clear)
