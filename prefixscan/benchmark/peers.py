"""The implementations ``prefixscan bench`` times next to each other.

* ``cpu``: a copy of the same bytes (the roof: the faster of ``numpy.copyto``
  and a compiled copy loop, :mod:`.roof`),
  ``prefixscan.scan``, ``numpy.cumsum(dtype=<input dtype>)`` and
  ``numpy.add.accumulate``;
* ``cuda``: a copy (``dst.copy_(src)``), ``prefixscan.scan`` on torch CUDA
  tensors, ``torch.cumsum`` and, where importable, ``cupy.cumsum``,
  ``cuda.compute.make_inclusive_scan`` (CUB, planned) and ``jax.numpy.cumsum``;
* with ``--strategies``: ``prefixscan.scan(strategy=<name>)`` for each GPU
  meta-strategy (decoupled look-back, Merrill & Garland 2016; chained;
  reduce-then-scan, Merrill & Grimshaw 2009; scan-then-propagate; persistent,
  SAM, Maleki et al. PLDI 2016) and ``deterministic=True``.  Their records carry
  the plan (grid, tile) and the device-memory traffic per element counted from
  the algorithm (:func:`strategy_plan`).

Each implementation is built per (dtype, n) from lists of input and output
buffers and returns one callable per buffer pair; calling it computes the scan
into the preallocated output where it can and returns the result.  With
``order=Q`` peers apply their cumsum Q times; with ``tuple_size=S`` they scan an
``(n/S, S)`` view along axis 0.
"""

from __future__ import annotations

import importlib
import os
import sys
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

import prefixscan as ps

from .._environment import interpreter_mode
from .cases import SizeCase
from .roof import ROOF_NOTE, copy_variants

__all__ = ["Implementation", "NotApplicable", "cpu_peers", "cuda_peers", "strategy_variants",
           "strategy_plan"]


@dataclass
class Implementation:
    name: str
    build: Callable[[list, list], list[Callable[[], Any]]]
    timing: str = "events"  # "events" (torch stream), "wall" (own streams), "cpu"
    note: str = ""
    is_copy: bool = False  # verified against the input rather than the scan
    strategy: str | None = None  # a GPU meta-strategy: its plan and traffic join the record
    optional: bool = False  # a peer whose failing call means "not usable here" (skipped)
    variant: str | None = None  # one of several copies the roof is the best of


class NotApplicable(Exception):
    """This implementation does not apply here (reported in 'skipped')."""


def _prefixscan_build(order: int, tuple_size: int):
    def build(ins, outs):
        return [(lambda x=x, o=o: ps.scan(x, order=order, tuple_size=tuple_size, out=o))
                for x, o in zip(ins, outs)]

    return build


def cpu_peers(order: int, tuple_size: int) -> list[Implementation]:
    """The copies of the roof, prefixscan and NumPy's two cumulative sums on host arrays."""
    s, q = tuple_size, order

    def view(a):
        return a.reshape(-1, s) if s > 1 else a

    def bits(a):
        # The roof copies bytes: seen as unsigned integers of the same size, which the
        # compiled loop handles for every dtype (Numba has no float16).
        return a.reshape(-1).view(f"u{a.itemsize}")

    def copy_build(copy):
        def build(ins, outs):
            return [(lambda x=x, o=o: (copy(bits(x), bits(o)), o)[1]) for x, o in zip(ins, outs)]

        return build

    def accumulate_build(fn):
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

    copies = [Implementation("copy" if i == 0 else f"copy ({name})", copy_build(copy), "cpu",
                             f"a copy of the same bytes: {ROOF_NOTE}", is_copy=True, variant=name)
              for i, (name, copy) in enumerate(copy_variants())]
    return copies + [
        Implementation("prefixscan", _prefixscan_build(q, s), "cpu",
                       "prefixscan.scan(x, order, tuple_size, out=)"),
        Implementation("numpy.cumsum", accumulate_build(np.cumsum), "cpu",
                       "numpy.cumsum(dtype=x.dtype, out=)"),
        Implementation("numpy.add.accumulate", accumulate_build(np.add.accumulate), "cpu",
                       "numpy.add.accumulate(dtype=x.dtype, out=)"),
    ]


def cuda_peers(order: int, tuple_size: int) -> list[Implementation]:
    """Copy, prefixscan and torch.cumsum on torch CUDA tensors, then whichever of
    CuPy, cuda.compute (CCCL) and JAX import here."""
    import torch

    s, q = tuple_size, order

    def view(a):
        return a.view(-1, s) if s > 1 else a

    def copy_build(ins, outs):
        return [(lambda x=x, o=o: o.copy_(x)) for x, o in zip(ins, outs)]

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
        Implementation("copy", copy_build, "events", "torch dst.copy_(src)", is_copy=True),
        Implementation("prefixscan", _prefixscan_build(q, s), "events",
                       "prefixscan.scan on torch CUDA tensors, out="),
        Implementation("torch.cumsum", torch_build, "events", "torch.cumsum(dtype=x.dtype, out=)"),
    ]
    cp = _try_import("cupy")
    if cp is not None:
        impls.append(_cupy_peer(cp, view, q))
    cc = _try_import("cuda.compute")
    if cc is not None:
        impls.append(_cccl_peer(cc, cp, q, s))
    jax = _import_jax()
    if jax is not None:
        impls.append(_jax_peer(jax, q, s))
    return impls


