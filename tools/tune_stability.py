"""Is tuning stable?  Compare the choices of two ``prefixscan tune --json`` runs on one GPU.

    python tools/tune_stability.py RUN1.json RUN2.json [--tolerance 0.02] [--json OUT] [--head-to-head ROUNDS]

Per key: the same choice (strategy and tile) in both runs, or two choices within
``--tolerance`` of each other.  Two runs in two processes differ by more than their
choices (clocks, the machine's state), so the choices are compared where each run
measured both: run 1's time for run 2's choice over run 1's own best, and the other
way round (every candidate a run measured is in its record's ``measured`` list).  A
key passes when the choices agree or both ratios are within the tolerance; a choice
the other run never measured (skipped by its search) is reported as such and fails.
Exit status 0 when every key common to both runs passes, 1 otherwise.

Each run's rounds are only as precise as its measured noise (at small sizes, more
than 2%), and a run need not measure the other's choice.  ``--head-to-head R``
(a CUDA device) settles the keys whose choices differ by measuring: both choices
on the key's workload, alone, in R interleaved rounds in this process, with the
tuner's timer; such a key passes when the median of the per-round ratios (the
duel's statistic, :func:`search.paired_ratio`) is within the tolerance.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

from prefixscan.backends.triton.tuner import measure  # neither imports torch or triton until a
from prefixscan.backends.triton.planning.keys import Candidate, tile_from  # workload runs
from prefixscan.backends.triton.tuner.search import QUARTILE_ROUNDS, interleave, paired_ratio

TILE_FIELDS = ("block", "num_warps", "window", "max_kb", "packed", "raking", "occupancy")
#: Fields older tables leave out, at the value they meant (TileConfig's defaults).
DEFAULTS = {"max_kb": 32, "packed": None, "raking": 0, "occupancy": 0}


def _fields(entry: dict) -> tuple:
    return tuple(entry.get(f, DEFAULTS.get(f)) for f in TILE_FIELDS)


def choice_of(record: dict) -> tuple:
    """A record's chosen (strategy, tile fields)."""
    return (record["strategy"],) + _fields(record["tile"])


def seconds_of(record: dict, choice: tuple) -> float | None:
    """The run's measured seconds for ``choice``, or None where it did not measure it."""
    for m in record.get("measured", ()):
        if (m["strategy"],) + _fields(m) == choice:
            return m["seconds"]
    return None


def compare(first: dict, second: dict, tolerance: float) -> list[dict]:
    """One row per key the two runs' entries share (see the module)."""
    rows = []
    for key in sorted(set(first) & set(second)):
        a, b = first[key], second[key]
        ca, cb = choice_of(a), choice_of(b)
        row = {"key": key, "first": ca, "second": cb, "same": ca == cb}
        if not row["same"]:
            a_of_b, b_of_a = seconds_of(a, cb), seconds_of(b, ca)
            row["first_ratio"] = None if a_of_b is None else a_of_b / seconds_of(a, ca)
            row["second_ratio"] = None if b_of_a is None else b_of_a / seconds_of(b, cb)
        ratios = (row.get("first_ratio"), row.get("second_ratio"))
        row["passes"] = row["same"] or all(r is not None and r <= 1 + tolerance for r in ratios)
        rows.append(row)
    return rows


def _candidate(record: dict):
    """A record's chosen :class:`Candidate`."""
    return Candidate(record["strategy"], tile_from(record["tile"]))


def _accumulator(key: str):
    """The torch dtype a built-in key ("4B-int-builtin-...") is tuned with."""
    import torch  # only where a head-to-head runs

    nbytes, kind, opclass = key.split("-")[:3]
    dtypes = {("4B", "int"): torch.int32, ("8B", "int"): torch.int64,
              ("4B", "float"): torch.float32, ("8B", "float"): torch.float64}
    if opclass != "builtin" or (nbytes, kind) not in dtypes:
        raise ValueError(f"--head-to-head measures the built-in keys of 4- and 8-byte accumulators, not {key}")
    return dtypes[nbytes, kind]


