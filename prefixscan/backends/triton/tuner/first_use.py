"""First-use tuning: on a GPU that no shipped table serves, a scan whose key
has no tuned entry tunes it once per process, within a few seconds, before it
runs.

The Triton backend's entry (``backends/triton/__init__.py``, ``run_scan``)
calls :func:`ensure_for` with every request, ahead of the scan path, so the
planner below only ever reads the table.  A GPU with a shipped table of its
own or of its architecture (:mod:`..planning.sources`) never tunes: a key that table
lacks runs the defaults.  Elsewhere a missing key is tuned with the quick grid
(:func:`.candidates.candidate_grid`) at the size its bucket serves (2^26
elements for the largest bucket, never 2^24: choices made at 2^24 and served
at 2^27 were sometimes slower than torch.cumsum on the H100), within
``PREFIXSCAN_AUTOTUNE_BUDGET`` seconds (default 3: compiling the tile
variants takes most of it), over
:data:`.search.MIN_ROUNDS` interleaved rounds, a challenger replacing the
default only by winning a duel against it (:func:`.search.duel`); the entry is
stored in the user's table file.  A
key whose tuning would not fit in the GPU's free memory is left to the
defaults.  Nothing tunes in Triton's interpreter, on non-CUDA tensors, while a
tile is forced (a study measures that tile), inside a tuning run
(:func:`.measure.in_tuning`), while another thread tunes, or while the stream
is captured into a CUDA graph; the last three only postpone it to a later
scan.  ``PREFIXSCAN_AUTOTUNE=0`` turns first-use tuning off (tables are still
read).  A failed tuning warns once and leaves the defaults.
"""

from __future__ import annotations

import logging
import math
import os
import threading
import time
import warnings

from ...._arrays import as_torch
from ...._environment import interpreter_mode
from ....caches import register_cache
from ..planning import planner, sources, table
from ..planning.keys import Candidate, bucket_size, entry_key, size_bucket
from ..planning.table import TuningCacheWarning, table_device
from ..scan.job import lane_layout, torch_dtype  # not the route: it imports triton

# The tuner itself (.measure, .search, .store) is imported only when a key is tuned: a
# scan on a GPU that a shipped table serves never needs it, and importing it was a
# third of the first scan's imports.

__all__ = ["ensure_for", "length_class", "settled", "resolve", "autotune_enabled", "first_use_budget", "DEFAULT_BUDGET",
           "ROUNDS", "DUEL_ROUNDS", "WORKSPACE_COPIES", "reset"]

log = logging.getLogger("prefixscan.tune")

DEFAULT_BUDGET = 3.0  # seconds
ROUNDS = 3  # interleaved rounds of the finalists: the fewest that let a duel run (.search.MIN_ROUNDS)
#: The most rounds a first-use duel runs (a full tune: 63): an undecided duel keeps the
#: default, and first use must stay within a few seconds.
DUEL_ROUNDS = 15
#: Copies of the tuned key's data a tuning holds at once, with room to spare: input,
#: output, reference, verification output, the torch.cumsum check and the float64
#: temporaries of the float comparison.
WORKSPACE_COPIES = 16

_attempted: set = set()  # (table path, key) tuned on first use already (or tried)
# Length classes whose key is settled for this process: ensure_for returns at once.  A
# class is (device index, accumulator dtypes, operator class, streams K, (M * K - 1).bit_length()):
# the table key's size bucket is a range of these, so every length of a class has one key.
_ensured: set = set()
_ENSURED_MAX = 4096  # classes kept (a few per dtype and device in practice)
_tune_lock = threading.Lock()  # one tuning at a time per process

# Accumulator dtypes of a key, for a lookup that does not name them.
_TORCH_DTYPES = {(1, False): "int8", (2, False): "int16", (4, False): "int32", (8, False): "int64",
                 (4, True): "float32", (8, True): "float64"}


def reset() -> None:
    """Forget the first-use attempts, so that missing keys are tuned again."""
    _attempted.clear()
    _ensured.clear()


register_cache(__name__, reset)
table.on_change(_ensured.clear)


def autotune_enabled() -> bool:
    """First-use tuning is on unless ``PREFIXSCAN_AUTOTUNE`` is 0/false/no/off."""
    return os.environ.get("PREFIXSCAN_AUTOTUNE", "1").strip().lower() not in ("0", "false", "no", "off")


def first_use_budget() -> float:
    """``PREFIXSCAN_AUTOTUNE_BUDGET`` seconds (default 3); a value that is not a
    number >= 0 warns and gives the default."""
    raw = os.environ.get("PREFIXSCAN_AUTOTUNE_BUDGET")
    if raw is None or not raw.strip():
        return DEFAULT_BUDGET
    try:
        value = float(raw)
        if not (value >= 0 and math.isfinite(value)):
            raise ValueError
    except ValueError:
        warnings.warn(f"prefixscan: PREFIXSCAN_AUTOTUNE_BUDGET={raw!r} is not a number of seconds >= 0; "
                      f"using {DEFAULT_BUDGET:g}", TuningCacheWarning, stacklevel=2)
        return DEFAULT_BUDGET
    return value


def _capturing() -> bool:
    try:
        import torch

        return bool(torch.cuda.is_current_stream_capturing())
    except Exception:  # noqa: BLE001 - no CUDA build: nothing is captured
        return False


