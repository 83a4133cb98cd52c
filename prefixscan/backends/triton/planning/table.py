"""The user's tuned tables: on disk, one JSON file per GPU name and library
version, and in memory, each file read once per process.

``PREFIXSCAN_CACHE_DIR`` names the directory (default
``$XDG_CACHE_HOME/prefixscan``, else ``~/.cache/prefixscan``).  This module is
the read side: a corrupt file, one written for another GPU or version, or a
bad entry is ignored with a :class:`TuningCacheWarning`, and the scan runs
with the shipped table or the defaults.  The tuner writes the files
(:mod:`prefixscan.backends.triton.tuner.store`: atomically, merged with the
entries already there).  The tables shipped with the
package (:mod:`.shipped`) have the same format; :mod:`.sources` says which
table serves a GPU, and is what the planner reads.  A file records the GPU's
SM count and compute capability next to its name, so that a table can be
matched to a GPU of the same architecture.  Nothing here imports torch or
triton until a GPU's name or properties are asked.
"""

from __future__ import annotations

import json
import os
import re
import sys
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Mapping

from ....caches import register_cache
from .keys import Entry

__all__ = ["FORMAT", "TuningCacheWarning", "cache_dir", "cache_path", "library_version", "read_records",
           "read_file", "load_table", "parse_entries", "sanitize", "Table", "table_for", "gpu_name", "GpuProperties",
           "gpu_properties", "table_device", "TABLE_DEVICES", "on_change", "changed", "reset"]

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


def sanitize(text: str) -> str:
    """``text`` as a safe part of a file name (no path separators, no '..')."""
    return re.sub(r"[^A-Za-z0-9+-]*\.\.+[^A-Za-z0-9+-]*|[^A-Za-z0-9.+-]+", "_", str(text)).strip("._") or "unknown"


def cache_path(gpu: str, version: str | None = None, directory: Path | None = None) -> Path:
    """The table file of GPU ``gpu`` for library ``version``."""
    version = version or library_version()
    return Path(directory or cache_dir()) / f"tuning-{sanitize(gpu)}-{sanitize(version)}.json"


def read_records(path: Path, gpu: str, version: str) -> tuple[dict, str | None]:
    """(records, problem): the raw entries of a table file and, when it cannot be
    used, why (None: fine or absent)."""
    data, problem = read_file(path, gpu, version)
    return (data["entries"], None) if data is not None else ({}, problem)


def read_file(path: Path, gpu: str, version: str) -> tuple[dict | None, str | None]:
    """(the whole JSON object of a table file or None, why it cannot be used or None)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        return None, None
    except (OSError, UnicodeDecodeError) as exc:
        return None, f"unreadable ({exc})"
    try:
        data = json.loads(text)
    except ValueError as exc:
        return None, f"corrupt JSON ({exc})"
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        return None, "not a prefixscan tuning table"
    if data.get("gpu") != gpu or data.get("version") != version:
        return None, (f"written for GPU {data.get('gpu')!r} and prefixscan {data.get('version')!r}, "
                      f"not {gpu!r} and {version!r}")
    if not isinstance(data.get("entries"), dict):
        return None, "no entries object"
    return data, None


def load_table(path: Path, gpu: str, version: str | None = None) -> dict:
    """The entries of a table file as ``{key: Entry}``; a missing file gives {},
    an unusable file or entry is skipped with a :class:`TuningCacheWarning`."""
    version = version or library_version()
    records, problem = read_records(path, gpu, version)
    if problem:
        warnings.warn(f"prefixscan: ignoring tuning cache {path}: {problem}", TuningCacheWarning, stacklevel=2)
        return {}
    return parse_entries(records, path)


def parse_entries(records: Mapping, path) -> dict:
    """``{key: Entry}`` of a table's raw records; a bad one is skipped with a
    :class:`TuningCacheWarning` naming ``path``."""
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
_gpu_properties: dict = {}
# Called (no arguments) whenever an answer of lookup() may change: the planner's
# memo of tiles and strategies subscribes, so that it never outlives the table.
_listeners: list = []


def on_change(listener: Callable[[], None]) -> None:
    """Call ``listener()`` whenever a table is stored or forgotten."""
    if listener not in _listeners:
        _listeners.append(listener)


def changed() -> None:
    """Tell the listeners of :func:`on_change` that a table was stored or forgotten."""
    for listener in list(_listeners):
        listener()


def reset() -> None:
    """Forget the tables read and the GPU names, so that the environment and the
    files are read again (tests, ``prefixscan tune --clear``)."""
    _tables.clear()
    _gpu_names.clear()
    _gpu_properties.clear()
    changed()


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


@dataclass(frozen=True)
class GpuProperties:
    """What matches a GPU to a table of another GPU of the same architecture:
    its name, SM count and compute capability (None where unknown)."""

    name: str
    sm_count: int | None = None
    capability: tuple | None = None  # (major, minor)

    @property
    def known(self) -> bool:
        return self.sm_count is not None and self.capability is not None


def gpu_properties(device) -> GpuProperties:
    """The name, SM count and compute capability of the CUDA device ``device``
    (``torch.cuda.get_device_properties``), asked once per process; a device
    whose properties cannot be read gets its name only."""
    index = getattr(device, "index", None)
    props = _gpu_properties.get(index)
    if props is None:
        try:
            import torch

            p = torch.cuda.get_device_properties(index if index is not None else torch.cuda.current_device())
            props = GpuProperties(str(p.name), int(p.multi_processor_count), (int(p.major), int(p.minor)))
        except Exception:  # noqa: BLE001 - no properties: no architecture match, nothing worse
            props = GpuProperties(gpu_name(device))
        _gpu_properties[index] = props
    return props


def table_for(gpu: str) -> Table:
    """The table of GPU ``gpu`` under the current cache directory, read from disk once."""
    env = (os.environ.get("PREFIXSCAN_CACHE_DIR"), os.environ.get("XDG_CACHE_HOME"))
    table = _tables.get((gpu, env))
    if table is None:
        version = library_version()
        path = cache_path(gpu, version)
        table = _tables[(gpu, env)] = Table(gpu, version, path, load_table(path, gpu, version))
    return table
