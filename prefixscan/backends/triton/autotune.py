"""Auto-tuning of the GPU scan (issue 5): measure the candidates on this GPU, keep
the fastest one whose result is right, and cache the choice on disk.

What is tuned, per *key*: the tile (elements per tile, warps, look-back window;
:class:`.tuning.TileConfig`) and the meta-strategy (decoupled look-back,
chained, and the strategies of :mod:`.strategies` once their launchers can be
imported).  A key is coarse on purpose: accumulator bytes per element summed
over the fields, floating or not, operator class (``builtin``: a built-in
operator on one field; ``user``: a user monoid or several fields), layout
(``1d``: K == 1; ``2d``: interleaved streams, K > 1) and a size bucket of the
elements per lane, M * K (log2 ranges <= 16, 17..21, 22..25, >= 26).  No call
size gets an entry of its own.

Tuning by measurement follows the papers this library builds on.  SAM (Maleki,
Yang and Burtscher, seed ``002``) ships an auto-tuner that runs when SAM is
installed and picks the elements per thread for ranges of problem sizes;
Merrill and Grimshaw (seed ``000``) choose each GPU's data-movement
configuration and grid size by measuring, having found up to 2.1x between
reasonable configurations.

Layers, each usable alone:

* keys: :func:`size_bucket`, :func:`op_class`, :func:`entry_key`;
* the search: :func:`search`, pure logic on an injected ``measure(candidate) ->
  seconds`` and ``verify(candidate) -> bool`` (tested without a GPU);
* the device side: :func:`tune_workload` builds ``measure`` (CUDA events, median
  of repeats, device time) and ``verify`` (against the decoupled look-back
  default on fresh random non-zero data; bitwise for integers);
* the disk cache: :func:`cache_dir`, :func:`cache_path`, :func:`load_table`,
  :func:`save_table` (JSON, one file per GPU name and library version, written
  atomically; a corrupt or foreign file is ignored with a warning);
* the lookup behind :func:`.tuning.choose_config` and
  :func:`.tuning.tuned_strategy`: :func:`lookup`, which on a GPU tunes a
  missing key once per process, within a few seconds (first use).

Environment:

``PREFIXSCAN_CACHE_DIR``
    directory of the tables (default ``$XDG_CACHE_HOME/prefixscan``, else
    ``~/.cache/prefixscan``).
``PREFIXSCAN_AUTOTUNE=0``
    no tuning on first use (a cached table is still used).
``PREFIXSCAN_AUTOTUNE_BUDGET``
    seconds a first-use tuning may take (default 3; compiling the tile
    variants takes most of it).

Nothing tunes in Triton's interpreter, on CPU tensors, under CUDA graph
capture, while a tile override is set (sweeps), or inside a tuning run (the
tuner's own scans name their strategy and tile, and a guard refuses re-entry).
"""

from __future__ import annotations

import datetime
import functools
import json
import logging
import os
import re
import statistics
import sys
import tempfile
import threading
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Mapping, Sequence

from .tuning import TileConfig, default_config

log = logging.getLogger("prefixscan.tune")

FORMAT = "prefixscan-tuning/1"

#: Strategies the tuner tries, in order; those whose launcher cannot be imported are skipped.
STRATEGY_CANDIDATES = ("decoupled_lookback", "chained", "reduce_then_scan", "scan_then_propagate", "persistent")
#: Strategies that combine tiles in a fixed order: deterministic=True picks among these.
DETERMINISTIC_STRATEGIES = ("chained", "reduce_then_scan", "scan_then_propagate")
# launch._launch reads "chained" from the scan's config (deterministic=True or
# strategy="chained"), not from what strategy_for returns: an "auto" scan cannot be
# made chained by the table, so chained competes for deterministic scans only.
_NOT_FOR_AUTO = ("chained",)
_RUN_BY_LAUNCH = ("decoupled_lookback", "chained")  # launch._launch itself

#: (bucket, largest log2 size in it or None, log2 size it is tuned at)
BUCKETS = (("n<=2^16", 16, 16), ("2^17-2^21", 21, 20), ("2^22-2^25", 25, 24), ("n>=2^26", None, 26))
FIRST_USE_MAX_LOG2 = 24  # first-use tuning scans at most 2^24 elements
DEFAULT_BUDGET = 3.0  # seconds, first use
NOISE_FLOOR = 0.02  # a candidate must beat the default by more than this (and the measured noise)
CLI_K = 4  # interleaved streams of the 2d layout's representative