def head_to_head(rows: list[dict], first: dict, second: dict, *, rounds: int, tolerance: float,
                 device: str = "cuda", timer=None) -> None:
    """Measure both choices of every row whose choices differ (see the module)
    and set its ``head_to_head`` (medians, per-round ratio, half-width) and ``passes``.
    ``timer``: the tuner's by default (:func:`measure.cuda_event_timer`)."""
    for row in rows:
        if row["same"]:
            continue
        key = row["key"]
        a, b = first[key], second[key]
        ca, cb = _candidate(a), _candidate(b)
        with measure.workload(device, [_accumulator(key)], None, a["K"], a["n"], timer=timer) as w:
            if not (w.verify(ca) and w.verify(cb)):
                raise RuntimeError(f"{key}: a choice computes a wrong result")
            times = {ca: [], cb: []}
            if interleave(ca, cb, w.measure, rounds, times) is not None:  # the two alone
                raise RuntimeError(f"{key}: a choice failed to run")
        ratio, half_width = paired_ratio(times[cb], times[ca])
        row["head_to_head"] = {"rounds": rounds, "first_seconds": statistics.median(times[ca]),
                               "second_seconds": statistics.median(times[cb]), "ratio": ratio,
                               "half_width": half_width}
        row["passes"] = abs(ratio - 1) <= tolerance


def _label(choice: tuple) -> str:
    strategy, block, warps, window, max_kb, packed, raking, occupancy = choice
    extras = [f"kb{max_kb}" if max_kb != 32 else "", f"packed={packed}" if packed is not None else "",
              f"rake{raking}" if raking else "", f"occ{occupancy}" if occupancy else ""]
    return " ".join([f"{strategy} {block}x{warps}w win{window}"] + [e for e in extras if e])


def markdown(rows: list[dict], tolerance: float) -> str:
    lines = [f"| key | run 1 | run 2 | run 1: 2's choice / own | run 2: 1's choice / own | "
             f"head to head: 2's / 1's | within {tolerance:.0%} |",
             "|---|---|---|---:|---:|---:|---|"]
    for r in rows:
        def ratio(v):
            return "-" if r["same"] else ("not measured" if v is None else f"{v:.3f}")
        h = r.get("head_to_head")
        together = "-" if h is None else (f"{h['second_seconds'] * 1e6:.2f} / {h['first_seconds'] * 1e6:.2f} us, "
                                          f"per round {h['ratio']:.3f} (+-{h['half_width']:.1%})")
        lines.append(f"| {r['key']} | {_label(r['first'])} | {'same' if r['same'] else _label(r['second'])} | "
                     f"{ratio(r.get('first_ratio'))} | {ratio(r.get('second_ratio'))} | {together} | "
                     f"{'yes' if r['passes'] else 'NO'} |")
    same = sum(r["same"] for r in rows)
    passed = sum(r["passes"] for r in rows)
    lines += ["", f"{len(rows)} keys: {same} same choice, {passed - same} different within {tolerance:.0%}, "
                  f"{len(rows) - passed} not"]
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("first", type=Path)
    parser.add_argument("second", type=Path)
    parser.add_argument("--tolerance", type=float, default=0.02)
    parser.add_argument("--json", type=Path, default=None, help="also write the rows here")
    parser.add_argument("--head-to-head", type=int, default=0, metavar="ROUNDS",
                        help="measure the differing choices against each other in ROUNDS interleaved rounds "
                             f"(CUDA; at least {QUARTILE_ROUNDS})")
    args = parser.parse_args(argv)
    if args.head_to_head and args.head_to_head < QUARTILE_ROUNDS:
        parser.error(f"--head-to-head: at least {QUARTILE_ROUNDS} rounds (quartiles), got {args.head_to_head}")
    runs = [json.loads(p.read_text()) for p in (args.first, args.second)]
    rows = compare(runs[0]["entries"], runs[1]["entries"], args.tolerance)
    if args.head_to_head:
        head_to_head(rows, runs[0]["entries"], runs[1]["entries"], rounds=args.head_to_head,
                     tolerance=args.tolerance)
    print(markdown(rows, args.tolerance))
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    return 0 if rows and all(r["passes"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
