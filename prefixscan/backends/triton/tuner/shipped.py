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
prefix), else none -- then first-use tuning applies (:mod:`.first_use`).  Only
a GPU without a table of its own reads the properties (SM count, compute
capability) and every shipped file.  Tables are read lazily, on the first scan
that needs one, once per process.  ``PREFIXSCAN_SHIPPED_TABLES=0`` turns
shipped tables off (a study of first-use tuning, of the defaults).

Maintainers refresh a table with :func:`make_shipped` and re-derive the
defaults of :mod:`..tiles` with :func:`derive_defaults`, both from the command
line: ``python -m prefixscan.backends.triton.tuner.shipped {add,derive}``
(docs/tuning.md).  SAM (Maleki et al., PLDI 2016) likewise ships tuned
parameters per GPU generation.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import sys
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Mapping, Sequence

from ....caches import register_cache
from ..tiles import TileConfig
from . import table
from .keys import Entry
from .table import FORMAT, GpuProperties, TuningCacheWarning

__all__ = ["TABLES_DIR", "APPLIES_TO", "ShippedTable", "shipped_enabled", "load_shipped", "shipped_tables",
           "shipped_path", "shipped_for", "closest", "make_shipped", "derive_defaults", "reset", "main"]

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


# ---------------------------------------------------------------------------
# Maintainers: a new shipped table, and the defaults derived from them all.

def make_shipped(*sources: Path, sm_count: int, capability: tuple, provenance: Mapping,
                 directory: Path | None = None) -> Path:
    """Write the shipped table of one or more table files (or ``prefixscan tune
    --json`` outputs) ``sources`` of one GPU: their entries, every one checked,
    with ``sm_count``, ``capability`` (major, minor) and ``provenance`` (date,
    command, versions, where the measurement is kept, notes).  Several sources
    are the parts of one tune run in pieces (the 1-D and the 2-D keys, say, each
    tuned within one time-limited call); no key may come from two of them."""
    if not sources:
        raise ValueError("sources: no table given")
    tables = [(source, json.loads(Path(source).read_text(encoding="utf-8"))) for source in sources]
    first = tables[0][1]
    gpu, records = first.get("gpu"), {}
    for source, data in tables:
        name, entries = data.get("gpu"), data.get("entries")
        if not isinstance(name, str) or not isinstance(entries, dict) or not entries:
            raise ValueError(f"{source}: not a tuning table (no gpu name or no entries)")
        if name != gpu:
            raise ValueError(f"{source}: a table of {name!r}, the others are of {gpu!r}")
        twice = sorted(set(entries) & set(records))
        if twice:
            raise ValueError(f"{source}: {', '.join(twice)} already come from another source")
        for key, record in entries.items():
            try:
                Entry.from_record(record)
            except (TypeError, ValueError, KeyError) as exc:
                raise ValueError(f"{source}: entry {key}: {exc}") from None
        records.update(entries)
    major, minor = (int(v) for v in capability)
    out = {"format": FORMAT, "gpu": gpu, "version": first.get("version"), "versions": first.get("versions", {}),
           "written": first.get("written"), "sm_count": int(sm_count), "compute_capability": [major, minor],
           "applies_to": APPLIES_TO, "provenance": dict(provenance), "entries": records}
    path = shipped_path(gpu, directory)
    table.write_json(path, out)
    os.chmod(path, 0o644)  # package data: readable by all (the temporary file was private)
    _loaded.pop(path, None)
    _all.clear()
    return path


def _key_parts(key: str):
    """(bytes, floating, layout, bucket) of a builtin key, or None."""
    nbytes, kind, opclass, layout, bucket = key.split("-", 4)
    if opclass != "builtin":
        return None
    return int(nbytes.rstrip("B")), kind == "float", layout, bucket


