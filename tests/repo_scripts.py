"""Scripts of the repository outside the package (``benchmarks/``, ``tools/``: no
packages), loaded by path for the tests that check them."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def load_script(relative: str, name: str):
    """The module of the script at ``relative`` (from the repository root), as ``name``."""
    spec = importlib.util.spec_from_file_location(name, ROOT / relative)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