def _no_bfloat16(ins: list, peer: str) -> None:
    if str(ins[0].dtype) == "torch.bfloat16":
        raise NotApplicable(f"{peer} has no bfloat16 (NumPy dtypes only)")


def _cupy_peer(cp, view, q: int) -> Implementation:
    def build(ins, outs):
        _no_bfloat16(ins, "CuPy")

        def make(x, o):
            xv, ov = cp.asarray(view(x)), cp.asarray(view(o))  # zero-copy views

            def run():
                cp.cumsum(xv, axis=0, dtype=xv.dtype, out=ov)
                for _ in range(q - 1):
                    cp.cumsum(ov, axis=0, dtype=ov.dtype, out=ov)
                return o

            return run

        return [make(x, o) for x, o in zip(ins, outs)]

    return Implementation("cupy.cumsum", build, "events", "cupy.cumsum(dtype=, out=)", optional=True)


def _cccl_peer(cc, cp, q: int, s: int) -> Implementation:
    def build(ins, outs):
        if s > 1:
            raise NotApplicable("cuda.compute.make_inclusive_scan scans 1-D sequences (tuple_size > 1)")
        _no_bfloat16(ins, "cuda.compute")
        op = getattr(getattr(cc, "OpKind", None), "PLUS", None)
        if op is None:
            def op(a, b):
                return a + b

        def wrap(t):
            return cp.asarray(t) if cp is not None else t

        def make(x, o):
            import torch

            n = x.numel()
            dx, do = wrap(x), wrap(o)
            # the planned object, its temporary storage allocated once (CUB's InclusiveSum:
            # no initial value); the one-shot call would allocate on every call
            scan = cc.make_inclusive_scan(d_in=dx, d_out=do, op=op, init_value=None)
            kw = dict(op=op, init_value=None, num_items=n)
            nbytes = scan(temp_storage=None, d_in=dx, d_out=do, **kw)
            tmp = wrap(torch.empty(max(int(nbytes), 1), dtype=torch.uint8, device=x.device))

            def run():
                scan(temp_storage=tmp, d_in=dx, d_out=do, **kw)
                for _ in range(q - 1):
                    scan(temp_storage=tmp, d_in=do, d_out=do, **kw)
                return o

            return run

        return [make(x, o) for x, o in zip(ins, outs)]

    return Implementation("cuda.compute", build, "events",
                          "cuda.compute.make_inclusive_scan(OpKind.PLUS), planned: temporary storage allocated once",
                          optional=True)


def _jax_peer(jax, q: int, s: int) -> Implementation:
    import jax.numpy as jnp

    def build(ins, outs):
        if not [d for d in jax.devices() if d.platform == "gpu"]:
            raise NotApplicable("JAX sees no GPU")

        @jax.jit
        def f(a):
            v = a.reshape(-1, s) if s > 1 else a
            for _ in range(q):
                v = jnp.cumsum(v, axis=0, dtype=a.dtype)  # JAX's own dtype: bfloat16 included
            return v.reshape(-1)

        arrays = [jax.dlpack.from_dlpack(x) for x in ins]

        def make(a):
            def run():
                r = f(a)
                r.block_until_ready()
                return r

            return run

        return [make(a) for a in arrays]

    return Implementation("jax.numpy.cumsum", build, "wall",
                          "jax.jit(jnp.cumsum(dtype=)), timed with perf_counter + block_until_ready",
                          optional=True)


def strategy_variants(order: int, tuple_size: int, names: Sequence[str], device: str) -> list[Implementation]:
    """``prefixscan.scan(strategy=...)`` for each GPU meta-strategy, and
    ``deterministic=True``: on CUDA tensors, or (``device == "cpu"``) on CPU
    tensors in Triton's interpreter, which checks the benchmark end to end
    without a GPU (its times mean nothing)."""
    import torch

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
    impls = [Implementation(f"strategy:{name}", build_for(name), timing,
                            f"prefixscan.scan(strategy={name!r}, out=){where}", strategy=name)
             for name in names]
    # What deterministic=True costs: the strategy the tuned table picks for it (chained without a table).
    impls.append(Implementation("deterministic", build_for("auto", deterministic=True), timing,
                                f"prefixscan.scan(deterministic=True, out=): the tuned deterministic "
                                f"strategy{where}"))
    return impls


def strategy_plan(impl: Implementation, case: SizeCase, device: str) -> dict:
    """For a strategy: the plan of the call just made (grid, tile) and its counted
    device-memory traffic per element; ``model_ratio`` = 2 / traffic, the
    fraction of the copy's throughput a bandwidth-bound run would reach
    (scan-then-propagate ~0.5, reduce-then-scan ~0.67, single pass ~1).
    Empty for any other implementation."""
    if impl.strategy is None:
        return {}
    import torch

    from ..backends.triton.planning import traffic

    interpreted = device == "cpu"
    info = traffic.plan(impl.strategy, case.n, case.tuple_size, getattr(torch, case.dtype),
                        torch.device(device), interpreted and interpreter_mode(), order=case.order)
    info["model_ratio"] = 2.0 / info["traffic_per_element"] if info["traffic_per_element"] else None
    return info


def _try_import(name: str):
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
