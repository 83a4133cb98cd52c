"""What ``prefixscan bench`` measures: dtypes, log2 sizes, strategies, and the
one (dtype, size, order, tuple size) case the runner times at a time.

Defaults: on ``cpu`` sizes 2^10..2^24 in steps of 2 (``--quick``: 2^10..2^20);
on ``cuda`` every exponent 2^10..2^30 (``--quick``: 2^10..2^26 in steps of 2),
so the curve shows where launch latency gives way to memory bandwidth.

Dtypes are named by string: bfloat16 (CUDA only) has no NumPy dtype, so its
size, kind and epsilon come from :func:`itemsize_of`, :func:`kind_of` and
:func:`eps_of` rather than from ``numpy.dtype``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from ..backends.triton.planning.registry import STRATEGY_NAMES

__all__ = ["DEFAULT_DTYPES", "SUPPORTED_DTYPES", "INTERPRETER_SIZES", "MAX_LOG2", "MAX_ORDER", "SizeCase",
           "default_sizes", "parse_sizes", "parse_dtypes", "parse_strategies", "check_run", "host_memory_bytes",
           "default_repeats", "itemsize_of", "kind_of", "eps_of"]

DEFAULT_DTYPES = ("int32", "float32", "int64", "float64")
SUPPORTED_DTYPES = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
                    "float16", "bfloat16", "float32", "float64")
#: Dtypes NumPy lacks, benchmarked on CUDA only: (itemsize, kind, eps).
_DEVICE_ONLY_DTYPES = {"bfloat16": (2, "f", 2.0**-7)}
#: Default log2 sizes for strategies on ``cpu``: Triton's interpreter runs a few
#: thousand elements a second.
INTERPRETER_SIZES = [6, 8, 10]
#: Largest log2 size ``--sizes`` takes.
MAX_LOG2 = 40
#: Largest ``--order`` (the peers apply their cumsum that many times).
MAX_ORDER = 64


@dataclass(frozen=True)
class SizeCase:
    """One measurement point: every implementation is timed on these inputs."""

    dtype: str
    n: int  # elements: 2^log2n rounded down to a multiple of tuple_size
    log2n: int
    order: int
    tuple_size: int
    repeats: int

    def data_bounds(self) -> tuple[int, int]:
        """``(low, high)``, high exclusive, of the random integers the data are drawn
        from: -4..4, or -1..1 for 16-bit floats, so that a random walk of 2^28 steps
        stays below float16's largest value (65504) and far inside the range where
        the float32 accumulator adds integers exactly."""
        if kind_of(self.dtype) == "f" and itemsize_of(self.dtype) == 2:
            return -1, 2
        return -4, 5


def itemsize_of(name: str) -> int:
    """Bytes per element of the dtype called ``name`` (bfloat16 included)."""
    if name in _DEVICE_ONLY_DTYPES:
        return _DEVICE_ONLY_DTYPES[name][0]
    return np.dtype(name).itemsize


def kind_of(name: str) -> str:
    """NumPy's kind character of the dtype called ``name``: "i", "u" or "f"."""
    if name in _DEVICE_ONLY_DTYPES:
        return _DEVICE_ONLY_DTYPES[name][1]
    return np.dtype(name).kind


def eps_of(name: str) -> float:
    """Machine epsilon of the float dtype called ``name`` (bfloat16: 2^-7)."""
    if name in _DEVICE_ONLY_DTYPES:
        return _DEVICE_ONLY_DTYPES[name][2]
    return float(np.finfo(np.dtype(name)).eps)


def default_sizes(device: str = "cpu", quick: bool = False) -> list[int]:
    """Default log2 sizes: cpu 10..24 step 2 (quick 10..20), cuda 10..30 (quick 10..26 step 2)."""
    if device == "cuda":
        return list(range(10, 27, 2)) if quick else list(range(10, 31))
    return list(range(10, 21, 2)) if quick else list(range(10, 25, 2))


def default_repeats(device: str, quick: bool) -> int:
    """Timed repeats per measurement: cpu 9 (quick 3), cuda 20 (quick 5)."""
    return (3 if quick else 9) if device == "cpu" else (5 if quick else 20)


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
                a, b = _exponent(fields[0], part), _exponent(fields[1], part)
                step = _exponent(fields[2], part) if len(fields) == 3 else 1
                if step < 1 or b < a:
                    raise ValueError(f"--sizes: empty range {part!r}")
                exps.extend(range(a, b + 1, step))
            else:
                exps.append(_exponent(part, part))
    bad = [e for e in exps if not 0 <= e <= MAX_LOG2]
    if bad or not exps:
        raise ValueError(f"--sizes: log2 sizes must lie in 0..{MAX_LOG2}, got {spec!r}")
    return sorted(set(exps))


