"""Is tuning stable?  Compare the choices of two ``prefixscan tune --json`` runs on one GPU.

    python tools/tune_stability.py RUN1.json RUN2.json [--tolerance 0.02] [--json OUT]

Per key: the same choice (strategy and tile) in both runs, or two choices within
``--tolerance`` of each other.  Two runs in two processes differ by more than their
choices (clocks, the machine's state), so the choices are compared where each run
measured both: run 1's time for run 2's choice over run 1's own best, and the other
way round (every candidate a run measured is in its record's ``measured`` list).  A
key passes when the choices agree or both ratios are within the tolerance; a choice
the other run never measured (skipped by its search) is reported as such and fails.
Exit status 0 when every key common to both runs passes, 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

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


def _label(choice: tuple) -> str:
    strategy, block, warps, window, max_kb, packed, raking, occupancy = choice
    extras = [f"kb{max_kb}" if max_kb != 32 else "", f"packed={packed}" if packed is not None else "",
              f"rake{raking}" if raking else "", f"occ{occupancy}" if occupancy else ""]
    return " ".join([f"{strategy} {block}x{warps}w win{window}"] + [e for e in extras if e])


def markdown(rows: list[dict], tolerance: float) -> str:
    lines = [f"| key | run 1 | run 2 | run 1: 2's choice / own | run 2: 1's choice / own | within {tolerance:.0%} |",
             "|---|---|---|---:|---:|---|"]
    for r in rows:
        def ratio(v):
            return "-" if r["same"] else ("not measured" if v is None else f"{v:.3f}")
        lines.append(f"| {r['key']} | {_label(r['first'])} | {'same' if r['same'] else _label(r['second'])} | "
                     f"{ratio(r.get('first_ratio'))} | {ratio(r.get('second_ratio'))} | "
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
    args = parser.parse_args(argv)
    runs = [json.loads(p.read_text()) for p in (args.first, args.second)]
    rows = compare(runs[0]["entries"], runs[1]["entries"], args.tolerance)
    print(markdown(rows, args.tolerance))
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    return 0 if rows and all(r["passes"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
