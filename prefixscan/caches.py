"""One registry for the process-wide caches (cuda.compute keeps one cache registry).

Every module that memoizes something across calls (planned scans, compiled
kernel launchers, status buffers, tuned-table lookups, ...) registers a
function that empties it; :func:`clear_caches` empties them all, e.g. after
changing a tuning table on disk or between tests that must not share state.
"""

from __future__ import annotations

from typing import Callable

__all__ = ["register_cache", "clear_caches", "registered_caches"]

_CLEARERS: dict[str, Callable[[], None]] = {}


def register_cache(name: str, clear: Callable[[], None]) -> None:
    """Register ``clear`` (no arguments) as the way to empty the cache ``name``
    (a dotted, module-qualified name); registering a name again replaces it."""
    _CLEARERS[name] = clear


def registered_caches() -> list[str]:
    """The names of the registered caches, sorted."""
    return sorted(_CLEARERS)


def clear_caches() -> None:
    """Empty every registered cache.  The next scan plans, compiles (from Triton's
    on-disk cache) and looks up its tile again."""
    for clear in list(_CLEARERS.values()):
        clear()
