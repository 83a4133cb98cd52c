"""Which strategy and which tile a scan runs with.

The caller's strategy, else the tuned table's choice for the scan's key (GPU
name, accumulator bytes, int/float, operator class, layout, size bucket; the
user's table over the shipped one, :mod:`.sources`), else the defaults:
the decoupled look-back (Merrill & Garland 2016) or, for
``deterministic=True``, the chained hand-off, on the key's default tile of
:mod:`.tiles`.  A forced tile (:func:`set_override`,
public as :func:`prefixscan.tuning.override`) wins over everything: benchmark
sweeps and tests use it.  Answers are memoized per key, because small scans
are dominated by host time.  The planner only reads the table: a missing key
is tuned on first use at the backend's entry (:mod:`..tuner.first_use`), before
the scan path runs.
"""

from __future__ import annotations

import contextlib
import contextvars

from ....caches import register_cache
from .tiles import INTERPRETER_TILE, TileConfig, default_config
from . import sources, table
from .registry import runnable
from .table import table_device

__all__ = ["set_override", "override", "current_override", "overridden", "generation", "choose_config",
           "lookback_config", "tuned_strategy", "strategy_for", "clear_memo", "table_device"]

# The forced tile lives in a context variable, not a module global: a study that
# forces one (``with override(tile):``) leaves other threads and other contexts
# alone, and lifting it restores whatever was in force before.
_override: contextvars.ContextVar[TileConfig | None] = contextvars.ContextVar("prefixscan_tile_override",
                                                                              default=None)

#: Bumped whenever the tile a scan would get may change (an override set or
#: lifted, a table stored or forgotten): planned replays (FastScan) from an
#: older generation are planned again instead of relaunching their old tile.
generation = 0


def _bump() -> None:
    global generation
    generation += 1


def set_override(config: TileConfig | None) -> None:
    """Force a tile configuration in the current context until changed again
    (benchmark sweeps that cannot use a ``with`` block); None restores the table."""
    _override.set(config)
    _bump()


@contextlib.contextmanager
def override(config: TileConfig | None):
    """``with override(tile):`` every scan in the block runs with ``tile`` (None:
    the table's, as without an override); the previous override is restored after."""
    token = _override.set(config)
    _bump()
    try:
        yield config
    finally:
        _override.reset(token)
        _bump()


def current_override() -> TileConfig | None:
    """The forced tile in effect, or None."""
    return _override.get()


def overridden() -> bool:
    """Whether a forced tile (:func:`set_override`, :func:`override`) is in effect."""
    return _override.get() is not None


def choose_config(device, itemsize: int, floating: bool, M: int, K: int, interpreter: bool, *,
                  accs=None, monoid=None, strategy: str | None = None) -> TileConfig:
    """The tile of a scan of M x K elements per lane with ``itemsize`` accumulator
    bytes: the override, else the interpreter's, else the tuned one for
    ``strategy`` (None: the tile of the tuned auto choice), else
    :func:`default_config` of the key.  ``accs`` (torch dtypes of the fields) and
    ``monoid`` pick the operator class; without them the scan counts as a
    built-in operator on one field."""
    forced = _override.get()
    if forced is not None:
        return forced
    if interpreter:
        return INTERPRETER_TILE
    builtin = (accs is None or len(accs) == 1) and (monoid is None or getattr(monoid, "builtin", False))
    key = (device, itemsize, floating, builtin, K == 1, (M * K - 1).bit_length(), strategy)
    tile = _tiles.get(key)
    if tile is None:
        entry = _tuned_entry(device, itemsize, floating, M, K, builtin)
        tile = entry.tile_for(strategy) if entry is not None else None
        if tile is None:
            tile = default_config(itemsize, floating, K, M * K)
        _tiles[key] = tile
    return tile


def lookback_config(device, accs, M: int, K: int, interpreter: bool, *, monoid=None,
                    chained: bool = False) -> TileConfig:
    """The tile of a look-back scan (``chained``: the chained hand-off) of fields of torch
    dtypes ``accs`` over lanes of M x K elements: :func:`choose_config` for that
    strategy.  The look-back launcher and the ahead-of-time loader both ask here."""
    return choose_config(device, sum(a.itemsize for a in accs), any(a.is_floating_point for a in accs), M, K,
                         interpreter, accs=accs, monoid=monoid,
                         strategy="chained" if chained else "decoupled_lookback")


def strategy_for(config, device, accs, M: int, K: int, interpreter: bool) -> str:
    """The meta-strategy a scan of ``config`` runs with: the caller's, else the tuned
    one (:func:`tuned_strategy`: chained or decoupled look-back without a table).  The
    scan route and the ahead-of-time loader both ask here."""
    if config.strategy != "auto":
        return config.strategy
    return tuned_strategy(device, accs, M, K, interpreter, monoid=config.monoid,
                          deterministic=config.deterministic)


def tuned_strategy(device, accs, M: int, K: int, interpreter: bool, *, monoid=None,
                   deterministic: bool = False) -> str:
    """The meta-strategy of an ``strategy="auto"`` scan: the tuned table's (a
    deterministic one when ``deterministic``), else "chained" for deterministic
    scans and "decoupled_lookback" otherwise.  No table in the interpreter or
    while a tile override is set."""
    if interpreter or _override.get() is not None:
        return "chained" if deterministic else "decoupled_lookback"
    builtin = len(accs) == 1 and (monoid is None or getattr(monoid, "builtin", False))
    key = (device, tuple(accs), builtin, K == 1, (M * K - 1).bit_length(), deterministic)
    name = _strategies.get(key)
    if name is None:
        entry = _tuned_entry(device, sum(a.itemsize for a in accs), any(a.is_floating_point for a in accs),
                             M, K, builtin)
        name = "chained" if deterministic else "decoupled_lookback"
        if entry is not None:
            tuned = entry.deterministic_strategy if deterministic else entry.strategy
            name = tuned if runnable(tuned, deterministic) else name
        _strategies[key] = name
    return name


# Every scan asks for its strategy and its tile, and small scans are dominated by
# host time: the answers per (device, dtypes, operator class, layout, log2 size)
# are kept here, so that a repeated call costs a tuple and a dict lookup (the
# device object itself is the key: reading device.type costs more).  Emptied
# whenever a table is stored or forgotten (table.on_change) and by
# prefixscan.caches.clear_caches().
_tiles: dict = {}
_strategies: dict = {}


def clear_memo() -> None:
    """Forget the memoized answers (and expire planned replays)."""
    _tiles.clear()
    _strategies.clear()
    _bump()


register_cache(__name__, clear_memo)
table.on_change(clear_memo)


def _tuned_entry(device, itemsize, floating, M, K, builtin):
    """The tuned table's entry of the scan's key, or None."""
    return sources.lookup(device, itemsize, floating, "builtin" if builtin else "user", K, M * K)
