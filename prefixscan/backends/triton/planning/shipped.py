"""The tuned tables shipped with the package, one per GPU measured, and how a
GPU finds its own or the closest one.

Each table is ``tables/<GPU name>.json``: the format of a user's table
(:mod:`.table`, ``prefixscan tune``'s output) plus the GPU's SM count and
compute capability and its provenance (GPU, date, library, torch, Triton and
CUDA versions, the command that measured it).  A shipped table applies to any
library version: the version that measured it is recorded, not checked, and
an entry naming a strategy or a tile this version does not have is skipped with
a warning.  A user's table stays per library version.

:func:`shipped_for` picks the table of a GPU: the one of its exact name, else
the closest of the same architecture (same compute capability major; nearest
compute capability, then nearest SM count, then the longest common name
prefix), else none -- then first-use tuning applies (:mod:`..tuner.first_use`).  Only
a GPU without a table of its own reads the properties (SM count, compute
capability) and every shipped file.  Tables are read lazily, on the first scan
that needs one, once per process.  ``PREFIXSCAN_SHIPPED_TABLES=0`` turns
shipped tables off (a study of first-use tuning, of the defaults).

Maintainers refresh a table and re-derive the defaults of :mod:`.tiles` with
the tuner's :mod:`prefixscan.backends.triton.tuner.ship`, from the command
line: ``python -m prefixscan.backends.triton.tuner.ship {add,derive}``
(docs/tuning.md).  SAM (Maleki et al., PLDI 2016) likewise ships tuned
parameters per GPU generation.
"""

from __future__ import annotations

import json
import os
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Mapping, Sequence

from ....caches import register_cache
from . import table
from .keys import Entry
from .table import FORMAT, GpuProperties, TuningCacheWarning

__all__ = ["TABLES_DIR", "APPLIES_TO", "ShippedTable", "shipped_enabled", "load_shipped", "shipped_tables",
           "shipped_path", "shipped_for", "closest", "forget", "reset"]

TABLES_DIR = Path(__file__).resolve().with_name("tables")
APPLIES_TO = "any prefixscan version"


@dataclass
class ShippedTable:
    gpu: GpuProperties
    path: Path
    entries: Mapping[str, Entry]
    data: dict = field(repr=False)  # the whole file: provenance, raw records

    @property
    def provenance(self) -> dict:
        return self.data.get("provenance") or {}


_loaded: dict = {}  # path -> ShippedTable or None (unusable)
_all: dict = {}  # directory -> [ShippedTable]


def reset() -> None:
    """Forget the shipped tables read (tests)."""
    _loaded.clear()
    _all.clear()


register_cache(__name__, reset)


def shipped_enabled() -> bool:
    """Shipped tables are used unless ``PREFIXSCAN_SHIPPED_TABLES`` is 0/false/no/off."""
    return os.environ.get("PREFIXSCAN_SHIPPED_TABLES", "1").strip().lower() not in ("0", "false", "no", "off")


def forget(path: Path) -> None:
    """Read the shipped table in ``path`` again on its next use (it was rewritten)."""
    _loaded.pop(Path(path), None)
    _all.clear()


def shipped_path(gpu: str, directory: Path | None = None) -> Path:
    """Where the shipped table of GPU ``gpu`` is (whether or not there is one)."""
    return Path(directory or TABLES_DIR) / f"{table.sanitize(gpu)}.json"


def load_shipped(path: Path) -> ShippedTable | None:
    """The shipped table in ``path``, read once per process; None when absent or
    unusable (warned)."""
    path = Path(path)
    if path in _loaded:
        return _loaded[path]
    shipped, problem = None, None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        data = None
    except (OSError, ValueError) as exc:
        data, problem = None, f"unreadable ({exc})"
    if data is not None:
        if (not isinstance(data, dict) or data.get("format") != FORMAT or not isinstance(data.get("gpu"), str)
                or not isinstance(data.get("entries"), dict)):
            problem = "not a prefixscan tuning table"
        else:
            capability = data.get("compute_capability")
            props = GpuProperties(data["gpu"], data.get("sm_count"),
                                  tuple(capability) if isinstance(capability, list) else None)
            shipped = ShippedTable(props, path, table.parse_entries(data["entries"], path), data)
    if problem:
        warnings.warn(f"prefixscan: ignoring shipped tuning table {path}: {problem}", TuningCacheWarning,
                      stacklevel=2)
    _loaded[path] = shipped
    return shipped


def shipped_tables(directory: Path | None = None) -> list[ShippedTable]:
    """Every shipped table, in file-name order (all files are read: only a GPU
    without a table of its own needs this)."""
    d = Path(directory or TABLES_DIR)
    found = _all.get(d)
    if found is None:
        files = sorted(d.glob("*.json")) if d.is_dir() else []
        found = _all[d] = [t for t in map(load_shipped, files) if t is not None]
    return found


def closest(gpu: GpuProperties, tables: Sequence[ShippedTable]) -> ShippedTable | None:
    """The table of ``tables`` closest to ``gpu`` among those of its architecture
    (compute capability major): nearest compute capability, then nearest SM
    count, then the longest common name prefix, then the name; None when no
    table shares the architecture or ``gpu``'s properties are unknown."""
    if not gpu.known:
        return None
    same = [t for t in tables if t.gpu.known and t.gpu.capability[0] == gpu.capability[0]]
    if not same:
        return None

    def distance(t):
        return (abs(t.gpu.capability[1] - gpu.capability[1]), abs(t.gpu.sm_count - gpu.sm_count),
                -len(os.path.commonprefix([t.gpu.name, gpu.name])), t.gpu.name)

    return min(same, key=distance)


def shipped_for(gpu: str, properties: Callable[[], GpuProperties],
                directory: Path | None = None) -> tuple[ShippedTable | None, bool]:
    """(the shipped table that serves GPU ``gpu``, whether it is the GPU's own).
    ``properties()`` is asked only when ``gpu`` has no table of its own."""
    own = load_shipped(shipped_path(gpu, directory))
    if own is not None and own.gpu.name == gpu:
        return own, True
    return closest(properties(), shipped_tables(directory)), False
