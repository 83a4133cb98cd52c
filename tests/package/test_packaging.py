"""``python -m build`` makes an sdist and a wheel (built from the sdist) whose
metadata pass ``twine check --strict``, and the wheel carries the whole package,
its data (the ``py.typed`` marker, the shipped tuning tables) and its entry points.  Builds a copy of the checkout in a temporary directory
(the shared tree gets no build/ or egg-info) without build isolation, so it
needs no network: skipped unless build, twine and setuptools>=77 are installed."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from importlib import metadata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _needs(distribution: str, minimum: tuple[int, ...] = ()) -> None:
    try:
        version = metadata.version(distribution)
    except metadata.PackageNotFoundError:
        pytest.skip(f"{distribution} is not installed")
    numbers = tuple(int(p) for p in version.split(".")[:len(minimum)] if p.isdigit())
    if numbers < minimum:
        pytest.skip(f"{distribution} {version} is older than {'.'.join(map(str, minimum))}")


def test_wheel_and_sdist_pass_twine_check(tmp_path):
    _needs("build")
    _needs("twine")
    _needs("setuptools", (77,))
    src = tmp_path / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        if (ROOT / name).exists():
            shutil.copy2(ROOT / name, src / name)
    shutil.copytree(ROOT / "prefixscan", src / "prefixscan",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "*.nbi", "*.nbc"))
    dist = tmp_path / "dist"
    build = subprocess.run([sys.executable, "-m", "build", "--no-isolation", "--outdir", str(dist), str(src)],
                           capture_output=True, text=True, timeout=300)
    assert build.returncode == 0, build.stdout[-3000:] + build.stderr[-3000:]
    artifacts = sorted(dist.iterdir(), key=lambda p: p.suffix)  # sdist (.gz), then wheel (.whl)
    assert [p.suffix for p in artifacts] == [".gz", ".whl"], artifacts
    twine = subprocess.run([sys.executable, "-m", "twine", "check", "--strict", *map(str, artifacts)],
                           capture_output=True, text=True, timeout=120)
    assert twine.returncode == 0, twine.stdout + twine.stderr

    wheel = zipfile.ZipFile(artifacts[1])
    names = set(wheel.namelist())
    modules = {p.relative_to(ROOT).as_posix() for p in (ROOT / "prefixscan").rglob("*.py")
               if "__pycache__" not in p.parts}
    assert modules <= names, sorted(modules - names)
    # Package data: the PEP 561 marker, the shipped tuning tables and the sm_90 sums compiled
    # ahead of time (zlib'd cubins and their JSON).
    data = {p.relative_to(ROOT).as_posix() for p in (ROOT / "prefixscan").rglob("*")
            if p.suffix in (".typed", ".json", ".z") or p.name == "README.md"}
    assert "prefixscan/py.typed" in data and any(d.endswith(".json") for d in data)
    assert any(d.endswith(".cubin.z") for d in data)
    assert data <= names, sorted(data - names)
    info = next(n.split("/")[0] for n in names if n.endswith(".dist-info/METADATA"))
    meta = wheel.read(f"{info}/METADATA").decode()
    for line in ("Name: prefixscan", "License-Expression: MIT", "Description-Content-Type: text/markdown",
                 "Provides-Extra: gpu", "Provides-Extra: codecs"):
        assert line in meta, line
    entry_points = wheel.read(f"{info}/entry_points.txt").decode()
    for line in ("prefixscan = prefixscan.cli:main", "prefixscan.delta = prefixscan.codecs:Delta",
                 "prefixscan.delta = prefixscan.codecs.zarr3:Delta"):
        assert line in entry_points, line
