"""The pieces every self-check case uses: where arrays live, how results are
compared with the reference, and the context of one run.

A :class:`Context` holds the device, the random generator, the sizes and the
case counter; :meth:`Context.scan_case` runs ``prefixscan.scan`` on the device
and compares it with the plain-loop reference of :mod:`prefixscan.testing`.
Integers and bools must match exactly; floats within a relative tolerance per
dtype (:data:`RTOL`), scaled by the largest magnitude of the expected result.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

import prefixscan as ps

from .._errors import short_error
from .._install_hint import install_command
from ..testing import reference_scan

__all__ = ["CheckFailure", "Device", "Context", "RTOL", "compare", "accumulator_for", "describe_case",
           "fit_length"]


class CheckFailure(AssertionError):
    """A result differs from the reference."""


# ---------------------------------------------------------------------------
# Devices: put NumPy data where the scan runs, and bring results back.

class Device:
    """Where the scans run: ``cpu`` (NumPy arrays) or ``cuda`` (torch CUDA tensors)."""

    def __init__(self, name: str):
        self.name = name
        if name == "cuda":
            import torch

            if not torch.cuda.is_available():
                raise RuntimeError("--device cuda: torch sees no CUDA device "
                                   f"({install_command('gpu')} on a machine with an NVIDIA GPU)")
            self.torch = torch
        elif name != "cpu":
            raise ValueError(f"device must be 'cpu' or 'cuda', got {name!r}")

    def put(self, a: Any) -> Any:
        if isinstance(a, tuple):
            return tuple(self.put(v) for v in a)
        a = np.ascontiguousarray(a)
        if self.name == "cpu":
            return a.copy()
        return self.torch.from_numpy(a.copy()).to("cuda")

    def get(self, y: Any) -> Any:
        if isinstance(y, tuple):
            return tuple(self.get(v) for v in y)
        if self.name == "cuda":
            if not (type(y).__module__.startswith("torch") and getattr(y, "is_cuda", False)):
                raise CheckFailure(f"expected a torch CUDA tensor back, got {type(y).__module__}."
                                   f"{type(y).__name__}")
            return y.detach().cpu().numpy()
        if not isinstance(y, np.ndarray):
            raise CheckFailure(f"expected a numpy.ndarray back, got {type(y).__name__}")
        return y


# ---------------------------------------------------------------------------
# Comparison.

RTOL = {"float16": 4e-3, "float32": 3e-5, "float64": 1e-11}


def _expected_array(expected: Any, dtype: np.dtype) -> np.ndarray:
    target = dtype if dtype.kind in "biu" else np.dtype(np.float64)
    if isinstance(expected, np.ndarray):
        return expected.astype(target)
    lst = list(expected)
    if dtype.kind in "biu":
        return np.array(lst, dtype=dtype)
    return np.array(lst, dtype=np.float64)


def compare(got: np.ndarray, expected: Any, dtype: Any, *, label: str = "", rtol_scale: float = 1.0,
            shape: tuple | None = None) -> None:
    """Raise CheckFailure unless ``got`` (a NumPy array) matches ``expected``
    (list / object array of Python scalars, or an array) exactly for integers
    and bool, or within a tolerance for floats, and has dtype ``dtype``."""
    dt = np.dtype(dtype)
    where = f"{label}: " if label else ""
    if got.dtype != dt:
        raise CheckFailure(f"{where}result dtype {got.dtype}, expected {dt}")
    exp = _expected_array(expected, dt)
    if shape is not None:
        exp = exp.reshape(shape)
    if got.shape != exp.shape:
        raise CheckFailure(f"{where}result shape {got.shape}, expected {exp.shape}")
    if got.size == 0:
        return
    if dt.kind in "biu":
        bad = got != exp
        if bad.any():
            i = np.unravel_index(int(np.argmax(bad)), got.shape)
            raise CheckFailure(f"{where}{int(bad.sum())} of {got.size} elements differ; first at "
                               f"index {tuple(int(k) for k in i)}: got {got[i]!r}, expected {exp[i]!r}")
        return
    g = got.astype(np.float64)
    same = (g == exp) | (np.isnan(g) & np.isnan(exp))
    rtol = RTOL.get(dt.name, 1e-6) * rtol_scale
    finite = np.isfinite(exp)
    scale = float(np.max(np.abs(exp[finite]))) if finite.any() else 1.0
    atol = rtol * max(1.0, scale)
    with np.errstate(invalid="ignore"):
        close = np.abs(g - exp) <= atol + rtol * np.abs(exp)
    bad = ~(same | (close & finite))
    if bad.any():
        i = np.unravel_index(int(np.argmax(bad)), got.shape)
        raise CheckFailure(f"{where}{int(bad.sum())} of {got.size} elements off (rtol {rtol:.1e}); first "
                           f"at index {tuple(int(k) for k in i)}: got {g[i]!r}, expected {exp[i]!r}")


# ---------------------------------------------------------------------------
# The context handed to each feature check.

class Context:
    """One self-check run: device, random data, sizes and the count of cases run."""

    def __init__(self, device: Device, quick: bool, seed: int | None):
        self.dev = device
        self.quick = quick
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0):
            raise ValueError(f"seed must be an integer >= 0, got {seed!r}")
        self.seed = int(seed) if seed is not None else int(np.random.SeedSequence().entropy % (2**32))
        self.rng = np.random.default_rng(self.seed)
        # Sizes: odd ones so every blocked algorithm sees a ragged tail.
        self.sizes = [1, 7, 1000, 4099] if quick else [1, 2, 31, 33, 1000, 4099, 65537, 2**18 + 3]
        self.small_sizes = [1, 5, 300] if quick else [1, 3, 33, 1000, 5003]
        # A few large cases, so GPU kernels run many blocks (and look back far).
        self.large_sizes = [2**17 + 3] if quick else [2**21 + 5]
        self.cases = 0
        self.on_case = None  # called with each case's label once it has run (progress)

    # data -------------------------------------------------------------------
    def data(self, dtype: Any, n: Any, kind: str = "add") -> np.ndarray:
        """Fresh random data.  ``kind``: "add" (integers over their full range so
        sums wrap; floats on a dyadic grid so float sums are exact), "small",
        "mul" (floats of magnitude 1/2..2, products stay in range), "normal"."""
        dt = np.dtype(dtype)
        shape = (n,) if np.isscalar(n) else tuple(n)
        rng = self.rng
        if dt.kind == "b":
            return rng.random(shape) < 0.5
        if dt.kind in "iu":
            info = np.iinfo(dt)
            if kind == "small":
                lo, hi = (0, 20) if dt.kind == "u" else (-20, 20)
            else:
                lo, hi = int(info.min), int(info.max)
            return rng.integers(lo, hi, size=shape, dtype=dt, endpoint=True)
        if kind in ("add", "small"):
            return (rng.integers(-64, 65, size=shape) / 8.0).astype(dt)
        if kind == "mul":
            # Powers of two: products are exact.  The exponent walks randomly;
            # keep its spread (about sqrt(2 p size)) well inside float16/32 range.
            size = int(np.prod(shape))
            p = min(0.05, 25.0 / max(size, 1)) if dt.itemsize < 8 else 0.05
            vals = np.array([1.0, -1.0, 2.0, 0.5])
            return rng.choice(vals, size=shape, p=[0.5 - p, 0.5 - p, p, p]).astype(dt)
        return rng.standard_normal(shape).astype(dt)

    # running and comparing -----------------------------------------------------
    def check(self, label: str, call: Callable[[], Any], expected: Any, dtype: Any, **kw) -> Any:
        self.cases += 1
        try:
            y = call()
        except CheckFailure:
            raise
        except NotImplementedError:
            raise
        except Exception as exc:  # noqa: BLE001 - reported as a failure of this case
            raise CheckFailure(f"{label}: raised {short_error(exc)}") from exc
        got = self.dev.get(y)
        if isinstance(expected, tuple):
            if not isinstance(got, tuple) or len(got) != len(expected):
                raise CheckFailure(f"{label}: expected a tuple of {len(expected)} arrays")
            dts = dtype if isinstance(dtype, tuple) else (dtype,) * len(expected)
            for k, (g, e, d) in enumerate(zip(got, expected, dts)):
                compare(g, e, d, label=f"{label} field {k}", **kw)
        else:
            compare(got, expected, dtype, label=label, **kw)
        if self.on_case is not None:
            self.on_case(label)
        return y

    def scan_case(self, x: np.ndarray, op: str = "add", *, label: str = "", rtol_scale: float = 1.0,
                  **kwargs) -> None:
        """Run ``ps.scan(x, op, **kwargs)`` on the device and compare with the
        reference (built-in operator ``op``)."""
        ref_kwargs = {k: kwargs[k] for k in ("axis", "inclusive", "reverse", "init", "order",
                                            "tuple_size", "dtype") if k in kwargs}
        acc = np.dtype(kwargs["dtype"]) if kwargs.get("dtype") is not None else accumulator_for(x.dtype)
        ref_kwargs["dtype"] = acc
        expected = reference_scan(x, op, **ref_kwargs)
        out_dtype = np.dtype(kwargs["dtype"]) if kwargs.get("dtype") is not None else x.dtype
        dev_x = self.dev.put(x)
        dev_kwargs = dict(kwargs)
        if isinstance(dev_kwargs.get("init"), np.ndarray):
            dev_kwargs["init"] = self.dev.put(dev_kwargs["init"])
        desc = label or describe_case(x, op, kwargs)
        self.check(desc, lambda: ps.scan(dev_x, op, **dev_kwargs), expected, out_dtype,
                   rtol_scale=rtol_scale * kwargs.get("order", 1))


def accumulator_for(dtype: np.dtype) -> np.dtype:
    """The dtype a built-in scan accumulates in: float16 in float32, others in themselves."""
    return np.dtype("float32") if dtype.name == "float16" else np.dtype(dtype)


def describe_case(x, op, kwargs) -> str:
    """The label of a scan case: operator, dtype, shape and keyword arguments."""
    parts = [f"{op} {x.dtype} shape={x.shape}"]
    parts += [f"{k}={v!r}" if not isinstance(v, np.ndarray) else f"{k}=array{v.shape}"
              for k, v in kwargs.items()]
    return " ".join(parts)


def fit_length(n: int, s: int) -> int:
    """``n`` rounded down to a multiple of the tuple size ``s`` (at least ``s``)."""
    return max(s, n - n % s)

