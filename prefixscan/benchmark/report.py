"""What ``prefixscan bench`` writes: the run's metadata (machine, versions,
timing method), the plain-text table printed at the end, ``results.md`` and
``results.json``; ``plot.png`` comes from :mod:`prefixscan.benchmark.plot`.

Table cells are Gel/s with the ratio to the copy's throughput (the roof, timed
in the same process); GB/s = Gel/s x 2 x itemsize.  With strategies, the
markdown adds each strategy's counted memory traffic per element next to its
measured ratio to copy; with primitives, a table of each primitive next to the
NumPy/SciPy idiom it replaces.
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import sys
from pathlib import Path
from typing import Any

import numpy as np

import prefixscan

from .plot import plot_results
from .verify import VERIFICATION

__all__ = ["versions", "cpu_name", "cuda_device_info", "describe_timing", "describe_statistic", "STATISTIC",
           "BYTES_MODEL", "impl_order",
           "size_label", "title", "format_table", "format_markdown", "primitive_rows", "write_outputs", "FRESH_NOTE"]

BYTES_MODEL = "GB/s counts bytes read + written once: 2 * n * itemsize (whatever the order)"
#: ``metadata["tuning_cache"]`` of a ``--fresh`` run.
FRESH_NOTE = "fresh process, empty user tuning cache"


# ---------------------------------------------------------------------------
# Metadata.

def versions() -> dict:
    """Versions of prefixscan, Python, NumPy and every peer library imported so far."""
    found = {
        "prefixscan": getattr(prefixscan, "__version__", None),
        "python": platform.python_version(),
        "numpy": np.__version__,
    }
    for name in ("numba", "scipy", "torch", "triton", "cupy", "jax", "matplotlib"):
        mod = sys.modules.get(name)
        if mod is not None:
            found[name] = str(getattr(mod, "__version__", "installed"))
    if "cuda.compute" in sys.modules:
        try:
            from importlib.metadata import version

            found["cuda.compute"] = version("cuda-cccl")
        except Exception:  # noqa: BLE001
            found["cuda.compute"] = "installed"
    return found


def cpu_name() -> str:
    """The CPU's model name (``/proc/cpuinfo`` on Linux)."""
    try:
        with open("/proc/cpuinfo") as fh:
            for row in fh:
                if row.startswith("model name"):
                    return row.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def cuda_device_info() -> dict:
    """Name, SMs, memory, compute capability, L2 size and CUDA version of the current GPU."""
    import torch

    p = torch.cuda.get_device_properties(torch.cuda.current_device())
    return {
        "name": p.name,
        "sm_count": p.multi_processor_count,
        "memory_bytes": int(p.total_memory),
        "compute_capability": f"{p.major}.{p.minor}",
        "l2_cache_bytes": int(getattr(p, "L2_cache_size", 0) or 0) or None,
        "cuda": getattr(torch.version, "cuda", None),
    }


#: The statistic of the samples that ``seconds`` reports, on every device: the median
#: (``seconds_min``, the fastest sample, is kept beside it: on a loaded CPU it is the
#: steadier of the two, docs/design/cpu_compiled.md has the measurement).
STATISTIC = {"cpu": "median", "cuda": "median"}


def describe_statistic(device: str) -> str:
    """``seconds`` in words, for the tables' headers."""
    return "median of interleaved rounds" if device == "cpu" else "median of CUDA-event timings"


def describe_timing(device: str, per_call_calls: int) -> str:
    """The timing method, as recorded in the metadata."""
    if device == "cpu":
        return ("perf_counter, inner loop of ~2 ms per sample, every implementation once per round in "
                "rounds of rotating order, the median round reported (seconds = seconds_median; "
                "seconds_min kept) (after a warm-up call)")
    return ("torch.cuda.Event pairs per call behind a GPU sleep (device time; for an "
            "implementation that synchronizes inside a call, its host time too), median of "
            "repeats after warm-up reported (seconds = seconds_median; seconds_min kept); buffers "
            "rotated for n >= 2^22; per_call_seconds: "
            f"{per_call_calls} back-to-back calls between two events (n <= 2^20); JAX: "
            "perf_counter + block_until_ready")


