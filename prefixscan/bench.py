"""``prefixscan bench``: throughput of ``prefixscan.scan`` next to its peers.

For every dtype and size ``n = 2**a`` the harness times, in one process:

* on ``cpu``: a copy of the same bytes (``numpy.copyto``, the roof),
  ``prefixscan.scan``, ``numpy.cumsum(dtype=<input dtype>)`` and
  ``numpy.add.accumulate``;
* on ``cuda``: a copy (``dst.copy_(src)``), ``prefixscan.scan`` on torch CUDA
  tensors, ``torch.cumsum`` and, where importable, ``cupy.cumsum``,
  ``cuda.compute.inclusive_scan`` and ``jax.numpy.cumsum``.

With ``--strategies all`` (or a list) it also times ``prefixscan.scan`` with
each GPU meta-strategy (``strategy:<name>``: decoupled look-back, chained,
reduce-then-scan, scan-then-propagate, persistent), the comparison of the
seeds: each such record carries the strategy's grid, tile and device-memory
traffic per element counted from the algorithm, and ``model_ratio`` =
2 / traffic, the fraction of the copy's throughput a bandwidth-bound scan would
reach (scan-then-propagate ~0.5, reduce-then-scan ~0.67, single pass ~1).  The
markdown adds a traffic table and the plot a ratio-to-copy panel per dtype.
On ``cpu`` the strategies run in Triton's interpreter (``TRITON_INTERPRET=1``):
a smoke test of the whole path, not a measurement.

Every implementation writes into a preallocated output where it can.  With
``order=Q`` peers apply their cumsum Q times; with ``tuple_size=S`` peers scan
an ``(n/S, S)`` view along axis 0.  Every result is checked against NumPy
before it is timed; a wrong result is reported as FAILED and not timed.  The
data are small random integers (-4..4) in the benchmarked dtype, so integers
compare exactly (wrapping as C does) and first-order float sums are exact too;
for higher orders floats may round, by up to eps*sqrt(n) per pass or 10x the
error of NumPy's own scan in that dtype, whichever is larger.

Throughput: elements/s (Gel/s) and GB/s counting the bytes read and written
once (``2 * n * itemsize``, the least any scan must move, whatever the order),
and the ratio to the copy's throughput.  Timing: CPU, ``time.perf_counter``
around an inner loop sized to ~2 ms, median of the repeats after a warm-up;
CUDA, ``torch.cuda.Event`` pairs around each call, queued behind a short GPU
sleep so that the host's launch overhead is hidden (device time), median of the
repeats after a warm-up, rotating among input/output buffers that together
exceed the L2 cache for ``n >= 2**22``; for ``n <= 2**20`` also the per-call
time seen from Python (200 back-to-back calls between two events), which small
sizes are dominated by.  JAX runs on its own streams and is timed with
``perf_counter`` around ``block_until_ready``.

Python API: :func:`run_benchmark` returns a dict (metadata + records) and
:func:`write_outputs` writes ``results.json``, ``results.md`` and ``plot.png``.
"""

from __future__ import annotations

import datetime
import gc
import json
import math
import os
import platform
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from .timing import per_call_cuda_events as _per_call_cuda_events, per_call_wall as _per_call_wall, time_cpu as _time_cpu, time_cuda_events as _time_cuda_events, time_wall as _time_wall

__all__ = [
    "DEFAULT_DTYPES",
    "default_sizes",
    "parse_sizes",
    "parse_dtypes",
    "run_benchmark",
    "write_outputs",
    "format_table",
    "format_markdown",
    "main_from_args",
    "parse_strategies",
]

DEFAULT_DTYPES = ("int32", "float32", "int64", "float64")
_SUPPORTED_DTYPES = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
                     "float32", "float64")
ROTATE_FROM_LOG2 = 22  # rotate buffers on CUDA from this size on
SLOW_CALL_SECONDS = 1.0  # a call slower than this (twice) is timed once
PER_CALL_UP_TO_LOG2 = 20  # report host-inclusive per-call time up to this size
PER_CALL_CALLS = 200
CPU_MEASURE_BUDGET = 1.5  # seconds per CPU measurement before repeats are cut short (>= 3 kept)


# ---------------------------------------------------------------------------
# Arguments.

def default_sizes(device: str = "cpu", quick: bool = False) -> list[int]:
    """Default log2 sizes: cpu 10..24 step 2 (quick 10..20), cuda 10..30 (quick 10..26 step 2)."""
    if device == "cuda":
        return list(range(10, 27, 2)) if quick else list(range(10, 31))
    return list(range(10, 21, 2)) if quick else list(range(10, 25, 2))


def parse_sizes(spec: str | Sequence[int] | None, device: str = "cpu", quick: bool = False) -> list[int]:
    """Log2 sizes from ``"A:B"`` (every exponent, inclusive), ``"A:B:STEP"``,
    ``"10,16,20"`` or a sequence of ints; None gives the defaults."""
    if spec is None:
        return default_sizes(device, quick)
    if not isinstance(spec, str):
        exps = [int(v) for v in spec]
    else:
        exps = []
        for part in spec.replace(" ", "").split(","):
            if not part:
                continue
            if ":" in part:
                fields = part.split(":")
                if len(fields) not in (2, 3):
                    raise ValueError(f"--sizes: expected A:B or A:B:STEP, got {part!r}")
                a, b = int(fields[0]), int(fields[1])
                step = int(fields[2]) if len(fields) == 3 else 1
                if step < 1 or b < a:
                    raise ValueError(f"--sizes: empty range {part!r}")
                exps.extend(range(a, b + 1, step))
            else:
                exps.append(int(part))
    bad = [e for e in exps if not 0 <= e <= 40]
    if bad or not exps:
        raise ValueError(f"--sizes: log2 sizes must lie in 0..40, got {spec!r}")
    return sorted(set(exps))


