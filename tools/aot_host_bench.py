"""Host time of ``prefixscan.cumsum`` on the shipped sm_90 kernels, on a machine without a GPU.

On an H200 a stream of new lengths through the ahead-of-time kernels
(``prefixscan.backends.triton.aot``) is bound by the Python work around each launch
(docs/design/host-path.md, "The shipped kernels: a stream of new lengths").  This tool
times that work where there is no GPU, with as little of CUDA faked as the path touches:

* **tensors**: the inputs are CPU tensors of a ``torch.Tensor`` subclass that reports the
  device ``cuda:0`` (``device``, ``is_cuda``, ``get_device``) and takes no Python dispatch
  (``__torch_function__`` disabled): shape, dtype, strides and ``data_ptr`` are torch's own.
  ``torch.zeros`` and ``torch.tensor`` asked for a CUDA device make such a tensor in host
  memory; ``torch.empty`` (the results) cuts it from a ring of host memory allocated once,
  as CUDA's caching allocator serves memory it holds (a host allocation per result would
  add an mmap, tens of microseconds, that a GPU does not pay); a slice, near what
  ``torch.empty`` costs on a GPU;
* **torch.cuda**: the device queries the path makes answer as one H200 would (name
  ``NVIDIA H200``, so that its shipped table serves, capability 9.0, 132 SMs, no graph
  capture, stream 0);
* **the CUDA driver**: ``libcuda.so.1`` is a stub compiled here (``gcc``) and found first
  on ``LD_LIBRARY_PATH``, so that the loader's own ctypes bindings (``aot/driver.py``) make
  their real calls, argument conversion included; the stub's ``cuLaunchKernel`` copies the
  launch's parameters (as the driver does) and returns.  What the real driver adds to a
  launch (2-5 us on the H200) is not in these numbers.

Nothing of prefixscan is patched.  Each run is a fresh Python process (prefixscan's
modules compiled to bytecode first, as ``pip install`` does; an empty
``PREFIXSCAN_CACHE_DIR``), which makes the stream of ``benchmarks/cold_start.py``: its 300
lengths (same seed), int32, each scanned once, timed call by call; then the same tensors
again (repeated lengths: the planned replay).  Reported, the median over the runs:

* ``import``: ``import prefixscan`` (torch already imported);
* ``first``: the first call (the backend's imports, the shipped table, the first variant's
  module load);
* ``new``: the other calls of new lengths, total and median per call;
* ``repeat``: the last 16 lengths again, 20 times each (a repeated length: the planned
  replay), total and median per call.

Every call must have gone through the shipped kernels (the loader's launch count is
checked) without importing Triton.

    python tools/aot_host_bench.py [--runs 5] [--lengths 300]
    python tools/aot_host_bench.py --tree /tmp/base --tree .   # before and after, runs alternating
    python tools/aot_host_bench.py --profile /tmp/stream.prof   # + a cProfile of one run
    python tools/aot_host_bench.py --args-out /tmp/args.json     # the launches' parameters
    python tools/aot_host_bench.py --length-list edges.json --dtype float64 --args-out /tmp/e.json

``--audit-triton`` counts, in each run, what reaches Triton from before ``import prefixscan``
to the end of the stream (``TRITON_CACHE_DIR`` is always an empty directory of the run's own;
the files in it afterwards are counted too): docs/design/cold-start.md, "An empty Triton cache".
``--fresh-scans`` runs every call on a new ``prefixscan.make_scan`` (cumsum's arguments),
so that each takes the full path (every check, the variant chosen for the request): the
launches ``Scan``'s plans (per signature, per length class) must reproduce.
``--length-list`` replaces the stream's lengths by a JSON list of lengths (edge lengths:
2^k - 1, 2^k, 2^k + 1, the variants' largest; inputs above 2^24 elements are left
uninitialized, never read), ``--dtype`` the input dtype (int32, int64, float32, float64).

``--args-out`` writes every launch of one run (grid, threads, shared memory, stream and
the kernel parameters as values, pointers named by the tensor they point into: x, y, or
the order in which other buffers first appeared), so that two commits can be compared
launch for launch.  ``--profile`` writes cProfile's statistics of one more run's timed
part (``python -m pstats FILE``, or the ``.txt`` beside it: top functions by cumulative
and by own time).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REPEATED = 16  # lengths of the repeated pass (the last of the stream, still planned)
REPEAT_ROUNDS = 20  # calls of each
ARENA_BYTES = 1 << 29  # the fake device memory results are cut from (virtual: never touched)

# -- the stub of libcuda.so.1 -----------------------------------------------------------------

_STUB_C = r"""
#include <stdint.h>
#include <string.h>

