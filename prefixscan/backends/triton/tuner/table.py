"""The tuned tables: on disk, one JSON file per GPU name and library version,
and in memory, each file read once per process.

``PREFIXSCAN_CACHE_DIR`` names the directory (default
``$XDG_CACHE_HOME/prefixscan``, else ``~/.cache/prefixscan``).  Files are
written atomically (a temporary file, then ``os.replace``) and merged with the
entries already there; a corrupt file, one written for another GPU or version,
or a bad entry is ignored with a :class:`TuningCacheWarning`, and the scan
runs with the hand-measured defaults.  :func:`lookup` is what the planner
reads; it never tunes (first-use tuning is :mod:`.first_use`'s, at the
backend's entry).  Nothing here imports torch or triton until a GPU's name is
asked.
"""

from __future__ import annotations

import datetime
import json
import os
import re
import sys
import tempfile
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Mapping

from ....caches import clear_caches, register_cache
from .keys import Entry, entry_key

__all__ = ["FORMAT", "TuningCacheWarning", "cache_dir", "cache_path", "library_version", "read_records",
           "load_table", "save_table", "clear_cache", "Table", "table_for", "gpu_name", "store", "lookup",
           "table_device", "TABLE_DEVICES", "on_change", "reset"]

FORMAT = "prefixscan-tuning/1"

#: Device types whose scans read (and tune) a table: CUDA GPUs.
TABLE_DEVICES = ("cuda",)


class TuningCacheWarning(UserWarning):
    """The tuning cache or a first-use tuning failed; scans go on with the defaults."""


def table_device(device) -> bool:
    """Whether scans on ``device`` (a torch device, or a name such as ``"cuda:0"``) use a tuned table."""
    kind = device.partition(":")[0] if isinstance(device, str) else getattr(device, "type", None)
    return kind in TABLE_DEVICES


# ---------------------------------------------------------------------------
# Files.

def cache_dir() -> Path:
    """``$PREFIXSCAN_CACHE_DIR``, else ``$XDG_CACHE_HOME/prefixscan``, else ``~/.cache/prefixscan``."""
    d = os.environ.get("PREFIXSCAN_CACHE_DIR")
    if d:
        return Path(d).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    if xdg:
        return Path(xdg).expanduser() / "prefixscan"
    return Path.home() / ".cache" / "prefixscan"


def library_version() -> str:
    """The version of the installed prefixscan (tables of another version are not read)."""
    v = getattr(sys.modules.get("prefixscan"), "__version__", None)
    if not v:
        try:
            from importlib.metadata import version

            v = version("prefixscan")
        except Exception:  # noqa: BLE001 - not installed as a distribution
            v = "unknown"
    return str(v)


def _sanitize(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9+-]*\.\.+[^A-Za-z0-9+-]*|[^A-Za-z0-9.+-]+", "_", str(text)).strip("._") or "unknown"


def cache_path(gpu: str, version: str | None = None, directory: Path | None = None) -> Path:
    """The table file of GPU ``gpu`` for library ``version``."""
    version = version or library_version()
    return Path(directory or cache_dir()) / f"tuning-{_sanitize(gpu)}-{_sanitize(version)}.json"