def parse_dtypes(spec: str | Sequence[str] | None) -> list[str]:
    if spec is None:
        return list(DEFAULT_DTYPES)
    names = spec.split(",") if isinstance(spec, str) else list(spec)
    out = []
    for name in names:
        name = str(name).strip()
        if not name:
            continue
        dt = np.dtype(name).name
        if dt not in _SUPPORTED_DTYPES:
            raise ValueError(f"--dtypes: {name!r} is not benchmarked; choose from "
                             f"{', '.join(_SUPPORTED_DTYPES)}")
        if dt not in out:
            out.append(dt)
    if not out:
        raise ValueError("--dtypes: empty list")
    return out


# ---------------------------------------------------------------------------
# Progress bar (stderr, no dependency).

class _Progress:
    def __init__(self, total: int, enabled: bool, stream=None):
        self.total = max(1, total)
        self.done = 0
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = enabled
        self.tty = enabled and hasattr(self.stream, "isatty") and self.stream.isatty()
        self.t0 = time.perf_counter()
        self.last = 0.0
        self.width = 0

    def update(self, label: str, advance: int = 0) -> None:
        self.done = min(self.total, self.done + advance)
        if not self.enabled:
            return
        now = time.perf_counter()
        if not self.tty and now - self.last < 5.0 and self.done < self.total:
            return
        self.last = now
        frac = self.done / self.total
        bar = "#" * int(30 * frac) + "-" * (30 - int(30 * frac))
        text = f"[{bar}] {self.done}/{self.total} {now - self.t0:6.1f}s  {label}"
        if self.tty:
            pad = max(0, self.width - len(text))
            self.stream.write("\r" + text + " " * pad)
            self.width = len(text)
        else:
            self.stream.write(text + "\n")
        self.stream.flush()

    def close(self) -> None:
        if self.enabled and self.tty:
            self.stream.write("\n")
            self.stream.flush()


# ---------------------------------------------------------------------------
# Implementations.  Each one is built per (dtype, n) from lists of input and
# output buffers and returns one callable per buffer pair; calling it computes
# the scan and returns the result (an array of the device's type).

@dataclass
class _Impl:
    name: str
    build: Callable[[list, list], list[Callable[[], Any]]]
    timing: str = "events"  # "events" (torch stream), "wall" (own streams), "cpu"
    note: str = ""
    is_copy: bool = False  # verified against the input rather than the scan
    strategy: str | None = None  # a GPU meta-strategy: its plan and traffic join the record


class _Skip(Exception):
    """This implementation does not apply here (reported in 'skipped')."""


def _cpu_impls(ps, order: int, tuple_size: int) -> list[_Impl]:
    s, q = tuple_size, order

    def view(a):
        return a.reshape(-1, s) if s > 1 else a

    def copy_build(ins, outs):
        return [(lambda x=x, o=o: (np.copyto(o, x), o)[1]) for x, o in zip(ins, outs)]

    def ps_build(ins, outs):
        return [(lambda x=x, o=o: ps.scan(x, order=q, tuple_size=s, out=o))
                for x, o in zip(ins, outs)]

    def acc_build(fn):
        def build(ins, outs):
            def make(x, o):
                xv, ov, dt = view(x), view(o), x.dtype

                def run():
                    fn(xv, axis=0, dtype=dt, out=ov)
                    for _ in range(q - 1):
                        fn(ov, axis=0, dtype=dt, out=ov)
                    return o

                return run

            return [make(x, o) for x, o in zip(ins, outs)]

        return build

    return [
        _Impl("copy", copy_build, "cpu", "numpy.copyto of the same bytes", is_copy=True),
        _Impl("prefixscan", ps_build, "cpu", "prefixscan.scan(x, order, tuple_size, out=)"),
        _Impl("numpy.cumsum", acc_build(np.cumsum), "cpu", "numpy.cumsum(dtype=x.dtype, out=)"),
        _Impl("numpy.add.accumulate", acc_build(np.add.accumulate), "cpu",
              "numpy.add.accumulate(dtype=x.dtype, out=)"),
    ]


