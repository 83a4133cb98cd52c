"""Which strategy and which tile a scan runs with.

The caller's strategy, else the tuned table's choice for the scan's key (GPU
name, accumulator bytes, int/float, operator class, layout, size bucket; see
:mod:`.tuner`), else the defaults: the decoupled look-back (Merrill & Garland
2016) or, for ``deterministic=True``, the chained hand-off, on the
hand-measured tile of :mod:`.tiles`.  A forced tile (:func:`set_override`,
public as :func:`prefixscan.tuning.override`) wins over everything: benchmark
sweeps and tests use it.  Answers are memoized per key once final, because
small scans are dominated by host time.
"""

from __future__ import annotations

from .tiles import INTERPRETER_TILE, TileConfig, default_config

_override: TileConfig | None = None

#: Bumped whenever the tile a scan would get may change (an override set or
#: lifted, a table stored or forgotten): planned replays (launch.FastScan) from an
#: older generation are planned again instead of relaunching their old tile.
generation = 0


def set_override(config: TileConfig | None) -> None:
    """Force a tile configuration (benchmark sweeps and tests); None restores the table."""
    global _override, generation
    _override = config
    generation += 1


def overridden() -> bool:
    """Whether a forced tile (:func:`set_override`) is in effect."""
    return _override is not None


def choose_config(device, itemsize: int, floating: bool, M: int, K: int, interpreter: bool, *,
                  accs=None, monoid=None, strategy: str | None = None) -> TileConfig:
    """The tile of a scan of M x K elements per lane with ``itemsize`` accumulator
    bytes: the override, else the interpreter's, else the tuned one for
    ``strategy`` (None: the tile of the tuned auto choice), else
    :func:`default_config`.  ``accs`` (torch dtypes of the fields) and
    ``monoid`` pick the operator class and give first-use tuning its workload;
    without them the scan counts as a built-in operator on one field."""
    if _override is not None:
        return _override
    if interpreter:
        return INTERPRETER_TILE
    builtin = (accs is None or len(accs) == 1) and (monoid is None or getattr(monoid, "builtin", False))
    key = (device, itemsize, floating, builtin, K == 1, (M * K - 1).bit_length(), strategy)
    tile = _tiles.get(key)
    if tile is None:
        entry, final = _tuned_entry(device, itemsize, floating, M, K, accs, monoid, builtin)
        tile = entry.tile_for(strategy) if entry is not None else None
        if tile is None:
            tile = default_config(itemsize, floating)
        if final:
            _tiles[key] = tile
    return tile


def tuned_strategy(device, accs, M: int, K: int, interpreter: bool, *, monoid=None,
                   deterministic: bool = False) -> str:
    """The meta-strategy of an ``strategy="auto"`` scan: the tuned table's (a
    deterministic one when ``deterministic``), else "chained" for deterministic
    scans and "decoupled_lookback" otherwise.  Never tunes in the interpreter or
    while a tile override is set."""
    if interpreter or _override is not None:
        return "chained" if deterministic else "decoupled_lookback"
    builtin = len(accs) == 1 and (monoid is None or getattr(monoid, "builtin", False))
    key = (device, tuple(accs), builtin, K == 1, (M * K - 1).bit_length(), deterministic)
    name = _strategies.get(key)
    if name is None:
        entry, final = _tuned_entry(device, sum(a.itemsize for a in accs), any(a.is_floating_point for a in accs),
                                    M, K, accs, monoid, builtin)
        name = "chained" if deterministic else "decoupled_lookback"
        if entry is not None:
            from . import autotune

            tuned = entry.deterministic_strategy if deterministic else entry.strategy
            name = tuned if autotune.runnable(tuned, deterministic) else name
        if final:
            _strategies[key] = name
    return name


#: Device types whose scans read (and tune) a table: CUDA GPUs.
_TABLE_DEVICES = ("cuda",)


def table_device(device) -> bool:
    """Whether scans on ``device`` use a tuned table."""
    return getattr(device, "type", None) in _TABLE_DEVICES


# Every scan asks for its strategy and its tile, and small scans are dominated by
# host time: the answers per (device, dtypes, operator class, layout, log2 size)
# are kept here once final, so that a repeated call costs a tuple and a dict
# lookup (the device object itself is the key: reading device.type costs more).
# autotune.reset() and autotune.store() clear them.
_tiles: dict = {}
_strategies: dict = {}


def clear_memo() -> None:
    global generation
    _tiles.clear()
    _strategies.clear()
    generation += 1


def _tuned_entry(device, itemsize, floating, M, K, accs, monoid, builtin):
    """(entry or None, whether that answer is final for this process)."""
    if not table_device(device):
        return None, True
    from . import autotune

    return autotune.resolve(device, itemsize, floating, "builtin" if builtin else "user", K, M * K,
                            accs=accs, monoid=monoid)


