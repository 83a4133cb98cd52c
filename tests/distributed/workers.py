"""What each spawned rank runs: many cases in one process group, each rank's piece
checked against the plain-loop reference of the whole sequence (and autograd
against the single-process result); failures are written to ``<rank>.json``."""

from __future__ import annotations

import contextlib
import json
import os
import sys
import traceback
from pathlib import Path
from unittest import mock

import numpy as np
import torch
import torch.distributed as dist

import prefixscan as ps
from prefixscan import distributed as psd
from prefixscan.testing import (
    affine_data,
    affine_monoid,
    assert_scan_equal,
    first_nonzero_monoid,
    random_array,
    random_init,
    reference_scan,
    sparse_array,
    tolerance_for,
)

OPERATORS = [("add", "int32"), ("add", "float32"), ("mul", "int64"), ("max", "float64"), ("min", "int16"),
             ("and", "bool"), ("or", "uint16"), ("xor", "uint8"), ("logaddexp", "float32")]
DIRECTIONS = [dict(), dict(reverse=True), dict(inclusive=False, seeded=True), dict(inclusive=False, reverse=True)]


def _cuts(rng, n: int, world: int, case: int) -> list:
    """Piece boundaries: uneven, and some rank's piece empty in every other case."""
    inner = sorted(rng.integers(0, n + 1, size=world - 1).tolist())
    if case % 2 and world > 1:
        inner[case % (world - 1)] = inner[case % (world - 1) - 1] if case % (world - 1) else 0
        inner.sort()
    return [0] + inner + [n]


def _piece(x, lo, hi, axis, device):
    index = [slice(None)] * np.ndim(x)
    index[axis] = slice(lo, hi)
    return torch.from_numpy(np.ascontiguousarray(x[tuple(index)])).to(device)


def _scan_cases(rank: int, world: int, rng) -> list:
    cases = []
    for k, (op, dtype) in enumerate(OPERATORS):
        for d, direction in enumerate(DIRECTIONS):
            direction = dict(direction)
            seeded = direction.pop("seeded", False)
            x = random_array(rng, dtype, (2, 37), op)
            init = random_init(rng, dtype, (2,), op) if seeded else None
            cases.append((f"{op} {dtype} {direction} init={seeded}", x, op, dict(direction, axis=-1, init=init),
                          _cuts(rng, 37, world, k + d)))
    for q, s in [(2, 1), (1, 3), (3, 2), (2, 5)]:
        for d, direction in enumerate(DIRECTIONS):
            direction = dict(direction)
            seeded = direction.pop("seeded", False)
            x = random_array(rng, "int64", (60,), "add")
            init = random_array(rng, "int64", (s,) if s > 1 else (), "add") if seeded else None
            cases.append((f"order {q} tuple {s} {direction}", x, "add",
                          dict(direction, order=q, tuple_size=s, init=init), _cuts(rng, 60, world, q + s + d)))
    a, b = affine_data(rng, (45,), "int64", small=False)
    for d, direction in enumerate(DIRECTIONS[:2]):
        cases.append((f"affine {direction}", (a, b), affine_monoid(), dict(direction, order=2), _cuts(rng, 45, world, d)))
    x = sparse_array(rng, "int32", (3, 30))
    cases.append(("first_nonzero along axis 0", x.T.copy(), first_nonzero_monoid(), dict(axis=0, reverse=True),
                  _cuts(rng, 30, world, 1)))
    return cases


def _check_scans(rank: int, world: int, rng, failures: list, device) -> None:
    for name, x, op, kwargs, cuts in _scan_cases(rank, world, rng):
        try:
            axis = kwargs.get("axis", -1)
            lo, hi = cuts[rank], cuts[rank + 1]
            local = (tuple(_piece(f, lo, hi, axis, device) for f in x) if isinstance(x, tuple)
                     else _piece(x, lo, hi, axis, device))
            got = psd.scan(local, op, **kwargs)
            want = reference_scan(x, op, **kwargs)
            if isinstance(x, tuple):
                for g, w in zip(got, want):
                    assert_scan_equal(g.cpu().numpy(), np.ascontiguousarray(np.take(w, range(lo, hi), axis=axis)))
            else:
                tolerance = tolerance_for(x, op, **kwargs)
                mag = tolerance.pop("mag", None)
                if mag is not None:
                    tolerance["mag"] = np.take(np.broadcast_to(mag, want.shape), range(lo, hi), axis=axis)
                assert_scan_equal(got.cpu().numpy(), np.take(want, range(lo, hi), axis=axis), **tolerance)
        except Exception:  # noqa: BLE001 - every case reports, the test fails on any
            failures.append(f"{name} cuts={cuts}: {traceback.format_exc()}")


