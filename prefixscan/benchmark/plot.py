"""``plot.png`` of ``prefixscan bench`` (needs matplotlib: the ``bench`` extra).

One row per dtype: on the left the throughput (Gel/s against n, log-log) of
every implementation with the copy as a dashed roof; on the right each
implementation's ratio to the copy's throughput at the same n, where 1 is the
roof.  For GPU meta-strategies the right panel also shows, dotted in the same
colour, the ratio their counted memory traffic predicts for a bandwidth-bound
scan (2 / traffic per element).
"""

from __future__ import annotations

import sys
from pathlib import Path

from .._install_hint import install_command

__all__ = ["plot_results"]


def plot_results(result: dict, path: Path, title: str, impls: list[str]) -> bool:
    """Write the figure to ``path``; False (with a note on stderr) without matplotlib."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except Exception:  # noqa: BLE001
        print("note: matplotlib is not installed, so no plot.png was written "
              f"({install_command('bench')})", file=sys.stderr)
        return False
    dtypes = [d for d in result["metadata"]["dtypes"]
              if any(r["dtype"] == d and r.get("gelem_per_s") for r in result["records"])]
    if not dtypes:
        dtypes = list(result["metadata"]["dtypes"][:1])
    # One colour per implementation, the same in both panels.
    colors = {name: f"C{i % 10}" for i, name in enumerate(nm for nm in impls if nm != "copy")}
    fig = Figure(figsize=(13.0, 4.2 * len(dtypes)), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(len(dtypes), 2, squeeze=False)
    for row, dtype in enumerate(dtypes):
        records = [r for r in result["records"] if r["dtype"] == dtype]
        _throughput_panel(axes[row][0], records, dtype, impls, colors)
        _ratio_panel(axes[row][1], records, dtype, impls, colors)
    fig.suptitle(title)
    fig.savefig(str(path), dpi=110)
    return True


def _series(records: list[dict], name: str, field: str) -> list[tuple[int, float]]:
    return sorted((r["n"], r[field]) for r in records if r["impl"] == name and r.get(field))


def _throughput_panel(ax, records: list[dict], dtype: str, impls: list[str], colors: dict) -> None:
    for name in impls:
        points = _series(records, name, "gelem_per_s")
        if not points:
            continue
        if name == "copy":
            ax.plot(*zip(*points), "k--", linewidth=2, label="copy (roof)")
        else:
            ax.plot(*zip(*points), marker="o", markersize=3, color=colors[name],
                    linewidth=2.2 if name == "prefixscan" else 1.2, label=name)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("n (elements)")
    ax.set_ylabel("Gel/s")
    ax.set_title(dtype)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)


def _ratio_panel(ax, records: list[dict], dtype: str, impls: list[str], colors: dict) -> None:
    with_strategies = False
    for name in impls:
        if name == "copy":
            continue
        measured = _series(records, name, "ratio_to_copy")
        if measured:
            ax.plot(*zip(*measured), marker="o", markersize=3, color=colors[name],
                    linewidth=2.2 if name == "prefixscan" else 1.2, label=name)
        model = _series(records, name, "model_ratio")
        if model:
            with_strategies = True
            ax.plot(*zip(*model), linestyle=":", linewidth=1.2, color=colors[name],
                    label=None if measured else f"{name} (model)")
    ax.axhline(1.0, color="k", linestyle="--", linewidth=1.5, label="copy (roof)")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("n (elements)")
    ax.set_ylabel("ratio to copy throughput")
    ax.set_ylim(bottom=0)
    ax.set_title(f"{dtype}: ratio to copy" + (" (dotted: 2 / counted traffic)" if with_strategies else ""))
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