def host_memory_bytes() -> int | None:
    """This machine's physical memory in bytes (None where the system does not say)."""
    try:
        pages, page_size = os.sysconf("SC_PHYS_PAGES"), os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):
        return None
    return pages * page_size if pages > 0 and page_size > 0 else None


def _exponent(text: str, part: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"--sizes: expected log2 sizes as A:B, A:B:STEP or a list such as 10,16,20; "
                         f"{text!r} in {part!r} is not an integer") from None


def check_run(device: str, dtypes: Sequence[str], exps: Sequence[int], order: int, tuple_size: int, *,
              primitives: bool = False, primitive_log2: int | None = None,
              memory_bytes: int | None = None) -> None:
    """Refuse, before any work, a combination of arguments that cannot give a
    result: ValueError whose message starts with the option to change
    (``--dtypes: ...``).  ``memory_bytes``: the host's memory, which the largest
    case must fit in (None: not checked)."""
    if not 1 <= order <= MAX_ORDER:
        raise ValueError(f"--order: expected an integer from 1 to {MAX_ORDER}, got {order}")
    if tuple_size < 1:
        raise ValueError(f"--tuple-size: expected an integer >= 1, got {tuple_size}")
    if tuple_size > 1 << max(exps):
        raise ValueError(f"--tuple-size: {tuple_size} streams do not fit in the largest size 2^{max(exps)}")
    if order > 1 and "float16" in dtypes and max(exps) > 11:
        # Sums of sums of the data's -1..1 pass float16's largest value (65504) within
        # a few thousand elements: every implementation would return infinities.
        raise ValueError("--dtypes: float16 with --order > 1 overflows beyond 2^11 elements; "
                         "use bfloat16 or float32")
    if primitives and device != "cpu":
        raise ValueError("--primitives: the primitives are benchmarked on --device cpu only")
    if memory_bytes:
        n, widest = 1 << max(exps), max(itemsize_of(d) for d in dtypes)
        # The int8 seed data, the 8-byte reference (and NumPy's own for higher
        # orders), and on the CPU an output per implementation (six with the
        # copies) and the input.
        need = n * (1 + 8 * (2 if order > 1 else 1) + (7 * widest if device == "cpu" else 0))
        if need > 0.8 * memory_bytes:
            raise ValueError(f"--sizes: 2^{max(exps)} elements of {widest}-byte dtypes need about "
                             f"{need / 2**30:.0f} GiB of host memory; this machine has "
                             f"{memory_bytes / 2**30:.0f} GiB")
        if primitives and primitive_log2 is not None and 64 << primitive_log2 > 0.8 * memory_bytes:
            raise ValueError(f"--primitive-size: 2^{primitive_log2} elements need about "
                             f"{(64 << primitive_log2) / 2**30:.0f} GiB of host memory; this machine has "
                             f"{memory_bytes / 2**30:.0f} GiB")


def parse_dtypes(spec: str | Sequence[str] | None, device: str | None = None) -> list[str]:
    """Dtype names from ``"int32,float64"`` or a sequence; None gives :data:`DEFAULT_DTYPES`.
    With ``device="cpu"``, a dtype NumPy lacks (bfloat16) is refused."""
    if spec is None:
        return list(DEFAULT_DTYPES)
    names = spec.split(",") if isinstance(spec, str) else list(spec)
    out = []
    for name in names:
        name = str(name).strip()
        if not name:
            continue
        dt = name if name in _DEVICE_ONLY_DTYPES else _numpy_name(name)
        if dt in _DEVICE_ONLY_DTYPES and device == "cpu":
            raise ValueError(f"--dtypes: {dt} is benchmarked on --device cuda only "
                             f"(NumPy has no {dt})")
        if dt not in SUPPORTED_DTYPES:
            raise ValueError(f"--dtypes: {name!r} is not benchmarked; choose from "
                             f"{', '.join(SUPPORTED_DTYPES)}")
        if dt not in out:
            out.append(dt)
    if not out:
        raise ValueError("--dtypes: empty list")
    return out


def _numpy_name(name: str) -> str:
    try:
        return np.dtype(name).name
    except TypeError:
        raise ValueError(f"--dtypes: {name!r} is not a dtype; choose from "
                         f"{', '.join(SUPPORTED_DTYPES)}") from None


def parse_strategies(spec: str | Sequence[str] | None) -> list[str]:
    """``"all"`` or a comma-separated list of GPU meta-strategy names (None: none)."""
    if spec is None:
        return []
    known = list(STRATEGY_NAMES)
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