def _recurrence_cases(world: int, rng, big: bool = True) -> list:
    """(name, shape of the whole a, of b, time axis, cuts, decay range, init: "tensor",
    "scalar" or None, loss: "weights" or "sum", which of a, b, init require grad, dtype);
    without ``big``, the large case's slices are small."""
    big = 3 * (9000 if big else 20) * world  # slices of 27000 elements: the CPU's one-read reduce (from 8192)
    every = ("a", "b", "init")

    def cuts(n, case):
        return _cuts(rng, n, world, case)

    return [
        ("(3, T) axis -1, init", (3, 50), (3, 50), -1, cuts(50, 0), (0.5, 1.1), "tensor", "weights", every, "f8"),
        ("first ranks empty, init passes through", (3, 50), (3, 50), -1, [0] + [0] * (world - 1) + [50],
         (0.5, 1.1), "tensor", "weights", every, "f8"),
        ("large slices (the compiled reduce)", (3, big // 3), (3, big // 3), -1,
         [big // 3 * r // world for r in range(world + 1)], (0.999, 1.001), "tensor", "weights", every, "f8"),
        ("(B, T, C) axis 1, no init", (2, 40, 3), (2, 40, 3), 1, cuts(40, 1), (0.5, 1.1), None, "weights",
         every, "f8"),
        ("(T, C) axis 0, scalar init, h.sum()", (33, 3), (33, 3), 0, cuts(33, 2), (0.5, 1.1), "scalar", "sum",
         every, "f8"),
        ("decay broadcast over the batch, empty slice", (1, 41, 3), (2, 41, 3), 1, cuts(41, 3), (0.6, 1.0),
         "tensor", "weights", every, "f8"),
        ("last ranks empty, no init", (2, 30), (2, 30), 1, [0, 30] + [30] * (world - 1), (0.5, 1.1), None,
         "weights", every, "f8"),
        ("only b and init require grad", (3, 45), (3, 45), 1, cuts(45, 5), (0.5, 1.1), "tensor", "weights",
         ("b", "init"), "f8"),
        ("float32", (2, 37, 4), (2, 37, 4), 1, cuts(37, 6), (0.7, 1.0), "tensor", "weights", every, "f4"),
        ("float16 (accumulated in float32)", (2, 29, 3), (2, 29, 3), 1, cuts(29, 7), (0.7, 1.0), "tensor",
         "weights", every, "f2"),
        ("bfloat16 (accumulated in float32)", (3, 31), (3, 31), -1, cuts(31, 8), (0.7, 1.0), None, "weights",
         every, "bf16"),
    ]


#: dtype, and the tolerance of a result against the float64 reference of the same (rounded) data
_DTYPES = {"f8": (torch.float64, {}), "f4": (torch.float32, dict(rtol=1e-5, atol=1e-5)),
           "f2": (torch.float16, dict(rtol=1e-2, atol=1e-2)), "bf16": (torch.bfloat16, dict(rtol=3e-2, atol=3e-2))}


def _check_recurrence(rank: int, world: int, rng, failures: list, device, interpreted: bool = False) -> None:
    """Each rank's h and gradients of a, b and (rank 0) init against the single-process
    ``prefixscan.linear_recurrence`` of the whole sequence and its autograd (float64
    unless named): init a tensor, a scalar or absent; the time axis last, in the middle
    and first; a decay broadcast over the batch; uneven and empty slices; a loss of
    weights or ``h.sum()`` (an expanded gradient); ``a`` not requiring grad.  With more
    than one rank: one ``all_gather`` forward and one backward, the single-GPU recurrence
    and fused backward (``backward_values``, with the adjoint arriving from the right on
    every rank but the last) once each; a world of one runs the plain path."""
    module = sys.modules["prefixscan.distributed.recurrence"]
    cases = _recurrence_cases(world, rng, big=not interpreted)
    for name, shape_a, shape_b, axis, cuts, decays, init_kind, loss, grads, dtype in cases:
        if interpreted and dtype == "bf16":
            # Triton 3.6's interpreter loads a masked bfloat16 with other=1 as 0.0 (compiled
            # Triton gives 1.0): the padded steps' decays zero the products (the GPU tests run it)
            continue
        try:
            dt, tol = _DTYPES[dtype]
            ax = axis % len(shape_b)
            lo, hi = cuts[rank], cuts[rank + 1]
            lanes = shape_b[:ax] + shape_b[ax + 1:]

            def rounded(values, needs):  # the data in dt, and in float64 for the reference
                return torch.tensor(values).to(dt).double().requires_grad_(needs)

            a = rounded(rng.uniform(*decays, size=shape_a), "a" in grads)
            b = rounded(rng.normal(size=shape_b), "b" in grads)
            init = None
            if init_kind == "tensor":
                init = rounded(rng.normal(size=lanes), "init" in grads)
            elif init_kind == "scalar":
                init = 0.7
            weights = rounded(rng.normal(size=shape_b), False)
            h = ps.linear_recurrence(a, b, init=init, axis=axis)  # the single-process result and gradients, float64
            (h.sum() if loss == "sum" else (h * weights).sum()).backward()
            a_local = a.detach().narrow(ax, lo, hi - lo).to(device, dt).requires_grad_("a" in grads)
            b_local = b.detach().narrow(ax, lo, hi - lo).to(device, dt).requires_grad_("b" in grads)
            init_local = init.detach().to(device, dt).requires_grad_() if isinstance(init, torch.Tensor) else init
            gathers = mock.patch.object(module, "all_gather_tensors", wraps=module.all_gather_tensors)
            fused = mock.patch.object(module, "backward_values", wraps=module.backward_values)
            # a world of one runs prefixscan.linear_recurrence itself, not the distributed Function
            plain = mock.patch.object(module._Recurrence, "apply", side_effect=AssertionError("distributed path")) \
                if world == 1 else contextlib.nullcontext()
            with gathers as gathered, fused as backward, plain:
                h_local = psd.linear_recurrence(a_local, b_local, init=init_local, axis=axis)
                forward_gathers = gathered.call_count
                w_local = weights.narrow(ax, lo, hi - lo).to(device, dt)
                (h_local.sum() if loss == "sum" else (h_local * w_local).sum()).backward()
            if world > 1 and (forward_gathers, gathered.call_count) != (1, 2):
                failures.append(f"{name}: all_gathers forward, in all {forward_gathers}, {gathered.call_count}")
            if world > 1 and hi > lo:
                arriving = backward.call_args.kwargs.get("final") if backward.call_count == 1 else "missing"
                if backward.call_count != 1 or (arriving is None) != (rank == world - 1):
                    failures.append(f"{name}: backward_values called {backward.call_count} times, final={arriving}")
            for got in (h_local, a_local.grad, b_local.grad):
                assert got is None or got.dtype == dt, f"{got.dtype} from {dt}"

            def close(got, want):
                torch.testing.assert_close(got.detach().cpu().double(), want.detach(), **tol)

            close(h_local, h.narrow(ax, lo, hi - lo))
            if "a" in grads:
                close(a_local.grad, a.grad.narrow(ax, lo, hi - lo))
            else:
                assert a_local.grad is None
            close(b_local.grad, b.grad.narrow(ax, lo, hi - lo))
            if isinstance(init, torch.Tensor):
                if rank == 0:
                    close(init_local.grad, init.grad)
                else:
                    assert init_local.grad is None, "init is read on rank 0 only"
        except Exception:  # noqa: BLE001
            failures.append(f"linear_recurrence {name} cuts={cuts}: {traceback.format_exc()}")


def _check_recurrence_derivative(rank: int, world: int, rng, failures: list, device) -> None:
    """Gradcheck's test without a reference implementation: the directional derivative of
    the loss summed over the ranks, float64, along one random direction of every rank's
    a and b and of init, by central differences against the gradients' inner product
    with it (every rank calls the function as often: no rank waits on another's)."""
    try:
        n, axis = 23, 1
        cuts = _cuts(rng, n, world, 1)
        lo, hi = cuts[rank], cuts[rank + 1]
        a = torch.tensor(rng.uniform(0.5, 1.1, size=(2, n, 3)))
        b, weights, va, vb = (torch.tensor(rng.normal(size=(2, n, 3))) for _ in range(4))
        init, vi = (torch.tensor(rng.normal(size=(2, 3))) for _ in range(2))
        pieces = [t.narrow(axis, lo, hi - lo).to(device) for t in (a, b, weights, va, vb)]
        a_l, b_l, w_l, va_l, vb_l = pieces
        init_l, vi_l = init.to(device), vi.to(device)

        def total(x):
            return x if world == 1 else _all_sum(x)

        def loss(step):
            h = psd.linear_recurrence(a_l + step * va_l, b_l + step * vb_l, init=init_l + step * vi_l, axis=axis)
            return total((h * w_l).sum().reshape(1))

        eps = 1e-6
        numeric = (loss(eps) - loss(-eps)) / (2 * eps)
        a_g, b_g, i_g = (t.clone().requires_grad_() for t in (a_l, b_l, init_l))
        (psd.linear_recurrence(a_g, b_g, init=i_g, axis=axis) * w_l).sum().backward()
        inner = (a_g.grad * va_l).sum() + (b_g.grad * vb_l).sum()
        if rank == 0:
            inner = inner + (i_g.grad * vi_l).sum()
        analytic = total(inner.reshape(1))
        torch.testing.assert_close(analytic.cpu(), numeric.cpu(), rtol=1e-6, atol=1e-8)
    except Exception:  # noqa: BLE001
        failures.append(f"linear_recurrence directional derivative: {traceback.format_exc()}")


def _all_sum(x: torch.Tensor) -> torch.Tensor:
    x = x.clone()
    dist.all_reduce(x)
    return x


def _check_errors(rank: int, world: int, failures: list, device) -> None:
    x = torch.arange(5 + rank, dtype=torch.int64, device=device)  # in all 5 * world + world * (world - 1) / 2
    total = 5 * world + world * (world - 1) // 2
    s = next(s for s in range(2, 9) if total % s)
    expected = [(f"tuple_size={s}", ValueError, dict(tuple_size=s)), ("x_local", TypeError, dict())]
    for what, error, kwargs in expected:
        try:
            psd.scan(x.cpu().numpy() if what == "x_local" else x, **kwargs)
            failures.append(f"{what}: no {error.__name__}")
        except error as exc:
            if what.split("=")[0] not in str(exc):
                failures.append(f"{what}: the message does not name it: {exc}")
    try:
        psd.scan(x.double().requires_grad_())
        failures.append("requires_grad: no TypeError")
    except TypeError:
        pass


def _check_one_round(rank: int, world: int, rng, failures: list, device) -> None:
    """Order-3 integer sums: bitwise the single-process scan (values that wrap), with
    uneven and empty pieces, in exactly one all_gather."""
    info = np.iinfo(np.int64)
    for case, (shape, axis, kwargs) in enumerate([((61,), -1, dict()), ((61,), -1, dict(reverse=True)),
                                                  ((3, 61), -1, dict(init=np.int64(-7))),
                                                  ((61, 2), 0, dict(reverse=True, init=np.array([5, -3])))]):
        name = f"order 3 int64 {shape} axis={axis} {kwargs}"
        try:
            x = rng.integers(info.min, info.max, size=shape, dtype=np.int64, endpoint=True)
            cuts = _cuts(rng, shape[axis], world, 2 * case + 1)  # odd: some rank's piece is empty
            lo, hi = cuts[rank], cuts[rank + 1]
            with mock.patch.object(dist, "all_gather", wraps=dist.all_gather) as gather:
                got = psd.scan(_piece(x, lo, hi, axis, device), order=3, axis=axis, **kwargs)
            if gather.call_count != min(1, world - 1):  # a world of one gathers nothing
                failures.append(f"{name}: {gather.call_count} all_gather calls, expected {min(1, world - 1)}")
            want = np.take(ps.scan(x, order=3, axis=axis, **kwargs), range(lo, hi), axis=axis)
            got = got.cpu().numpy()
            if got.dtype != want.dtype or not np.array_equal(got, want):
                failures.append(f"{name} cuts={cuts}: differs from the single-process scan")
        except Exception:  # noqa: BLE001 - every case reports, the test fails on any
            failures.append(f"{name}: {traceback.format_exc()}")


def _check_resident(rank: int, world: int, rng, failures: list, device) -> None:
    """Order-1 scans keep their totals and carries on the pieces' device: one all_gather
    of tensors, none of host arrays, and bitwise the single-process scan for integers
    (non-commutative: the affine monoid's fields)."""
    info = np.iinfo(np.int64)
    a, b = affine_data(rng, (3, 41), "int64", small=False)
    cases = [("int64 add seeded", rng.integers(info.min, info.max, size=(3, 41), dtype=np.int64), "add",
              dict(init=np.array([4, -9, 2]))),
             ("affine reverse exclusive", (a, b), affine_monoid(), dict(reverse=True, inclusive=False))]
    scan_module = sys.modules["prefixscan.distributed.scan"]
    for case, (name, x, op, kwargs) in enumerate(cases):
        try:
            cuts = _cuts(rng, 41, world, case)
            lo, hi = cuts[rank], cuts[rank + 1]
            local = tuple(_piece(f, lo, hi, -1, device) for f in x) if isinstance(x, tuple) else \
                _piece(x, lo, hi, -1, device)
            with mock.patch.object(scan_module, "all_gather_tensors", wraps=scan_module.all_gather_tensors) as gather, \
                    mock.patch.object(scan_module, "all_gather_fields", side_effect=AssertionError("host path")):
                got = psd.scan(local, op, axis=-1, **kwargs)
            if gather.call_count != min(1, world - 1):
                failures.append(f"{name}: {gather.call_count} gathers of tensors, expected {min(1, world - 1)}")
            want = ps.scan(x, op, axis=-1, **kwargs)
            for g, w in zip(got if isinstance(x, tuple) else (got,), want if isinstance(x, tuple) else (want,)):
                if not np.array_equal(g.cpu().numpy(), np.take(w, range(lo, hi), axis=-1)):
                    failures.append(f"{name} cuts={cuts}: differs from the single-process scan")
        except Exception:  # noqa: BLE001 - every case reports, the test fails on any
            failures.append(f"{name}: {traceback.format_exc()}")


def _no_collective(name: str):
    def refuse(*args, **kwargs):
        raise AssertionError(f"a world of one called torch.distributed.{name}")
    return refuse


def run_recurrence_on_triton(rank: int, world: int, port: int, directory: str) -> None:
    """One rank of the recurrence's checks with gloo, CPU tensors and the Triton backend
    selected for them, its kernels in the interpreter (TRITON_INTERPRET=1): the GPU's
    code path (the lane-maps kernel on the shifted views, the maps composed by it in
    float64, the fused backward with its ``final`` adjoint) without a GPU; small slices."""
    from prefixscan import dispatch

    os.environ["TRITON_INTERPRET"] = "1"
    triton = dispatch.get_backend("triton")
    select = dispatch.select_backend
    dispatch.select_backend = lambda name, device: triton if name is None else select(name, device)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    failures: list = []
    try:
        rng = np.random.default_rng(1234)
        _check_recurrence(rank, world, rng, failures, torch.device("cpu"), interpreted=True)
        _check_recurrence_derivative(rank, world, rng, failures, torch.device("cpu"))
    finally:
        Path(directory, f"{rank}.json").write_text(json.dumps(failures))
        dist.destroy_process_group()


def run(rank: int, world: int, port: int, directory: str, backend: str = "gloo") -> None:
    """One rank: gloo on CPU tensors, or NCCL on the GPU of its own rank."""
    device = torch.device("cuda", rank) if backend == "nccl" else torch.device("cpu")
    if device.type == "cuda":
        torch.cuda.set_device(device)
    dist.init_process_group(backend, init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    failures: list = []
    try:
        rng = np.random.default_rng(1234)  # the same data on every rank
        if world == 1:  # the piece is the sequence: no collective at all
            for name in ("all_gather", "all_gather_into_tensor", "all_gather_single", "all_gather_object"):
                if hasattr(dist, name):
                    setattr(dist, name, _no_collective(name))
        _check_scans(rank, world, rng, failures, device)
        _check_recurrence(rank, world, rng, failures, device)
        _check_recurrence_derivative(rank, world, rng, failures, device)
        _check_one_round(rank, world, rng, failures, device)
        _check_resident(rank, world, rng, failures, device)
        _check_errors(rank, world, failures, device)
    finally:
        Path(directory, f"{rank}.json").write_text(json.dumps(failures))
        dist.destroy_process_group()
