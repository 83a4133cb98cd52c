"""Fixtures of the prefixscan test suite, and the interpreter setup.

Helpers (the plain-loop reference, the tolerance rule, test data, example
monoids) live in :mod:`prefixscan.testing`; test modules import them from there.
Fixtures: ``rng`` (a generator seeded from the test id) and ``backend`` (every
backend present here, with its array type).
"""

from __future__ import annotations

import os
import zlib


def _triton_interpreter_without_gpu() -> None:
    """Without a CUDA device, run Triton kernels in the interpreter.  This must
    happen before triton is imported: its own library functions are jitted then."""
    try:
        import torch
    except ImportError:
        return
    if not torch.cuda.is_available():
        os.environ.setdefault("TRITON_INTERPRET", "1")


_triton_interpreter_without_gpu()
# No first-use tuning inside the test suite (a GPU run would stall seconds per new key);
# a cached table is still used.  The tuner tests (backends/triton/tuner/) turn it on where they test it.
os.environ.setdefault("PREFIXSCAN_AUTOTUNE", "0")


def _patch_language_once_per_launch() -> None:
    """Speed up the interpreter about 3x (test time only; semantics unchanged).

    Triton 3.6's interpreter re-patches ``triton.language`` (``inspect.getmembers``
    over the module, ~0.3 ms) on *every* call of a jitted device function, and our
    kernels call small device functions (the combine) per element inside
    ``tl.associative_scan``.  The patches are module-wide and are only undone when
    the launch ends, so patching once per launch and per globals dict is equivalent.
    Only applied to the Triton version whose internals this matches.
    """
    if os.environ.get("TRITON_INTERPRET") != "1":
        return
    try:
        import triton
        from triton.runtime import interpreter
    except ImportError:
        return
    if not triton.__version__.startswith("3.6.") or not hasattr(interpreter, "_patch_lang"):
        return
    patched: set[int] = set()  # ids of the globals dicts patched since the launch began
    launch = interpreter.GridExecutor.__call__

    def launch_once(self, *args, **kwargs):
        patched.clear()
        return launch(self, *args, **kwargs)

    def call_device_function(self, *args, **kwargs):
        if id(self.fn.__globals__) not in patched:
            interpreter._patch_lang(self.fn)
            patched.add(id(self.fn.__globals__))
        fn = self.rewrite()
        try:
            return fn(*args, **kwargs)
        except Exception as e:
            raise interpreter.InterpreterError(repr(e)) from e

    interpreter.GridExecutor.__call__ = launch_once
    interpreter.InterpretedFunction.__call__ = call_device_function


_patch_language_once_per_launch()

import numpy as np  # noqa: E402  (after the interpreter setup above)
import pytest  # noqa: E402

from prefixscan.testing import backends_under_test  # noqa: E402


def seed_for(name: str) -> int:
    base = int(os.environ.get("PREFIXSCAN_TEST_SEED", "0"))
    return (zlib.crc32(name.encode()) + base) & 0xFFFFFFFF


@pytest.fixture
def rng(request):
    """A fresh generator per test, seeded from the test id (reproducible;
    set PREFIXSCAN_TEST_SEED to vary all streams)."""
    return np.random.default_rng(seed_for(request.node.nodeid))


_BACKEND_MARKS = {"cuda": [pytest.mark.gpu], "triton-interpreter": [pytest.mark.interpreter]}


@pytest.fixture(params=[pytest.param(b, id=b.name, marks=_BACKEND_MARKS.get(b.name, []))
                        for b in backends_under_test()])
def backend(request):
    """Each backend present here (prefixscan.testing.ArrayBackend): "cpu" on NumPy
    arrays; "triton-interpreter" on CPU torch tensors (no GPU, TRITON_INTERPRET=1);
    "cuda" on CUDA tensors.  ``backend.asarray`` puts NumPy data on it,
    ``backend.to_numpy`` brings results back, ``backend.backend`` is the value for
    ``backend=``."""
    return request.param