#define MAX_RECORDS 8192
#define MAX_PARAMS 32
typedef struct {
    uint64_t function, stream;
    uint32_t grid, threads, shared, nparams;
    uint32_t buffer_bytes;              /* > 0: the parameters came as one buffer (extra) */
    uint64_t params[MAX_PARAMS];        /* 8 bytes read at each kernelParams pointer, or the buffer */
} Record;

Record stub_records[MAX_RECORDS];
int stub_count = 0;          /* launches made */
int stub_nparams = 0;        /* parameters to read per launch (kernelParams form) */
int stub_fail = 0;           /* > 0: cuLaunchKernel returns this error, launching nothing */
static uintptr_t next_handle = 0x1000;
static const char *message = "stub";

int cuGetErrorString(int code, const char **text) { *text = message; return 0; }
int cuCtxGetCurrent(void **ctx) { *ctx = (void *)0xC0; return 0; }
int cuCtxGetDevice(int *dev) { *dev = 0; return 0; }
int cuModuleLoadData(void **module, const void *image) { *module = (void *)(next_handle++); return 0; }
int cuModuleGetFunction(void **fn, void *module, const char *name) { *fn = (void *)(next_handle++); return 0; }
int cuFuncGetAttribute(int *value, int attribute, void *fn) { *value = 0; return 0; }
int cuFuncSetAttribute(void *fn, int attribute, int value) { return 0; }
int cuFuncSetCacheConfig(void *fn, int config) { return 0; }
int cuDeviceGetAttribute(int *value, int attribute, int dev) { *value = 232448; return 0; }

