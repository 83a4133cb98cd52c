"""The ``pip install`` command that adds an extra to *this* prefixscan (a leaf
module: imports nothing of prefixscan).

prefixscan is not on PyPI: it is installed from a checkout (``pip install -e
.``), a local directory, a wheel or a VCS URL, and ``pip install
'prefixscan[gpu]'`` cannot work.  pip records where a distribution came from in
its ``direct_url.json`` (PEP 610); the hint names that source again with the
extra added, where it is still there.  A checkout run without installing
(``PYTHONPATH``) is recognised by the ``pyproject.toml`` next to the package.
Otherwise the hint installs the extra's own requirements, read from the
installed distribution's metadata (``pip install 'torch>=2.4' 'triton>=3.2'``),
and without metadata either it says to install from a checkout
(``pip install -e '.[gpu]'``).  Every message that says what to install calls
:func:`install_command`.
"""

from __future__ import annotations

import json
import os
import re
import shlex
from importlib import metadata
from pathlib import Path
from urllib.parse import urlparse
from urllib.request import url2pathname

__all__ = ["install_command"]

DISTRIBUTION = "prefixscan"
_PACKAGE_DIR = Path(__file__).resolve().parent


def install_command(extra: str | None = None) -> str:
    """``pip install <target>`` for the extra (``gpu``, ``bench``, ``codecs``,
    ...; None: the package alone), the target always shell-quoted, e.g.
    ``pip install -e '/home/me/prefixscan[gpu]'`` for an editable checkout,
    ``pip install 'torch>=2.4' 'triton>=3.2'`` for an install whose source is
    gone, ``pip install -e '.[gpu]'`` (in a checkout of prefixscan) when nothing
    is known."""
    suffix = f"[{extra}]" if extra else ""
    origin = _direct_url()
    if origin is not None:
        command = _from_direct_url(origin, suffix)
        if command:
            return command
    root = _checkout_root()
    if root is not None:
        return f"pip install -e {_quoted(str(root) + suffix)}"
    requirements = _extra_requirements(extra) if extra else None
    if requirements:
        return "pip install " + " ".join(_quoted(r) for r in requirements)
    return f"pip install -e {_quoted('.' + suffix)} (in a checkout of prefixscan: it is not on PyPI)"


def _from_direct_url(origin: dict, suffix: str) -> str | None:
    url = origin.get("url")
    if not isinstance(url, str) or not url:
        return None
    if "dir_info" in origin:
        path = _local_path(url)
        if path is None or not os.path.isdir(path):  # a clone since removed
            return None
        editable = "-e " if origin["dir_info"].get("editable") else ""
        return f"pip install {editable}{_quoted(path + suffix)}"
    if "vcs_info" in origin:
        vcs = origin["vcs_info"]
        revision = vcs.get("requested_revision")
        source = f"{vcs.get('vcs', 'git')}+{url}" + (f"@{revision}" if revision else "")
        return f"pip install {_quoted(f'{DISTRIBUTION}{suffix} @ {source}')}"
    if "archive_info" in origin:
        path = _local_path(url)
        if path is not None:  # a wheel or sdist on disk: still there to reinstall from
            return f"pip install {_quoted(path + suffix)}" if os.path.exists(path) else None
        return f"pip install {_quoted(f'{DISTRIBUTION}{suffix} @ {url}')}"
    return None


_EXTRA_MARKER = re.compile(r"""^\s*extra\s*==\s*["']([^"']+)["']\s*$""")


def _extra_requirements(extra: str) -> list[str] | None:
    """The requirements the installed distribution's metadata lists for ``extra``,
    with the ``extra == ...`` part of their markers removed (``zarr>=3;
    python_version >= "3.11"``); None without metadata or without that extra."""
    try:
        requires = metadata.requires(DISTRIBUTION)
    except (metadata.PackageNotFoundError, OSError, ValueError):
        return None
    found = []
    for line in requires or ():
        requirement, _, marker = line.partition(";")
        clauses = [c.strip() for c in marker.split(" and ")] if marker.strip() else []
        extras = [m.group(1) for m in map(_EXTRA_MARKER.match, clauses) if m]
        if extras != [extra] or " or " in marker:  # not this extra, or a marker too involved to edit
            continue
        rest = [c for c in clauses if not _EXTRA_MARKER.match(c)]
        found.append(requirement.strip() + (f"; {' and '.join(rest)}" if rest else ""))
    return found or None


def _direct_url() -> dict | None:
    """The ``direct_url.json`` of the installed prefixscan, or None (installed
    from an index, or not installed).  A stale ``prefixscan.egg-info`` in the
    current directory can shadow the installed distribution: the first one that
    has the file wins."""
    try:
        for dist in metadata.distributions(name=DISTRIBUTION):
            text = dist.read_text("direct_url.json")
            if text:
                data = json.loads(text)
                return data if isinstance(data, dict) else None
    except (OSError, ValueError):  # unreadable or malformed metadata: fall back to the index form
        return None
    return None


def _checkout_root() -> Path | None:
    """The checkout this package is imported from, when there is one."""
    root = _PACKAGE_DIR.parent
    try:
        text = (root / "pyproject.toml").read_text(encoding="utf-8")
    except OSError:
        return None
    return root if f'name = "{DISTRIBUTION}"' in text else None


def _local_path(url: str) -> str | None:
    parsed = urlparse(url)
    if parsed.scheme != "file":
        return None
    return url2pathname(parsed.path)  # undoes the percent-encoding too


def _quoted(word: str) -> str:
    """Shell-quoted, with quotes even where the shell would not need them, so
    every hint reads the same way (brackets need them in zsh)."""
    quoted = shlex.quote(word)
    return quoted if quoted.startswith("'") else f"'{word}'"
