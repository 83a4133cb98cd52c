"""How many torch operators one ``prefixscan.distributed.linear_recurrence`` forward +
backward runs on each rank (torch.profiler, CPU, gloo): the host work of a call,
which on a GPU is one launch per operator that computes.

    python tools/distributed_opcount.py                     # world 2, both paths
    python tools/distributed_opcount.py --world 3 --init

Two paths, each in its own spawned world:

* ``cpu``: the CPU backend as it runs (the compiled loop; its reverse recurrence for
  the backward);
* ``triton``: the GPU's host path on CPU tensors: the Triton backend selected for them
  and its kernel launches dropped (``runtime.launch_kernel`` counts them and does
  nothing), so the operators are those a GPU call queues; the values are not computed.

Counted per rank, for the third call (two warm-up calls before it): every ``aten::``
operator the profiler records at top level (not inside another one), those of them
that compute or allocate on the device (the rest are views and metadata: no kernel),
and the collectives.  Wall times on a CPU under gloo say nothing of a GPU.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import tempfile
from collections import Counter
from pathlib import Path

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

#: Operators that make views or read metadata: no kernel on a GPU.
VIEWS = frozenset({"aten::view", "aten::reshape", "aten::_reshape_alias", "aten::select", "aten::narrow",
                   "aten::slice", "aten::expand", "aten::as_strided", "aten::detach", "aten::alias",
                   "aten::unsqueeze", "aten::squeeze", "aten::t", "aten::transpose", "aten::permute",
                   "aten::resolve_conj", "aten::resolve_neg", "aten::broadcast_to", "aten::lift_fresh",
                   "aten::expand_as", "aten::view_as", "aten::unbind", "aten::movedim", "aten::flatten",
                   "aten::contiguous", "aten::_unsafe_view", "aten::result_type", "aten::is_nonzero",
                   "aten::empty", "aten::empty_like", "aten::empty_strided", "aten::numpy_T",
                   "aten::broadcast_tensors", "aten::chunk", "aten::split", "aten::to", "aten::type_as",
                   "aten::new_empty"})


def _top_level(events) -> list:
    """The ``aten::`` events with no ``aten::`` event above them, on the threads of the
    call and of autograd's backward (not the process group's, whose copies are the
    collective's)."""
    threads = {e.thread for e in events if e.name == "call" or e.name.startswith("autograd::engine")}
    out = []
    for e in events:
        if not e.name.startswith("aten::") or e.thread not in threads:
            continue
        parent, nested = e.cpu_parent, False
        while parent is not None:
            if parent.name.startswith(("aten::", "c10d::")):
                nested = True
                break
            parent = parent.cpu_parent
        if not nested:
            out.append(e)
    return out


def _computes(event) -> bool:
    """Whether an operator does device work: not a view, and a ``to``/``contiguous`` only
    where it copied (a child operator did)."""
    if event.name in ("aten::to", "aten::contiguous", "aten::type_as"):
        return any(c.name.startswith("aten::") for c in event.cpu_children)
    return event.name not in VIEWS


def _rank(rank: int, world: int, port: int, path: str, init: bool, shape: tuple, axis: int, out: str,
          verbose: bool) -> None:
    from unittest import mock

    from prefixscan import dispatch
    from prefixscan import distributed as psd
    from prefixscan.backends.triton.runtime import launch as runtime

    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    patches, launches = [], []
    if path == "triton":
        triton = dispatch.get_backend("triton")
        patches = [mock.patch.object(dispatch, "select_backend", lambda name, device: triton),
                   mock.patch.object(runtime, "launch_kernel", lambda launch: launches.append(launch.grid))]
        os.environ["TRITON_INTERPRET"] = "1"
    gen = torch.Generator().manual_seed(rank)
    a = (torch.rand(shape, generator=gen) * 0.5 + 0.5).requires_grad_()
    b = torch.randn(shape, generator=gen).requires_grad_()
    g = torch.randn(shape, generator=gen)
    h0 = torch.randn(shape[:axis] + shape[axis + 1:], generator=gen).requires_grad_() if init else None
    for p in patches:
        p.start()
    try:
        from torch.profiler import ProfilerActivity, profile, record_function

        for call in range(3):
            a.grad = b.grad = None
            if h0 is not None:
                h0.grad = None
            dist.barrier()
            if call == 2:
                launches.clear()
                with profile(activities=[ProfilerActivity.CPU]) as prof, record_function("call"):
                    psd.linear_recurrence(a, b, axis=axis, init=h0).backward(g)
            else:
                psd.linear_recurrence(a, b, axis=axis, init=h0).backward(g)
    finally:
        for p in patches:
            p.stop()
    events = list(prof.events())
    if verbose:  # each computing operator with the frames above it
        for e in _top_level(events):
            if _computes(e):
                chain, parent = [], e.cpu_parent
                while parent is not None:
                    chain.append(parent.name)
                    parent = parent.cpu_parent
                print(f"rank {rank}: {e.name} {[c.name for c in e.cpu_children]} in {chain[:2]}", flush=True)
    top = _top_level(events)
    computing = [e for e in top if _computes(e)]
    collectives = sorted({e.name for e in events if "gather" in e.name.lower() and not e.name.startswith("aten::")})
    row = dict(rank=rank, top_level=len(top), computing=len(computing), kernels=len(launches),
               collectives=sum(1 for e in events if e.name in ("c10d::allgather_", "c10d::_allgather_base_")),
               collective_names=collectives, computing_ops=dict(Counter(e.name for e in computing)),
               top_level_ops=dict(Counter(e.name for e in top)))
    Path(out, f"{rank}.json").write_text(json.dumps(row))
    dist.destroy_process_group()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--world", type=int, default=2)
    parser.add_argument("--init", action="store_true", help="pass init (read on rank 0)")
    parser.add_argument("--paths", default="cpu,triton")
    parser.add_argument("--shape", default="2,128,64", help="per rank; (B, T, C) with --axis 1")
    parser.add_argument("--axis", type=int, default=1)
    parser.add_argument("--json", type=Path, help="also write the rows here")
    parser.add_argument("--verbose", action="store_true", help="list each computing operator")
    args = parser.parse_args(argv)
    shape = tuple(int(v) for v in args.shape.split(","))
    rows = []
    for path in args.paths.split(","):
        with tempfile.TemporaryDirectory() as out:
            mp.spawn(_rank, args=(args.world, _free_port(), path, args.init, shape, args.axis, out, args.verbose),
                     nprocs=args.world, join=True)
            for rank in range(args.world):
                row = json.loads(Path(out, f"{rank}.json").read_text())
                rows.append(dict(row, path=path, world=args.world, init=args.init, shape=list(shape)))
    for row in rows:
        ops = ", ".join(f"{k.removeprefix('aten::')} {v}" for k, v in sorted(row["computing_ops"].items()))
        print(f"{row['path']:6} world {row['world']} rank {row['rank']} init={row['init']}: {row['top_level']} "
              f"top-level operators, {row['computing']} computing ({ops}); {row['collectives']} all_gather"
              + (f"; {row['kernels']} recurrence kernels" if row["path"] == "triton" else ""))
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
