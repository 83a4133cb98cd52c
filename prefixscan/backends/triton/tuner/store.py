"""Writing the user's tuned tables: the tuner's side of :mod:`..planning.table`.

Files are written atomically (a temporary file in the same directory, fsync,
then ``os.replace``) and merged with the usable entries already there; a
stored entry serves the process at once (the planner's memo is told through
:func:`..planning.table.changed`), and a failed write warns with a
:class:`~..planning.table.TuningCacheWarning` and changes nothing else.
``prefixscan tune --clear`` deletes the files (:func:`clear_cache`).
"""

from __future__ import annotations

import datetime
import json
import os
import sys
import tempfile
import warnings
from pathlib import Path
from typing import Mapping

from ....caches import clear_caches
from ..planning.keys import Entry
from ..planning.table import (FORMAT, GpuProperties, Table, TuningCacheWarning, cache_dir, changed, library_version,
                              read_file)

__all__ = ["save_table", "write_json", "clear_cache", "store"]


def save_table(path: Path, gpu: str, entries: Mapping, version: str | None = None, merge: bool = True,
               properties: "GpuProperties | None" = None) -> Path:
    """Write ``entries`` ({key: Entry or record}) atomically (a temporary file in
    the same directory, then ``os.replace``), merged into the usable entries
    already in the file unless ``merge`` is false.  ``properties``: the GPU's SM
    count and compute capability, recorded with its name (else those already in
    the file are kept)."""
    version = version or library_version()
    path = Path(path)
    old = read_file(path, gpu, version)[0] if merge else None
    records = dict(old["entries"]) if old else {}
    records.update({k: (e.record if isinstance(e, Entry) else e) for k, e in entries.items()})
    versions = {m: getattr(sys.modules[m], "__version__", "?") for m in ("torch", "triton") if m in sys.modules}
    data = {"format": FORMAT, "gpu": gpu, "version": version, "versions": versions,
            "written": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            **_architecture(properties, old), "entries": records}
    write_json(path, data)
    return path


def _architecture(properties: "GpuProperties | None", old: dict | None) -> dict:
    """The metadata fields ``sm_count`` and ``compute_capability`` of a table file."""
    if properties is not None and properties.sm_count is not None:
        return {"sm_count": properties.sm_count, "compute_capability": list(properties.capability)}
    return {k: old[k] for k in ("sm_count", "compute_capability") if old and k in old}


def write_json(path: Path, data: dict, indent: int | None = 1) -> None:
    """Write ``data`` to ``path`` atomically (a temporary file, fsync, ``os.replace``)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(data, fh, indent=indent, sort_keys=True)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def clear_cache(directory: Path | None = None) -> list[Path]:
    """Delete every table file in the cache directory and empty the process's
    caches (:func:`prefixscan.caches.clear_caches`: tables read, lookups
    memoized, first-use attempts); returns the paths removed."""
    d = Path(directory or cache_dir())
    removed = []
    for p in sorted(d.glob("tuning-*.json")) if d.is_dir() else []:
        try:
            p.unlink()
            removed.append(p)
        except FileNotFoundError:
            pass
    clear_caches()
    return removed




def store(table: Table, key: str, record: dict, properties: GpuProperties | None = None) -> Entry:
    """Add a tuned entry to the in-process table and write the file (a failed
    write warns; the entry still serves this process).  ``properties``: the
    GPU's, recorded in the file."""
    entry = Entry.from_record(record)
    table.entries[key] = entry
    changed()
    try:
        save_table(table.path, table.gpu, {key: entry}, table.version, properties=properties)
    except OSError as exc:
        warnings.warn(f"prefixscan: could not write tuning cache {table.path}: {exc}", TuningCacheWarning,
                      stacklevel=2)
    return entry
