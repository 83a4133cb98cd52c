"""What each spawned rank runs: many cases in one process group, each rank's piece
checked against the plain-loop reference of the whole sequence (and autograd
against the single-process result); failures are written to ``<rank>.json``."""

from __future__ import annotations

import json
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


def _check_recurrence(rank: int, world: int, rng, failures: list, device) -> None:
    big = 3 * 9000 * world  # slices of 27000 elements: the CPU's one-read reduce (from 8192), not its fallback
    cases = [(50, [0] + sorted(rng.integers(0, 51, world - 1).tolist()) + [50], (0.5, 1.1)),
             (50, [0] + [0] * (world - 1) + [50], (0.5, 1.1)),  # the first ranks empty: init passes through
             (big // 3, [big // 3 * r // world for r in range(world + 1)], (0.999, 1.001))]
    for case, (n, cuts, decays) in enumerate(cases):
        try:
            lo, hi = cuts[rank], cuts[rank + 1]
            a = torch.tensor(rng.uniform(*decays, size=(3, n)), requires_grad=True)
            b = torch.tensor(rng.normal(size=(3, n)), requires_grad=True)
            init = torch.tensor(rng.normal(size=3), requires_grad=True)
            weights = torch.tensor(rng.normal(size=(3, n)))
            h = ps.linear_recurrence(a, b, init=init)  # the single-process result and gradients
            (h * weights).sum().backward()
            a_local = a.detach()[:, lo:hi].to(device).requires_grad_()
            b_local = b.detach()[:, lo:hi].to(device).requires_grad_()
            init_local = init.detach().to(device).requires_grad_()
            h_local = psd.linear_recurrence(a_local, b_local, init=init_local)
            (h_local * weights[:, lo:hi].to(device)).sum().backward()
            torch.testing.assert_close(h_local.cpu(), h.detach()[:, lo:hi])
            torch.testing.assert_close(a_local.grad.cpu(), a.grad[:, lo:hi])
            torch.testing.assert_close(b_local.grad.cpu(), b.grad[:, lo:hi])
            if rank == 0:
                torch.testing.assert_close(init_local.grad.cpu(), init.grad)
            else:
                assert init_local.grad is None, "init is read on rank 0 only"
        except Exception:  # noqa: BLE001
            failures.append(f"linear_recurrence case {case} cuts={cuts}: {traceback.format_exc()}")


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
        _check_one_round(rank, world, rng, failures, device)
        _check_resident(rank, world, rng, failures, device)
        _check_errors(rank, world, failures, device)
    finally:
        Path(directory, f"{rank}.json").write_text(json.dumps(failures))
        dist.destroy_process_group()