def base_metadata(device: str, device_info: dict) -> dict:
    """The machine part of the metadata: date, host, platform, device, CPU and
    what is measured and how it is verified."""
    return {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "host": platform.node(),
        "platform": platform.platform(),
        "device": device,
        "device_name": device_info["name"],
        "device_info": device_info,
        "cpu": cpu_name(),
        "versions": {},
        "statistic": STATISTIC[device],
        "verification": VERIFICATION,
        "bytes_model": BYTES_MODEL,
    }


# ---------------------------------------------------------------------------
# Tables.

def impl_order(result: dict) -> list[str]:
    """Implementations in the order they ran, those with records only."""
    names = list(result["metadata"].get("implementations", {}))
    for r in result["records"]:
        if r["impl"] not in names:
            names.append(r["impl"])
    return [nm for nm in names if any(r["impl"] == nm for r in result["records"])]


def _cell(rec: dict | None, field_name: str = "gelem_per_s") -> str:
    if rec is None:
        return "-"
    if rec["status"] != "ok":
        return rec["status"]
    v = rec.get(field_name)
    if v is None:
        return "-"
    ratio = rec.get("ratio_to_copy")
    if field_name == "gelem_per_s" and ratio is not None and rec["impl"] != "copy":
        return f"{v:.3g} ({ratio:.2f}x)"
    return f"{v:.3g}"


def size_label(n: int, e: int) -> str:
    return f"2^{e}" if n == 1 << e else f"{n} (~2^{e})"


def _tables(result: dict, field_name: str = "gelem_per_s") -> list[tuple[str, list[str], list[list[str]]]]:
    impls = impl_order(result)
    tables = []
    for dtype in result["metadata"]["dtypes"]:
        recs = [r for r in result["records"] if r["dtype"] == dtype]
        if field_name != "gelem_per_s":
            recs = [r for r in recs if r.get(field_name) is not None]
        if not recs:
            continue
        sizes = sorted({(r["n"], r["log2n"]) for r in recs})
        header = ["n"] + impls
        rows = []
        for n, e in sizes:
            row = [size_label(n, e)]
            for nm in impls:
                rec = next((r for r in recs if r["impl"] == nm and r["n"] == n), None)
                row.append(_cell(rec, field_name))
            rows.append(row)
        tables.append((dtype, header, rows))
    return tables


def title(result: dict) -> str:
    m = result["metadata"]
    extra = []
    if m.get("order", 1) != 1:
        extra.append(f"order={m['order']}")
    if m.get("tuple_size", 1) != 1:
        extra.append(f"tuple_size={m['tuple_size']}")
    suffix = f" ({', '.join(extra)})" if extra else ""
    return f"prefixscan bench on {m['device']} ({m['device_name']}){suffix}"


def format_table(result: dict) -> str:
    """The plain-text table printed at the end: per dtype, size x implementation,
    Gel/s and (ratio to copy)."""
    m = result["metadata"]
    lines = [title(result), f"Gel/s (ratio to copy throughput), {describe_statistic(m['device'])} "
                            f"(repeats {m['repeats']}); GB/s = Gel/s x 2 x itemsize"]
    for dtype, header, rows in _tables(result):
        widths = [max(len(str(c)) for c in col) for col in zip(header, *rows)]
        lines.append("")
        lines.append(f"[{dtype}]")
        lines.append("  ".join(h.rjust(w) for h, w in zip(header, widths)))
        for row in rows:
            lines.append("  ".join(c.rjust(w) for c, w in zip(row, widths)))
    bad = [r for r in result["records"] if r["status"] != "ok"]
    for r in bad:
        lines.append(f"{r['status']}: {r['impl']} {r['dtype']} n={r['n']}: {r['error']}")
    header, rows = primitive_rows(result)
    if rows:
        widths = [max(len(str(c)) for c in col) for col in zip(header, *rows)]
        lines += ["", f"[primitives, n = 2^{result['metadata'].get('primitive_log2')}] GB/s of the bytes each "
                      "must move (ratio to the copy of those bytes); speedup over the idiom"]
        lines.append("  ".join(h.ljust(w) for h, w in zip(header, widths)))
        lines += ["  ".join(c.ljust(w) for c, w in zip(row, widths)) for row in rows]
    return "\n".join(lines)


