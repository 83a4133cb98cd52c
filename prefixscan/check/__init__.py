"""``prefixscan check``: a self-test of every feature on this machine.

Each feature (:data:`FEATURES`, in :mod:`prefixscan.check.cases`) runs the
public API on fresh random data on the chosen device (NumPy arrays on ``cpu``;
torch CUDA tensors on ``cuda``, where ``backend=None`` picks the GPU backend)
and compares the result with the plain-loop reference of
:mod:`prefixscan.testing` (:mod:`prefixscan.check.context`).  One line per
feature, PASS, FAIL or SKIP; the exit status is non-zero when any feature fails.

Python API: :func:`run_checks` returns the list of results; :func:`main`
prints them and returns the exit status.
"""

from __future__ import annotations

import linecache
import os
import sys
import time
import traceback
from dataclasses import dataclass

import prefixscan as ps

from .._errors import short_error
from .._install_hint import install_command
from .cases import FEATURES
from .context import CheckFailure, Context, Device

__all__ = ["CheckFailure", "CheckResult", "FEATURES", "run_checks", "main", "is_deliberate_limitation"]

_PACKAGE_DIR = os.path.dirname(os.path.abspath(ps.__file__))


@dataclass
class CheckResult:
    name: str
    status: str  # "PASS", "FAIL" or "SKIP"
    seconds: float
    cases: int
    message: str = ""


def is_deliberate_limitation(exc: BaseException) -> bool:
    """True when a NotImplementedError comes from a ``raise`` in prefixscan's own
    code (a documented limitation: SKIP), not from a library it calls (FAIL)."""
    tb = exc.__traceback__
    last = None
    while tb is not None:
        last, tb = tb, tb.tb_next
    if last is None:
        return False
    filename = os.path.abspath(last.tb_frame.f_code.co_filename)
    if not filename.startswith(_PACKAGE_DIR + os.sep):
        return False
    return linecache.getline(filename, last.tb_lineno).strip().startswith("raise")


def _run_feature(fn, ctx: Context, verbose: bool) -> tuple[str, str]:
    """(status, message) of one feature."""
    try:
        fn(ctx)
    except NotImplementedError as exc:
        if is_deliberate_limitation(exc):
            return "SKIP", str(exc) or "not implemented"
        message = short_error(exc)
        return "FAIL", message + ("\n" + traceback.format_exc() if verbose else "")
    except CheckFailure as exc:
        message = str(exc)
        if verbose and exc.__cause__ is not None:
            message += "\n" + "".join(traceback.format_exception(exc.__cause__))
        return "FAIL", message
    except Exception as exc:  # noqa: BLE001 - any error is a failure of the feature
        message = short_error(exc)
        return "FAIL", message + ("\n" + traceback.format_exc() if verbose else "")
    return "PASS", ""


def run_checks(device: str = "cpu", quick: bool = False, seed: int | None = None,
               only: str | None = None, stream=None, verbose: bool = False) -> list[CheckResult]:
    """Run every feature check; print one line per feature to ``stream`` (None: silent)."""
    ctx = Context(Device(device), quick, seed)
    if stream is not None:
        print(f"prefixscan {getattr(ps, '__version__', '?')} self-test on {device} "
              f"({'quick' if quick else 'full'}, seed {ctx.seed})", file=stream, flush=True)
    results = []
    width = max(len(name) for name, _ in FEATURES)
    for name, fn in FEATURES:
        if only and only.lower() not in name.lower():
            continue
        ctx.cases = 0
        t0 = time.perf_counter()
        status, message = _run_feature(fn, ctx, verbose)
        dt = time.perf_counter() - t0
        result = CheckResult(name, status, dt, ctx.cases, message)
        results.append(result)
        if stream is not None:
            line = f"{status}  {name:<{width}}  {ctx.cases:4d} cases  {dt:6.2f} s"
            if message:
                short = message if verbose else message.splitlines()[0][:300]
                line += f"\n      {short}"
            print(line, file=stream, flush=True)
    return results


def main(device: str = "cpu", quick: bool = False, seed: int | None = None, only: str | None = None,
         verbose: bool = False, stream=None) -> int:
    """Print the self-test and return the exit status (0: all passed)."""
    stream = stream if stream is not None else sys.stdout
    t0 = time.perf_counter()
    try:
        results = run_checks(device, quick=quick, seed=seed, only=only, stream=stream, verbose=verbose)
    except ImportError as exc:  # only the device set-up imports: torch for --device cuda
        print(f"prefixscan check: --device {device} needs torch: {install_command('gpu')} ({exc})",
              file=sys.stderr)
        return 2
    except RuntimeError as exc:
        print(f"prefixscan check: {exc}", file=sys.stderr)
        return 2
    failed = [r for r in results if r.status == "FAIL"]
    skipped = [r for r in results if r.status == "SKIP"]
    passed = len(results) - len(failed) - len(skipped)
    print(f"{passed} passed, {len(failed)} failed, {len(skipped)} skipped "
          f"in {time.perf_counter() - t0:.1f} s", file=stream)
    return 1 if failed else 0
