"""``prefixscan check``: a self-test of every feature on this machine.

Each feature (:data:`FEATURES`, in :mod:`prefixscan.check.cases`) runs the
public API on fresh random data on the chosen device (NumPy arrays on ``cpu``;
torch CUDA tensors on ``cuda``, where ``backend=None`` picks the GPU backend)
and compares the result with the plain-loop reference of
:mod:`prefixscan.testing` (:mod:`prefixscan.check.context`).  One line per
feature, PASS, FAIL or SKIP; the exit status is non-zero when any feature fails.

While a feature runs, a line on stderr says which one (k of the number
selected), how many of its cases have run and which case ran last (rewritten in
place on a terminal, every few seconds on a pipe): the full run takes minutes,
some features one of them.  ``--quick`` runs every feature on fewer and smaller
cases (half a minute on two cores once Numba has cached the compiled kernels).

Python API: :func:`run_checks` returns the list of results; :func:`main`
prints them and returns the exit status; :func:`select_features` says which
features ``only`` selects.
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
from .._progress import Progress
from .cases import FEATURES
from .context import CheckFailure, Context, Device

__all__ = ["CheckFailure", "CheckResult", "FEATURES", "run_checks", "main", "select_features",
           "is_deliberate_limitation"]

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


def select_features(only: str | None = None) -> list:
    """The ``(name, check)`` pairs of :data:`FEATURES` whose name contains ``only``
    (case-insensitive; None or "": every feature).  ValueError when none does."""
    if not only:
        return list(FEATURES)
    chosen = [(name, fn) for name, fn in FEATURES if only.lower() in name.lower()]
    if not chosen:
        raise ValueError(f"only: no feature name contains {only!r}; the features are "
                         + "; ".join(name for name, _ in FEATURES))
    return chosen


def run_checks(device: str = "cpu", quick: bool = False, seed: int | None = None,
               only: str | None = None, stream=None, verbose: bool = False,
               progress=False) -> list[CheckResult]:
    """Run every feature check (those ``only`` selects, :func:`select_features`);
    print one line per feature to ``stream`` (None: silent) and, with
    ``progress`` (True: on stderr; or a text stream), the running feature and its
    cases."""
    features = select_features(only)
    ctx = Context(Device(device), quick, seed)
    if stream is not None:
        print(f"prefixscan {getattr(ps, '__version__', '?')} self-test on {device} "
              f"({'quick' if quick else 'full'}, seed {ctx.seed})", file=stream, flush=True)
    results = []
    width = max(len(name) for name, _ in features)
    bar = Progress(len(features), bool(progress), None if isinstance(progress, bool) else progress,
                   estimate=False)
    for k, (name, fn) in enumerate(features):
        ctx.cases = 0
        ctx.on_case = lambda label, name=name: bar.update(f"{name}: {ctx.cases} cases, last {label}")
        bar.update(f"{name}: starting")
        t0 = time.perf_counter()
        status, message = _run_feature(fn, ctx, verbose)
        dt = time.perf_counter() - t0
        result = CheckResult(name, status, dt, ctx.cases, message)
        results.append(result)
        bar.clear()
        if stream is not None:
            line = f"{status}  {name:<{width}}  {ctx.cases:4d} cases  {dt:6.2f} s"
            if message:
                short = message if verbose else message.splitlines()[0][:300]
                line += f"\n      {short}"
            print(line, file=stream, flush=True)
        bar.update(f"{name}: {status}", 1)
    ctx.on_case = None
    bar.clear()
    return results


def main(device: str = "cpu", quick: bool = False, seed: int | None = None, only: str | None = None,
         verbose: bool = False, stream=None, progress: bool = True) -> int:
    """Print the self-test and return the exit status (0: all passed; 2: it could
    not start)."""
    stream = stream if stream is not None else sys.stdout
    t0 = time.perf_counter()
    try:
        select_features(only)
    except ValueError as exc:
        print(f"prefixscan check: --{exc}", file=sys.stderr)
        return 2
    try:
        results = run_checks(device, quick=quick, seed=seed, only=only, stream=stream, verbose=verbose,
                             progress=progress)
    except ImportError as exc:  # only the device set-up imports: torch for --device cuda
        print(f"prefixscan check: --device {device} needs torch: {install_command('gpu')} ({exc})",
              file=sys.stderr)
        return 2
    except (RuntimeError, ValueError) as exc:  # the set-up: no CUDA device, a bad seed
        print(f"prefixscan check: {exc}", file=sys.stderr)
        return 2
    failed = [r for r in results if r.status == "FAIL"]
    skipped = [r for r in results if r.status == "SKIP"]
    passed = len(results) - len(failed) - len(skipped)
    print(f"{passed} passed, {len(failed)} failed, {len(skipped)} skipped "
          f"in {time.perf_counter() - t0:.1f} s", file=stream)
    return 1 if failed else 0
