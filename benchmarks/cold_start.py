"""Cold start and a stream of new lengths, each measured in a fresh Python process.

    python benchmarks/cold_start.py --device cuda --out DIR [--lengths 300] [--n 1048576]

Every row runs in its own subprocess (``python benchmarks/cold_start.py --child ...``)
whose ``PREFIXSCAN_CACHE_DIR`` is an empty directory (the shipped table decides), so
nothing the parent process compiled or loaded is reused.  Triton's kernel cache
(``TRITON_CACHE_DIR``) is an empty directory for the *cold* rows (a machine that never
ran prefixscan) and the directory the cold rows filled for the *warm* rows (a new
process on a machine that has run it before).

Rows:

* ``first``: wall seconds from before ``import torch`` to the return of the first
  ``prefixscan.cumsum`` of ``--n`` int32 elements on the device, the result read back;
  split into the imports (torch's included), the device's first allocation (CUDA's
  context), and the call.  The peer's row, ``torch.cumsum``, runs in its own process the
  same way.  Both give int64 sums of int32 input (NumPy's and torch's rule).
* ``stream``: ``--lengths`` distinct lengths drawn log-uniformly from 10^3..2*10^5
  (seeded), int32 on the device, each scanned once (``prefixscan.cumsum``), then one
  synchronization; total wall seconds and the mean per call, against ``torch.cumsum``
  over the same lengths in its own fresh process.  The arrays are made before the clock
  starts, and each result is checked against ``torch.cumsum`` after it stops.

Before the rows, prefixscan's modules are compiled to bytecode (``compileall``, as ``pip
install`` does), so that no row pays for compiling them: a source checkout under
``PYTHONDONTWRITEBYTECODE=1`` would otherwise compile every module again in each fresh
process (docs/design/cold-start.md has what that cost); ``--no-compile`` leaves them as
they are.

Each row records ``triton_cache_files``, the files in its ``TRITON_CACHE_DIR`` after it
ran (with the shipped kernels nothing compiles: the *warm* rows then find the directory as
empty as the cold rows did).  ``--audit`` also counts, in each row's process, what
reaches Triton from the moment before ``import torch``: imports of ``triton`` modules,
files opened or listed under Triton's package or cache directories (the shipped cubins
under ``prefixscan/backends/triton/aot/`` excepted), libraries loaded with ``ctypes`` and
subprocesses (Triton compiles its driver helper and launchers with the C compiler):
``triton_events`` in the row (Python's audit hooks: C code that opens files itself is
not seen).

Writes ``DIR/cold-start-<device>.json`` and ``.md``.  With ``--profile`` every
prefixscan row runs its timed part again, in another fresh process, under cProfile, and
``DIR/cold-start-profile-<row>-<Triton cache>.txt`` lists the functions by cumulative
time (imports show as ``_find_and_load``; the rows' seconds come from the unprofiled
runs).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _lengths(count: int, seed: int = 7) -> list[int]:
    import random

    rng = random.Random(seed)
    seen: set[int] = set()
    while len(seen) < count:
        seen.add(int(round(10 ** rng.uniform(3.0, 5.30103))))
    out = sorted(seen)
    rng.shuffle(out)
    return out


class _Profile:
    """cProfile around the timed part of a child row (``path``: where the report goes;
    None: nothing is profiled)."""

    def __init__(self, path):
        self.path = path
        self.profiler = None
        if path:
            import cProfile

            self.profiler = cProfile.Profile()

    def __enter__(self):
        if self.profiler is not None:
            self.profiler.enable()

    def __exit__(self, *exc):
        if self.profiler is not None:
            self.profiler.disable()

    def write(self) -> None:
        if self.profiler is None:
            return
        import io
        import pstats

        text = io.StringIO()
        pstats.Stats(self.profiler, stream=text).sort_stats("cumulative").print_stats(60)
        Path(self.path).write_text(text.getvalue())


_FILE_EVENTS = ("open", "os.listdir", "os.scandir", "os.mkdir", "os.rename", "os.replace", "os.remove",
                "shutil.rmtree", "shutil.copyfile")


def audit_triton() -> dict:
    """Count, from now on in this process, what reaches Triton (Python's audit hooks,
    which cannot be removed: call it in a process of its own).  Returns the live record:
    ``imports`` (triton modules), ``files`` ((event, path) under Triton's package or cache
    directories: ``TRITON_CACHE_DIR``, ``~/.triton``; prefixscan's own files excepted),
    ``dlopen`` (libraries ``ctypes`` loads) and ``subprocess`` (commands started)."""
    record: dict = {"imports": [], "files": [], "dlopen": [], "subprocess": []}
    own = os.path.join("", "prefixscan", "backends", "triton")  # prefixscan's backend, any tree
    roots = [os.path.join(os.path.expanduser("~"), ".triton")]
    if os.environ.get("TRITON_CACHE_DIR"):
        roots.append(os.path.realpath(os.environ["TRITON_CACHE_DIR"]))

    def triton_path(path) -> bool:
        if isinstance(path, int):
            return False
        try:
            text = os.path.realpath(os.fsdecode(path))
        except (TypeError, ValueError):
            return False
        if own in text:
            return False
        return any(text.startswith(r) for r in roots) or f"{os.sep}triton{os.sep}" in text \
            or text.endswith(f"{os.sep}triton")

    def hook(event, args):
        if event == "import":
            if args[0] == "triton" or args[0].startswith("triton."):
                record["imports"].append(args[0])
        elif event in _FILE_EVENTS:
            if args and args[0] is not None and triton_path(args[0]):
                record["files"].append((event, os.fsdecode(args[0])))
        elif event == "ctypes.dlopen":
            record["dlopen"].append(str(args[0]))
        elif event == "subprocess.Popen":
            record["subprocess"].append(" ".join(map(str, args[1]))[:200] if args[1] else str(args[0]))

    sys.addaudithook(hook)
    return record


def _child(args) -> dict:
    """One measurement in this (fresh) process; prints its JSON row."""
    audit = audit_triton() if getattr(args, "audit", False) else None
    profile = _Profile(getattr(args, "profile_out", None))
    t0 = time.perf_counter()
    import torch

    if args.peer == "prefixscan":
        import prefixscan as ps

        scan = ps.cumsum
    else:
        scan = torch.cumsum
    t_import = time.perf_counter()
    device = torch.device(args.device)
    row: dict = {"row": args.row, "peer": args.peer}
    if args.row == "first":
        x = torch.arange(args.n, dtype=torch.int32, device=device) % 7 - 3
        if device.type == "cuda":
            torch.cuda.synchronize()
        t_alloc = time.perf_counter()
        with profile:
            y = scan(x, 0) if args.peer == "torch" else scan(x)
            last = int(y[-1].item())
        t_call = time.perf_counter()
        expect = int(torch.cumsum(x.to(torch.int64), 0)[-1].item())
        row.update(import_s=t_import - t0, alloc_s=t_alloc - t_import, call_s=t_call - t_alloc,
                   total_s=t_call - t0, correct=last == expect)
    else:
        gen = torch.Generator().manual_seed(3)
        lengths = _lengths(args.lengths)
        xs = [torch.randint(-9, 10, (m,), generator=gen, dtype=torch.int32).to(device) for m in lengths]
        if device.type == "cuda":
            torch.cuda.synchronize()
        t1 = time.perf_counter()
        with profile:
            ys = [scan(x, 0) if args.peer == "torch" else scan(x) for x in xs]
            if device.type == "cuda":
                torch.cuda.synchronize()
        t2 = time.perf_counter()
        ok = all(torch.equal(y.to(torch.int64), torch.cumsum(x.to(torch.int64), 0)) for x, y in zip(xs, ys))
        row.update(calls=len(xs), total_s=t2 - t1, per_call_us=(t2 - t1) / len(xs) * 1e6, correct=ok,
                   import_s=t_import - t0)
    profile.write()
    if audit is not None:
        row["triton_events"] = {key: len(v) for key, v in audit.items()}
        row["triton_events_first"] = {key: v[:5] for key, v in audit.items() if v}
    return row


def _compile_package() -> bool:
    """Write the bytecode of every prefixscan module (as ``pip install`` does; honours
    ``PYTHONPYCACHEPREFIX``); whether it could."""
    import compileall
    import importlib.util

    spec = importlib.util.find_spec("prefixscan")
    if spec is None or not spec.submodule_search_locations:
        return False
    return all(compileall.compile_dir(location, quiet=1) for location in spec.submodule_search_locations)


def _run_child(row: str, peer: str, triton_cache: str, args, profile_out: Path | None = None) -> dict:
    env = dict(os.environ)
    with tempfile.TemporaryDirectory(prefix="prefixscan-cold-") as cache:
        env["PREFIXSCAN_CACHE_DIR"] = cache
        env["TRITON_CACHE_DIR"] = triton_cache
        cmd = [sys.executable, __file__, "--child", "--row", row, "--peer", peer, "--device", args.device,
               "--n", str(args.n), "--lengths", str(args.lengths)]
        if profile_out is not None:
            cmd += ["--profile-out", str(profile_out)]
        if args.audit:
            cmd += ["--audit"]
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        return {"row": row, "peer": peer, "error": proc.stderr[-2000:]}
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    result["triton_cache_files"] = sum(len(files) for _, _, files in os.walk(triton_cache))
    return result


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--n", type=int, default=1 << 20)
    parser.add_argument("--lengths", type=int, default=300)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--no-compile", action="store_true",
                        help="do not compile prefixscan's modules to bytecode before the rows")
    parser.add_argument("--profile", action="store_true",
                        help="also profile each prefixscan row in a fresh process (needs --out)")
    parser.add_argument("--audit", action="store_true",
                        help="count what reaches Triton in each row's process (imports, files, libraries, "
                             "subprocesses): triton_events in the rows")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--profile-out", help=argparse.SUPPRESS)
    parser.add_argument("--row", choices=("first", "stream"), help=argparse.SUPPRESS)
    parser.add_argument("--peer", choices=("prefixscan", "torch"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.profile and not args.out:
        parser.error("--profile needs --out (the reports go there)")
    if args.child:
        print(json.dumps(_child(args)))
        return 0
    compiled = False if args.no_compile else _compile_package()
    rows = []
    for row in ("first", "stream"):
        # the cold prefixscan row fills this empty Triton cache, the warm row reuses it
        with tempfile.TemporaryDirectory(prefix="triton-cold-") as triton_cache:
            for state, peer in (("cold", "prefixscan"), ("warm", "prefixscan"), ("-", "torch")):
                result = _run_child(row, peer, triton_cache, args)
                result["triton_cache"] = state
                rows.append(result)
                print(json.dumps(result), flush=True)
                if args.profile and peer == "prefixscan":
                    # Again, profiled, in the same state: the cold row's cache is refilled
                    # into a fresh directory of its own.
                    args.out.mkdir(parents=True, exist_ok=True)
                    report = args.out / f"cold-start-profile-{row}-{state}.txt"
                    if state == "cold":
                        with tempfile.TemporaryDirectory(prefix="triton-cold-profile-") as fresh:
                            _run_child(row, peer, fresh, args, report)
                    else:
                        _run_child(row, peer, triton_cache, args, report)
    lines = ["| row | peer | Triton cache | import s | first allocation s | call s | total s | per call us | correct |",
             "|---|---|---|---:|---:|---:|---:|---:|---|"]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['row']} | {r['peer']} | {r['triton_cache']} | failed | | | | | |")
            continue
        fmt = lambda key: f"{r[key]:.3f}" if key in r else ""  # noqa: E731
        per = f"{r['per_call_us']:.1f}" if "per_call_us" in r else ""
        lines.append(f"| {r['row']} | {r['peer']} | {r['triton_cache']} | {fmt('import_s')} | {fmt('alloc_s')} | "
                     f"{fmt('call_s')} | {fmt('total_s')} | {per} | {r.get('correct')} |")
    table = "\n".join(lines)
    print(table)
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        import torch

        meta = {"torch": torch.__version__, "command": " ".join(sys.argv), "n": args.n, "lengths": args.lengths,
                "bytecode_compiled": compiled, "PYTHONDONTWRITEBYTECODE": os.environ.get("PYTHONDONTWRITEBYTECODE")}
        (args.out / f"cold-start-{args.device}.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1))
        (args.out / f"cold-start-{args.device}.md").write_text(table + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
