"""Argument types and up-front checks of the ``prefixscan`` command line.

Every option is checked before any work starts: numbers by the ``type=``
functions here (argparse names the option in its message: ``argument --repeats:
expected an integer from 1 to 1000, got 0``), and output paths by
:func:`check_output_dir` and :func:`check_output_file`, which make sure that a
file can be written there, or that the missing directories can be created (the
writes at the end create them), leaving nothing behind, so that an unwritable
``--out`` or ``--json`` fails at once rather than after a benchmark or a tune
of many minutes.  Leaf module: imports
nothing of prefixscan.
"""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path
from typing import Callable

__all__ = ["integer", "seconds", "checked_by", "check_output_dir", "check_output_file"]


def integer(low: int, high: int | None = None) -> Callable[[str], int]:
    """An argparse type: an integer in ``low..high`` (no upper bound: None)."""
    span = f"from {low} to {high}" if high is not None else f">= {low}"

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer {span}, got {text!r}") from None
        if value < low or (high is not None and value > high):
            raise argparse.ArgumentTypeError(f"expected an integer {span}, got {value}")
        return value

    parse.__name__ = "integer"
    return parse


def seconds(text: str) -> float:
    """An argparse type: a number of seconds > 0 (``inf``: no limit)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds > 0, got {text!r}") from None
    if not value > 0:  # NaN too
        raise argparse.ArgumentTypeError(f"expected a number of seconds > 0, got {text!r}")
    return value


def checked_by(check: Callable[[str], object], flag: str) -> Callable[[str], str]:
    """An argparse type that runs ``check(text)`` (which raises ValueError or
    TypeError on a bad value) and keeps the text as given.  A message that starts
    with ``flag: `` loses that prefix: argparse names the option itself."""

    def parse(text: str) -> str:
        try:
            check(text)
        except (ValueError, TypeError) as exc:
            message = str(exc)
            for prefix in (f"{flag}: ", f"{flag.lstrip('-')}: "):
                if message.startswith(prefix):
                    message = message[len(prefix):]
            raise argparse.ArgumentTypeError(message) from None
        return text

    parse.__name__ = flag.lstrip("-")
    return parse


def _describe(exc: OSError) -> str:
    return exc.strerror or type(exc).__name__


def _probe_new(path: Path) -> None:
    """A missing ``path`` can be created: its nearest existing ancestor is a
    directory in which a directory can be made (made and removed again)."""
    ancestor = path.parent
    while not ancestor.exists() and ancestor != ancestor.parent:
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        raise ValueError(f"cannot create {str(path)!r}: {str(ancestor)!r} is not a directory")
    try:
        os.rmdir(tempfile.mkdtemp(dir=ancestor, prefix=".prefixscan-write-test-"))
    except OSError as exc:
        raise ValueError(f"cannot create {str(path)!r}: {_describe(exc)} in {str(ancestor)!r}") from None


def check_output_dir(path: str | os.PathLike) -> None:
    """Make sure files can be written into the directory ``path``, which exists or
    can be created (with its parents) when the results are written; nothing is
    left behind.  ValueError otherwise."""
    directory = Path(path)
    if not directory.exists():
        _probe_new(directory)
        return
    if not directory.is_dir():
        raise ValueError(f"{str(directory)!r} exists and is not a directory")
    try:
        with tempfile.NamedTemporaryFile(dir=directory, prefix=".prefixscan-write-test-"):
            pass
    except OSError as exc:
        raise ValueError(f"cannot write into {str(directory)!r}: {_describe(exc)}") from None


def check_output_file(path: str | os.PathLike) -> None:
    """Make sure the file ``path`` can be written: an existing file is opened for
    writing without being truncated; a missing one is created and removed again
    (where its directory is missing, that the directory can be created).
    ValueError otherwise."""
    file = Path(path)
    if file.is_dir():
        raise ValueError(f"{str(file)!r} is a directory")
    try:
        if file.exists():
            with open(file, "r+b"):
                pass
            return
        if not file.parent.exists():
            _probe_new(file)
            return
        with open(file, "xb"):
            pass
        file.unlink()
    except OSError as exc:
        raise ValueError(f"cannot write {str(file)!r}: {_describe(exc)}") from None
