"""Kernel routing policy: which kernel family takes which scan.

The defaults are the measured choices (docs/design/); tests and studies change
them for a block of code with :func:`routing`, never by assigning module
globals, so a change cannot leak past the block (or into another thread: the
policy lives in a context variable).

    with routing(blocked_orders="always"):
        ...  # every scan the orders kernel can take, takes it
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
from dataclasses import dataclass
from typing import Iterator

__all__ = ["RoutingPolicy", "DEFAULT_POLICY", "current_policy", "routing"]

BLOCKED_ORDERS_CHOICES = ("measured", "always", "never")


@dataclass(frozen=True)
class RoutingPolicy:
    #: Which scans take the orders kernel (scan/orders.py): "measured" (where it measured
    #: faster than the general kernels), "always" (wherever it can) or "never".
    blocked_orders: str = "measured"
    #: Orders-kernel tiles publish inclusive prefixes; False: aggregates only (tile 0
    #: its prefix), so that look-backs in the interpreter, which runs tiles in order,
    #: fold whole windows of aggregates.
    blocked_prefixes: bool = True
    #: Order-1 tuple sizes that are not powers of two take flat tiles; False: padded tiles.
    blocked_strided: bool = True
    #: Order 2 of a 1-D sum with one look-back over both orders' sums (lookback.py);
    #: False: one look-back per order.
    order2_one_lookback: bool = True
    #: ... also for 64-bit integers (slower on the H100 and H200).
    order2_int64: bool = False
    #: Largest K (interleaved streams) scanned as masked columns of 1-D tiles, and the
    #: accumulator sizes that may; above it, the 2-D kernel.
    columns_max: int = 3
    columns_itemsizes: tuple = (4,)
    #: Programs of the fixed-grid strategies in the interpreter (reduce-then-scan,
    #: persistent): small, so that tests cover several blocks per program.
    interpreter_blocks: int = 3

    def __post_init__(self):
        if self.blocked_orders not in BLOCKED_ORDERS_CHOICES:
            raise ValueError(f"blocked_orders: expected one of {BLOCKED_ORDERS_CHOICES}, "
                             f"got {self.blocked_orders!r}")


DEFAULT_POLICY = RoutingPolicy()
_POLICY: contextvars.ContextVar[RoutingPolicy] = contextvars.ContextVar("prefixscan_routing",
                                                                        default=DEFAULT_POLICY)


def current_policy() -> RoutingPolicy:
    """The policy in force in this context."""
    return _POLICY.get()


@contextlib.contextmanager
def routing(**changes) -> Iterator[RoutingPolicy]:
    """Run a block of code with some routing switches changed (the rest as in force)."""
    policy = dataclasses.replace(_POLICY.get(), **changes)
    token = _POLICY.set(policy)
    try:
        yield policy
    finally:
        _POLICY.reset(token)