int cuLaunchKernel(void *fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                   unsigned shared, void *stream, void **params, void **extra) {
    if (stub_fail) return stub_fail;
    Record *r = &stub_records[stub_count % MAX_RECORDS];
    r->function = (uint64_t)(uintptr_t)fn;
    r->stream = (uint64_t)(uintptr_t)stream;
    r->grid = gx; r->threads = bx; r->shared = shared;
    r->nparams = 0; r->buffer_bytes = 0;
    if (params) {
        int n = stub_nparams < MAX_PARAMS ? stub_nparams : MAX_PARAMS;
        for (int i = 0; i < n; i++) memcpy(&r->params[i], params[i], 8);
        r->nparams = n;
    } else if (extra) {
        void *buffer = 0; size_t bytes = 0;
        for (int i = 0; extra[i] != (void *)0; i += 2) {
            if (extra[i] == (void *)1) buffer = extra[i + 1];
            else if (extra[i] == (void *)2) bytes = *(size_t *)extra[i + 1];
        }
        if (bytes > sizeof r->params) bytes = sizeof r->params;
        if (buffer) memcpy(r->params, buffer, bytes);
        r->buffer_bytes = (uint32_t)bytes;
    }
    stub_count++;
    return 0;
}
"""


def build_stub(directory: Path) -> Path:
    """Compile the stub driver as ``directory/libcuda.so.1``."""
    source = directory / "stub_cuda.c"
    source.write_text(_STUB_C)
    lib = directory / "libcuda.so.1"
    subprocess.run(["gcc", "-O2", "-shared", "-fPIC", "-o", str(lib), str(source)], check=True)
    return lib


# -- the fake CUDA side of torch (child process) ------------------------------------------------


def install_fake_cuda(torch, arena_bytes: int = ARENA_BYTES):
    """Make this process's torch answer the scan path's device questions as one H200 would;
    returns ``to_cuda(tensor)``, which makes a CPU tensor look like a CUDA one."""
    from types import SimpleNamespace

    cuda0 = torch.device("cuda", 0)

    class FakeCudaTensor(torch.Tensor):
        __torch_function__ = torch._C._disabled_torch_function_impl
        device = property(lambda self: cuda0)
        is_cuda = property(lambda self: True)

        def get_device(self):
            return 0

    # prefixscan tells torch tensors by their type's module (prefixscan._arrays): the
    # subclass must read as torch's.
    FakeCudaTensor.__module__ = "torch.fake_cuda"

    def to_cuda(t):
        return t.as_subclass(FakeCudaTensor)

    def on_cuda(device) -> bool:
        if device is None:
            return False
        if isinstance(device, str):
            return device.startswith("cuda")
        return getattr(device, "type", None) == "cuda"

    # Results come from a ring of host memory (views, 256-byte aligned), as CUDA's caching
    # allocator hands out memory it holds: a host allocation per result (an mmap for the
    # larger ones, tens of microseconds here) would stand for a cost the GPU does not have.
    arenas: dict = {}  # dtype -> [1-D tensor of ARENA_BYTES, next free element]
    real_empty = torch.empty

    def empty(*size, dtype=None, device=None, **kwargs):
        if not on_cuda(device):
            return real_empty(*size, dtype=dtype, device=device, **kwargs)
        if kwargs:
            return to_cuda(real_empty(*size, dtype=dtype, **kwargs))
        shape = tuple(size[0]) if len(size) == 1 and not isinstance(size[0], int) else size
        ring = arenas.get(dtype)
        if ring is None:
            memory = real_empty(arena_bytes // dtype.itemsize + 256, dtype=dtype)
            ring = arenas[dtype] = [memory, (-memory.data_ptr() % 256) // dtype.itemsize]
        n = math.prod(shape)
        at = ring[1]
        if at + n > arena_bytes // dtype.itemsize:
            at = (-ring[0].data_ptr() % 256) // dtype.itemsize
        ring[1] = at + -(-n * dtype.itemsize // 256) * 256 // dtype.itemsize
        t = ring[0][at: at + n]
        return (t if len(shape) == 1 else t.view(shape)).as_subclass(FakeCudaTensor)

    def factory(real):  # kept buffers (status words, counters, identities): their own memory
        def make(*args, device=None, **kwargs):
            if on_cuda(device):
                return to_cuda(real(*args, **kwargs))
            return real(*args, device=device, **kwargs)

        make.__name__ = real.__name__
        return make

    torch.empty = empty
    for name in ("zeros", "tensor"):
        setattr(torch, name, factory(getattr(torch, name)))
    props = SimpleNamespace(name="NVIDIA H200", multi_processor_count=132, major=9, minor=0,
                            total_memory=150 << 30)
    fake = dict(is_available=lambda: True, device_count=lambda: 1, current_device=lambda: 0,
                get_device_name=lambda index=None: props.name, get_device_capability=lambda index=None: (9, 0),
                get_device_properties=lambda index=None: props, is_current_stream_capturing=lambda: False,
                synchronize=lambda device=None: None, mem_get_info=lambda device=None: (140 << 30, 150 << 30),
                memory_reserved=lambda device=None: 0, memory_allocated=lambda device=None: 0)
    for name, fn in fake.items():
        setattr(torch.cuda, name, fn)
    torch._C._cuda_getCurrentRawStream = lambda index: 0
    torch._C._cuda_isCurrentStreamCapturing = lambda: False
    return to_cuda


def _cold_start():
    """benchmarks/cold_start.py as a module."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("cold_start", ROOT / "benchmarks" / "cold_start.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _lengths(count: int) -> list[int]:
    """benchmarks/cold_start.py's stream of lengths."""
    return _cold_start()._lengths(count)


