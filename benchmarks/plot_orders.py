"""One figure for orders and tuple sizes: ratio to copy of each implementation for orders
2/5/8 and tuple sizes 2/5/8 (int32 and int64), from the ``results.json`` files that
``prefixscan bench --order q`` / ``--tuple-size s`` wrote into ``order{q}/`` and
``tuple{s}/`` of one folder (``benchmarks/device.sh orders`` writes them so).

    python benchmarks/plot_orders.py benchmarks/results/h100/2026-11-25-orders-tuples \
        --out orders-tuples.png
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

TARGET = 0.85  # the project's goal: this ratio to copy for every order and tuple size measured


def load(folder: Path) -> tuple[dict, list]:
    """(metadata of the first file, [(label, dtype, {impl: ratio})]) in the cases' order."""
    cases = []
    meta = None
    for kind, values in (("order", (2, 5, 8)), ("tuple", (2, 5, 8))):
        for v in values:
            path = folder / f"{kind}{v}" / "results.json"
            if not path.exists():
                continue
            data = json.loads(path.read_text())
            meta = meta or data["metadata"]
            for dtype in data["metadata"]["dtypes"]:
                ratios = {r["impl"]: r["ratio_to_copy"] for r in data["records"]
                          if r["dtype"] == dtype and r["status"] == "ok" and r["impl"] != "copy"}
                cases.append((f"{'order' if kind == 'order' else 'tuple size'} {v}", dtype, ratios))
    if meta is None:
        raise SystemExit(f"{folder}: no order*/results.json or tuple*/results.json")
    return meta, cases


def main() -> int:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    parser = argparse.ArgumentParser()
    parser.add_argument("folder", type=Path)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    meta, cases = load(args.folder)
    dtypes = [d for d in ("int32", "int64") if any(c[1] == d for c in cases)]
    impls = [i for i in ("prefixscan", "torch.cumsum", "cupy.cumsum", "jax.numpy.cumsum")
             if any(i in c[2] for c in cases)]
    fig = Figure(figsize=(6 * len(dtypes), 4.2))
    FigureCanvasAgg(fig)
    for k, dtype in enumerate(dtypes):
        ax = fig.add_subplot(1, len(dtypes), k + 1)
        rows = [c for c in cases if c[1] == dtype]
        width = 0.8 / len(impls)
        for j, impl in enumerate(impls):
            xs = [i + (j - (len(impls) - 1) / 2) * width for i in range(len(rows))]
            ax.bar(xs, [r[2].get(impl, 0.0) for r in rows], width, label=impl)
        ax.axhline(1.0, color="k", linestyle="--", linewidth=1, label="copy (roof)")
        ax.axhline(TARGET, color="r", linestyle=":", linewidth=1, label=f"target {TARGET}")
        ax.set_xticks(range(len(rows)), [r[0] for r in rows], rotation=30)
        ax.set_ylim(0, 1.3)
        ax.set_ylabel("ratio to copy")
        ax.set_title(f"{dtype}, n ~ 2^{meta['log2_sizes'][0]}")
        if k == 0:
            ax.legend(fontsize=7, loc="upper center", ncol=3)
    fig.suptitle(f"Orders and tuple sizes, {meta['device_name']}, {meta['date'][:10]}", fontsize=10)
    fig.tight_layout()
    fig.savefig(args.out, dpi=110)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
