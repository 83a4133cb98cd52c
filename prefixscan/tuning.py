"""Public tuning API: tune the GPU scan for this machine, inspect or clear the
tuned tables, compare the tuned choice with fixed ones, and force a tile for
studies.

On a GPU, each scan's tile and meta-strategy come from a table tuned per GPU
(:mod:`prefixscan.backends.triton.tuner` describes the method; the user guide
is docs/tuning.md): the user's own, over the table shipped for that GPU (or
the closest one of its architecture), over the defaults.  Only on a GPU that
no shipped table serves is a missing key tuned on its first use, within a few
seconds.  :func:`tune` measures a whole grid of keys with the full candidate
grid (``prefixscan tune`` on the command line) and writes the user's table::

    import prefixscan
    import prefixscan.tuning as tuning

    tuning.tune(dtypes=["float32"], budget=120)       # writes the table
    with tuning.override(tuning.TileConfig(8192, 4, 32)):
        prefixscan.scan(x)                             # runs on that tile
    tuning.clear()                                     # deletes your tables (shipped ones stay)

Importing this module imports neither torch nor triton.
"""

from __future__ import annotations

from .backends.triton.planning.planner import override, set_override
from .backends.triton.planning.tiles import TileConfig
from .backends.triton.planning.registry import strategy_available
from .backends.triton.tuner.compare import compare_tuned, fixed_choices, format_comparison, resolved_choice
from .backends.triton.tuner.search import TuningError
from .backends.triton.tuner.session import (DEFAULT_DTYPES, DEFAULT_SIZES, LAYOUTS, OP_CLASSES, TUNE_ROUNDS,
                                            check_tune_args, format_table, info_lines, unavailable_reason)
from .backends.triton.tuner.session import tune_all as tune
from .backends.triton.planning.table import TuningCacheWarning, cache_dir, cache_path
from .backends.triton.tuner.store import clear_cache as clear

__all__ = ["tune", "clear", "cache_dir", "cache_path", "info_lines", "check_tune_args", "DEFAULT_DTYPES",
           "DEFAULT_SIZES", "OP_CLASSES", "LAYOUTS", "TUNE_ROUNDS", "unavailable_reason", "strategy_available",
           "format_table", "compare_tuned", "format_comparison", "resolved_choice", "fixed_choices", "override",
           "set_override", "TileConfig", "TuningError", "TuningCacheWarning"]
