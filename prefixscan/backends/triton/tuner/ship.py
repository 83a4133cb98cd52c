"""Maintainers' side of the shipped tables (:mod:`..planning.shipped`): a new
shipped table, and the default tiles derived from them all.

:func:`make_shipped` copies one GPU's tuned table (``prefixscan tune``'s output,
in one or several pieces) into the package's ``tables/`` with the GPU's SM
count, compute capability and provenance; :func:`derive_defaults` finds the
default tile per key that every shipped table measured, which the defaults of
:mod:`..planning.tiles` follow.  Both run from the command line:
``python -m prefixscan.backends.triton.tuner.ship {add,derive}``
(docs/tuning.md).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import sys
from pathlib import Path
from typing import Mapping, Sequence

from ..planning.keys import Entry
from ..planning.shipped import APPLIES_TO, ShippedTable, forget, shipped_path, shipped_tables
from ..planning.table import FORMAT
from ..planning.tiles import TileConfig
from .store import write_json

__all__ = ["make_shipped", "derive_defaults", "main"]


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
    write_json(path, out)
    os.chmod(path, 0o644)  # package data: readable by all (the temporary file was private)
    forget(path)
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
    parser = argparse.ArgumentParser(prog="python -m prefixscan.backends.triton.tuner.ship",
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
