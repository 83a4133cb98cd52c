"""Tile sizes, warps, look-back window and meta-strategy per scan.

On a GPU both come from the tuned table of :mod:`.autotune` (per GPU name,
accumulator bytes, int/float, operator class, layout and size bucket; tuned on
first use or by ``prefixscan tune``).  Without an entry the hand-measured table
below runs: measured on an H100 (see ``bench/results``) and used on every GPU.
Measured rather than modelled, as SAM (seed 002) and Merrill & Grimshaw (seed
000) tune theirs: :mod:`.autotune` says why.  In the interpreter tiles are tiny
so that multi-tile look-back paths run on small inputs, and nothing is tuned.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class TileConfig:
    block: int  # elements per tile (rows * KB for the 2-D kernel)
    num_warps: int
    window: int  # status words read per look-back step (predecessors: window // words per entry)
    max_kb: int = 32  # widest column block of the 2-D kernel
    packed: bool | None = None  # status as tagged words (launch.status_words); None: when <= 4 words
    # In-tile scan: 0 for tl.associative_scan, else raking with rows of this many
    # elements (a power of two; Merrill & Grimshaw's SRTS, see kernels._raking_scan).
    raking: int = 0
    # Tiles resident per SM to cap registers for (maxnreg = registers per SM over
    # the tile's threads); 0 leaves registers to the compiler.  A look-back tile
    # holds its registers while it waits on L2, so resident tiles hide that wait:
    # ptxas gives the float64 tile 168 registers (3 tiles of 4 warps per SM) where
    # the int64 one gets 128 (4 tiles), bench/occupancy_report.py.
    occupancy: int = 0


_INTERPRETER = TileConfig(block=32, num_warps=1, window=4, max_kb=4)

# (element bytes, floating) -> config.  Measured on an H100 80GB HBM3 at n = 2^28
# (4-byte) and 2^27 (8-byte), bench/results/2026-11-21-h100/tile-sweep.log: fewer warps
# per tile won every time (4 warps beat 8 by 20-40%), larger tiles helped 4-byte ints.
_MEASURED = {(4, False): TileConfig(16384, 4, 32), (4, True): TileConfig(8192, 4, 32),
             (8, False): TileConfig(4096, 8, 32), (8, True): TileConfig(8192, 4, 32)}
# Element sizes not measured yet: the 4-byte choice scaled to about 64 KB per tile.
_FALLBACK = {1: TileConfig(16384, 4, 32), 2: TileConfig(16384, 4, 32)}

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


def default_config(itemsize: int, floating: bool) -> TileConfig:
    """The hand-measured choice for ``itemsize`` accumulator bytes (no tuned entry)."""
    return _MEASURED.get((itemsize, floating)) or _FALLBACK.get(itemsize) or _MEASURED[(8, floating)]


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
        return _INTERPRETER
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


#: Registers per SM on the GPUs tuned for (sm_70 to sm_90) and the cap ptxas accepts per thread.
REGISTERS_PER_SM = 65536
MAX_REGISTERS_PER_THREAD = 255


def register_cap(config: TileConfig) -> int | None:
    """``maxnreg`` for a tile of ``config``: the registers per thread that let
    ``config.occupancy`` tiles of ``config.num_warps`` warps share an SM, in the
    allocation unit of 8; None without an occupancy (the compiler's choice)."""
    if not config.occupancy:
        return None
    cap = REGISTERS_PER_SM // (config.occupancy * 32 * config.num_warps)
    return max(24, min(MAX_REGISTERS_PER_THREAD, cap) // 8 * 8)


def raking_rows(config: TileConfig, rows: int) -> int:
    """The raking row length a tile of ``rows`` elements along the scan axis gets:
    the config's, capped at the tile, 0 (tl.associative_scan) when off or not a
    power of two."""
    rake = min(int(config.raking or 0), rows)
    return rake if rake >= 2 and rake & (rake - 1) == 0 else 0