class TuningCacheWarning(UserWarning):
    """The tuning cache or a first-use tuning failed; scans go on with the defaults."""


class TuningError(RuntimeError):
    """A tuning run could not measure its reference (the default choice)."""


# ---------------------------------------------------------------------------
# Keys.

def size_bucket(n: int) -> str:
    """The size bucket of ``n`` elements per lane (a log2 range, never n itself)."""
    e = max(int(n) - 1, 0).bit_length()  # n <= 2^e
    for name, top, _ in BUCKETS:
        if top is None or e <= top:
            return name
    raise AssertionError("unreachable")


def bucket_size(bucket: str) -> int:
    """The size (elements) a bucket is tuned at."""
    for name, _, rep in BUCKETS:
        if name == bucket:
            return 1 << rep
    raise ValueError(f"unknown size bucket {bucket!r}")


def op_class(monoid=None, fields: int = 1) -> str:
    """``builtin`` for a built-in operator on one field, else ``user``."""
    builtin = monoid is None or bool(getattr(monoid, "builtin", False))
    return "builtin" if builtin and fields == 1 else "user"


def layout_class(K: int) -> str:
    return "1d" if K == 1 else "2d"


def entry_key(nbytes: int, floating: bool, opclass: str, K: int, n: int) -> str:
    """Table key: accumulator bytes (summed over fields), int/float, operator
    class, layout class and the size bucket of ``n`` elements per lane."""
    return f"{nbytes}B-{'float' if floating else 'int'}-{opclass}-{layout_class(K)}-{size_bucket(n)}"


# ---------------------------------------------------------------------------
# Candidates and table entries.

@dataclass(frozen=True)
class Candidate:
    strategy: str
    tile: TileConfig

    @property
    def label(self) -> str:
        t = self.tile
        return f"{self.strategy} b={t.block} w={t.num_warps} win={t.window}"


def _tile_dict(t: TileConfig) -> dict:
    return {"block": t.block, "num_warps": t.num_warps, "window": t.window, "max_kb": t.max_kb,
            "packed": t.packed}


def _tile_from(d) -> TileConfig:
    if not isinstance(d, dict):
        raise ValueError("tile is not an object")
    ints = {}
    for name in ("block", "num_warps", "window", "max_kb"):
        v = d.get(name, 32 if name == "max_kb" else None)
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ValueError(f"tile {name}={v!r}")
        ints[name] = v
    if ints["num_warps"] not in (1, 2, 4, 8, 16, 32) or ints["block"] & (ints["block"] - 1):
        raise ValueError(f"tile {d!r}")
    packed = d.get("packed")
    if packed not in (None, True, False):
        raise ValueError(f"tile packed={packed!r}")
    return TileConfig(ints["block"], ints["num_warps"], ints["window"], ints["max_kb"], packed)


@dataclass(frozen=True)
class Entry:
    """One tuned key: the choice for ``strategy="auto"`` scans, for deterministic
    scans, and the best tile of every strategy measured."""

    strategy: str
    tile: TileConfig
    deterministic_strategy: str | None
    tiles: Mapping[str, TileConfig]
    record: dict = field(compare=False, repr=False)

    def tile_for(self, strategy: str | None) -> TileConfig | None:
        """The tile to run ``strategy`` with (None: the auto choice's)."""
        if strategy is None:
            return self.tile
        return self.tiles.get(strategy)

    @classmethod
    def from_record(cls, record) -> "Entry":
        if not isinstance(record, dict):
            raise ValueError("entry is not an object")
        strategy = record.get("strategy")
        if strategy not in STRATEGY_CANDIDATES or strategy in _NOT_FOR_AUTO:
            raise ValueError(f"strategy {strategy!r}")
        det = record.get("deterministic_strategy")
        if det is not None and det not in DETERMINISTIC_STRATEGIES:
            raise ValueError(f"deterministic_strategy {det!r}")
        raw = record.get("tiles") or {}
        if not isinstance(raw, dict):
            raise ValueError("tiles is not an object")
        tiles = {s: _tile_from(t) for s, t in raw.items() if s in STRATEGY_CANDIDATES}
        tile = _tile_from(record.get("tile"))
        tiles.setdefault(strategy, tile)
        return cls(strategy, tile, det, tiles, record)