def read_records(path: Path, gpu: str, version: str) -> tuple[dict, str | None]:
    """(records, problem): the raw entries of a table file and, when it cannot be
    used, why (None: fine or absent)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}, None
    except (OSError, UnicodeDecodeError) as exc:
        return {}, f"unreadable ({exc})"
    try:
        data = json.loads(text)
    except ValueError as exc:
        return {}, f"corrupt JSON ({exc})"
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        return {}, "not a prefixscan tuning table"
    if data.get("gpu") != gpu or data.get("version") != version:
        return {}, (f"written for GPU {data.get('gpu')!r} and prefixscan {data.get('version')!r}, "
                    f"not {gpu!r} and {version!r}")
    entries = data.get("entries")
    if not isinstance(entries, dict):
        return {}, "no entries object"
    return entries, None


def load_table(path: Path, gpu: str, version: str | None = None) -> dict:
    """The entries of a table file as ``{key: Entry}``; a missing file gives {},
    an unusable file or entry is skipped with a :class:`TuningCacheWarning`."""
    version = version or library_version()
    records, problem = read_records(path, gpu, version)
    if problem:
        warnings.warn(f"prefixscan: ignoring tuning cache {path}: {problem}", TuningCacheWarning, stacklevel=2)
        return {}
    out, bad = {}, []
    for key, rec in records.items():
        try:
            out[key] = Entry.from_record(rec)
        except (TypeError, ValueError, KeyError) as exc:
            bad.append(f"{key}: {exc}")
    if bad:
        warnings.warn(f"prefixscan: ignoring {len(bad)} bad entr{'y' if len(bad) == 1 else 'ies'} of tuning "
                      f"cache {path} ({'; '.join(bad[:3])})", TuningCacheWarning, stacklevel=2)
    return out


def save_table(path: Path, gpu: str, entries: Mapping, version: str | None = None, merge: bool = True) -> Path:
    """Write ``entries`` ({key: Entry or record}) atomically (a temporary file in
    the same directory, then ``os.replace``), merged into the usable entries
    already in the file unless ``merge`` is false."""
    version = version or library_version()
    path = Path(path)
    records = dict(read_records(path, gpu, version)[0]) if merge else {}
    records.update({k: (e.record if isinstance(e, Entry) else e) for k, e in entries.items()})
    versions = {m: getattr(sys.modules[m], "__version__", "?") for m in ("torch", "triton") if m in sys.modules}
    data = {"format": FORMAT, "gpu": gpu, "version": version, "versions": versions,
            "written": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "entries": records}
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(data, fh, indent=1, sort_keys=True)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return path


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


# ---------------------------------------------------------------------------
# The in-process tables.

@dataclass
class Table:
    gpu: str
    version: str
    path: Path
    entries: dict


_tables: dict = {}  # (gpu, cache env) -> Table, each file read once per process
_gpu_names: dict = {}
# Called (no arguments) whenever an answer of lookup() may change: the planner's
# memo of tiles and strategies subscribes, so that it never outlives the table.
_listeners: list = []


def on_change(listener: Callable[[], None]) -> None:
    """Call ``listener()`` whenever a table is stored or forgotten."""
    if listener not in _listeners:
        _listeners.append(listener)


def _changed() -> None:
    for listener in list(_listeners):
        listener()


def reset() -> None:
    """Forget the tables read and the GPU names, so that the environment and the
    files are read again (tests, ``prefixscan tune --clear``)."""
    _tables.clear()
    _gpu_names.clear()
    _changed()


register_cache(__name__, reset)


def gpu_name(device) -> str:
    """The name of the CUDA device ``device`` (a torch device), asked once per process."""
    index = getattr(device, "index", None)
    name = _gpu_names.get(index)
    if name is None:
        import torch

        name = _gpu_names[index] = torch.cuda.get_device_name(index if index is not None else
                                                             torch.cuda.current_device())
    return name


def table_for(gpu: str) -> Table:
    """The table of GPU ``gpu`` under the current cache directory, read from disk once."""
    env = (os.environ.get("PREFIXSCAN_CACHE_DIR"), os.environ.get("XDG_CACHE_HOME"))
    table = _tables.get((gpu, env))
    if table is None:
        version = library_version()
        path = cache_path(gpu, version)
        table = _tables[(gpu, env)] = Table(gpu, version, path, load_table(path, gpu, version))
    return table


def store(table: Table, key: str, record: dict) -> Entry:
    """Add a tuned entry to the in-process table and write the file (a failed
    write warns; the entry still serves this process)."""
    entry = Entry.from_record(record)
    table.entries[key] = entry
    _changed()
    try:
        save_table(table.path, table.gpu, {key: entry}, table.version)
    except OSError as exc:
        warnings.warn(f"prefixscan: could not write tuning cache {table.path}: {exc}", TuningCacheWarning,
                      stacklevel=2)
    return entry


def lookup(device, nbytes: int, floating: bool, opclass: str, K: int, n: int) -> Entry | None:
    """The tuned entry of a scan on ``device`` of ``n`` elements per lane in ``K``
    streams, or None (then the defaults run).  Reads the table; never tunes."""
    if not table_device(device):
        return None
    return table_for(gpu_name(device)).entries.get(entry_key(nbytes, floating, opclass, K, n))