def _cuda_impls(ps, order: int, tuple_size: int) -> list[_Impl]:
    import torch

    s, q = tuple_size, order

    def view(a):
        return a.view(-1, s) if s > 1 else a

    def copy_build(ins, outs):
        return [(lambda x=x, o=o: o.copy_(x)) for x, o in zip(ins, outs)]

    def ps_build(ins, outs):
        return [(lambda x=x, o=o: ps.scan(x, order=q, tuple_size=s, out=o))
                for x, o in zip(ins, outs)]

    def torch_build(ins, outs):
        def make(x, o):
            xv, ov = view(x), view(o)

            def run():
                torch.cumsum(xv, 0, dtype=x.dtype, out=ov)
                for _ in range(q - 1):
                    ov.cumsum_(0)
                return o

            return run

        return [make(x, o) for x, o in zip(ins, outs)]

    impls = [
        _Impl("copy", copy_build, "events", "torch dst.copy_(src)", is_copy=True),
        _Impl("prefixscan", ps_build, "events", "prefixscan.scan on torch CUDA tensors, out="),
        _Impl("torch.cumsum", torch_build, "events", "torch.cumsum(dtype=x.dtype, out=)"),
    ]

    cp = _try_import("cupy")
    if cp is not None:
        def cupy_build(ins, outs):
            def make(x, o):
                xv, ov = cp.asarray(view(x)), cp.asarray(view(o))  # zero-copy views

                def run():
                    cp.cumsum(xv, axis=0, dtype=xv.dtype, out=ov)
                    for _ in range(q - 1):
                        cp.cumsum(ov, axis=0, dtype=ov.dtype, out=ov)
                    return o

                return run

            return [make(x, o) for x, o in zip(ins, outs)]

        impls.append(_Impl("cupy.cumsum", cupy_build, "events", "cupy.cumsum(dtype=, out=)"))

    cc = _try_import("cuda.compute")
    if cc is not None:
        def cccl_build(ins, outs):
            if s > 1:
                raise _Skip("cuda.compute.inclusive_scan scans 1-D sequences (tuple_size > 1)")
            op = getattr(getattr(cc, "OpKind", None), "PLUS", None)
            if op is None:
                def op(a, b):
                    return a + b

            def wrap(t):
                return cp.asarray(t) if cp is not None else t

            def make(x, o):
                n = x.numel()
                h_init = np.zeros(1, dtype=str(x.dtype).replace("torch.", ""))
                dx, do = wrap(x), wrap(o)

                def run():
                    cc.inclusive_scan(dx, do, op, h_init, n)
                    for _ in range(q - 1):
                        cc.inclusive_scan(do, do, op, h_init, n)
                    return o

                return run

            return [make(x, o) for x, o in zip(ins, outs)]

        impls.append(_Impl("cuda.compute", cccl_build, "events",
                           "cuda.compute.inclusive_scan(d_in, d_out, OpKind.PLUS, h_init, n)"))

    jax = _import_jax()
    if jax is not None:
        import jax.numpy as jnp

        def jax_build(ins, outs):
            jdev = [d for d in jax.devices() if d.platform == "gpu"]
            if not jdev:
                raise _Skip("JAX sees no GPU")
            dt = ins[0].dtype
            np_dt = str(dt).replace("torch.", "")

            @jax.jit
            def f(a):
                v = a.reshape(-1, s) if s > 1 else a
                for _ in range(q):
                    v = jnp.cumsum(v, axis=0, dtype=np_dt)
                return v.reshape(-1)

            arrays = [jax.dlpack.from_dlpack(x) for x in ins]

            def make(a):
                def run():
                    r = f(a)
                    r.block_until_ready()
                    return r

                return run

            return [make(a) for a in arrays]

        impls.append(_Impl("jax.numpy.cumsum", jax_build, "wall",
                           "jax.jit(jnp.cumsum(dtype=)), timed with perf_counter + block_until_ready"))
    return impls


def _strategy_impls(ps, order: int, tuple_size: int, names: Sequence[str], device: str) -> list[_Impl]:
    """``prefixscan.scan(strategy=...)`` for each GPU meta-strategy: on CUDA
    tensors, or (``device == "cpu"``) on CPU tensors in Triton's interpreter,
    which checks the bench end to end without a GPU (its times mean nothing)."""
    import torch

    from .dispatch import interpreter_mode

    s, q = tuple_size, order
    interpreted = device == "cpu"
    if interpreted and not interpreter_mode():
        raise RuntimeError("--strategies on --device cpu runs the GPU kernels in Triton's interpreter: "
                           "set TRITON_INTERPRET=1 (or use --device cuda)")

    def build_for(name, deterministic=False):
        def build(ins, outs):
            def make(x, o):
                xt = torch.from_numpy(x) if interpreted else x
                ot = torch.from_numpy(o) if interpreted else o

                def run():
                    ps.scan(xt, order=q, tuple_size=s, out=ot, backend="triton", strategy=name,
                            deterministic=deterministic)
                    return o

                return run

            return [make(x, o) for x, o in zip(ins, outs)]

        return build

    timing = "cpu" if interpreted else "events"
    where = " in the Triton interpreter" if interpreted else ""
    impls = [_Impl(f"strategy:{name}", build_for(name), timing, f"prefixscan.scan(strategy={name!r}, out=){where}",
                   strategy=name) for name in names]
    # What deterministic=True costs: the strategy the tuned table picks for it (chained without a table).
    impls.append(_Impl("deterministic", build_for("auto", deterministic=True), timing,
                       f"prefixscan.scan(deterministic=True, out=): the tuned deterministic strategy{where}"))
    return impls


def parse_strategies(spec: str | Sequence[str] | None) -> list[str]:
    """``"all"`` or a comma-separated list of strategy names (None: none)."""
    if spec is None:
        return []
    from ._normalize import STRATEGIES

    known = [name for name in STRATEGIES if name != "auto"]
    names = spec.split(",") if isinstance(spec, str) else list(spec)
    out: list[str] = []
    for name in (str(v).strip() for v in names):
        if not name:
            continue
        for nm in (known if name == "all" else [name]):
            if nm not in known:
                raise ValueError(f"--strategies: unknown strategy {nm!r}; choose from all, {', '.join(known)}")
            if nm not in out:
                out.append(nm)
    if not out:
        raise ValueError("--strategies: empty list")
    return out


def _describe(impl: _Impl, n: int, dtype: str, order: int, tuple_size: int, device: str) -> dict:
    """Strategy records: the plan of the call just made (grid, tile) and its
    counted device-memory traffic per element; ``model_ratio`` = 2 / traffic, the
    fraction of the copy's throughput a bandwidth-bound run would reach."""
    name = impl.strategy
    if name is None:
        return {}
    import torch

    from .backends.triton import strategies
    from .dispatch import interpreter_mode

    interpreted = device == "cpu"
    info = strategies.plan(name, n, tuple_size, getattr(torch, dtype), torch.device(device),
                           interpreted and interpreter_mode(), order=order)
    info["model_ratio"] = 2.0 / info["traffic_per_element"] if info["traffic_per_element"] else None
    return info


def _try_import(name: str):
    import importlib

    try:
        return importlib.import_module(name)
    except Exception:  # noqa: BLE001 - absent or broken: not a peer here
        return None


def _import_jax():
    # JAX grabs 75% of GPU memory at start-up unless told otherwise, and keeps
    # 64-bit types off by default.
    if "jax" not in sys.modules:
        os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    jax = _try_import("jax")
    if jax is None:
        return None
    try:
        import jax.dlpack  # noqa: F401

        jax.config.update("jax_enable_x64", True)
    except Exception:  # noqa: BLE001
        return None
    return jax


# ---------------------------------------------------------------------------
# Data and verification.