@dataclass
class SearchResult:
    default: Candidate
    best: Candidate
    best_deterministic: Candidate | None
    tiles: dict  # strategy -> TileConfig chosen for it
    times: dict  # Candidate -> seconds (first measurement; the default's: mean of two)
    confirmed: dict  # Candidate -> seconds of a second measurement (winners)
    excluded: dict  # Candidate -> why
    skipped: list  # candidates left out by the time budget
    noise: float  # relative
    elapsed: float

    def seconds(self, c: Candidate) -> float | None:
        return self.confirmed.get(c, self.times.get(c))

    def to_record(self, **extra) -> dict:
        rec = {
            "strategy": self.best.strategy, "tile": _tile_dict(self.best.tile),
            "deterministic_strategy": self.best_deterministic.strategy if self.best_deterministic else None,
            "tiles": {s: _tile_dict(t) for s, t in self.tiles.items()},
            "default_seconds": self.times[self.default], "best_seconds": self.seconds(self.best),
            "deterministic_seconds": self.seconds(self.best_deterministic) if self.best_deterministic else None,
            "noise": self.noise,
            "measured": [dict(strategy=c.strategy, seconds=t, **_tile_dict(c.tile))
                         for c, t in sorted(self.times.items(), key=lambda kv: kv[1])],
            "excluded": [dict(strategy=c.strategy, reason=r, **_tile_dict(c.tile)) for c, r in self.excluded.items()],
            "skipped": len(self.skipped), "complete": not self.skipped,
            "seconds_spent": self.elapsed,
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        }
        rec.update(extra)
        return rec


_BLOCKS = (2048, 4096, 8192, 16384, 32768)
_WARPS = (4, 8)


