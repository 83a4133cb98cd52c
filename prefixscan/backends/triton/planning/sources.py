"""Which tuned table serves a GPU's scans: the lookup the planner reads.

Precedence, key by key:

1. the user's table (``prefixscan tune``, or first-use tuning; in the cache
   directory, per GPU name and library version, :mod:`.table`);
2. the shipped table (:mod:`.shipped`): the GPU's own, else the closest one of
   the same architecture (compute capability, then SM count);
3. the default tile of the key (:mod:`.tiles`, the best across the shipped
   tables) with the default strategies.

First-use tuning (:mod:`..tuner.first_use`) runs only for a GPU that no shipped table
serves, so a scan on a known GPU never tunes.  Nothing here tunes, and nothing
imports torch until a GPU without a table of its own asks for its properties.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from ....caches import register_cache
from . import shipped, table
from .keys import Entry, entry_key
from .shipped import ShippedTable
from .table import GpuProperties, Table, table_device

__all__ = ["Sources", "sources_for", "lookup", "describe", "reset"]


@dataclass
class Sources:
    """The tables of one GPU: the user's (possibly empty) and the shipped one that
    serves it (None: none does), ``exact`` when that is the GPU's own."""

    gpu: str
    user: Table
    shipped: ShippedTable | None
    exact: bool

    def entry(self, key: str) -> Entry | None:
        """The entry of ``key``: the user's, else the shipped table's, else None (defaults)."""
        found = self.user.entries.get(key)
        if found is None and self.shipped is not None:
            found = self.shipped.entries.get(key)
        return found

    def origin(self, key: str) -> str:
        """Where the entry of ``key`` comes from: user, shipped, closest shipped or default."""
        if key in self.user.entries:
            return "user"
        if self.shipped is not None and key in self.shipped.entries:
            return "shipped" if self.exact else "closest shipped"
        return "default"

    @property
    def label(self) -> str:
        """Which table the GPU uses, as ``prefixscan info`` says it: user, shipped,
        closest shipped for <GPU>, a user table over one of those, or none."""
        if self.shipped is None:
            base = None
        elif self.exact:
            base = "shipped"
        else:
            base = f"closest shipped for {self.shipped.gpu.name}"
        if self.user.entries:
            return f"user over {base}" if base else "user"
        return base or "none"


_sources: dict = {}  # (gpu, environment) -> Sources


def reset() -> None:
    """Forget which tables serve which GPU (they are found again on the next lookup)."""
    _sources.clear()


register_cache(__name__, reset)
table.on_change(reset)


def sources_for(device) -> Sources:
    """The tables that serve the CUDA device ``device`` (a torch device), found once
    per process and environment."""
    gpu = table.gpu_name(device)
    env = (os.environ.get("PREFIXSCAN_CACHE_DIR"), os.environ.get("XDG_CACHE_HOME"), shipped.shipped_enabled())
    found = _sources.get((gpu, env))
    if found is None:
        own, exact = (shipped.shipped_for(gpu, lambda: table.gpu_properties(device)) if env[-1]
                      else (None, False))
        found = _sources[(gpu, env)] = Sources(gpu, table.table_for(gpu), own, exact)
    return found


def lookup(device, nbytes: int, floating: bool, opclass: str, K: int, n: int) -> Entry | None:
    """The tuned entry of a scan on ``device`` of ``n`` elements per lane in ``K``
    streams (user over shipped), or None (then the defaults run).  Never tunes."""
    if not table_device(device):
        return None
    return sources_for(device).entry(entry_key(nbytes, floating, opclass, K, n))


def describe(gpu: GpuProperties) -> tuple[str, list[str]]:
    """(which table ``gpu`` uses, detail lines) for ``prefixscan info``, read from
    the files without keeping them."""
    version = table.library_version()
    path = table.cache_path(gpu.name, version)
    records, problem = table.read_records(path, gpu.name, version)
    own, exact = (shipped.shipped_for(gpu.name, lambda: gpu) if shipped.shipped_enabled() else (None, False))
    user = Table(gpu.name, version, path, dict(records))
    label = Sources(gpu.name, user, own, exact).label
    if problem:
        state = f"unusable, ignored: {problem}"
    elif records:
        state = f"tuned table present, {len(records)} entries" + (
            "; they override the shipped ones key by key" if own is not None else "")
    else:
        state = "no tuned table (" + ("prefixscan tune writes one)" if own is not None else
                                      "first use tunes; or run prefixscan tune)")
    lines = [f"user table: {path} ({state})"]
    if own is not None:
        p = own.provenance
        lines.append(f"shipped table: {own.path.name} ({own.gpu.name}, {len(own.entries)} entries, "
                     f"measured {p.get('date', '?')} with prefixscan {own.data.get('version', '?')}; "
                     f"applies to {own.data.get('applies_to', shipped.APPLIES_TO)})")
    elif not shipped.shipped_enabled():
        lines.append("shipped tables: off (PREFIXSCAN_SHIPPED_TABLES)")
    return label, lines
