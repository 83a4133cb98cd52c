"""What a tuned table is indexed by, and what one entry holds.

A key is coarse on purpose: accumulator bytes per element summed over the
fields, floating or not, operator class (``builtin``: a built-in operator on
one field; ``user``: a user monoid or several fields), layout (``1d``: one
stream, K == 1; ``2d``: interleaved streams, K > 1) and a size bucket of the
elements per lane, M * K (log2 ranges <= 16, 17..21, 22..25, >= 26).  No call
size and no batch size gets an entry of its own, so a new length or a new
number of lanes never retunes.

An entry keeps, for its key, the choice of ``strategy="auto"`` scans, the
choice of deterministic scans and the best tile of every strategy measured
(:class:`Entry`); :class:`Candidate` is one (strategy, tile) pair the search
measures.  Nothing here imports torch or triton.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

from .registry import DETERMINISTIC_STRATEGIES, STRATEGY_NAMES
from .tiles import SIZE_BUCKETS, TileConfig, size_bucket

__all__ = ["BUCKETS", "size_bucket", "bucket_size", "op_class", "layout_class", "entry_key", "Candidate", "Entry",
           "tile_dict", "tile_from"]

#: (bucket, largest log2 size in it or None, log2 size it is tuned at); defined
#: with the tiles, whose defaults are per bucket too.
BUCKETS = SIZE_BUCKETS


def bucket_size(bucket: str) -> int:
    """The size (elements) a bucket is tuned at."""
    for name, _, rep in BUCKETS:
        if name == bucket:
            return 1 << rep
    raise ValueError(f"bucket: unknown size bucket {bucket!r}; choose from {', '.join(b for b, _, _ in BUCKETS)}")


def op_class(monoid=None, fields: int = 1) -> str:
    """``builtin`` for a built-in operator on one field, else ``user``."""
    builtin = monoid is None or bool(getattr(monoid, "builtin", False))
    return "builtin" if builtin and fields == 1 else "user"


def layout_class(K: int) -> str:
    """``1d`` for one stream per lane (K == 1), ``2d`` for K interleaved streams."""
    return "1d" if K == 1 else "2d"


def entry_key(nbytes: int, floating: bool, opclass: str, K: int, n: int) -> str:
    """Table key: accumulator bytes (summed over fields), int/float, operator
    class, layout class and the size bucket of ``n`` elements per lane."""
    return f"{nbytes}B-{'float' if floating else 'int'}-{opclass}-{layout_class(K)}-{size_bucket(n)}"


@dataclass(frozen=True)
class Candidate:
    """One choice the tuner measures: a meta-strategy on a tile."""

    strategy: str
    tile: TileConfig

    @property
    def label(self) -> str:
        t = self.tile
        return (f"{self.strategy} b={t.block} w={t.num_warps} win={t.window}"
                + (f" rake={t.raking}" if t.raking else "") + (f" occ={t.occupancy}" if t.occupancy else ""))


def tile_dict(t: TileConfig) -> dict:
    """A tile as the JSON object a table file stores."""
    return {"block": t.block, "num_warps": t.num_warps, "window": t.window, "max_kb": t.max_kb,
            "packed": t.packed, "raking": t.raking, "occupancy": t.occupancy}


def tile_from(d) -> TileConfig:
    """The tile of a table file's JSON object; ``ValueError`` naming the bad field."""
    if not isinstance(d, dict):
        raise ValueError("tile is not an object")
    ints = {}
    for name in ("block", "num_warps", "window", "max_kb"):
        v = d.get(name, 32 if name == "max_kb" else None)
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ValueError(f"tile {name}={v!r}")
        ints[name] = v
    if ints["num_warps"] not in (1, 2, 4, 8, 16, 32) or ints["block"] & (ints["block"] - 1):
        raise ValueError(f"tile {d!r}")
    packed = d.get("packed")
    if packed not in (None, True, False):
        raise ValueError(f"tile packed={packed!r}")
    raking = d.get("raking", 0)  # absent in tables written before the raking knob
    if isinstance(raking, bool) or not isinstance(raking, int) or raking < 0 or raking & (raking - 1):
        raise ValueError(f"tile raking={raking!r}")
    occupancy = d.get("occupancy", 0)  # absent in tables written before the register cap
    if isinstance(occupancy, bool) or not isinstance(occupancy, int) or not 0 <= occupancy <= 64:
        raise ValueError(f"tile occupancy={occupancy!r}")
    return TileConfig(ints["block"], ints["num_warps"], ints["window"], ints["max_kb"], packed, raking, occupancy)


@dataclass(frozen=True)
class Entry:
    """One tuned key: the choice for ``strategy="auto"`` scans, for deterministic
    scans, and the best tile of every strategy measured."""

    strategy: str
    tile: TileConfig
    deterministic_strategy: str | None
    tiles: Mapping[str, TileConfig]
    record: dict = field(compare=False, repr=False)

    def tile_for(self, strategy: str | None) -> TileConfig | None:
        """The tile to run ``strategy`` with (None: the auto choice's)."""
        if strategy is None:
            return self.tile
        return self.tiles.get(strategy)

    @classmethod
    def from_record(cls, record) -> "Entry":
        """The entry of a table file's JSON record; ``ValueError`` when it names a
        strategy this library does not have or holds a bad tile."""
        if not isinstance(record, dict):
            raise ValueError("entry is not an object")
        strategy = record.get("strategy")
        if strategy not in STRATEGY_NAMES:
            raise ValueError(f"strategy {strategy!r}")
        det = record.get("deterministic_strategy")
        if det is not None and det not in DETERMINISTIC_STRATEGIES:
            raise ValueError(f"deterministic_strategy {det!r}")
        raw = record.get("tiles") or {}
        if not isinstance(raw, dict):
            raise ValueError("tiles is not an object")
        tiles = {s: tile_from(t) for s, t in raw.items() if s in STRATEGY_NAMES}
        tile = tile_from(record.get("tile"))
        tiles.setdefault(strategy, tile)
        return cls(strategy, tile, det, tiles, record)