def primitive_rows(result: dict) -> tuple[list[str], list[list[str]]]:
    """The primitives table: per row, prefixscan and the idiom as GB/s (ratio to copy)."""
    header = ["primitive", "dtype", "prefixscan", "idiom", "idiom GB/s", "speedup"]
    rows = []
    for r in result.get("primitives") or []:
        name = r.get("name", r["primitive"])
        if r["status"] != "ok":
            rows.append([name, r.get("dtype", "-"), f"{r['status']}: {r['error']}", r.get("peer", "-"), "-", "-"])
            continue
        moved = r["moved_bytes"] / 1e9
        rows.append([name, r["dtype"], f"{moved / r['seconds']:.3g} ({r['ratio_to_copy']:.2f}x)", r["peer"],
                     f"{moved / r['peer_seconds']:.3g} ({r['peer_ratio_to_copy']:.2f}x)", f"{r['speedup']:.1f}x"])
    return header, rows


def _markdown_table(header: list[str], rows: list[list[str]]) -> list[str]:
    return (["| " + " | ".join(header) + " |", "|" + "|".join("---:" for _ in header) + "|"]
            + ["| " + " | ".join(row) + " |" for row in rows])


def format_markdown(result: dict) -> str:
    """``results.md``: the metadata, then per dtype the throughput table, the
    per-call times, the strategies' traffic, failures and skips."""
    m = result["metadata"]
    version_text = ", ".join(f"{k} {v}" for k, v in m.get("versions", {}).items())
    out = [f"# {title(result)}", "",
           f"- date: {m['date']}, host: {m['host']}",
           f"- device: {m['device_name']}" + (f", {m['device_info'].get('sm_count')} SMs, "
                                              f"{m['device_info'].get('memory_bytes', 0) / 2**30:.0f} GiB"
                                              if m["device"] == "cuda" else ""),
           f"- versions: {version_text}",
           f"- order {m['order']}, tuple_size {m['tuple_size']}, repeats {m['repeats']}, "
           f"seed {m['seed']}"]
    if m.get("tuning_cache"):
        where = f" ({m['tuning_cache_dir']})" if m.get("tuning_cache_dir") else ""
        out.append(f"- tuning cache: {m['tuning_cache']}{where}")
    for line in m.get("tuning_tables", ()):
        out.append(f"- tuning table of {line}")
    out += [f"- timing: {m['timing']}",
            f"- {m['bytes_model']}",
            "", "Implementations:", ""]
    for name, note in m.get("implementations", {}).items():
        out.append(f"- `{name}`: {note}")
    out += ["", f"Cells: Gel/s (ratio to the copy's throughput), {describe_statistic(m['device'])}. "
            "Every timed result was verified against NumPy."]
    for dtype, header, rows in _tables(result):
        out += ["", f"## {dtype}", ""] + _markdown_table(header, rows)
    out += _per_call_markdown(result)
    out += _strategy_markdown(result)
    header, rows = primitive_rows(result)
    if rows:
        out += ["", f"## Primitives (n = 2^{m.get('primitive_log2')})", "",
                "Each primitive next to the NumPy/SciPy idiom it replaces: GB/s of the bytes it must move "
                "(read once + written once) and the ratio to a copy of those bytes, timed in the same "
                "interleaved rounds; speedup = idiom time / prefixscan time.", ""]
        out += ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
        out += ["| " + " | ".join(row) + " |" for row in rows]
        out += [""] + [f"- `{r['call']}`" for r in result["primitives"] if r.get("call")]
    bad = [r for r in result["records"] if r["status"] != "ok"]
    if bad:
        out += ["", "## Failures", ""]
        out += [f"- {r['status']}: `{r['impl']}` {r['dtype']} n={r['n']}: {r['error']}" for r in bad]
    if result.get("skipped"):
        out += ["", "## Skipped", ""]
        seen = set()
        for s in result["skipped"]:
            key = (s.get("impl"), s.get("reason"))
            if key in seen:
                continue
            seen.add(key)
            out.append(f"- `{s.get('impl')}` ({s.get('dtype')}, n={s.get('n')} and maybe more): "
                       f"{s.get('reason')}")
    return "\n".join(out) + "\n"


