"""The ``prefixscan`` command line: ``info``, ``check``, ``bench`` and ``tune``.

Run as ``prefixscan ...`` (console script) or ``python -m prefixscan ...``.
``check`` is :mod:`prefixscan.check`, ``bench`` :mod:`prefixscan.benchmark`,
``tune`` and the tuning part of ``info`` :mod:`prefixscan.tuning`.  Optional
libraries (torch, triton, cupy, jax, matplotlib) are imported only inside the
functions that use them.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import platform
import sys
from pathlib import Path
from typing import Sequence

import numpy as np

import prefixscan

from . import benchmark, check, tuning
from ._cli_args import check_output_dir, check_output_file, checked_by, integer, seconds
from ._install_hint import install_command
from .benchmark.cases import MAX_LOG2, MAX_ORDER, check_run, host_memory_bytes, parse_dtypes, parse_sizes
from .benchmark.primitives import DEFAULT_LOG2 as PRIMITIVE_LOG2
from .benchmark.report import cpu_name
from .dispatch import available_backends

__all__ = ["main", "build_parser", "info_lines"]


def _module_version(name: str) -> str | None:
    """The version of an importable module, or None (imports it)."""
    try:
        mod = importlib.import_module(name)
    except Exception:  # noqa: BLE001 - a broken install counts as absent
        return None
    version = getattr(mod, "__version__", None)
    if version is None:
        try:
            from importlib.metadata import version as dist_version

            version = dist_version(name)
        except Exception:  # noqa: BLE001
            version = "installed"
    return str(version)


def _gpu_lines() -> list[str]:
    lines = []
    try:
        import torch
    except Exception:  # noqa: BLE001
        return [f"  GPU: torch not installed ({install_command('gpu')})"]
    try:
        if not torch.cuda.is_available():
            return ["  GPU: torch sees no CUDA device"]
        cuda_version = getattr(torch.version, "cuda", None)
        lines.append(f"  CUDA (torch build): {cuda_version}")
        for i in range(torch.cuda.device_count()):
            p = torch.cuda.get_device_properties(i)
            l2 = getattr(p, "L2_cache_size", None)
            l2s = f", L2 {l2 / 2**20:.0f} MiB" if l2 else ""
            try:
                free, total = torch.cuda.mem_get_info(i)
                mem = f"{total / 2**30:.1f} GiB ({free / 2**30:.1f} GiB free)"
            except Exception:  # noqa: BLE001
                mem = f"{p.total_memory / 2**30:.1f} GiB"
            lines.append(f"  cuda:{i}: {p.name}, {p.multi_processor_count} SMs, "
                         f"compute capability {p.major}.{p.minor}, {mem}{l2s}")
    except Exception as exc:  # noqa: BLE001
        lines.append(f"  GPU: error while querying CUDA: {exc}")
    return lines


def info_lines() -> list[str]:
    """What ``prefixscan info`` prints."""
    lines = [
        f"prefixscan {getattr(prefixscan, '__version__', '?')}",
        f"Python     {platform.python_version()} ({platform.python_implementation()}, "
        f"{sys.executable})",
        f"platform   {platform.platform()} ({platform.machine()})",
        f"NumPy      {np.__version__}",
    ]
    for name, label in (("numba", "Numba"), ("torch", "torch"), ("triton", "triton"), ("cupy", "CuPy"),
                        ("jax", "JAX"), ("matplotlib", "matplotlib")):
        version = _module_version(name)
        lines.append(f"{label:<10} {version if version else 'not installed'}")
    lines.append("backends:")
    try:
        for b in available_backends():
            state = "available" if b.get("available") else "unavailable"
            devices = ", ".join(b.get("devices") or []) or "-"
            line = f"  {b.get('name'):<8} {state:<12} devices: {devices}"
            if b.get("reason"):
                line += f"  ({b['reason']})"
            lines.append(line)
    except Exception as exc:  # noqa: BLE001
        lines.append(f"  error while listing backends: {type(exc).__name__}: {exc}")
    lines.append("devices:")
    lines.append(f"  cpu: {cpu_name()}, {os.cpu_count()} logical cores")
    lines.extend(_gpu_lines())
    lines.append("tuning:")
    try:
        lines.extend(tuning.info_lines())
    except Exception as exc:  # noqa: BLE001
        lines.append(f"  error while reading the tuning cache: {type(exc).__name__}: {exc}")
    return lines


def _cmd_info(args: argparse.Namespace) -> int:
    for line in info_lines():
        print(line)
    return 0


def _cmd_check(args: argparse.Namespace) -> int:
    return check.main(device=args.device, quick=args.quick, seed=args.seed, only=args.only,
                      verbose=args.verbose, progress=not args.no_progress)


def _stop(command: str, message: str) -> None:
    """Exit with status 2 and one line: the command cannot run on this machine
    (not an argument error: no usage)."""
    print(f"prefixscan {command}: {message}", file=sys.stderr)
    raise SystemExit(2)


def _refuse(parser: argparse.ArgumentParser, message: str) -> None:
    """Exit through ``parser.error`` (its usage, then one line; status 2), naming
    the option a ``--flag: ...`` message starts with as argparse does."""
    if message.startswith("--"):
        message = f"argument {message}"
    parser.error(message)


def _check_outputs(parser: argparse.ArgumentParser, directory: str | None, json_file: str | None) -> None:
    """The output directory and the extra JSON file can be written (their missing
    directories created when the results are written)."""
    for flag, path, probe in (("--out", directory, check_output_dir), ("--json", json_file, check_output_file)):
        if path is not None:
            try:
                probe(path)
            except ValueError as exc:
                _refuse(parser, f"{flag}: {exc}")


def _check_bench(args: argparse.Namespace, parser: argparse.ArgumentParser) -> None:
    """What the argument types cannot see alone: the dtypes on this device, the
    combination of sizes, order, tuple size and primitives, and the output paths."""
    primitives = {"on": True, "off": False}.get(args.primitives)
    if primitives is None:
        primitives = args.device == "cpu" and not args.quick and not args.strategies
    if args.primitive_size is not None and not primitives:
        _refuse(parser, "--primitive-size: the primitives do not run here (they run on --device cpu, by "
                        "default without --quick or --strategies); add --primitives on")
    try:
        sizes = args.sizes
        if sizes is None and args.strategies and args.device == "cpu":
            sizes = benchmark.INTERPRETER_SIZES
        dtypes = parse_dtypes(args.dtypes, args.device)
        check_run(args.device, dtypes, parse_sizes(sizes, args.device, args.quick), args.order, args.tuple_size,
                  primitives=primitives,
                  primitive_log2=PRIMITIVE_LOG2 if args.primitive_size is None else args.primitive_size,
                  memory_bytes=host_memory_bytes())
    except ValueError as exc:
        _refuse(parser, str(exc))
    problem = benchmark.device_problem(args.device)
    if problem:
        _stop("bench", problem)
    _check_outputs(parser, args.out, args.json)


def _check_tune(args: argparse.Namespace, parser: argparse.ArgumentParser) -> None:
    """``--clear`` stands alone; the lists are checked together (one size per
    bucket); ``--json`` can be written."""
    if args.clear:
        given = [max(a.option_strings, key=len) for a in parser._actions
                 if a.option_strings and a.dest not in ("clear", "help", "device")
                 and getattr(args, a.dest) != a.default]
        if given:
            _refuse(parser, f"--clear: deletes the tuning tables and tunes nothing; it takes no "
                            f"{', '.join(given)}")
        return
    try:
        args.checked = tuning.check_tune_args(
            args.dtypes or tuning.DEFAULT_DTYPES, args.sizes or tuning.DEFAULT_SIZES,
            args.ops or tuning.OP_CLASSES, args.layouts or tuning.LAYOUTS, args.strategies,
            args.budget, args.repeats, rounds=args.rounds)
    except ValueError as exc:
        _refuse(parser, f"--{exc}")
    reason = tuning.unavailable_reason()
    if reason:
        _stop("tune", f"needs a CUDA GPU and the GPU backend (--device {args.device}): {reason}")
    _check_outputs(parser, None, args.json)


def _argv_without(args: argparse.Namespace, parser: argparse.ArgumentParser, dropped: str) -> list[str]:
    """The options of ``args`` that differ from ``parser``'s defaults, as a
    command line, leaving out the option whose destination is ``dropped``."""
    argv: list[str] = []
    for action in parser._actions:
        if not action.option_strings or action.dest in (dropped, "help"):
            continue
        value = getattr(args, action.dest, action.default)
        if value == action.default:
            continue
        option = max(action.option_strings, key=len)  # the long form
        argv += [option] if action.nargs == 0 else [option, str(value)]
    return argv


def _cmd_bench(args: argparse.Namespace) -> int:
    if args.fresh:
        child_argv = _argv_without(args, args.command_parser, "fresh")
        return benchmark.run_fresh(child_argv, args.out, json_file=args.json)
    return benchmark.main_from_args(args)


def _cmd_tune(args: argparse.Namespace) -> int:
    if args.clear:
        removed = tuning.clear()
        for path in removed:
            print(f"removed {path}")
        print(f"{len(removed)} tuning table(s) removed from {tuning.cache_dir()}")
        return 0
    dtypes, sizes, ops, layouts, strategies = args.checked  # by _check_tune, which found the GPU
    if strategies:
        missing = [s for s in strategies if not tuning.strategy_available(s)]
        if missing:
            print(f"skipping {', '.join(missing)}: launcher not importable", file=sys.stderr)
    result = tuning.tune(device=args.device, dtypes=dtypes, sizes=sizes, ops=ops, layouts=layouts,
                               strategies=strategies, budget=args.budget, repeats=args.repeats,
                               rounds=args.rounds)
    print(f"GPU {result['gpu']}, prefixscan {result['version']}, strategies tried: "
          f"{', '.join(result['strategies'])}, {result['seconds']:.0f} s")
    print(tuning.format_table(result["entries"]))
    for key, why in result["failed"].items():
        print(f"FAILED {key}: {why}")
    print(f"wrote {result['path']}")
    if args.json:  # checked writable before tuning
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(result, indent=1, sort_keys=True))
        print(f"wrote {args.json}")
    return 1 if result["failed"] else 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="prefixscan",
        description="Parallel prefix scans: environment info, self-test, benchmarks and tuning.",
    )
    version = getattr(prefixscan, "__version__", "?")
    parser.add_argument("--version", action="version", version=f"prefixscan {version}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    p = sub.add_parser("info", help="versions, backends and devices found")
    p.set_defaults(func=_cmd_info, command_parser=p)

    p = sub.add_parser("check", help="self-test every feature against a plain-loop reference")
    p.add_argument("--device", choices=("cpu", "cuda"), default="cpu",
                   help="where the arrays live (cuda: torch CUDA tensors, GPU backend)")
    p.add_argument("--quick", action="store_true",
                   help="every feature on fewer and smaller cases (half a minute on 2 cores once the "
                        "compiled CPU kernels are cached)")
    p.add_argument("--seed", type=integer(0), default=None, help="random seed, >= 0 (default: fresh)")
    p.add_argument("--only", type=checked_by(check.select_features, "--only"), default=None, metavar="TEXT",
                   help="run only the features whose name contains TEXT (case-insensitive)")
    p.add_argument("-v", "--verbose", action="store_true", help="full messages and tracebacks")
    p.add_argument("--no-progress", action="store_true",
                   help="no progress line on stderr (the feature running, its cases so far)")
    p.set_defaults(func=_cmd_check, command_parser=p)

    p = sub.add_parser(
        "bench", help="throughput of prefixscan.scan next to its peers and a copy roof",
        description="Throughput (elements/s and GB/s counting bytes read + written) of "
                    "prefixscan.scan over sizes 2^a..2^b and dtypes, next to the peers "
                    "available here (CPU: numpy.cumsum, numpy.add.accumulate; CUDA: "
                    "torch.cumsum, cupy.cumsum, cuda.compute, jax.numpy.cumsum) and a copy "
                    "of the same bytes.  Every result is verified against NumPy.  Times reported: the "
                    "median (of interleaved rounds on the CPU, of CUDA-event timings on CUDA); "
                    "results.json keeps the fastest sample too (seconds_min, seconds_median).")
    p.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    p.add_argument("--sizes", type=checked_by(parse_sizes, "--sizes"), default=None, metavar="A:B[:STEP]",
                   help="log2 sizes: A:B (every exponent), A:B:STEP, or a list 10,16,20 "
                        f"(0..{MAX_LOG2}; default cpu 10:24:2, cuda 10:30)")
    p.add_argument("--dtypes", type=checked_by(parse_dtypes, "--dtypes"), default=None, metavar="LIST",
                   help="comma-separated dtypes (default int32,float32,int64,float64; also the other "
                        "integers, float16, and bfloat16 on cuda)")
    p.add_argument("--out", default="prefixscan-bench", metavar="DIR",
                   help="directory for results.json, results.md and plot.png, created if missing "
                        "(default ./prefixscan-bench)")
    p.add_argument("--json", default=None, metavar="FILE",
                   help="also write the JSON here (missing directories are created)")
    p.add_argument("--repeats", type=integer(1, 1000), default=None, metavar="N",
                   help="timed samples per measurement, 1..1000 (default cpu 9, cuda 20; --quick: 3, 5).  "
                        "CPU: interleaved rounds (at least 3, fewer than N once a measurement has taken "
                        "1.5 s per implementation); the median reported on both")
    p.add_argument("--quick", action="store_true",
                   help="fewer repeats and smaller default sizes")
    p.add_argument("--order", type=integer(1, MAX_ORDER), default=1, metavar="Q",
                   help=f"scan order, 1..{MAX_ORDER} (peers apply their cumsum Q times)")
    p.add_argument("--tuple-size", type=integer(1), default=1, metavar="S",
                   help="interleaved streams, at most the largest size (peers scan an (n/S, S) view along axis 0)")
    p.add_argument("--seed", type=integer(0), default=None, help="random seed for the data, >= 0 (default: fresh)")
    p.add_argument("--strategies", type=checked_by(benchmark.parse_strategies, "--strategies"), default=None,
                   metavar="LIST",
                   help="also time prefixscan.scan with each GPU meta-strategy: 'all' or names among "
                        "decoupled_lookback, reduce_then_scan, scan_then_propagate, chained, persistent "
                        "(records add the counted memory traffic per element; on --device cpu they run "
                        "in the Triton interpreter with TRITON_INTERPRET=1, default sizes 6,8,10)")
    p.add_argument("--primitives", choices=("auto", "on", "off"), default="auto",
                   help="also time the primitives (segmented_scan, compact, linear_recurrence, logaddexp, "
                        "order 8, tuple size 8, affine) next to the NumPy/SciPy idiom each replaces, with "
                        "the copy roof of their bytes (auto: on for --device cpu without --quick)")
    p.add_argument("--primitive-size", type=integer(3, MAX_LOG2), default=None, metavar="LOG2",
                   help=f"log2 of the primitives' length, 3..{MAX_LOG2} (default {PRIMITIVE_LOG2})")
    p.add_argument("--no-progress", action="store_true",
                   help="no progress bar on stderr (it shows the time spent and an estimate of the time left)")
    p.add_argument("--no-plot", action="store_true", help="do not write plot.png")
    p.add_argument("--fresh", action="store_true",
                   help="run in a new Python process with an empty tuning cache (PREFIXSCAN_CACHE_DIR "
                        "set to a new temporary directory): the numbers a new user gets out of the box; "
                        "recorded in the results' metadata")
    p.set_defaults(func=_cmd_bench, command_parser=p, check=_check_bench)

    p = sub.add_parser(
        "tune", help="measure tile sizes and strategies on this GPU and cache the fastest",
        description="Search tile size, warps, look-back window and meta-strategy for every "
                    "dtype, operator class (built-in / user monoid), layout (1-D / interleaved "
                    "streams) and size bucket on this GPU, verify every candidate against the "
                    "default decoupled look-back scan, and write the table that scans then use "
                    "by default (the cache file is named after the GPU and the prefixscan "
                    "version; PREFIXSCAN_CACHE_DIR moves it).  Needs a CUDA GPU.")
    p.add_argument("--device", choices=("cuda",), default="cuda", help="where to tune (default cuda)")
    p.add_argument("--dtypes", default=None, metavar="LIST",
                   help="comma-separated integer or float dtypes (default int32,float32,int64,float64; "
                        "16-bit floats accumulate in float32 and use its entries)")
    p.add_argument("--sizes", default=None, metavar="LIST",
                   help="log2 sizes to tune at, one per size bucket (<=16, 17-21, 22-25, >=26; "
                        "default 16,20,24,26)")
    p.add_argument("--ops", default=None, metavar="LIST",
                   help="operator classes: builtin (add on one field), user (the affine monoid, two "
                        "fields); default both")
    p.add_argument("--layouts", default=None, metavar="LIST",
                   help="1d (one stream) and/or 2d (4 interleaved streams); default both")
    p.add_argument("--strategies", default=None, metavar="LIST",
                   help="meta-strategies to try (default every one whose launcher imports; the "
                        "decoupled look-back default is always measured as the reference)")
    p.add_argument("--budget", type=seconds, default=None, metavar="SECONDS",
                   help="time for the whole run, shared among the keys (default: no limit)")
    p.add_argument("--repeats", type=integer(1, 1000), default=15, metavar="N",
                   help="timed runs per candidate, 1..1000, median kept (default 15)")
    p.add_argument("--rounds", type=integer(3, 1000), default=tuning.TUNE_ROUNDS, metavar="N",
                   help="interleaved rounds of the finalists and of each duel that decides a choice "
                        f"(default {tuning.TUNE_ROUNDS}; at least 3)")
    p.add_argument("--json", default=None, metavar="PATH",
                   help="also write the tuned entries here (checked before tuning; missing directories are created)")
    p.add_argument("--clear", action="store_true",
                   help="delete the cached tuning tables (every GPU and version) and exit")
    p.set_defaults(func=_cmd_tune, command_parser=p, check=_check_tune)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``prefixscan`` command; returns the exit status (2: bad
    arguments, refused before any work with the command's usage and one line
    naming the option)."""
    parser = build_parser()
    try:
        args, unknown = parser.parse_known_args(None if argv is None else [str(a) for a in argv])
        command_parser = getattr(args, "command_parser", parser)
        if unknown:  # the command's own usage, not the top-level one
            command_parser.error(f"unrecognized arguments: {' '.join(unknown)}")
        if getattr(args, "func", None) is None:
            parser.print_help()
            return 2
        if getattr(args, "check", None) is not None:
            args.check(args, command_parser)
    except SystemExit as exc:  # argparse: --help, --version, or an error already printed
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