def _launch_records(stub, params_of) -> list:
    """The stub's launches, pointers named (x, y, or b0, b1, ... in order of appearance)."""
    import ctypes

    class Record(ctypes.Structure):
        _fields_ = [("function", ctypes.c_uint64), ("stream", ctypes.c_uint64), ("grid", ctypes.c_uint32),
                    ("threads", ctypes.c_uint32), ("shared", ctypes.c_uint32), ("nparams", ctypes.c_uint32),
                    ("buffer_bytes", ctypes.c_uint32), ("params", ctypes.c_uint64 * 32)]

    count = ctypes.c_int.in_dll(stub, "stub_count").value
    records = (Record * 8192).in_dll(stub, "stub_records")
    out = []
    for i in range(min(count, 8192)):
        r = records[i]
        params = params_of(r.function)
        raw = bytes(r.params)
        values, offset = [], 0
        for index, p in enumerate(params):
            size = 8 if p["type"].startswith("*") or p["type"] == "i64" else 4
            if r.buffer_bytes:
                offset = -(-offset // size) * size  # natural alignment, as the kernel's parameter buffer
                chunk = raw[offset: offset + size]
                offset += size
            else:
                chunk = raw[index * 8: index * 8 + size]
            values.append(int.from_bytes(chunk, "little", signed=not p["type"].startswith("*")))
        out.append({"function": r.function, "grid": r.grid, "threads": r.threads, "shared": r.shared,
                    "stream": r.stream, "form": "buffer" if r.buffer_bytes else "pointers", "params": values})
    return out


def child(args) -> dict:
    import ctypes

    import torch

    lengths = json.loads(Path(args.length_list).read_text()) if args.length_list else _lengths(args.lengths)
    # Room for the largest results twice over (virtual memory: never touched).
    to_cuda = install_fake_cuda(torch, max(ARENA_BYTES, 2 * 8 * (max(lengths) + 64)))
    stub = ctypes.CDLL("libcuda.so.1")
    tree = Path(args.tree)
    counts = {len(json.loads(f.read_text())["params"])
              for f in (tree / "prefixscan/backends/triton/aot/sm90").glob("*.json")}
    (ctypes.c_int.in_dll(stub, "stub_nparams").value,) = counts  # every shipped variant has the same list
    audit = _cold_start().audit_triton() if args.audit_triton else None
    gen = torch.Generator().manual_seed(3)
    dtype = getattr(torch, args.dtype)
    xs = [to_cuda(torch.randint(-9, 10, (m,), generator=gen, dtype=dtype) if m <= 1 << 24
                  else torch.empty(m, dtype=dtype)) for m in lengths]
    t0 = time.perf_counter()
    import prefixscan as ps

    t_import = time.perf_counter() - t0
    if not ps.__file__.startswith(str(tree)):
        raise SystemExit(f"prefixscan imported from {ps.__file__}, not from {tree}")
    if args.fresh_scans:  # the full path for every call: a Scan without plans each time
        acc = "int64" if args.dtype == "int32" else args.dtype

        def cumsum(x):
            return ps.make_scan("add", dtype=acc)(x)
    else:
        cumsum = ps.cumsum
    profiler = None
    if args.profile_out:
        import cProfile

        profiler = cProfile.Profile()
        profiler.enable()
    new, repeat = [], []
    clock, cpu = time.perf_counter, time.thread_time
    ys, again = [], []
    c0 = cpu()
    for x in xs:
        t = clock()
        ys.append(cumsum(x))
        new.append(clock() - t)
    c1 = cpu()
    # Repeated lengths: a Scan keeps the plans of at most 64 signatures, so the stream's
    # 300 lengths would all be new again; the last REPEATED of them are planned.
    repeated = xs[-REPEATED:] * REPEAT_ROUNDS
    for x in repeated:
        t = clock()
        again.append(cumsum(x))
        repeat.append(clock() - t)
    c2 = cpu()
    if profiler is not None:
        profiler.disable()
        profiler.dump_stats(args.profile_out)
    first = new.pop(0)
    from prefixscan.backends.triton import aot

    launcher = aot.default_launcher()
    row = {"tree": str(tree), "import_s": t_import, "first_s": first, "new_total_s": sum(new),
           "new_median_us": statistics.median(new) * 1e6, "repeat_total_s": sum(repeat),
           "repeat_median_us": statistics.median(repeat) * 1e6, "stream_total_s": first + sum(new),
           "stream_cpu_s": c1 - c0, "repeat_cpu_s": c2 - c1, "calls": len(xs), "repeat_calls": len(repeated),
           "aot_launches": launcher.launches, "stub_launches": ctypes.c_int.in_dll(stub, "stub_count").value,
           "triton_imported": "triton" in sys.modules,
           "outputs_ok": all(type(y).__name__ == "FakeCudaTensor" and y.shape == x.shape
                             and y.dtype == (torch.int64 if x.dtype == torch.int32 else x.dtype)
                             for x, y in zip(xs, ys))}
    if audit is not None:  # what reached Triton from before ``import prefixscan`` on
        row["triton_events"] = audit
    if args.args_out:
        specs, variants = {}, {}
        for (_name, cubin, _ctx), loaded in launcher.functions.items():
            if not isinstance(loaded, str):  # the handle, or (handle, packing)
                fn = loaded[0] if isinstance(loaded, tuple) else loaded
                variants[fn] = cubin[: -len(".cubin.z")]
                specs[fn] = aot.variants.load_spec(variants[fn])["params"]
        records = _launch_records(stub, lambda fn: specs[fn])
        names: dict = {}
        for record, x, y in zip(records, xs + repeated, ys + again):
            fn = record.pop("function")
            params = specs[fn]
            record["variant"] = variants[fn]
            for i, p in enumerate(params):
                v = record["params"][i]
                if not p["type"].startswith("*") or v == 0:
                    continue
                if v == x.data_ptr():
                    record["params"][i] = "x"
                elif v == y.data_ptr():
                    record["params"][i] = "y"
                else:
                    record["params"][i] = names.setdefault(v, f"b{len(names)}")
        Path(args.args_out).write_text(json.dumps(records, indent=0))
    return row


# -- the parent -------------------------------------------------------------------------------


def _compile_package(tree: Path) -> None:
    import compileall

    compileall.compile_dir(str(tree / "prefixscan"), quiet=1)


def run_child(stub_dir: Path, tree: Path, args, profile_out=None, args_out=None) -> dict:
    env = dict(os.environ)
    env["LD_LIBRARY_PATH"] = f"{stub_dir}:{env.get('LD_LIBRARY_PATH', '')}".rstrip(":")
    env["PYTHONPATH"] = str(tree)
    for name in ("TRITON_INTERPRET", "PREFIXSCAN_AOT", "PREFIXSCAN_AUTOTUNE"):
        env.pop(name, None)
    with tempfile.TemporaryDirectory(prefix="prefixscan-host-") as cache, \
            tempfile.TemporaryDirectory(prefix="triton-empty-") as triton_cache:
        env["PREFIXSCAN_CACHE_DIR"] = cache
        env["TRITON_CACHE_DIR"] = triton_cache  # empty: a machine that never ran Triton
        cmd = [sys.executable, __file__, "--child", "--lengths", str(args.lengths), "--tree", str(tree),
               "--dtype", args.dtype]
        if args.length_list:
            cmd += ["--length-list", str(Path(args.length_list).resolve())]
        if args.fresh_scans:
            cmd += ["--fresh-scans"]
        if profile_out:
            cmd += ["--profile-out", str(profile_out)]
        if args_out:
            cmd += ["--args-out", str(args_out)]
        if args.audit_triton:
            cmd += ["--audit-triton"]
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False, cwd=tempfile.gettempdir())
        cache_files = sum(len(files) for _, _, files in os.walk(triton_cache))
    if proc.returncode != 0:
        raise SystemExit(f"child failed:\n{proc.stderr[-4000:]}")
    row = json.loads(proc.stdout.strip().splitlines()[-1])
    row["triton_cache_files"] = cache_files
    launches = row["calls"] + row["repeat_calls"]
    if row["aot_launches"] != launches or row["stub_launches"] != launches or row["triton_imported"] \
            or not row["outputs_ok"]:
        raise SystemExit(f"not every call took the shipped kernels: {row}")
    return row