def _reference(x_small: np.ndarray, dtype: str, order: int, tuple_size: int,
               acc: Any = None) -> np.ndarray:
    """NumPy's answer: integers in the dtype itself (wrapping as C does), floats in float64."""
    dt = np.dtype(dtype)
    if acc is None:
        acc = dt if dt.kind in "iu" else np.dtype(np.float64)
    r = x_small.astype(acc)
    v = r.reshape(-1, tuple_size) if tuple_size > 1 else r
    for _ in range(order):
        np.cumsum(v, axis=0, dtype=acc, out=v)
    return r


def _float_tolerance(dtype: str, n: int, order: int, tuple_size: int, scale: float,
                     serial_error: float = 0.0) -> float:
    """Absolute tolerance for a float result.  The data are small integers, so
    first-order sums are exact; higher orders round, by about eps*sqrt(n) each
    pass, and a serial scan's rounding can drift further: the tolerance is also
    at least 10x the error of NumPy's own scan in the dtype (``serial_error``)."""
    dt = np.dtype(dtype)
    eps = float(np.finfo(dt).eps)
    lane = max(1, n // tuple_size)
    rtol = 10 * eps + 8 * eps * math.sqrt(lane) * (order - 1)
    return max(rtol * (scale + 1.0), 10.0 * serial_error)


def _serial_error(x_small: np.ndarray, ref: np.ndarray, dtype: str, order: int,
                  tuple_size: int) -> float:
    """How far NumPy's scan in the float dtype itself lands from the float64
    reference: the scale of a correct implementation's rounding."""
    dt = np.dtype(dtype)
    if dt.kind != "f" or order == 1:
        return 0.0  # small-integer data: first-order float sums are exact
    low = _reference(x_small, dtype, order, tuple_size, acc=dt)
    err = 0.0
    chunk = 1 << 22
    for i in range(0, ref.size, chunk):
        d = np.abs(low[i:i + chunk].astype(np.float64) - ref[i:i + chunk])
        err = max(err, float(np.max(d[np.isfinite(d)], initial=0.0)))
    return err


def _verify_cpu(result: Any, ref: np.ndarray, dtype: str, n: int, order: int, tuple_size: int,
                scale: float, serial_error: float = 0.0) -> tuple[bool, str]:
    got = np.asarray(result)
    if got.dtype != np.dtype(dtype):
        return False, f"result dtype {got.dtype}, expected {dtype}"
    got = got.reshape(-1)
    if got.shape != ref.shape:
        return False, f"result shape {got.shape}, expected {ref.shape}"
    chunk = 1 << 22
    kind = np.dtype(dtype).kind
    tol = _float_tolerance(dtype, n, order, tuple_size, scale, serial_error) if kind == "f" else 0.0
    for i in range(0, ref.size, chunk):
        g, r = got[i:i + chunk], ref[i:i + chunk]
        if kind == "f":
            err = np.abs(g.astype(np.float64) - r)
            bad = ~(err <= tol)
        else:
            bad = g != r
        if bad.any():
            j = int(np.argmax(bad))
            return False, (f"{int(bad.sum())}+ wrong elements, first at {i + j}: "
                           f"got {g[j]!r}, expected {r[j]!r}")
    return True, ""


def _verify_cuda(result: Any, ref_dev, dtype: str, n: int, order: int, tuple_size: int,
                 scale: float, serial_error: float = 0.0) -> tuple[bool, str]:
    import torch

    if not isinstance(result, torch.Tensor):
        try:
            result = torch.from_dlpack(result)
        except Exception as exc:  # noqa: BLE001
            return False, f"result of type {type(result).__name__} not readable: {exc}"
    if str(result.dtype).replace("torch.", "") != dtype:
        return False, f"result dtype {result.dtype}, expected {dtype}"
    got = result.reshape(-1)
    if got.numel() != ref_dev.numel():
        return False, f"result has {got.numel()} elements, expected {ref_dev.numel()}"
    chunk = 1 << 25
    kind = np.dtype(dtype).kind
    tol = _float_tolerance(dtype, n, order, tuple_size, scale, serial_error) if kind == "f" else 0.0
    for i in range(0, ref_dev.numel(), chunk):
        g, r = got[i:i + chunk], ref_dev[i:i + chunk]
        if kind == "f":
            err = (g.double() - r).abs()
            bad = ~(err <= tol)
        else:
            bad = g != r
        if bool(bad.any()):
            j = int(torch.argmax(bad.to(torch.uint8)))
            return False, (f"{int(bad.sum())}+ wrong elements, first at {i + j}: "
                           f"got {g[j].item()!r}, expected {r[j].item()!r}")
    return True, ""


# ---------------------------------------------------------------------------
# Timing.

# ---------------------------------------------------------------------------
# Metadata.

def _versions() -> dict:
    import prefixscan

    versions = {
        "prefixscan": getattr(prefixscan, "__version__", None),
        "python": platform.python_version(),
        "numpy": np.__version__,
    }
    for name in ("torch", "triton", "cupy", "jax", "matplotlib"):
        mod = sys.modules.get(name)
        if mod is not None:
            versions[name] = str(getattr(mod, "__version__", "installed"))
    if "cuda.compute" in sys.modules:
        try:
            from importlib.metadata import version

            versions["cuda.compute"] = version("cuda-cccl")
        except Exception:  # noqa: BLE001
            versions["cuda.compute"] = "installed"
    return versions


def _cpu_name() -> str:
    try:
        with open("/proc/cpuinfo") as fh:
            for row in fh:
                if row.startswith("model name"):
                    return row.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _cuda_device_info() -> dict:
    import torch

    p = torch.cuda.get_device_properties(torch.cuda.current_device())
    info = {
        "name": p.name,
        "sm_count": p.multi_processor_count,
        "memory_bytes": int(p.total_memory),
        "compute_capability": f"{p.major}.{p.minor}",
        "l2_cache_bytes": int(getattr(p, "L2_cache_size", 0) or 0) or None,
        "cuda": getattr(torch.version, "cuda", None),
    }
    return info


# ---------------------------------------------------------------------------
# The benchmark.

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
) -> dict:
    """Time prefixscan.scan and its peers; returns ``{"metadata", "records", "skipped"}``.

    ``sizes`` are log2 sizes (a list, or a string as for ``--sizes``);
    ``impls`` optionally restricts the implementations by name (the copy roof
    always runs).  ``strategies`` ("all" or names) adds ``prefixscan.scan`` with
    each GPU meta-strategy as ``strategy:<name>``, whose records also hold the
    grid, the tile and the counted ``traffic_per_element`` (see
    ``backends.triton.strategies.traffic_per_element``) and ``model_ratio`` =
    2 / traffic; on ``cpu`` they run in Triton's interpreter (a smoke test).  Each record holds impl, dtype, n, log2n, order, tuple_size,
    seconds (median), gelem_per_s, gb_per_s, ratio_to_copy, verified, status.
    """
    import prefixscan as ps

    if device not in ("cpu", "cuda"):
        raise ValueError(f"device must be 'cpu' or 'cuda', got {device!r}")
    order, tuple_size = int(order), int(tuple_size)
    if order < 1 or tuple_size < 1:
        raise ValueError("order and tuple_size must be >= 1")
    strategy_names = parse_strategies(strategies)
    if sizes is None and strategy_names and device == "cpu":
        sizes = [6, 8, 10]  # the interpreter runs a few thousand elements a second
    exps = parse_sizes(sizes, device, quick)
    dts = parse_dtypes(dtypes)
    if repeats is None:
        repeats = (3 if quick else 9) if device == "cpu" else (5 if quick else 20)
    repeats = max(1, int(repeats))
    seed = int(np.random.SeedSequence().entropy % (2**32)) if seed is None else int(seed)
    per_call_calls = 50 if quick else PER_CALL_CALLS

    if device == "cuda":
        try:
            import torch
        except Exception as exc:  # noqa: BLE001
            raise RuntimeError(f"--device cuda needs torch (pip install prefixscan[gpu]): {exc}")
        if not torch.cuda.is_available():
            raise RuntimeError("--device cuda: torch sees no CUDA device")
        impl_list = _cuda_impls(ps, order, tuple_size)
        dev_info = _cuda_device_info()
        device_name = dev_info["name"]
    else:
        impl_list = _cpu_impls(ps, order, tuple_size)
        dev_info = {"name": _cpu_name(), "logical_cores": os.cpu_count()}
        device_name = dev_info["name"]
    if impls:
        wanted = set(impls) | {"copy"}
        impl_list = [i for i in impl_list if i.name in wanted]
    if strategy_names:
        impl_list += _strategy_impls(ps, order, tuple_size, strategy_names, device)

    metadata = {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "host": platform.node(),
        "platform": platform.platform(),
        "device": device,
        "device_name": device_name,
        "device_info": dev_info,
        "cpu": _cpu_name(),
        "versions": {},
        "log2_sizes": exps,
        "sizes": [1 << e for e in exps],
        "dtypes": dts,
        "repeats": repeats,
        "order": order,
        "tuple_size": tuple_size,
        "quick": bool(quick),
        "seed": seed,
        "implementations": {i.name: i.note for i in impl_list},
        "strategies": strategy_names,
        "verification": ("against NumPy on data in -4..4: integers exact; floats within "
                         "max(eps*(10 + 8*sqrt(lane)*(order-1))*max|ref|, 10x NumPy's own error "
                         "in the dtype)"),
        "bytes_model": "GB/s counts bytes read + written once: 2 * n * itemsize (whatever the order)",
        "timing": ("perf_counter, inner loop of ~2 ms per sample, median of repeats after warm-up"
                   if device == "cpu" else
                   "torch.cuda.Event pairs per call behind a GPU sleep (device time; for an "
                   "implementation that synchronizes inside a call, its host time too), median of "
                   "repeats after warm-up; buffers rotated for n >= 2^22; per_call_seconds: "
                   f"{per_call_calls} back-to-back calls between two events (n <= 2^20); JAX: "
                   "perf_counter + block_until_ready"),
    }

    records: list[dict] = []
    skipped: list[dict] = []
    bar = _Progress(len(dts) * len(exps) * len(impl_list), progress)
    rng = np.random.default_rng(seed)
    t_start = time.perf_counter()
    try:
        for dtype in dts:
            for e in exps:
                n = ((1 << e) // tuple_size) * tuple_size
                if n == 0:
                    skipped.append({"dtype": dtype, "n": 1 << e, "impl": "*",
                                    "reason": f"2^{e} < tuple_size {tuple_size}"})
                    bar.update(f"{dtype} 2^{e}", len(impl_list))
                    continue
                if device == "cpu":
                    recs = _bench_size_cpu(impl_list, dtype, n, e, order, tuple_size, repeats,
                                           rng, bar, skipped)
                else:
                    recs = _bench_size_cuda(impl_list, dtype, n, e, order, tuple_size, repeats,
                                            rng, bar, skipped, dev_info, per_call_calls)
                records.extend(recs)
    finally:
        bar.close()
    metadata["versions"] = _versions()
    metadata["wall_seconds"] = round(time.perf_counter() - t_start, 3)
    return {"metadata": metadata, "records": records, "skipped": skipped}


def _record(impl: str, dtype: str, n: int, e: int, order: int, tuple_size: int, **kw) -> dict:
    rec = {"impl": impl, "dtype": dtype, "n": n, "log2n": e, "order": order,
           "tuple_size": tuple_size, "seconds": None, "seconds_min": None, "samples": 0,
           "elements_per_s": None, "gelem_per_s": None, "gb_per_s": None, "ratio_to_copy": None,
           "verified": False, "status": "ok", "error": None}
    rec.update(kw)
    return rec


def _fill_rates(rec: dict, n: int, itemsize: int) -> None:
    sec = rec.get("seconds")
    if sec:
        rec["elements_per_s"] = n / sec
        rec["gelem_per_s"] = n / sec / 1e9
        rec["gb_per_s"] = 2 * n * itemsize / sec / 1e9
    pc = rec.get("per_call_seconds")
    if pc:
        rec["per_call_gelem_per_s"] = n / pc / 1e9


def _set_ratios(recs: list[dict]) -> None:
    copy = next((r for r in recs if r["impl"] == "copy" and r.get("seconds")), None)
    for r in recs:
        if copy is not None and r.get("seconds"):
            r["ratio_to_copy"] = copy["seconds"] / r["seconds"]


def _short(exc: BaseException) -> str:
    """``Type: message`` on one line (first and last lines of a long message)."""
    # Keep lines with words in them (Triton's CompilationError ends with a caret line).
    lines = [ln.strip() for ln in str(exc).splitlines() if any(ch.isalnum() for ch in ln)]
    if not lines:
        return type(exc).__name__
    text = lines[0] if len(lines) == 1 else f"{lines[0]} ... {lines[-1]}"
    return f"{type(exc).__name__}: {text}"[:500]


def _bench_size_cpu(impl_list, dtype, n, e, order, tuple_size, repeats, rng, bar, skipped) -> list:
    dt = np.dtype(dtype)
    small = rng.integers(-4, 5, size=n, dtype=np.int8)
    x = small.astype(dt)
    ref = _reference(small, dtype, order, tuple_size)
    scale = float(np.max(np.abs(ref))) if dt.kind == "f" and ref.size else 0.0
    serial_error = _serial_error(small, ref, dtype, order, tuple_size)
    recs = []
    for impl in impl_list:
        bar.update(f"{impl.name} {dtype} 2^{e}")
        out = np.empty_like(x)
        out[...] = 0  # touch the pages before timing
        try:
            fns = impl.build([x], [out])
        except _Skip as exc:
            skipped.append({"impl": impl.name, "dtype": dtype, "n": n, "reason": str(exc)})
            bar.update(f"{impl.name} {dtype} 2^{e}", 1)
            continue
        rec = _record(impl.name, dtype, n, e, order, tuple_size)
        try:
            result = fns[0]()
            if impl.is_copy:
                ok = np.array_equal(np.asarray(result), x)
                why = "" if ok else "the copy differs from its source"
            else:
                ok, why = _verify_cpu(result, ref, dtype, n, order, tuple_size, scale, serial_error)
            rec.update(_describe(impl, n, dtype, order, tuple_size, "cpu"))
            if not ok:
                rec.update(status="FAILED", error=why)
            else:
                rec["verified"] = True
                samples, inner = _time_cpu(fns[0], repeats, CPU_MEASURE_BUDGET)
                rec.update(seconds=statistics.median(samples), seconds_min=min(samples),
                           samples=len(samples), inner_loop=inner)
        except Exception as exc:  # noqa: BLE001 - reported in the record
            rec.update(status="error", error=_short(exc), verified=False, seconds=None)
        _fill_rates(rec, n, dt.itemsize)
        recs.append(rec)
        bar.update(f"{impl.name} {dtype} 2^{e}", 1)
    _set_ratios(recs)
    return recs


def _bench_size_cuda(impl_list, dtype, n, e, order, tuple_size, repeats, rng, bar, skipped,
                     dev_info, per_call_calls) -> list:
    import torch

    dt = np.dtype(dtype)
    tdt = getattr(torch, dtype)
    nbytes = n * dt.itemsize
    l2 = dev_info.get("l2_cache_bytes") or 60 * 2**20
    k = 1
    if e >= ROTATE_FROM_LOG2:
        k = max(1, min(16, math.ceil(4 * l2 / nbytes)))
    # Memory: k inputs + k outputs + the float64/int reference + one peer
    # result or temporary + the int8 seed data, with some slack.
    ref_bytes = n * (8 if dt.kind == "f" else dt.itemsize)
    need = 2 * k * nbytes + ref_bytes + 2 * nbytes + n + 512 * 2**20
    gc.collect()
    torch.cuda.empty_cache()
    free, _total = torch.cuda.mem_get_info()
    if need > 0.9 * free:
        for impl in impl_list:
            skipped.append({"impl": impl.name, "dtype": dtype, "n": n,
                            "reason": f"needs ~{need / 2**30:.1f} GiB, {free / 2**30:.1f} GiB free"})
        bar.update(f"{dtype} 2^{e} (no room)", len(impl_list))
        return []

    gen = torch.Generator(device="cuda")
    gen.manual_seed(int(rng.integers(0, 2**62)))
    small_dev = torch.randint(-4, 5, (n,), dtype=torch.int8, device="cuda", generator=gen)
    small = small_dev.cpu().numpy()
    x0 = small_dev.to(tdt)
    del small_dev
    ins = [x0] + [x0.clone() for _ in range(k - 1)]
    ref_host = _reference(small, dtype, order, tuple_size)
    scale = float(np.max(np.abs(ref_host))) if dt.kind == "f" else 0.0
    serial_error = _serial_error(small, ref_host, dtype, order, tuple_size)
    ref_dev = torch.from_numpy(ref_host).to("cuda")
    del ref_host, small

    recs = []
    for impl in impl_list:
        label = f"{impl.name} {dtype} 2^{e}"
        bar.update(label)
        outs = [torch.zeros_like(x0) for _ in range(k)]
        rec = _record(impl.name, dtype, n, e, order, tuple_size, buffers=k)
        fns = None
        try:
            try:
                fns = impl.build(ins, outs)
                t_first = time.perf_counter()
                result = fns[0]()
                torch.cuda.synchronize()
                t_first = time.perf_counter() - t_first
            except _Skip:
                raise
            except Exception as exc:  # noqa: BLE001
                if impl.name in ("prefixscan", "copy", "torch.cumsum") or impl.strategy:
                    raise
                raise _Skip(f"call failed: {_short(exc)}") from exc
            if impl.is_copy:
                ok = bool(torch.equal(result, x0))
                why = "" if ok else "the copy differs from its source"
            else:
                ok, why = _verify_cuda(result, ref_dev, dtype, n, order, tuple_size, scale,
                                       serial_error)
            del result
            rec.update(_describe(impl, n, dtype, order, tuple_size, "cuda"))
            if not ok:
                rec.update(status="FAILED", error=why)
            else:
                rec["verified"] = True
                slow = None
                if t_first > SLOW_CALL_SECONDS:  # compiling, or a peer that takes seconds
                    t0 = time.perf_counter()
                    fns[0]()
                    torch.cuda.synchronize()
                    slow = time.perf_counter() - t0
                if slow is not None and slow > SLOW_CALL_SECONDS:
                    # Seconds per call (torch.cumsum along dim 0 of a tall array): one
                    # timed call is enough to place it, and repeats would take minutes.
                    rec.update(seconds=slow, seconds_min=slow, samples=1, timing="one wall-clock call")
                else:
                    for f in fns[1:]:  # warm-up of every buffer
                        f()
                    torch.cuda.synchronize()
                    t0 = time.perf_counter()
                    fns[0]()
                    host_seconds = time.perf_counter() - t0
                    torch.cuda.synchronize()
                    if impl.timing == "wall":
                        samples = _time_wall(fns, repeats)
                    else:
                        samples = _time_cuda_events(fns, repeats, host_seconds)
                    rec.update(seconds=statistics.median(samples), seconds_min=min(samples),
                               samples=len(samples))
                    if e <= PER_CALL_UP_TO_LOG2:
                        if impl.timing == "wall":
                            rec["per_call_seconds"] = _per_call_wall(fns, per_call_calls)
                        else:
                            rec["per_call_seconds"] = _per_call_cuda_events(fns, per_call_calls)
        except _Skip as exc:
            skipped.append({"impl": impl.name, "dtype": dtype, "n": n, "reason": str(exc)})
            rec = None
        except Exception as exc:  # noqa: BLE001 - reported in the record
            rec.update(status="error", error=_short(exc), verified=False, seconds=None)
            try:
                torch.cuda.synchronize()
            except Exception:  # noqa: BLE001
                pass
        fns = None
        del outs
        if rec is not None:
            _fill_rates(rec, n, dt.itemsize)
            recs.append(rec)
        bar.update(label, 1)
    del ins, x0, ref_dev
    gc.collect()
    torch.cuda.empty_cache()
    _set_ratios(recs)
    return recs


# ---------------------------------------------------------------------------
# Reports.

def _impl_order(result: dict) -> list[str]:
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


def _size_label(n: int, e: int) -> str:
    return f"2^{e}" if n == 1 << e else f"{n} (~2^{e})"


def _tables(result: dict, field_name: str = "gelem_per_s") -> list[tuple[str, list[str], list[list[str]]]]:
    impls = _impl_order(result)
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
            row = [_size_label(n, e)]
            for nm in impls:
                rec = next((r for r in recs if r["impl"] == nm and r["n"] == n), None)
                row.append(_cell(rec, field_name))
            rows.append(row)
        tables.append((dtype, header, rows))
    return tables


def _title(result: dict) -> str:
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
    lines = [_title(result), "Gel/s (ratio to copy throughput); GB/s = Gel/s x 2 x itemsize"]
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
    return "\n".join(lines)


def format_markdown(result: dict) -> str:
    m = result["metadata"]
    versions = ", ".join(f"{k} {v}" for k, v in m.get("versions", {}).items())
    out = [f"# {_title(result)}", "",
           f"- date: {m['date']}, host: {m['host']}",
           f"- device: {m['device_name']}" + (f", {m['device_info'].get('sm_count')} SMs, "
                                              f"{m['device_info'].get('memory_bytes', 0) / 2**30:.0f} GiB"
                                              if m["device"] == "cuda" else ""),
           f"- versions: {versions}",
           f"- order {m['order']}, tuple_size {m['tuple_size']}, repeats {m['repeats']}, "
           f"seed {m['seed']}",
           f"- timing: {m['timing']}",
           f"- {m['bytes_model']}",
           "", "Implementations:", ""]
    for name, note in m.get("implementations", {}).items():
        out.append(f"- `{name}`: {note}")
    out += ["", "Cells: Gel/s (ratio to the copy's throughput). Every timed result was verified "
            "against NumPy."]
    for dtype, header, rows in _tables(result):
        out += ["", f"## {dtype}", "", "| " + " | ".join(header) + " |",
                "|" + "|".join("---:" for _ in header) + "|"]
        out += ["| " + " | ".join(row) + " |" for row in rows]
    pc_tables = _tables(result, "per_call_seconds")
    if pc_tables:
        out += ["", "## Per-call time seen from Python (microseconds, back-to-back calls)"]
        for dtype, header, rows in pc_tables:
            recs = result["records"]
            rows2 = []
            for row in rows:
                new = [row[0]]
                for nm in header[1:]:
                    rec = next((r for r in recs if r["dtype"] == dtype and r["impl"] == nm
                                and _size_label(r["n"], r["log2n"]) == row[0]), None)
                    v = rec.get("per_call_seconds") if rec else None
                    new.append(f"{v * 1e6:.1f}" if v else "-")
                rows2.append(new)
            out += ["", f"### {dtype}", "", "| " + " | ".join(header) + " |",
                    "|" + "|".join("---:" for _ in header) + "|"]
            out += ["| " + " | ".join(r) + " |" for r in rows2]
    out += _strategy_markdown(result)
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
           "algorithm (`strategies.traffic_per_element`: input, output, local scans, tile totals, "
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
            rows.append(f"| {name} | {_size_label(r['n'], r['log2n'])} | {r['traffic_per_element']:.3f} | "
                        f"{r['model_ratio']:.2f} | {f'{ratio:.2f}' if ratio else r['status']} | "
                        f"{r['grid']} | {r['tile']} |")
        if rows:
            out += ["", f"### {dtype}", "",
                    "| strategy | n | traffic / element | predicted ratio | measured ratio | grid | tile |",
                    "|---|---:|---:|---:|---:|---:|---:|"] + rows
    return out


def _plot(result: dict, path: Path) -> bool:
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except Exception:  # noqa: BLE001
        print("note: matplotlib is not installed, so no plot.png was written "
              "(pip install prefixscan[bench])", file=sys.stderr)
        return False
    dtypes = [d for d in result["metadata"]["dtypes"]
              if any(r["dtype"] == d and r.get("gelem_per_s") for r in result["records"])]
    if not dtypes:
        dtypes = list(result["metadata"]["dtypes"][:1])
    with_strategies = any(r.get("strategy") for r in result["records"])
    # With strategies: one row per dtype, throughput on the left, ratio to copy
    # with the traffic model's prediction on the right.
    ncols = 2 if with_strategies else min(2, len(dtypes))
    nrows = len(dtypes) if with_strategies else int(math.ceil(len(dtypes) / ncols))
    fig = Figure(figsize=(6.5 * ncols, 4.2 * nrows), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(nrows, ncols, squeeze=False)
    impls = _impl_order(result)
    for idx, dtype in enumerate(dtypes):
        if with_strategies:
            ax = axes[idx][0]
            _plot_strategy_ratios(axes[idx][1], result, dtype)
        else:
            ax = axes[idx // ncols][idx % ncols]
        for name in impls:
            recs = sorted((r for r in result["records"]
                           if r["dtype"] == dtype and r["impl"] == name and r.get("gelem_per_s")),
                          key=lambda r: r["n"])
            if not recs:
                continue
            xs = [r["n"] for r in recs]
            ys = [r["gelem_per_s"] for r in recs]
            if name == "copy":
                ax.plot(xs, ys, "k--", linewidth=2, label="copy (roof)")
            else:
                ax.plot(xs, ys, marker="o", markersize=3,
                        linewidth=2.2 if name == "prefixscan" else 1.2, label=name)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("n (elements)")
        ax.set_ylabel("Gel/s")
        ax.set_title(dtype)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    for idx in range(len(dtypes) * (2 if with_strategies else 1), nrows * ncols):
        axes[idx // ncols][idx % ncols].set_visible(False)
    fig.suptitle(_title(result))
    fig.savefig(str(path), dpi=110)
    return True


def _plot_strategy_ratios(ax, result: dict, dtype: str) -> None:
    """Measured ratio to copy against n per strategy, and as a dotted line of the
    same colour the ratio its counted traffic predicts (2 / traffic) at each n."""
    for name in result["metadata"].get("strategies", []):
        recs = sorted((r for r in result["records"] if r["dtype"] == dtype and r.get("strategy") == name),
                      key=lambda r: r["n"])
        measured = [(r["n"], r["ratio_to_copy"]) for r in recs if r.get("ratio_to_copy")]
        if not recs:
            continue
        line = None
        if measured:
            line, = ax.plot(*zip(*measured), marker="o", markersize=3, linewidth=1.2, label=name)
        model = [(r["n"], r["model_ratio"]) for r in recs if r.get("model_ratio")]
        if model:
            ax.plot(*zip(*model), linestyle=":", linewidth=1.2,
                    color=line.get_color() if line is not None else None,
                    label=None if line is not None else f"{name} (model)")
    ax.axhline(1.0, color="k", linestyle="--", linewidth=1.5, label="copy (roof)")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("n (elements)")
    ax.set_ylabel("ratio to copy throughput")
    ax.set_ylim(bottom=0)
    ax.set_title(f"{dtype}: strategies (dotted: 2 / counted traffic)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)


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
    if plot and _plot(result, out / "plot.png"):
        paths["plot"] = out / "plot.png"
    if json_file is not None:
        jf = Path(json_file)
        if jf.parent != Path(""):
            jf.parent.mkdir(parents=True, exist_ok=True)
        jf.write_text(text)
        paths["json_extra"] = jf
    return paths


def main_from_args(args) -> int:
    """``prefixscan bench``: run, print the table, write the outputs.  Exit
    status 1 when prefixscan itself failed verification or raised."""
    try:
        strategy_names = parse_strategies(getattr(args, "strategies", None))
        sizes = args.sizes
        if sizes is None and strategy_names and args.device == "cpu":
            sizes = [6, 8, 10]  # the interpreter runs a few thousand elements a second
        sizes = parse_sizes(sizes, args.device, args.quick)
        dtypes = parse_dtypes(args.dtypes)
    except ValueError as exc:
        print(f"prefixscan bench: {exc}", file=sys.stderr)
        return 2
    if args.order < 1 or args.tuple_size < 1:
        print("prefixscan bench: --order and --tuple-size must be >= 1", file=sys.stderr)
        return 2
    try:
        result = run_benchmark(device=args.device, sizes=sizes, dtypes=dtypes, repeats=args.repeats,
                               order=args.order, tuple_size=args.tuple_size,
                               progress=not args.no_progress, quick=args.quick, seed=args.seed,
                               strategies=strategy_names or None)
    except RuntimeError as exc:
        print(f"prefixscan bench: {exc}", file=sys.stderr)
        return 2
    print(format_table(result))
    paths = write_outputs(result, args.out, plot=not args.no_plot, json_file=args.json)
    print("wrote " + ", ".join(str(p) for p in paths.values()))
    print(f"total {result['metadata']['wall_seconds']:.1f} s")
    broken = [r for r in result["records"]
              if (r["impl"] == "prefixscan" or r.get("strategy")) and r["status"] != "ok"]
    return 1 if broken else 0