def _per_call_markdown(result: dict) -> list[str]:
    """Per dtype, microseconds per call seen from Python (small sizes, CUDA)."""
    pc_tables = _tables(result, "per_call_seconds")
    if not pc_tables:
        return []
    out = ["", "## Per-call time seen from Python (microseconds, back-to-back calls)"]
    recs = result["records"]
    for dtype, header, rows in pc_tables:
        micro_rows = []
        for row in rows:
            new = [row[0]]
            for nm in header[1:]:
                rec = next((r for r in recs if r["dtype"] == dtype and r["impl"] == nm
                            and size_label(r["n"], r["log2n"]) == row[0]), None)
                v = rec.get("per_call_seconds") if rec else None
                new.append(f"{v * 1e6:.1f}" if v else "-")
            micro_rows.append(new)
        out += ["", f"### {dtype}", ""] + _markdown_table(header, micro_rows)
    return out


def _strategy_markdown(result: dict) -> list[str]:
    """Per dtype, each strategy at the largest size it ran: the counted device-memory
    traffic per element, the ratio to copy that traffic predicts for a
    bandwidth-bound scan (2 / traffic: a copy moves 2 elements per element) and
    the measured one."""
    recs = [r for r in result["records"] if r.get("strategy")]
    if not recs:
        return []
    out = ["", "## Strategies: memory traffic and throughput", "",
           "Traffic: elements read + written in device memory per input element, counted from the "
           "algorithm (`traffic.traffic_per_element`: input, output, local scans, tile totals, "
           "partials, status and ring entries; flags and tags not counted). Predicted ratio: "
           "2 / traffic, what a bandwidth-bound scan reaches relative to the copy. Grid: programs "
           "launched (C of reduce_then_scan, G of persistent, tiles otherwise)."]
    for dtype in result["metadata"]["dtypes"]:
        rows = []
        for name in result["metadata"].get("strategies", []):
            mine = [r for r in recs if r["dtype"] == dtype and r["strategy"] == name]
            if not mine:
                continue
            r = max(mine, key=lambda v: v["n"])
            ratio = r.get("ratio_to_copy")
            rows.append(f"| {name} | {size_label(r['n'], r['log2n'])} | {r['traffic_per_element']:.3f} | "
                        f"{r['model_ratio']:.2f} | {f'{ratio:.2f}' if ratio else r['status']} | "
                        f"{r['grid']} | {r['tile']} |")
        if rows:
            out += ["", f"### {dtype}", "",
                    "| strategy | n | traffic / element | predicted ratio | measured ratio | grid | tile |",
                    "|---|---:|---:|---:|---:|---:|---:|"] + rows
    return out


# ---------------------------------------------------------------------------
# Files.

def _json_default(obj: Any) -> Any:
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, Path):
        return str(obj)
    raise TypeError(f"not JSON serializable: {type(obj).__name__}")


def write_outputs(result: dict, out_dir: str | os.PathLike, *, plot: bool = True,
                  json_file: str | os.PathLike | None = None) -> dict:
    """Write results.json, results.md and (matplotlib permitting) plot.png into
    ``out_dir``; ``json_file`` also gets the JSON.  Returns the paths written."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {}
    text = json.dumps(result, indent=1, default=_json_default)
    (out / "results.json").write_text(text)
    paths["json"] = out / "results.json"
    (out / "results.md").write_text(format_markdown(result))
    paths["markdown"] = out / "results.md"
    if plot and plot_results(result, out / "plot.png", title(result), impl_order(result)):
        paths["plot"] = out / "plot.png"
    if json_file is not None:
        jf = Path(json_file)
        if jf.parent != Path(""):
            jf.parent.mkdir(parents=True, exist_ok=True)
        jf.write_text(text)
        paths["json_extra"] = jf
    return paths
