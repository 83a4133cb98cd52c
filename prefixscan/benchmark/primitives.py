"""``prefixscan bench`` on the CPU: the primitives next to the best NumPy/SciPy idiom.

Each row times, in the same interleaved rounds (:func:`.runner.time_interleaved`,
best of the rounds), the public prefixscan call, the idiom a NumPy user would
write instead, and the copy roof of the bytes the primitive must move at least
(read once, written once; :mod:`.roof`):

* ``segmented_scan`` (sums, offsets, segments of ~1000 elements) against the
  cumulative sum minus each segment's base;
* ``compact`` (half of the elements kept) against ``x[mask]``;
* ``linear_recurrence`` (one decay for every step) against
  ``scipy.signal.lfilter`` (skipped without SciPy, which the ``bench`` extra
  installs);
* the ``logaddexp`` scan against ``numpy.logaddexp.accumulate``;
* an order-8 scan against eight ``numpy.cumsum`` passes, a scan of tuple size 8
  against ``numpy.cumsum`` of the ``(n/8, 8)`` view;
* the affine monoid (:data:`prefixscan.AFFINE`, a user ``Monoid`` compiled by
  Numba) against the NumPy scan network prefixscan runs without Numba.

Every prefixscan result is compared with the idiom's (exactly where the data
make the arithmetic exact) before anything is timed; a mismatch is reported as
FAILED and not timed.  Calls that return a new array (``compact``,
``linear_recurrence``, their idioms) pay for the pages of that array; the roof
and the calls with ``out=`` write into pre-faulted memory.
"""

from __future__ import annotations

import importlib
import importlib.util
import statistics
import time
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

import prefixscan as ps

from .._errors import short_error
from .roof import copy_variants
from .runner import time_interleaved

__all__ = ["Primitive", "primitive_cases", "measure_primitives", "DEFAULT_LOG2"]

#: Elements per primitive: 32 MiB per float32 array, beyond the last-level cache of
#: the CI machine (32 MiB), so the copy roof streams from memory too.
DEFAULT_LOG2 = 23
MEAN_SEGMENT = 1000
BUDGET = 0.3  # seconds per timed call of a row (the idioms take up to a second per call)


@dataclass
class Primitive:
    """One row: the prefixscan call, the idiom, and what a correct result looks like."""

    name: str
    dtype: str
    n: int
    call: str  # the prefixscan call, as a user writes it
    run: Callable[[], Any]
    peer: str
    run_peer: Callable[[], Any] | None
    moved_bytes: int  # read once + written once, the least the primitive must move
    rtol: float = 0.0  # 0: results must be equal
    skip_reason: str = ""
    reference: Callable[[], Any] | None = None  # what prefixscan must match (default: the idiom's result)


def _small(rng: np.random.Generator, n: int, dtype) -> np.ndarray:
    """Integers in -4..4: float sums of them are exact in any order."""
    return rng.integers(-4, 5, size=n).astype(dtype)


def _prefaulted(like: np.ndarray) -> np.ndarray:
    out = np.empty_like(like)
    out[...] = 0
    return out


