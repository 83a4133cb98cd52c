"""prefixscan.distributed with gloo on the CPU: three spawned ranks run every case
in one process group (tests/distributed/workers.py), each checking its piece
against the reference of the whole sequence; two ranks; a world of one, which calls
no collective; with NCCL on the GPUs present (one rank per GPU, up to three)."""

from __future__ import annotations

import json
import socket
import time

import pytest

torch = pytest.importorskip("torch")
mp = pytest.importorskip("torch.multiprocessing")
if not torch.distributed.is_available():
    pytest.skip("torch.distributed is not available", allow_module_level=True)

from . import workers  # noqa: E402

WORLD = 3
TIMEOUT_S = 240


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _spawn(tmp_path, world: int, backend: str, entry=workers.run) -> None:
    args = (world, _free_port(), str(tmp_path)) + ((backend,) if entry is workers.run else ())
    context = mp.start_processes(entry, args=args, nprocs=world, join=False, start_method="spawn")
    deadline = time.monotonic() + TIMEOUT_S
    try:
        while not context.join(timeout=1):
            if time.monotonic() > deadline:
                pytest.fail(f"the ranks did not finish in {TIMEOUT_S} s")
    finally:
        for process in context.processes:
            if process.is_alive():
                process.kill()
    failures = {rank: json.loads((tmp_path / f"{rank}.json").read_text()) for rank in range(world)}
    assert not any(failures.values()), "\n".join(f"rank {r}: {f}" for r, fs in failures.items() for f in fs)


def test_every_case_on_three_ranks(tmp_path):
    _spawn(tmp_path, WORLD, "gloo")


def test_every_case_on_two_ranks(tmp_path):
    """Two ranks: no middle rank (the first rank's map is the last rank's incoming state
    as it is, the last rank's reverse map the first's arriving adjoint; nothing composed)."""
    _spawn(tmp_path, 2, "gloo")


@pytest.mark.interpreter
def test_recurrence_on_the_triton_kernels(tmp_path):
    """The recurrence's cases on three gloo ranks with the Triton backend selected for
    CPU tensors, its kernels interpreted: the path the GPUs take."""
    pytest.importorskip("triton")
    _spawn(tmp_path, WORLD, "gloo", workers.run_recurrence_on_triton)


def test_every_case_on_one_rank(tmp_path):
    """A world of one: every case is the local scan or recurrence of the whole
    sequence, with no collective called (the worker refuses them)."""
    _spawn(tmp_path, 1, "gloo")


@pytest.mark.gpu
def test_every_case_with_nccl(tmp_path):
    if not torch.cuda.is_available() or not torch.distributed.is_nccl_available():
        pytest.skip("needs a CUDA device and NCCL")
    # NCCL takes one rank per GPU: on one GPU, the world of one (no collective); the
    # collectives, device-resident carries and GPU reductions need two GPUs or more.
    _spawn(tmp_path, min(WORLD, torch.cuda.device_count()), "nccl")
