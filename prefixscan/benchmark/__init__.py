"""``prefixscan bench``: throughput of ``prefixscan.scan`` next to its peers.

For every dtype and size ``n = 2**a`` the harness times, in one process, a copy
of the same bytes (the roof), ``prefixscan.scan`` and the peers available on
the device (:mod:`.peers`: NumPy on ``cpu``; torch, CuPy, cuda.compute and JAX
on ``cuda``).  With ``strategies`` it also times ``prefixscan.scan`` with each
GPU meta-strategy, whose records carry the device-memory traffic per element
counted from the algorithm and ``model_ratio`` = 2 / traffic, the fraction of
the copy's throughput a bandwidth-bound scan would reach; on ``cpu`` they run
in Triton's interpreter (``TRITON_INTERPRET=1``): a smoke test of the whole
path, not a measurement.

On ``cpu`` (unless ``--quick`` or ``--no-primitives``) a second table times the
primitives (segmented scans, compaction, linear recurrences, the logaddexp,
order-8, tuple-size-8 and affine scans) next to the NumPy/SciPy idiom each
replaces, with the copy roof of the bytes each moves (:mod:`.primitives`).

Every result is checked against NumPy before it is timed (:mod:`.verify`); the
measurement loop and the timing method are in :mod:`.runner`, the copy roof in
:mod:`.roof`; the sizes,
dtypes and strategies in :mod:`.cases`; the outputs (``results.json``,
``results.md``, ``plot.png``) in :mod:`.report` and :mod:`.plot`.  With
``--fresh`` the benchmark re-runs in a new Python process with an empty user
tuning cache (:mod:`.fresh`): the numbers a new user gets out of the box.

Python API: :func:`run_benchmark` returns a dict (metadata + records) and
:func:`write_outputs` writes ``results.json``, ``results.md`` and ``plot.png``.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Sequence

import numpy as np

from .. import tuning
from .._install_hint import install_command
from .cases import (DEFAULT_DTYPES, INTERPRETER_SIZES, SizeCase, check_run, default_repeats, default_sizes,
                    host_memory_bytes, parse_dtypes, parse_sizes, parse_strategies)
from .fresh import run_fresh
from .peers import cpu_peers, cuda_peers, strategy_variants
from .primitives import DEFAULT_LOG2 as PRIMITIVE_LOG2
from .primitives import expected_seconds as primitive_seconds
from .primitives import measure_primitives, primitive_cases
from .report import (base_metadata, cpu_name, cuda_device_info, describe_timing, format_markdown, format_table,
                     versions, write_outputs)
from .roof import ROOF_NOTE
from .runner import PER_CALL_CALLS, Progress, expected_seconds, measure_cuda, measure_host

__all__ = [
    "DEFAULT_DTYPES",
    "default_sizes",
    "parse_sizes",
    "parse_dtypes",
    "parse_strategies",
    "run_benchmark",
    "run_fresh",
    "device_problem",
    "progress_plan",
    "write_outputs",
    "format_table",
    "format_markdown",
    "main_from_args",
]


def device_problem(device: str) -> str:
    """Why the benchmark cannot run on ``device`` here ('' when it can): torch
    missing or no CUDA device for ``cuda``."""
    if device != "cuda":
        return ""
    try:
        import torch
    except Exception as exc:  # noqa: BLE001
        return f"--device cuda needs torch: {install_command('gpu')} ({exc})"
    if not torch.cuda.is_available():
        return "--device cuda: torch sees no CUDA device"
    return ""


def progress_plan(device: str, cases: Sequence[SizeCase], implementations: int,
                  primitive_log2: int | None = None) -> list[tuple[float, str]]:
    """``(weight, group)`` of every progress step of a run, in order: one step per
    case, weighted by its expected cost and grouped by size, then one per primitive
    row (``primitive_log2`` None: no primitives), so that the bar and the time left
    follow the time the steps take rather than their count."""
    plan = [(expected_seconds(device, case, implementations) if case.n else 1e-6, f"2^{case.log2n}")
            for case in cases]  # n = 0: the size is below the tuple size, skipped at once
    if primitive_log2 is not None:
        plan += [(primitive_seconds(label, primitive_log2), "primitives") for label, _ in primitive_cases()]
    return plan


def run_benchmark(
    device: str = "cpu",
    sizes: Sequence[int] | str | None = None,
    dtypes: Sequence[str] | str | None = None,
    repeats: int | None = None,
    order: int = 1,
    tuple_size: int = 1,
    progress: bool = True,
    quick: bool = False,
    seed: int | None = None,
    impls: Sequence[str] | None = None,
    strategies: Sequence[str] | str | None = None,
    primitives: bool | None = None,
    primitive_log2: int = PRIMITIVE_LOG2,
) -> dict:
    """Time prefixscan.scan and its peers; returns ``{"metadata", "records", "skipped",
    "primitives"}``.

    ``sizes`` are log2 sizes (a list, or a string as for ``--sizes``);
    ``impls`` optionally restricts the implementations by name (the copy roof
    always runs).  ``strategies`` ("all" or names) adds ``prefixscan.scan`` with
    each GPU meta-strategy as ``strategy:<name>``, whose records also hold the
    grid, the tile and the counted ``traffic_per_element`` (see
    ``backends.triton.planning.traffic.traffic_per_element``) and ``model_ratio`` =
    2 / traffic; on ``cpu`` they run in Triton's interpreter (a smoke test).
    Each record holds impl, dtype, n, log2n, order, tuple_size, seconds
    (the median: of interleaved rounds on the CPU, of CUDA-event timings on CUDA;
    ``metadata["statistic"]`` says so, and ``seconds_min`` is kept beside it),
    gelem_per_s, gb_per_s, ratio_to_copy, verified, status.  ``primitives``
    (default: on ``cpu`` unless ``quick`` or ``strategies``) adds one record per
    primitive at ``n = 2**primitive_log2`` (:func:`.primitives.measure_primitives`).
    """
    if device not in ("cpu", "cuda"):
        raise ValueError(f"device must be 'cpu' or 'cuda', got {device!r}")
    order, tuple_size = int(order), int(tuple_size)
    strategy_names = parse_strategies(strategies)
    if primitives is None:
        primitives = device == "cpu" and not quick and not strategy_names
    if sizes is None and strategy_names and device == "cpu":
        sizes = INTERPRETER_SIZES
    exps = parse_sizes(sizes, device, quick)
    dts = parse_dtypes(dtypes, device)
    check_run(device, dts, exps, order, tuple_size, primitives=bool(primitives), primitive_log2=primitive_log2,
              memory_bytes=host_memory_bytes())
    repeats = int(default_repeats(device, quick) if repeats is None else repeats)
    if repeats < 1:
        raise ValueError(f"--repeats: expected an integer >= 1, got {repeats}")
    seed = int(np.random.SeedSequence().entropy % (2**32)) if seed is None else int(seed)
    if seed < 0:
        raise ValueError(f"--seed: expected an integer >= 0, got {seed}")
    per_call_calls = 50 if quick else PER_CALL_CALLS

    if device == "cuda":
        problem = device_problem(device)
        if problem:
            raise RuntimeError(problem)
        impl_list = cuda_peers(order, tuple_size)
        dev_info = cuda_device_info()
    else:
        impl_list = cpu_peers(order, tuple_size)
        dev_info = {"name": cpu_name(), "logical_cores": os.cpu_count()}
    if impls:
        wanted = set(impls) | {"copy"}
        impl_list = [i for i in impl_list if i.name in wanted]
    if strategy_names:
        impl_list += strategy_variants(order, tuple_size, strategy_names, device)

    metadata = base_metadata(device, dev_info)
    metadata.update({
        "log2_sizes": exps,
        "sizes": [1 << e for e in exps],
        "dtypes": dts,
        "repeats": repeats,
        "order": order,
        "tuple_size": tuple_size,
        "quick": bool(quick),
        "seed": seed,
        "implementations": {i.name: i.note for i in impl_list if not (i.is_copy and i.name != "copy")},
        "strategies": strategy_names,
        "tuning_cache": "user tuning cache as found",
        "tuning_cache_dir": str(tuning.cache_dir()),
        "timing": describe_timing(device, per_call_calls),
        "roof": ROOF_NOTE if device == "cpu" else "a copy of the same bytes",
        "primitive_log2": primitive_log2 if primitives else None,
    })
    if device == "cuda":
        # Which table each GPU's scans read (shipped, user, closest shipped, none): a
        # fresh run shows the shipped table's numbers only where this says "shipped".
        metadata["tuning_tables"] = [line.strip() for line in tuning.info_lines() if ": table: " in line]

    records: list[dict] = []
    skipped: list[dict] = []
    cases = [SizeCase(dtype, ((1 << e) // tuple_size) * tuple_size, e, order, tuple_size, repeats)
             for dtype in dts for e in exps]
    bar = Progress(0, progress)
    for weight, group in progress_plan(device, cases, len(impl_list), primitive_log2 if primitives else None):
        bar.plan(weight, group)
    rng = np.random.default_rng(seed)
    t_start = time.perf_counter()
    try:
        for case in cases:
            if case.n == 0:
                skipped.append({"dtype": case.dtype, "n": 1 << case.log2n, "impl": "*",
                                "reason": f"2^{case.log2n} < tuple_size {tuple_size}"})
            elif device == "cpu":
                records.extend(measure_host(impl_list, case, rng, bar, skipped))
            else:
                records.extend(measure_cuda(impl_list, case, rng, bar, skipped,
                                            l2_cache_bytes=dev_info.get("l2_cache_bytes"),
                                            per_call_calls=per_call_calls))
            bar.update(f"{case.dtype} 2^{case.log2n} done", 1)
        primitive_records = (measure_primitives(primitive_log2, rng, repeats=repeats, progress=bar)
                             if primitives else [])
    finally:
        bar.close()
    metadata["versions"] = versions()
    metadata["wall_seconds"] = round(time.perf_counter() - t_start, 3)
    return {"metadata": metadata, "records": records, "skipped": skipped, "primitives": primitive_records}


def main_from_args(args) -> int:
    """``prefixscan bench``: run, print the table, write the outputs.  Exit
    status 1 when prefixscan itself failed verification or raised, 2 when the
    run could not start (no CUDA device).  The command line has checked every
    argument and the output paths before this runs (``--fresh`` is handled
    there too: it re-runs these arguments through :func:`run_fresh`)."""
    try:
        result = run_benchmark(device=args.device, sizes=args.sizes, dtypes=args.dtypes, repeats=args.repeats,
                               order=args.order, tuple_size=args.tuple_size,
                               progress=not args.no_progress, quick=args.quick, seed=args.seed,
                               strategies=args.strategies,
                               primitives={"on": True, "off": False}.get(args.primitives),
                               primitive_log2=PRIMITIVE_LOG2 if args.primitive_size is None else args.primitive_size)
    except (RuntimeError, ValueError) as exc:
        print(f"prefixscan bench: {exc}", file=sys.stderr)
        return 2
    print(format_table(result))
    paths = write_outputs(result, args.out, plot=not args.no_plot, json_file=args.json)
    print("wrote " + ", ".join(str(p) for p in paths.values()))
    print(f"total {result['metadata']['wall_seconds']:.1f} s")
    broken = [r for r in result["records"]
              if (r["impl"] == "prefixscan" or r.get("strategy")) and r["status"] != "ok"]
    broken += [r for r in result["primitives"] if r["status"] not in ("ok", "skipped")]
    return 1 if broken else 0