def _segmented(rng, n):
    x = _small(rng, n, np.float32)
    cuts = np.sort(rng.choice(np.arange(1, n), size=max(0, n // MEAN_SEGMENT - 1), replace=False))
    offsets = np.concatenate(([0], cuts)).astype(np.int64)
    lengths = np.diff(np.append(offsets, n))
    out, work = _prefaulted(x), _prefaulted(x)

    def idiom():
        np.cumsum(x, out=work)
        bases = np.empty(offsets.size, x.dtype)
        bases[0] = 0
        bases[1:] = work[offsets[1:] - 1]
        return np.subtract(work, np.repeat(bases, lengths), out=out)

    return Primitive(f"segmented_scan (offsets, mean length {MEAN_SEGMENT})", "float32", n,
                     "prefixscan.segmented_scan(x, offsets=offsets, out=out)",
                     lambda: ps.segmented_scan(x, offsets=offsets, out=out),
                     "cumsum minus segment bases", idiom, 2 * x.nbytes + offsets.nbytes)


def _compact(rng, n):
    x = rng.standard_normal(n).astype(np.float32)
    mask = rng.random(n) < 0.5
    kept = int(np.count_nonzero(mask))
    return Primitive("compact (keep 50%)", "float32", n, "prefixscan.compact(x, mask)",
                     lambda: ps.compact(x, mask), "x[mask]", lambda: x[mask],
                     x.nbytes + mask.nbytes + kept * x.itemsize)


def _recurrence(rng, n):
    b = rng.uniform(-1, 1, n).astype(np.float32)
    a = np.full(1, 0.99, np.float32)  # one decay, broadcast over the steps
    signal = _optional("scipy.signal")
    if signal is None:
        return Primitive("linear_recurrence (one decay)", "float32", n, "prefixscan.linear_recurrence(a, b)",
                         lambda: None, "scipy.signal.lfilter", None, 2 * b.nbytes,
                         skip_reason="SciPy is not installed")
    num, den = np.ones(1, np.float32), np.array([1, -a[0]], np.float32)
    return Primitive("linear_recurrence (one decay)", "float32", n, "prefixscan.linear_recurrence(a, b)",
                     lambda: ps.linear_recurrence(a, b), "scipy.signal.lfilter",
                     lambda: signal.lfilter(num, den, b), 2 * b.nbytes, rtol=1e-3)


def _logaddexp(dtype):
    def build(rng, n):
        x = rng.standard_normal(n).astype(dtype)
        out, peer_out = _prefaulted(x), _prefaulted(x)
        # NumPy's serial float32 accumulation drifts by 1e-3 over 2^23 steps: the
        # reference is its float64 one, rounded once.
        rtol = 1e-5 if dtype == "float32" else 1e-10
        return Primitive("logaddexp scan", dtype, n, "prefixscan.scan(x, 'logaddexp', out=out)",
                         lambda: ps.scan(x, "logaddexp", out=out), "numpy.logaddexp.accumulate",
                         lambda: np.logaddexp.accumulate(x, out=peer_out), 2 * x.nbytes, rtol=rtol,
                         reference=lambda: np.logaddexp.accumulate(x.astype(np.float64)).astype(dtype))

    return build


def _order(dtype, order):
    def build(rng, n):
        x = _small(rng, n, dtype)
        out, peer_out = _prefaulted(x), _prefaulted(x)

        def idiom():
            np.cumsum(x, dtype=x.dtype, out=peer_out)
            for _ in range(order - 1):
                np.cumsum(peer_out, dtype=x.dtype, out=peer_out)
            return peer_out

        return Primitive(f"order-{order} scan", dtype, n, f"prefixscan.scan(x, order={order}, out=out)",
                         lambda: ps.scan(x, order=order, out=out), f"numpy.cumsum x{order}", idiom, 2 * x.nbytes)

    return build


def _tuple(dtype, size):
    def build(rng, n):
        x = _small(rng, n - n % size, dtype)
        out, peer_out = _prefaulted(x), _prefaulted(x)
        rows, peer_rows = x.reshape(-1, size), peer_out.reshape(-1, size)
        return Primitive(f"tuple size {size} scan", dtype, x.size,
                         f"prefixscan.scan(x, tuple_size={size}, out=out)",
                         lambda: ps.scan(x, tuple_size=size, out=out), f"numpy.cumsum of (n/{size}, {size}), axis 0",
                         lambda: (np.cumsum(rows, axis=0, dtype=x.dtype, out=peer_rows), peer_out)[1], 2 * x.nbytes)

    return build


def _affine(rng, n):
    a = rng.uniform(0.9, 1.0, n).astype(np.float32)
    b = rng.uniform(-1, 1, n).astype(np.float32)
    outs = (_prefaulted(a), _prefaulted(b))
    peer_outs = (_prefaulted(a), _prefaulted(b))
    return Primitive("affine monoid (user Monoid, 2 fields)", "float32", n,
                     "prefixscan.scan((a, b), prefixscan.AFFINE, out=(oa, ob))",
                     lambda: ps.scan((a, b), ps.AFFINE, out=outs),
                     "NumPy scan network (prefixscan without Numba)",
                     lambda: ps.scan((a, b), ps.AFFINE, algorithm="brent_kung", out=peer_outs),
                     4 * a.nbytes, rtol=1e-4)


def primitive_cases() -> list[tuple[str, Callable]]:
    """``(label, build(rng, n) -> Primitive)`` of every row, in table order."""
    return [
        ("segmented_scan", _segmented),
        ("compact", _compact),
        ("linear_recurrence", _recurrence),
        ("logaddexp float64", _logaddexp("float64")),
        ("logaddexp float32", _logaddexp("float32")),
        ("order 8 int32", _order("int32", 8)),
        ("order 8 int64", _order("int64", 8)),
        ("tuple size 8 int32", _tuple("int32", 8)),
        ("tuple size 8 int64", _tuple("int64", 8)),
        ("affine", _affine),
    ]


def _optional(name: str):
    try:
        return importlib.import_module(name)
    except Exception:  # noqa: BLE001 - absent or broken: the row is skipped
        return None


def _fields(result) -> list[np.ndarray]:
    if isinstance(result, tuple):
        return [np.asarray(r) for r in result]
    return [np.asarray(result)]


def compare(got, expected, rtol: float) -> tuple[bool, str]:
    """(ok, why not): equal arrays, or within ``rtol * (|expected| + 1)`` everywhere."""
    for g, e in zip(_fields(got), _fields(expected)):
        if g.shape != e.shape:
            return False, f"result shape {g.shape}, the idiom's {e.shape}"
        if rtol == 0:
            bad = g != e
        else:
            e64 = e.astype(np.float64)
            bad = ~(np.abs(g.astype(np.float64) - e64) <= rtol * (np.abs(e64) + 1))
        if bad.any():
            j = int(np.argmax(bad))
            return False, f"{int(bad.sum())} elements differ from the idiom's, first at {j}: {g.flat[j]!r} vs {e.flat[j]!r}"
    return True, ""


def _roof_calls(moved_bytes: int, dtype) -> list[tuple[str, Callable[[], None]]]:
    """One call per copy variant moving ``moved_bytes`` (half read, half written)."""
    count = max(1, moved_bytes // 2 // np.dtype(dtype).itemsize)
    src = np.random.default_rng(0).integers(-4, 5, size=count).astype(dtype)
    dst = _prefaulted(src)
    return [(name, (lambda copy=copy: copy(src, dst))) for name, copy in copy_variants()]


def measure_primitives(log2n: int, rng: np.random.Generator, *, repeats: int, budget: float = BUDGET,
                       progress=None) -> list[dict]:
    """One record per row of :func:`primitive_cases` at ``n = 2**log2n``: up to
    ``repeats`` interleaved rounds, fewer once a row has used ``budget`` seconds per
    call it times (at least three)."""
    records = []
    for label, build in primitive_cases():
        if progress is not None:
            progress.update(f"primitive {label}")
        rec = {"primitive": label, "status": "ok", "error": None, "verified": False}
        try:
            case = build(rng, 1 << log2n)
            rec.update(name=case.name, dtype=case.dtype, n=case.n, call=case.call, peer=case.peer,
                       moved_bytes=case.moved_bytes)
            if case.skip_reason:
                rec.update(status="skipped", error=case.skip_reason)
            else:
                rec.update(_time_case(case, repeats, budget))
        except Exception as exc:  # noqa: BLE001 - reported in the record
            rec.update(status="error", error=short_error(exc))
        records.append(rec)
        if progress is not None:
            progress.update(f"primitive {label} done", 1)
    return records


#: Relative cost of a row next to the others at the same size, measured on the 2-core
#: CI machine at 2^23 (2-6 s a row, 4 on average; logaddexp 11-12 s; the affine row
#: 19 s, whose idiom, the NumPy network, takes seconds a call); the others count 1.
_RELATIVE_COST = {"logaddexp float64": 3.0, "logaddexp float32": 3.0, "affine": 5.0}


def _has_scipy() -> bool:
    try:
        return importlib.util.find_spec("scipy") is not None
    except (ImportError, ValueError):  # a broken or blocked install counts as absent
        return False


def expected_seconds(label: str, log2n: int) -> float:
    """The expected cost of the row ``label`` at ``n = 2**log2n`` (the weight of its
    progress step, in the units of :func:`.runner.expected_seconds`): the NumPy
    idioms, called five times or more, take about 0.5 us per element on the CI
    machine, which dominates from 2^16 on.  A row skipped for want of SciPy costs
    nothing."""
    if label == "linear_recurrence" and not _has_scipy():
        return 1e-3
    return _RELATIVE_COST.get(label, 1.0) * (0.05 + 5e-7 * (1 << log2n))


def _timed(fn) -> tuple[Any, float]:
    t0 = time.perf_counter()
    result = fn()
    return result, time.perf_counter() - t0


def _time_case(case: Primitive, repeats: int, budget: float) -> dict:
    mine, t_mine = _timed(case.run)
    theirs, t_theirs = _timed(case.run_peer)
    ok, why = compare(mine, theirs if case.reference is None else case.reference(), case.rtol)
    del mine, theirs
    if not ok:
        return {"status": "FAILED", "error": why}
    roofs = _roof_calls(case.moved_bytes, case.dtype)
    fns = [case.run, case.run_peer] + [fn for _, fn in roofs]
    # The first calls compiled and faulted pages in: the second ones size the loops.
    _, t_mine = _timed(case.run)
    _, t_theirs = _timed(case.run_peer)
    firsts = [t_mine, t_theirs] + [_timed(fn)[1] for _, fn in roofs]
    samples = time_interleaved(fns, repeats, budget, first_seconds=firsts)
    best = [statistics.median(s) for s in samples]  # the median, as every row of bench reports
    copy = min(best[2:])
    return {
        "verified": True,
        "samples": len(samples[0]),
        "seconds": best[0],
        "seconds_min": min(samples[0]),
        "seconds_median": best[0],
        "peer_seconds": best[1],
        "copy_seconds": copy,
        "roof": roofs[best[2:].index(copy)][0],
        "gb_per_s": case.moved_bytes / best[0] / 1e9,
        "ratio_to_copy": copy / best[0],
        "peer_ratio_to_copy": copy / best[1],
        "speedup": best[1] / best[0],
    }