def _profile_text(path: Path) -> None:
    import io
    import pstats

    text = io.StringIO()
    stats = pstats.Stats(str(path), stream=text)
    stats.sort_stats("cumulative").print_stats(45)
    stats.sort_stats("tottime").print_stats(30)
    path.with_suffix(".txt").write_text(text.getvalue())


ROWS = (("import prefixscan (ms)", "import_s", 1e3), ("first call (ms)", "first_s", 1e3),
        ("other new lengths, total (ms)", "new_total_s", 1e3), ("  median call (us)", "new_median_us", 1),
        ("stream, total (ms)", "stream_total_s", 1e3), ("stream, CPU time (ms)", "stream_cpu_s", 1e3),
        ("repeated lengths, total (ms)", "repeat_total_s", 1e3), ("  median call (us)", "repeat_median_us", 1),
        ("repeated lengths, CPU time (ms)", "repeat_cpu_s", 1e3))


def summary(rows: list) -> dict:
    """Per row of :data:`ROWS`: (median, min, max) over the runs."""
    return {key: (statistics.median(r[key] for r in rows) * scale, min(r[key] for r in rows) * scale,
                  max(r[key] for r in rows) * scale) for _, key, scale in ROWS}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5,
                        help="fresh processes per tree (the median is reported; 0: only --profile / --args-out)")
    parser.add_argument("--lengths", type=int, default=300)
    parser.add_argument("--length-list", type=Path, help="a JSON list of lengths to scan instead of the stream")
    parser.add_argument("--dtype", default="int32", choices=("int32", "int64", "float32", "float64"))
    parser.add_argument("--fresh-scans", action="store_true",
                        help="every call on a new Scan (the full path each time: the launches to compare with)")
    parser.add_argument("--tree", type=Path, action="append",
                        help="a source tree holding prefixscan/ to measure (repeatable: runs alternate between "
                             "the trees, so that they share the machine's load; default: this repository)")
    parser.add_argument("--profile", type=Path, help="also cProfile one run's timed part into this file")
    parser.add_argument("--args-out", type=Path, help="write one run's launches (parameters) as JSON")
    parser.add_argument("--json", type=Path, help="write the runs and their medians as JSON")
    parser.add_argument("--audit-triton", action="store_true",
                        help="count what reaches Triton in each run (imports, files under its package or cache "
                             "directories, libraries, subprocesses; benchmarks/cold_start.py's audit) and print it")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--profile-out", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        args.tree = args.tree[0] if args.tree else ROOT
        print(json.dumps(child(args)))
        return 0
    trees = [t.resolve() for t in (args.tree or [ROOT])]
    for tree in trees:
        _compile_package(tree)
    rows: dict = {str(t): [] for t in trees}
    with tempfile.TemporaryDirectory(prefix="stub-cuda-") as stub_dir:
        build_stub(Path(stub_dir))
        for _ in range(args.runs):
            for tree in trees:
                rows[str(tree)].append(run_child(Path(stub_dir), tree, args))
        if args.profile:
            run_child(Path(stub_dir), trees[-1], args, profile_out=args.profile)
            _profile_text(args.profile)
        if args.args_out:
            run_child(Path(stub_dir), trees[-1], args, args_out=args.args_out)
    if args.audit_triton:
        for tree, runs in rows.items():
            for r in runs:
                print(f"{Path(tree).name}: TRITON_CACHE_DIR files after the run: {r['triton_cache_files']}; "
                      f"reached Triton: {json.dumps(r['triton_events'])}")
    if not args.runs:  # --runs 0: only the --profile / --args-out run
        return 0
    medians = {tree: summary(r) for tree, r in rows.items()}
    n = len(json.loads(args.length_list.read_text())) if args.length_list else args.lengths
    print(f"{args.runs} fresh processes per tree, {n} lengths (the first, then {n - 1} more), "
          f"{REPEATED} repeated {REPEAT_ROUNDS} times; median [min-max]")
    print(f"{'':34s}" + "".join(f"{Path(t).name[-24:]:>28s}" for t in medians))
    for label, key, _ in ROWS:
        cells = "".join(f"{m[key][0]:10.1f} [{m[key][1]:6.1f}-{m[key][2]:6.1f}]" for m in medians.values())
        print(f"{label:34s}{cells}")
    if args.json:
        args.json.write_text(json.dumps({"runs": rows, "median_min_max": medians}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