def derive_defaults(tables: Sequence[ShippedTable], tie: float = 0.01) -> dict:
    """The default tile per key that every table measured: among the uncapped
    decoupled look-back tiles measured on every GPU, the one whose worst ratio
    to a GPU's fastest measured choice (any strategy, any cap) is lowest; tiles
    within ``tie`` of that worst ratio count as tied, and the one measured most
    often (finalists are measured again) wins, then the lower worst ratio.
    ``{(bytes, floating, layout, bucket): (TileConfig, {gpu name: (ratio, samples)})}``."""
    out = {}
    keys = set.intersection(*(set(t.data["entries"]) for t in tables)) if tables else set()
    for key in sorted(keys):
        parts = _key_parts(key)
        if parts is None:
            continue
        per_gpu = {}
        for t in tables:
            measured = t.data["entries"][key].get("measured") or []
            if not measured:
                break
            fastest = min(m["seconds"] for m in measured)
            per_gpu[t.gpu.name] = {
                (m["block"], m["num_warps"], m["window"], m.get("raking") or 0): (m["seconds"] / fastest,
                                                                                  m.get("samples", 1))
                for m in measured if m["strategy"] == "decoupled_lookback" and not m.get("occupancy")}
        if len(per_gpu) != len(tables):
            continue
        common = set.intersection(*(set(v) for v in per_gpu.values()))
        if not common:
            continue
        worst = {c: max(v[c][0] for v in per_gpu.values()) for c in common}
        low = min(worst.values())
        tied = [c for c in common if worst[c] <= low + tie]
        pick = min(tied, key=lambda c: (-sum(v[c][1] for v in per_gpu.values()), worst[c],
                                        statistics.fmean(v[c][0] for v in per_gpu.values()), c))
        block, warps, window, raking = pick
        out[parts] = (TileConfig(block, warps, window, raking=raking), {g: v[pick] for g, v in per_gpu.items()})
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m prefixscan.backends.triton.tuner.shipped",
                                     description="Add a shipped tuning table, or derive the default tiles.")
    sub = parser.add_subparsers(dest="command", required=True)
    add = sub.add_parser("add", help="copy a tuned table into the package, with its provenance")
    add.add_argument("source", nargs="+",
                     help="table files of the cache dir, or prefixscan tune --json outputs (several: the "
                          "parts of one tune, each key in one of them)")
    add.add_argument("--sm-count", type=int, required=True)
    add.add_argument("--capability", required=True, help="compute capability, e.g. 9.0")
    add.add_argument("--command", required=True, help="the prefixscan tune command that measured it")
    add.add_argument("--date", default=datetime.date.today().isoformat())
    add.add_argument("--cuda", default="", help="CUDA version of the measurement")
    add.add_argument("--python", default="", help="Python version of the measurement")
    add.add_argument("--commit", default="", help="the library's commit that measured it")
    add.add_argument("--results", default="", help="where the measurement is kept (benchmarks/results/...)")
    add.add_argument("--note", action="append", default=[], help="a remark on the measurement (repeatable)")
    add.add_argument("--out", default=None, help="directory (default: the package's tables/)")
    sub.add_parser("derive", help="print the default tile per key that the shipped tables imply")
    args = parser.parse_args(argv)
    if args.command == "derive":
        tables = shipped_tables()
        names = " / ".join(t.gpu.name for t in tables)
        print(f"# ratios: {names}")
        for (nbytes, floating, layout, bucket), (tile, ratios) in sorted(derive_defaults(tables).items()):
            shown = "/".join(f"{r:.3f}" for r, _ in ratios.values())
            print(f"{nbytes}B {'float' if floating else 'int':5s} {layout} {bucket:9s} "
                  f"{tile.block}x{tile.num_warps} w{tile.window}" + (f" rake{tile.raking}" if tile.raking else "")
                  + f"  {shown}")
        return 0
    source = json.loads(Path(args.source[0]).read_text(encoding="utf-8"))
    provenance = {"gpu": source.get("gpu"), "sm_count": args.sm_count, "compute_capability": args.capability,
                  "date": args.date, "command": args.command, "prefixscan": source.get("version"),
                  **{k: v for k, v in (source.get("versions") or {}).items()},
                  "cuda": args.cuda, "python": args.python, "commit": args.commit, "results": args.results,
                  "notes": args.note}
    path = make_shipped(*map(Path, args.source), sm_count=args.sm_count,
                        capability=tuple(args.capability.split(".")), provenance=provenance,
                        directory=Path(args.out) if args.out else None)
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