def candidate_grid(strategies: Sequence[str], nbytes: int, floating: bool, n: int,
                   quick: bool = False) -> list[Candidate]:
    """A small grid of tiles per strategy, most promising first.

    Every strategy's default tile comes first, then the default's neighbours
    for the decoupled look-back (block x2 and /2, the other warp count).  That
    is all in ``quick`` mode (first use).  Otherwise: the decoupled look-back on
    blocks 2048..32768 x warps 4, 8 (window 32), 16 warps on blocks 16384 and
    32768, windows 16 and 64 on the default and on 8192 x 8 (every fixed choice
    of ``bench/sweep.py`` is in the grid); the other strategies on blocks
    4096..16384 x warps 4, 8.  Blocks that hold all ``n`` elements in one tile
    run alike: one of them is kept.
    """
    d = default_config(nbytes, floating)
    out: list[Candidate] = []

    def add(strategy, block, warps, window):
        c = Candidate(strategy, TileConfig(block, warps, window, d.max_kb, d.packed))
        if block >= 64 and c not in out:
            out.append(c)

    for s in strategies:
        add(s, d.block, d.num_warps, d.window)
    if "decoupled_lookback" in strategies:
        other = 8 if d.num_warps == 4 else 4
        for block, warps in ((d.block * 2, d.num_warps), (d.block // 2, d.num_warps), (d.block, other)):
            add("decoupled_lookback", block, warps, d.window)
    if not quick:
        for s in strategies:
            for block in (_BLOCKS if s == "decoupled_lookback" else _BLOCKS[1:4]):
                for warps in _WARPS:
                    add(s, block, warps, d.window)
        if "decoupled_lookback" in strategies:
            for block in (16384, 32768):
                add("decoupled_lookback", block, 16, 32)
            for block, warps in ((d.block, d.num_warps), (8192, 8)):
                for window in (16, 64):
                    add("decoupled_lookback", block, warps, window)
    kept, single = [], set()
    for c in out:  # defaults come first, so they are the ones kept
        if c.tile.block >= n:
            sig = (c.strategy, c.tile.num_warps, c.tile.window)
            if sig in single:
                continue
            single.add(sig)
        kept.append(c)
    return kept


@functools.lru_cache(maxsize=None)
def _strategy_launchers() -> frozenset:
    """Names in :data:`.strategies.LAUNCHERS`, empty while that module does not exist."""
    try:
        from . import strategies
    except Exception:  # noqa: BLE001 - absent or broken: its strategies are skipped
        return frozenset()
    return frozenset(getattr(strategies, "LAUNCHERS", None) or ())


def strategy_available(name: str) -> bool:
    return name in _RUN_BY_LAUNCH or name in _strategy_launchers()


def available_strategies(names: Sequence[str] = STRATEGY_CANDIDATES) -> list[str]:
    """The strategies of ``names`` that can run here, in order."""
    return [s for s in names if strategy_available(s)]


def runnable(name: str | None, deterministic: bool) -> bool:
    """Whether a table's choice ``name`` may run a scan (auto or deterministic)."""
    if not name or not strategy_available(name):
        return False
    return name in DETERMINISTIC_STRATEGIES if deterministic else name not in _NOT_FOR_AUTO


# ---------------------------------------------------------------------------
# The search.

def search(candidates: Sequence[Candidate], measure: Callable[[Candidate], float],
           verify: Callable[[Candidate], bool], *, default: Candidate | None = None,
           deterministic_default: Candidate | None = None, noise_floor: float = NOISE_FLOOR,
           budget: float | None = None, clock: Callable[[], float] = time.monotonic) -> SearchResult:
    """Measure ``candidates`` and pick the fastest verified one.

    ``default`` (the first candidate if None) is the reference: it is measured
    first and again at the end, and the relative difference of the two (at
    least ``noise_floor``) is the noise.  Every other candidate must pass
    ``verify`` before it is timed; one that fails or raises is excluded with the
    reason.  Per strategy the fastest tile wins only if a second measurement
    still beats that strategy's default tile by more than the noise; across
    strategies likewise against ``default`` (auto scans, ``chained`` left out)
    and against ``deterministic_default`` (deterministic strategies only).
    With ``budget`` seconds, candidates not started in time are skipped (the
    defaults and the confirmations always run).
    """
    start = clock()
    default = default if default is not None else candidates[0]
    times: dict = {}
    excluded: dict = {}
    skipped: list = []
    confirmed: dict = {}
    try:
        first = measure(default)
    except Exception as exc:  # noqa: BLE001
        raise TuningError(f"the default {default.label} failed: {type(exc).__name__}: {exc}") from exc
    for c in candidates:
        if c == default:
            continue
        if budget is not None and clock() - start >= budget:
            skipped.append(c)
            continue
        try:
            ok = verify(c)
        except Exception as exc:  # noqa: BLE001 - reported, the search goes on
            excluded[c] = f"raised {type(exc).__name__}: {exc}"[:300]
            continue
        if not ok:
            excluded[c] = "wrong result (differs from the decoupled look-back default)"
            continue
        try:
            times[c] = measure(c)
        except Exception as exc:  # noqa: BLE001
            excluded[c] = f"timing raised {type(exc).__name__}: {exc}"[:300]
    second = measure(default)
    times[default] = (first + second) / 2
    noise = max(noise_floor, abs(first - second) / max(min(first, second), 1e-12))

    def seconds(c):
        return confirmed.get(c, times[c])

    def beats(c, base) -> bool:
        """c beats base by more than the noise, on a second measurement of c."""
        if c == base or base not in times:
            return c != base
        if c not in confirmed:
            try:
                confirmed[c] = measure(c)
            except Exception as exc:  # noqa: BLE001
                excluded[c] = f"timing raised {type(exc).__name__}: {exc}"[:300]
                times.pop(c, None)
                return False
        return confirmed[c] < times[base] * (1 - noise)

    tiles = {}
    for s in dict.fromkeys(c.strategy for c in times):
        base = Candidate(s, default.tile)
        best = min((c for c in times if c.strategy == s), key=times.get)
        if best != base and not beats(best, base):
            best = base if base in times else best
        if best in times:
            tiles[s] = best.tile

    def pick(pool, base):
        pool = [c for c in pool if c in times]
        if not pool:
            return base if base is not None and base in times else None
        best = min(pool, key=seconds)
        if base is not None and best != base and base in times and not beats(best, base):
            return base
        return best

    best = pick([Candidate(s, t) for s, t in tiles.items() if s not in _NOT_FOR_AUTO], default) or default
    best_det = pick([Candidate(s, t) for s, t in tiles.items() if s in DETERMINISTIC_STRATEGIES],
                    deterministic_default)
    tiles[best.strategy] = best.tile
    if best_det is not None:
        tiles[best_det.strategy] = best_det.tile
    return SearchResult(default, best, best_det, tiles, times, confirmed, excluded, skipped, noise,
                        clock() - start)


# ---------------------------------------------------------------------------
# The device side: measure and verify real scans.

def _random_field(torch, dtype, shape, opname: str, gen, device):
    """Fresh random non-zero data for one field."""
    def sign():
        return torch.randint(0, 2, shape, generator=gen, device=device) * 2 - 1

    if dtype.is_floating_point:
        u = torch.rand(shape, generator=gen, device=device, dtype=torch.float64)
        if opname == "mul":
            x = 0.9 + 0.2 * u
        elif opname == "logaddexp":
            x = torch.randn(shape, generator=gen, device=device, dtype=torch.float64) * 3
        elif opname == "user":
            x = (0.5 + 0.5 * u) * sign()  # |x| in [0.5, 1): products and affine maps stay bounded
        else:
            x = (u + 1e-3) * sign()
        return x.to(dtype)
    x = torch.randint(1, 64, shape, generator=gen, device=device, dtype=torch.int64)
    if opname == "mul":
        x = x * 2 + 1  # odd: products wrap but never reach 0
    if dtype.is_signed:
        x = x * sign()
    return x.to(dtype)


def _poison(torch, t):
    if t.dtype.is_floating_point:
        t.fill_(float("nan"))
    else:
        t.view(torch.uint8).fill_(0xA5)


def _same(torch, a, ref) -> bool:
    """Bitwise for integers; floats: NaN and infinities in the same places, the
    rest within 1e-3 (4-byte) or 1e-9 (8-byte) of the largest |ref|."""
    if not ref.dtype.is_floating_point:
        return bool(torch.equal(a.reshape(-1).view(torch.uint8), ref.reshape(-1).view(torch.uint8)))
    a64, r64 = a.double(), ref.double()
    if not torch.equal(torch.isnan(a64), torch.isnan(r64)):
        return False
    inf = torch.isinf(r64)
    if not torch.equal(a64[inf], r64[inf]):
        return False
    fin = torch.isfinite(r64)
    if not bool(fin.any()):
        return True
    diff = (a64[fin] - r64[fin]).abs().max()
    scale = r64[fin].abs().max().clamp(min=1.0)
    rtol = 1e-3 if ref.element_size() <= 4 else 1e-9
    return bool(torch.isfinite(diff)) and bool(diff <= rtol * scale)


_tuning = threading.local()


class _TuningGuard:
    """Marks this thread as tuning: lookups made meanwhile never tune."""

    def __enter__(self):
        self.previous = getattr(_tuning, "active", False)
        _tuning.active = True

    def __exit__(self, *exc):
        _tuning.active = self.previous


def in_tuning() -> bool:
    return getattr(_tuning, "active", False)


def _cuda_event_timer(repeats: int) -> Callable[[Callable[[], object]], float]:
    """Seconds per call of ``fn``: two warm-up calls, then the median of
    ``repeats`` CUDA-event pairs queued behind a GPU sleep (device time, not
    launch overhead; see :func:`prefixscan.bench._time_cuda_events`)."""
    import torch

    from ...bench import _time_cuda_events

    def timer(fn):
        fn()
        fn()  # warm-up: compile, allocate
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        fn()
        host = time.perf_counter() - t0
        torch.cuda.synchronize()
        return statistics.median(_time_cuda_events([fn], repeats, host))

    return timer


def tune_workload(device, accs, monoid=None, K: int = 1, n: int = 1 << 20, *, strategies=None,
                  quick: bool = False, budget: float | None = None, repeats: int = 15,
                  timer: Callable[[Callable[[], object]], float] | None = None) -> SearchResult:
    """Tune one key on ``device`` with a representative scan: ``accs`` (torch
    dtypes, one per field) under ``monoid`` (None: add), ``n`` elements per
    field laid out as (n,) (K == 1) or (n // K, K) scanned along axis 0.

    Every candidate runs through ``prefixscan.scan`` with its strategy named and
    its tile forced (:func:`.tuning.set_override`), on fresh random non-zero
    data; its output (poisoned first) is compared with the decoupled look-back
    default's.  ``timer(fn) -> seconds`` defaults to CUDA events
    (:func:`_cuda_event_timer`); a CPU device (the interpreter) needs one.
    """
    import contextlib

    import torch

    import prefixscan as ps

    from . import tuning

    names = available_strategies(strategies or STRATEGY_CANDIDATES)
    nbytes = sum(a.itemsize for a in accs)
    floating = any(a.is_floating_point for a in accs)
    candidates = candidate_grid(names, nbytes, floating, n, quick=quick)
    default = Candidate("decoupled_lookback", default_config(nbytes, floating))  # the reference, always run
    det_default = Candidate("chained", default.tile) if "chained" in names else None
    op = monoid if monoid is not None else "add"
    builtin = monoid is None or getattr(monoid, "builtin", False)
    opname = getattr(monoid, "name", "add") if builtin else "user"
    shape = (n,) if K == 1 else (max(1, n // K), K)
    axis = None if K == 1 else 0
    previous = tuning._override
    device = torch.device(device)
    cuda = device.type == "cuda"
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    if timer is None:
        timer = _cuda_event_timer(repeats)

    with _TuningGuard(), (torch.cuda.device(device) if cuda else contextlib.nullcontext()):
        gen = torch.Generator(device=device)
        gen.manual_seed(int.from_bytes(os.urandom(8), "little") >> 1)  # fresh data every run
        xs = tuple(_random_field(torch, dt, shape, opname, gen, device) for dt in accs)
        outs = tuple(torch.empty(shape, dtype=dt, device=device) for dt in accs)
        x = xs[0] if len(xs) == 1 else xs

        def run(c, dst):
            tuning.set_override(c.tile)
            try:
                return ps.scan(x, op, axis=axis, strategy=c.strategy, backend="triton",
                               out=dst[0] if len(dst) == 1 else dst)
            finally:
                tuning.set_override(previous)

        run(default, outs)
        ref = tuple(o.clone() for o in outs)
        got = tuple(torch.empty_like(r) for r in ref)

        def verify(c):
            for g in got:
                _poison(torch, g)
            run(c, got)
            sync()
            return all(_same(torch, g, r) for g, r in zip(got, ref))

        def measure(c):
            return timer(lambda: run(c, outs))

        return search(candidates, measure, verify, default=default, deterministic_default=det_default,
                      budget=budget)


# ---------------------------------------------------------------------------
# The disk cache.

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
    try:
        import prefixscan

        v = getattr(prefixscan, "__version__", None)
    except Exception:  # noqa: BLE001
        v = None
    if not v:
        try:
            from importlib.metadata import version

            v = version("prefixscan")
        except Exception:  # noqa: BLE001
            v = "unknown"
    return str(v)


def _sanitize(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9+-]*\.\.+[^A-Za-z0-9+-]*|[^A-Za-z0-9.+-]+", "_", str(text)).strip("._") or "unknown"


def cache_path(gpu: str, version: str | None = None, directory: Path | None = None) -> Path:
    """The table file of GPU ``gpu`` for library ``version``."""
    version = version or library_version()
    return Path(directory or cache_dir()) / f"tuning-{_sanitize(gpu)}-{_sanitize(version)}.json"


def _read_records(path: Path, gpu: str, version: str) -> tuple[dict, str | None]:
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
    records, problem = _read_records(path, gpu, version)
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
    records = dict(_read_records(path, gpu, version)[0]) if merge else {}
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
    """Delete every table file in the cache directory; returns the paths removed."""
    d = Path(directory or cache_dir())
    removed = []
    for p in sorted(d.glob("tuning-*.json")) if d.is_dir() else []:
        try:
            p.unlink()
            removed.append(p)
        except FileNotFoundError:
            pass
    reset()
    return removed


# ---------------------------------------------------------------------------
# The in-process table and the lookup.

@dataclass
class _Table:
    gpu: str
    version: str
    path: Path
    entries: dict


_tables: dict = {}  # (gpu, cache env) -> _Table, each file read once per process
_attempted: set = set()  # (path, key) tuned on first use already (or tried)
_gpu_names: dict = {}
_tune_lock = threading.Lock()  # one tuning at a time per process


def reset() -> None:
    """Forget the tables read and the first-use attempts (tests, ``--clear``)."""
    _tables.clear()
    _attempted.clear()
    _gpu_names.clear()
    getattr(_strategy_launchers, "cache_clear", lambda: None)()


def gpu_name(device) -> str:
    index = getattr(device, "index", None)
    name = _gpu_names.get(index)
    if name is None:
        import torch

        name = _gpu_names[index] = torch.cuda.get_device_name(index if index is not None else
                                                             torch.cuda.current_device())
    return name


def table_for(gpu: str) -> _Table:
    env = (os.environ.get("PREFIXSCAN_CACHE_DIR"), os.environ.get("XDG_CACHE_HOME"))
    table = _tables.get((gpu, env))
    if table is None:
        version = library_version()
        path = cache_path(gpu, version)
        table = _tables[(gpu, env)] = _Table(gpu, version, path, load_table(path, gpu, version))
    return table


def store(table: _Table, key: str, record: dict) -> Entry:
    """Add a tuned entry to the in-process table and write the file (a failed
    write warns; the entry still serves this process)."""
    entry = Entry.from_record(record)
    table.entries[key] = entry
    try:
        save_table(table.path, table.gpu, {key: entry}, table.version)
    except OSError as exc:
        warnings.warn(f"prefixscan: could not write tuning cache {table.path}: {exc}", TuningCacheWarning,
                      stacklevel=2)
    return entry


def autotune_enabled() -> bool:
    """First-use tuning is on unless ``PREFIXSCAN_AUTOTUNE`` is 0/false/no/off."""
    return os.environ.get("PREFIXSCAN_AUTOTUNE", "1").strip().lower() not in ("0", "false", "no", "off")


def first_use_budget() -> float:
    try:
        return max(0.0, float(os.environ.get("PREFIXSCAN_AUTOTUNE_BUDGET", DEFAULT_BUDGET)))
    except ValueError:
        return DEFAULT_BUDGET


def _capturing() -> bool:
    try:
        import torch

        return bool(torch.cuda.is_current_stream_capturing())
    except Exception:  # noqa: BLE001 - no CUDA build: nothing is captured
        return False


_TORCH_DTYPES = {(1, False): "int8", (2, False): "int16", (4, False): "int32", (8, False): "int64",
                 (4, True): "float32", (8, True): "float64"}


def lookup(device, nbytes: int, floating: bool, opclass: str, K: int, n: int, *, accs=None, monoid=None,
           tune: bool = True) -> Entry | None:
    """The tuned entry for a scan on ``device``, or None (then the defaults run).

    A CUDA device's table is read once per process.  A missing key is tuned
    once per process (:func:`tune_workload`, quick grid, at most 2^24 elements,
    :func:`first_use_budget` seconds) unless ``tune`` is false, first-use
    tuning is off (``PREFIXSCAN_AUTOTUNE=0``), this thread is tuning already,
    another thread holds the tuner, or the stream is being captured.
    """
    if getattr(device, "type", None) != "cuda":
        return None
    table = table_for(gpu_name(device))
    key = entry_key(nbytes, floating, opclass, K, n)
    entry = table.entries.get(key)
    if entry is not None or not tune or in_tuning() or not autotune_enabled():
        return entry
    mark = (table.path, key)
    if mark in _attempted or _capturing():
        return None
    if not _tune_lock.acquire(blocking=False):
        return None
    try:
        if mark in _attempted:
            return table.entries.get(key)
        _attempted.add(mark)
        if accs is None:
            import torch

            name = _TORCH_DTYPES.get((nbytes, floating))
            if name is None:
                return None
            accs = [getattr(torch, name)]
        size = min(bucket_size(size_bucket(n)), 1 << FIRST_USE_MAX_LOG2)
        budget = first_use_budget()
        t0 = time.monotonic()
        try:
            result = tune_workload(device, list(accs), monoid, K, size, quick=True, budget=budget, repeats=7)
        except Exception as exc:  # noqa: BLE001 - a scan must not fail because tuning did
            warnings.warn(f"prefixscan: first-use tuning of {key} on {table.gpu} failed "
                          f"({type(exc).__name__}: {exc}); the default choice runs", TuningCacheWarning,
                          stacklevel=2)
            return None
        entry = store(table, key, result.to_record(n=size, K=K, source="first-use", budget=budget))
        log.info("tuned %s on %s in %.1f s: %s (cached in %s)", key, table.gpu, time.monotonic() - t0,
                 Candidate(entry.strategy, entry.tile).label, table.path)
        return entry
    finally:
        _tune_lock.release()


# ---------------------------------------------------------------------------
# `prefixscan tune` and `prefixscan info`.

DEFAULT_DTYPES = ("int32", "float32", "int64", "float64")
DEFAULT_SIZES = tuple(rep for _, _, rep in BUCKETS)
OP_CLASSES = ("builtin", "user")
LAYOUTS = ("1d", "2d")


def unavailable_reason() -> str:
    """Why ``prefixscan tune`` cannot run here ('' when it can)."""
    from . import unavailable_reason as backend_reason

    return backend_reason("cuda")


def tune_all(*, device: str = "cuda", dtypes: Sequence[str] = DEFAULT_DTYPES,
             sizes: Sequence[int] = DEFAULT_SIZES, ops: Sequence[str] = OP_CLASSES,
             layouts: Sequence[str] = LAYOUTS, strategies: Sequence[str] | None = None,
             budget: float | None = None, repeats: int = 15, stream=None) -> dict:
    """Tune every key of ``dtypes`` x operator classes x layouts x ``sizes``
    (log2, one per bucket) on ``device`` and write the table after each key.
    ``budget``: seconds for the whole run, shared out among the keys left."""
    import torch

    import prefixscan as ps

    from ...monoid import accumulator_dtype_name

    stream = stream if stream is not None else sys.stderr
    dev = torch.device(device)
    if dev.index is None:
        dev = torch.device(dev.type, torch.cuda.current_device())
    table = table_for(gpu_name(dev))
    jobs, seen = [], set()
    for dtype in dtypes:
        acc = getattr(torch, accumulator_dtype_name(dtype))
        for opc in ops:
            accs = [acc] if opc == "builtin" else [acc, acc]
            monoid = None if opc == "builtin" else ps.AFFINE
            for layout in layouts:
                K = 1 if layout == "1d" else CLI_K
                for e in sizes:
                    n = 1 << e
                    key = entry_key(sum(a.itemsize for a in accs), acc.is_floating_point, opc, K, n)
                    if key not in seen:
                        seen.add(key)
                        jobs.append((key, accs, monoid, K, n))
    entries, failed = {}, {}
    start = time.monotonic()
    for i, (key, accs, monoid, K, n) in enumerate(jobs):
        share = None if budget is None else max(0.0, budget - (time.monotonic() - start)) / (len(jobs) - i)
        print(f"[{i + 1}/{len(jobs)}] {key} (n = 2^{n.bit_length() - 1})", file=stream, flush=True)
        try:
            result = tune_workload(dev, accs, monoid, K, n, strategies=strategies, budget=share, repeats=repeats)
        except Exception as exc:  # noqa: BLE001 - reported, the run goes on
            failed[key] = f"{type(exc).__name__}: {exc}"[:300]
            print(f"    FAILED {failed[key]}", file=stream, flush=True)
            continue
        record = result.to_record(n=n, K=K, source="prefixscan tune", budget=share)
        store(table, key, record)
        entries[key] = record
        for c, why in result.excluded.items():
            print(f"    excluded {c.label}: {why}", file=stream, flush=True)
    return {"gpu": table.gpu, "version": table.version, "path": str(table.path), "entries": entries,
            "failed": failed, "strategies": available_strategies(strategies or STRATEGY_CANDIDATES),
            "seconds": time.monotonic() - start}


def format_table(entries: Mapping[str, dict]) -> str:
    """The tuned entries as a text table."""
    rows = [("key", "strategy", "block", "warps", "window", "tuned us", "default us", "gain",
             "deterministic", "excluded")]
    for key, r in sorted(entries.items()):
        t = r["tile"]
        best, base = r.get("best_seconds"), r.get("default_seconds")
        gain = f"{base / best:.2f}x" if best and base else "-"
        rows.append((key, r["strategy"], str(t["block"]), str(t["num_warps"]), str(t["window"]),
                     f"{best * 1e6:.1f}" if best else "-", f"{base * 1e6:.1f}" if base else "-", gain,
                     str(r.get("deterministic_strategy") or "-"), str(len(r.get("excluded") or ()))))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows)


def info_lines(gpu_names: Sequence[str] | None = None) -> list[str]:
    """What ``prefixscan info`` says about tuning: cache directory, each GPU's
    table file and whether it holds tuned entries."""
    d = cache_dir()
    source = ("PREFIXSCAN_CACHE_DIR" if os.environ.get("PREFIXSCAN_CACHE_DIR") else
              "XDG_CACHE_HOME" if os.environ.get("XDG_CACHE_HOME") else "default")
    lines = [f"  cache dir: {d} ({source})",
             f"  first-use tuning: {'on' if autotune_enabled() else 'off'} (PREFIXSCAN_AUTOTUNE), "
             f"budget {first_use_budget():g} s (PREFIXSCAN_AUTOTUNE_BUDGET)"]
    if gpu_names is None:
        gpu_names = []
        try:
            import torch

            if torch.cuda.is_available():
                gpu_names = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
        except Exception:  # noqa: BLE001
            gpu_names = []
    version = library_version()
    for i, name in enumerate(gpu_names):
        path = cache_path(name, version)
        records, problem = _read_records(path, name, version)
        if problem:
            state = f"unusable, ignored: {problem}"
        elif records:
            state = f"tuned table present, {len(records)} entries"
        else:
            state = "no tuned table (first use tunes; or run prefixscan tune)"
        lines.append(f"  cuda:{i} {name}: {path} ({state})")
    if not gpu_names:
        files = sorted(d.glob("tuning-*.json")) if d.is_dir() else []
        lines.append(f"  no CUDA device: tables are per GPU; {len(files)} table file(s) in the cache dir")
    return lines
