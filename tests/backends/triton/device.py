"""What the Triton kernel tests share: the device they run on, its sizes, test data.

Without a GPU (CI) the kernels run in Triton's interpreter on CPU torch tensors
with tiny tiles (see ``tiles.INTERPRETER_TILE``), so multi-tile look-back, window
moves and tile boundaries are exercised on small inputs.  On the device machine
the same tests run compiled on CUDA tensors with larger sizes.  Importing this
module skips the importing test module where neither can run.

Behaviour that every backend shares (built-in operators across tile sizes, init,
order and tuple size, struct monoids) is tested once for all backends in
tests/api/test_every_backend.py; the modules of this folder test what is particular to
the Triton kernels: which kernel runs, tiles, status words, launches, replay.
"""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

import prefixscan as ps  # noqa: E402
from prefixscan._environment import interpreter_mode  # noqa: E402
from prefixscan.testing import reference_scan  # noqa: E402

CUDA = torch.cuda.is_available()  # without it tests/conftest.py set TRITON_INTERPRET=1

if not CUDA and not interpreter_mode():
    pytest.skip("no CUDA device and TRITON_INTERPRET=0", allow_module_level=True)

DEVICE = "cuda" if CUDA else "cpu"
#: The mark of every test that runs kernels here (``pytestmark = DEVICE_MARK``).
DEVICE_MARK = pytest.mark.gpu if CUDA else pytest.mark.interpreter

INT_RANGES = {"int8": (-100, 100), "uint8": (0, 255), "int16": (-1000, 1000), "uint16": (0, 60000),
              "int32": (-(1 << 30), 1 << 30), "uint32": (0, 1 << 32), "int64": (-(1 << 62), 1 << 62)}


def random_data(rng, dtype: str, shape, sparse: bool = False) -> np.ndarray:
    if dtype == "bool":
        x = rng.random(shape) < 0.5
    elif dtype in INT_RANGES:
        lo, hi = INT_RANGES[dtype]
        x = rng.integers(lo, hi, size=shape, dtype=np.int64 if dtype != "uint32" else np.uint64).astype(dtype)
        x[x == 0] = 1
    elif dtype in ("float16", "bfloat16"):
        # Mean zero: a drifting sum would cross float16's largest value at an index
        # that depends on the float32 grouping (both sides round to inf there).
        x = rng.standard_normal(shape).astype(dtype)
    else:
        x = (rng.standard_normal(shape) + 0.5).astype(dtype)
    if sparse:
        x[rng.random(shape) < 0.7] = 0
    return x


def to_device(x: np.ndarray):
    return torch.from_numpy(np.array(x, copy=True)).to(DEVICE)


def reference(x, op, **kw):
    """The plain-loop reference of prefixscan.testing; for the device's sizes (millions
    of elements: the loops would take minutes) the CPU backend, itself checked against
    the reference in tests/api, with floats accumulated in float64 and rounded once
    as the reference does."""
    if not CUDA or x.size <= 100_000:
        return reference_scan(x, op, **kw)
    if x.dtype.kind == "f" and kw.get("dtype") is None:
        return ps.scan(x, op, backend="cpu", dtype=np.float64, **kw).astype(x.dtype)
    return ps.scan(x, op, backend="cpu", **kw)


def tuples_per_lane(tuple_size: int) -> int:
    """Odd numbers of tuples spanning at least three tiles (the interpreter's tiles hold
    32 elements: 8 rows of up to 4 interleaved streams)."""
    if CUDA:
        return 100_003
    return 67 if tuple_size == 1 else (35 if tuple_size == 2 else 19)
