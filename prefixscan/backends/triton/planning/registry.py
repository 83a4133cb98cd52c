"""The GPU meta-strategies: the one list of their names and properties.

A meta-strategy is how tiles of one scan hand their prefixes on (Merrill &
Grimshaw 2009, section 3; Merrill & Garland 2016, sections 2-4):

* ``decoupled_lookback``: single pass; each tile folds whatever its
  predecessors have published (Merrill & Garland 2016).  The default.
* ``chained``: single pass; each tile waits for its predecessor's inclusive
  prefix only (the serial hand-off of Yan et al. 2013, the look-back with a
  window of one).
* ``reduce_then_scan``: a fixed grid reduces its blocks, scans the block sums,
  then scans each block seeded (three kernels, Merrill & Grimshaw 2009).
* ``scan_then_propagate``: scan tiles, scan the tile sums, add them back
  (CUDPP's recursive scan; four passes of traffic).
* ``persistent``: a fixed grid of resident programs handing prefixes on
  through a ring of slots (SAM, Maleki et al. PLDI 2016).

Deterministic strategies combine tiles in an order fixed by the sizes and the
grid, so floating-point results are bitwise reproducible; the decoupled
look-back folds whatever is ready, so its grouping depends on timing.
Nothing here imports torch or triton: argument checks read these names.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Strategy", "STRATEGIES", "STRATEGY_NAMES", "DETERMINISTIC_STRATEGIES", "strategy",
           "is_deterministic", "strategy_available", "runnable"]


@dataclass(frozen=True)
class Strategy:
    name: str
    deterministic: bool
    single_pass: bool  # one launch reading and writing each element once


STRATEGIES = (
    Strategy("decoupled_lookback", deterministic=False, single_pass=True),
    Strategy("chained", deterministic=True, single_pass=True),
    Strategy("reduce_then_scan", deterministic=True, single_pass=False),
    Strategy("scan_then_propagate", deterministic=True, single_pass=False),
    Strategy("persistent", deterministic=True, single_pass=True),
)
STRATEGY_NAMES = tuple(s.name for s in STRATEGIES)
DETERMINISTIC_STRATEGIES = tuple(s.name for s in STRATEGIES if s.deterministic)
_BY_NAME = {s.name: s for s in STRATEGIES}


def strategy(name: str) -> Strategy:
    """The strategy called ``name``; a ``ValueError`` naming ``strategy`` otherwise."""
    found = _BY_NAME.get(name)
    if found is None:
        raise ValueError(f"strategy: unknown strategy {name!r}; choose from {', '.join(STRATEGY_NAMES)}")
    return found


def is_deterministic(name: str) -> bool:
    return strategy(name).deterministic


def strategy_available(name: str) -> bool:
    """Whether ``name`` is a strategy this library runs."""
    return name in STRATEGY_NAMES


def runnable(name: str | None, deterministic: bool) -> bool:
    """Whether a table's choice ``name`` may run a scan (auto or deterministic)."""
    if not name or not strategy_available(name):
        return False
    return name in DETERMINISTIC_STRATEGIES if deterministic else True
