"""Which ahead-of-time compiled variant a 1-D sum gets, and what its JSON says.

A variant is one compiled ``scan_1d_kernel`` (:mod:`..scan.lookback`) for a forward,
inclusive, unseeded sum of one contiguous lane: the input and accumulator dtypes, the
tile (block, warps, raking rows, register cap), single tile or look-back, the status
words per entry and the look-back window.  :func:`plan_1d` computes those from a tile
of the planner exactly as :func:`..scan.lookback.launch_lookback` does for such a scan
(``tests/backends/triton/test_aot.py`` checks the two agree), :func:`variant_name`
names the files, and :func:`load_spec` reads a variant's JSON from the package data
folder ``sm90/`` (written by ``tools/aot_build.py``).  Nothing here imports torch or
triton.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import NamedTuple

from ....caches import register_cache
from ..engine.state import status_words, window_entries
from ..planning.tiles import TileConfig, lane_tiles, register_cap

__all__ = ["DATA_DIR", "TARGET", "TRITON_TYPES", "Plan", "plan_1d", "variant_name", "constexprs", "load_spec",
           "triton_version", "version_beside", "I32_MAX"]

#: Where the cubins and their JSON lie (package data).
DATA_DIR = Path(__file__).resolve().with_name("sm90")
#: The one target they are compiled for: compute capability 9.0, warps of 32.
TARGET = {"backend": "cuda", "arch": 90, "warp_size": 32}
#: Triton's name of each dtype a variant may take (its pointer type is ``"*" + name``).
TRITON_TYPES = {"int32": "i32", "int64": "i64", "float32": "fp32", "float64": "fp64"}
I32_MAX = (1 << 31) - 1


class Plan(NamedTuple):
    """A launch of ``scan_1d_kernel`` over one lane of ``length`` elements."""

    block: int
    num_warps: int
    maxnreg: int | None
    rake: int
    single: bool
    words: int
    window: int
    tiles: int


def plan_1d(tile: TileConfig, length: int, acc) -> Plan:
    """The launch ``launch_lookback`` makes for a forward inclusive unseeded scan of one
    lane (B = K = 1, order 1, not chained) of ``length`` elements on ``tile`` with the
    accumulator ``acc`` (a torch dtype): the lane cut by the launcher's own
    :func:`..planning.tiles.lane_tiles`, its status words and window, its register cap."""
    words = status_words((acc,), tile.packed)
    window = window_entries(tile.window, words)
    block, single, tiles, rake = lane_tiles(tile, length)
    return Plan(block, tile.num_warps, register_cap(tile), rake, single, words, window, tiles)


def variant_name(x_dtype: str, acc_dtype: str, plan: Plan) -> str:
    """The file stem of a variant: dtypes and everything of the plan that is compiled in."""
    kind = "single" if plan.single else "multi"
    return (f"scan1d-{x_dtype}-{acc_dtype}-b{plan.block}-w{plan.num_warps}-r{plan.rake}-m{plan.maxnreg or 0}"
            f"-s{plan.words}x{plan.window}-{kind}")


def constexprs(plan: Plan) -> dict:
    """The kernel's constexprs but MONOID (which holds the sum's combine functions):
    PROTOCOL (words, window, chained), SCAN (inclusive, reverse, has init, ordered,
    delayed, order 2), TILE (block, rake, single tile, several lanes, aligned)."""
    return {"PROTOCOL": [plan.words, plan.window, False], "SCAN": [True, False, False, False, False, False],
            "TILE": [plan.block, plan.rake, plan.single, False, False]}


@functools.lru_cache(maxsize=None)  # a few variants per process
def load_spec(name: str) -> dict | None:
    """The JSON of variant ``name``, None when it is not shipped."""
    path = DATA_DIR / f"{name}.json"
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        return None


@functools.lru_cache(maxsize=1)
def triton_version() -> str | None:
    """The installed Triton's version, from its package metadata (Triton is not imported):
    the one ``*.dist-info`` beside the importable ``triton`` package (a directory listing;
    ``importlib.metadata`` scans every distribution on the path, about 4 ms of a first
    scan), else what ``importlib.metadata`` finds."""
    import importlib.util

    try:
        spec = importlib.util.find_spec("triton")
    except (ImportError, ValueError):
        spec = None
    if spec is None:
        return None
    for location in spec.submodule_search_locations or ():
        found = version_beside(Path(location))
        if found:
            return found
    from importlib import metadata

    try:
        return metadata.version("triton")
    except metadata.PackageNotFoundError:
        return None


def version_beside(package: Path) -> str | None:
    """The ``Version:`` of the one ``<name>-*.dist-info/METADATA`` next to the package
    directory ``package``; None when there is none, or several (stale installs: then
    ``importlib.metadata`` decides)."""
    infos = list(package.parent.glob(f"{package.name}-*.dist-info"))
    if len(infos) != 1:
        return None
    try:
        with open(infos[0] / "METADATA", encoding="utf-8") as f:
            for line in f:
                if line.startswith("Version:"):
                    return line.partition(":")[2].strip() or None
                if not line.strip():
                    break  # the headers end at the first blank line
    except OSError:
        return None
    return None


register_cache("prefixscan.backends.triton.aot.variants.specs", load_spec.cache_clear)
register_cache("prefixscan.backends.triton.aot.variants.triton_version", triton_version.cache_clear)
