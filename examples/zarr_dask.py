"""Scan a Zarr array on disk chunk by chunk into another Zarr array, on a dask cluster.

The source holds int64 steps of a random walk; the result, the running sum of
the steps (the walk's positions), goes to a second Zarr array whose filter is
prefixscan's delta codec (``prefixscan.codecs.zarr3.Delta``), so on disk the
positions are stored as their differences, which compress like the steps.
``prefixscan.cumsum`` of the dask array is lazy; ``to_zarr`` runs it on a
``dask.distributed.LocalCluster`` of worker processes, each with a memory limit.

The scan's graph (prefixscan.dask) reads every chunk twice (once to reduce it
to its total, once to scan it with the carry of the chunks before it) and
writes it once; each chunk's load, scan, encoding and store run as one task,
so a worker holds about two chunks per thread (the chunk read, the chunk
written) plus the codec's buffers, whatever the size of the array.  The
example checks the result exactly, chunk by chunk, against a running NumPy
cumsum, and reports each worker's peak memory over its baseline in chunks.

    python examples/zarr_dask.py                                 # 2^26 int64 (512 MiB), 4 workers
    python examples/zarr_dask.py --elements 2**30 --chunk 2**23 --memory-limit 1GiB   # 8 GiB on disk

Needs the ``dask`` extra (dask.array, dask.distributed) and the ``codecs`` extra
(zarr 3, which needs Python 3.11 or later): ``pip install -e '.[dask,codecs]'``
in a checkout of prefixscan.
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import threading
import time
from pathlib import Path

import dask.array as da
import numpy as np
import psutil
import zarr
from dask.distributed import Client, LocalCluster

import prefixscan as ps
from prefixscan.codecs.zarr3 import Delta


def _warm_up() -> int:
    """Compile the scan's and the codec's kernels on a worker (Numba compiles on first use,
    and its compiler's memory would count as the scan's); the worker's memory after it."""
    steps = np.arange(1 << 16, dtype=np.int64)
    ps.delta_decode(ps.delta_encode(ps.cumsum(steps)))
    ps.scan(steps, init=np.int64(1))
    return psutil.Process().memory_info().rss


class _MemorySampler:
    """The worker process's resident memory, sampled every few milliseconds in a thread."""

    def __init__(self):
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()

    def _sample(self) -> None:
        process = psutil.Process()
        while not self._stop.wait(0.005):
            self.peak = max(self.peak, process.memory_info().rss)

    def stop(self) -> int:
        self._stop.set()
        self._thread.join()
        return self.peak


def _start_sampling(dask_worker) -> None:
    dask_worker.prefixscan_sampler = _MemorySampler()


def _stop_sampling(dask_worker) -> int:
    return dask_worker.prefixscan_sampler.stop()


def _disk_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def make_source(client: Client, path: Path, elements: int, chunk: int, seed: int = 0) -> None:
    """Write ``elements`` random int64 steps in [-1000, 1000) to a Zarr array of ``chunk``-element chunks."""
    steps = da.random.default_rng(seed).integers(-1000, 1000, size=elements, chunks=chunk, dtype=np.int64)
    client.compute(da.to_zarr(steps, str(path), compute=False, mode="w")).result()


def scan_to_zarr(src: Path, dst: Path) -> None:
    """The running sum of the source, stored with the delta filter (one task per chunk)."""
    steps = da.from_zarr(str(src))
    positions = ps.cumsum(steps)  # lazy: nothing runs yet
    da.to_zarr(positions, str(dst), mode="w", filters=[Delta(order=1, tuple_size=1)])


def verify(src: Path, dst: Path) -> int:
    """Compare the result with a running NumPy cumsum, chunk by chunk (exact); the chunks checked."""
    steps, positions = zarr.open_array(str(src), mode="r"), zarr.open_array(str(dst), mode="r")
    chunk = steps.chunks[0]
    carry = np.int64(0)
    for start in range(0, steps.shape[0], chunk):
        want = np.cumsum(steps[start:start + chunk]) + carry
        got = positions[start:start + chunk]
        if not np.array_equal(got, want):
            raise AssertionError(f"chunk at {start}: the result differs from NumPy's cumsum")
        carry = want[-1]
    return -(-steps.shape[0] // chunk)


def run(*, elements: int, chunk: int, workers: int, threads: int = 1, memory_limit: str = "1GiB",
        directory: Path | None = None, check: bool = True, measure_memory: bool = True) -> dict:
    """Make the source, scan it into the destination, verify; a summary.  ``measure_memory``
    compiles the kernels on the workers first and samples their memory during the scan."""
    work = Path(directory or tempfile.mkdtemp(prefix="prefixscan-zarr-"))
    work.mkdir(parents=True, exist_ok=True)
    src, dst = work / "steps.zarr", work / "positions.zarr"
    options = dict(n_workers=workers, threads_per_worker=threads, processes=True, memory_limit=memory_limit,
                   dashboard_address=None)
    try:
        with LocalCluster(**options) as cluster, Client(cluster) as client:
            make_source(client, src, elements, chunk)
            if measure_memory:
                baseline = client.run(_warm_up)
                client.run(_start_sampling)
            start = time.perf_counter()
            scan_to_zarr(src, dst)
            seconds = time.perf_counter() - start
            if measure_memory:
                peaks = client.run(_stop_sampling)
        summary = {
            "elements": elements, "chunk": chunk, "chunks": -(-elements // chunk), "workers": workers,
            "threads_per_worker": threads, "memory_limit": memory_limit, "data_bytes": elements * 8,
            "seconds": seconds, "elements_per_s": elements / seconds,
            "source_disk_bytes": _disk_bytes(src), "result_disk_bytes": _disk_bytes(dst),
        }
        if measure_memory:  # the most any worker held during the scan, over its baseline, in chunks
            summary["peak_over_baseline_in_chunks"] = max(max(0, peaks[w] - baseline[w]) for w in peaks) / (chunk * 8)
        if check:
            summary["chunks_verified"] = verify(src, dst)
        return summary
    finally:
        if directory is None:
            shutil.rmtree(work, ignore_errors=True)


def _integer(text: str) -> int:
    """An integer written as digits or as a power, "2**26"."""
    base, _, exponent = text.partition("**")
    return int(base) ** int(exponent) if exponent else int(base)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--elements", default="2**26", help="int64 elements (an expression: 2**26)")
    parser.add_argument("--chunk", default="2**21", help="elements per chunk")
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--threads", type=int, default=1, help="threads per worker")
    parser.add_argument("--memory-limit", default="1GiB", help="per worker, as dask takes it")
    parser.add_argument("--dir", type=Path, default=None, help="where the Zarr arrays go (default: a temporary one)")
    parser.add_argument("--no-check", action="store_true", help="skip the exact chunk-by-chunk comparison")
    args = parser.parse_args(argv)
    summary = run(elements=_integer(args.elements), chunk=_integer(args.chunk), workers=args.workers,
                  threads=args.threads, memory_limit=args.memory_limit, directory=args.dir,
                  check=not args.no_check)
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