def _room_for(device, data_bytes: int) -> bool:
    """Whether :data:`WORKSPACE_COPIES` copies of ``data_bytes`` fit in the GPU's
    free memory (what the CUDA allocator has free plus what torch caches unused)."""
    try:
        import torch

        free, _ = torch.cuda.mem_get_info(device)
        free += torch.cuda.memory_reserved(device) - torch.cuda.memory_allocated(device)
    except Exception:  # noqa: BLE001 - cannot tell: try, a failure warns and leaves the defaults
        return True
    return free >= WORKSPACE_COPIES * data_bytes


def length_class(request) -> tuple:
    """The length class :func:`ensure_for` settles ``request`` (a checked request on a
    table device) by: (device index, accumulator dtypes, operator class, streams K,
    ``(M * K - 1).bit_length()``); every length of a class has one table key."""
    _, M, K = lane_layout(request)
    return _class_of(as_torch(request.fields[0]), request, M, K)


def _class_of(x, request, M: int, K: int) -> tuple:
    builtin = len(request.acc_dtypes) == 1 and bool(getattr(request.config.monoid, "builtin", False))
    return (x.get_device(), request.acc_dtypes, builtin, K, (M * K - 1).bit_length())


def settled(length_class: tuple) -> bool:
    """Whether :func:`ensure_for` has settled this length class (:func:`length_class`)
    for the process: every request of the class returns from it at once, until a
    table change or :func:`reset` forgets it."""
    return length_class in _ensured


def ensure_for(request) -> None:
    """Tune the key of ``request`` (a checked scan request) if it has no entry yet
    and first-use tuning applies; afterwards the planner finds it in the table."""
    if not table_device(request.device):
        return
    config = request.config
    x = as_torch(request.fields[0])
    B, M, K = lane_layout(request)
    # Every non-replayed scan passes here: a length of a settled class costs one set lookup.
    seen = _class_of(x, request, M, K)
    if seen in _ensured or interpreter_mode() or planner.overridden():
        return
    if B * M * K == 0:
        return
    builtin = seen[2]
    # Bool scans run as scans of 0/1 bytes (route.run_scan): their key is uint8's.
    accs = [torch_dtype("uint8" if d == "bool" else d) for d in request.acc_dtypes]
    _, final = resolve(x.device, sum(a.itemsize for a in accs), any(a.is_floating_point for a in accs),
                       "builtin" if builtin else "user", K, M * K, accs=accs, monoid=config.monoid)
    if final:
        if len(_ensured) >= _ENSURED_MAX:
            _ensured.clear()
        _ensured.add(seen)


def resolve(device, nbytes: int, floating: bool, opclass: str, K: int, n: int, *, accs=None,
            monoid=None) -> tuple:
    """(the entry of the key or None, whether that answer holds for the rest of
    the process): the user's entry, else the shipped table's (:mod:`..planning.sources`).
    A key missing from both is tuned here, once per process, unless a shipped
    table serves the GPU or first-use tuning is off; the answer is not final
    while a tuning run, another thread's tuning or a graph capture postpones it."""
    if not table_device(device):
        return None, True
    src = sources.sources_for(device)
    key = entry_key(nbytes, floating, opclass, K, n)
    entry = src.entry(key)
    if entry is not None or src.shipped is not None or not autotune_enabled():
        return entry, True  # a GPU a shipped table serves never tunes
    from . import measure
    from .store import store

    if measure.in_tuning():
        return None, False
    tbl = src.user
    mark = (tbl.path, key)
    if mark in _attempted:
        return tbl.entries.get(key), True
    if _capturing() or not _tune_lock.acquire(blocking=False):
        return None, False
    try:
        if mark in _attempted:
            return tbl.entries.get(key), True
        _attempted.add(mark)
        if accs is None:
            import torch

            name = _TORCH_DTYPES.get((nbytes, floating))
            if name is None:
                return None, True
            accs = [getattr(torch, name)]
        size = bucket_size(size_bucket(n))  # the size the entry serves: never smaller
        if not _room_for(device, size * nbytes):
            log.info("not tuning %s on %s: %d MB of scratch does not fit in free memory; the default runs",
                     key, tbl.gpu, WORKSPACE_COPIES * size * nbytes >> 20)
            return None, True
        budget = first_use_budget()
        t0 = time.monotonic()
        try:
            result = measure.tune_workload(device, list(accs), monoid, K, size, quick=True, budget=budget,
                                           repeats=7, rounds=ROUNDS, duel_rounds=DUEL_ROUNDS)
        except Exception as exc:  # noqa: BLE001 - a scan must not fail because tuning did
            warnings.warn(f"prefixscan: first-use tuning of {key} on {tbl.gpu} failed "
                          f"({type(exc).__name__}: {exc}); the default choice runs", TuningCacheWarning,
                          stacklevel=2)
            return None, True
        entry = store(tbl, key, result.to_record(n=size, K=K, source="first-use", budget=budget),
                            properties=table.gpu_properties(device))
        log.info("tuned %s on %s in %.1f s: %s (cached in %s)", key, tbl.gpu, time.monotonic() - t0,
                 Candidate(entry.strategy, entry.tile).label, tbl.path)
        return entry, True
    finally:
        _tune_lock.release()
