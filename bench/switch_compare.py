"""Time ``prefixscan bench`` cases under each setting of a dispatch switch, in one process.

A setting assigns attributes of ``prefixscan.backends.triton.launch`` (for example
``COLUMNS_MAX``); each case is the keyword arguments of
:func:`prefixscan.bench.run_benchmark` (results verified against the reference).
Planned replays keep the kernel of their first call, so every setting bumps
``tuning.generation`` to make them plan again.  Used by the studies that compare a
kernel path against the one it replaces (bench/columns_study.py, bench/order2_study.py).
"""

from __future__ import annotations

import json
import sys

sys.path.insert(0, ".")
from prefixscan.backends.triton import launch, tuning  # noqa: E402
from prefixscan.bench import run_benchmark  # noqa: E402


def compare(settings: list[tuple[str, dict]], cases: list[dict], json_path: str) -> list[dict]:
    """Run every case under every (label, attributes) setting; print and write the
    prefixscan records, each with its ``setting`` label; restore the attributes."""
    saved = {name: getattr(launch, name) for _, attrs in settings for name in attrs}
    records, meta = [], None
    try:
        for case in cases:
            for label, attrs in settings:
                for name, value in attrs.items():
                    setattr(launch, name, value)
                tuning.generation += 1
                result = run_benchmark(device="cuda", impls=["prefixscan"], progress=False, **case)
                meta = result["metadata"]
                for rec in result["records"]:
                    if rec["impl"] != "prefixscan":
                        continue
                    rec = dict(rec, setting=label)
                    records.append(rec)
                    print(f"order {rec['order']} tuple {rec['tuple_size']} 2^{rec['log2n']} {rec['dtype']:8s} "
                          f"{label:14s} {rec['ratio_to_copy'] or 0:5.2f} of copy {rec['status']}", flush=True)
    finally:
        for name, value in saved.items():
            setattr(launch, name, value)
    with open(json_path, "w") as f:
        json.dump({"metadata": meta, "records": records}, f, indent=1, default=str)
    return records
