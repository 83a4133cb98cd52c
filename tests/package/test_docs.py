"""What the user-facing text claims stays true: install commands that work from
a checkout (the package is not on PyPI), the CPU backend's two paths named
with the threshold the code uses, the extras an example needs."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import prefixscan
from prefixscan.backends.cpu.compiled import SMALL_SCAN

ROOT = Path(__file__).resolve().parents[2]
#: ``pip install 'prefixscan[gpu]'`` and the like: an install from a package index.
INDEX_INSTALL = re.compile(r"""pip install\s+(-\S+\s+)*['"]?prefixscan(\[|['"\s]|$)""")


def _user_texts():
    yield from ROOT.glob("*.md")
    yield from (ROOT / "docs").rglob("*.md")
    yield from (ROOT / "benchmarks").glob("*.md")
    yield from (ROOT / "examples").glob("*.py")
    for path in (ROOT / "prefixscan").rglob("*.py"):
        if path.name != "_install_hint.py":  # it says why that form cannot work; its tests cover it
            yield path


def test_no_text_installs_from_a_package_index():
    found = [f"{path.relative_to(ROOT)}:{n}: {line.strip()}"
             for path in _user_texts()
             for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
             if INDEX_INSTALL.search(line)]
    assert not found, "\n".join(found)
    assert INDEX_INSTALL.search("pip install 'prefixscan[dask]'")  # the pattern finds what it must
    assert not INDEX_INSTALL.search("pip install -e '.[dask]'")


def test_cpu_docstrings_name_both_paths():
    for doc in (prefixscan.__doc__, prefixscan.scan.__doc__):
        assert "vectorized NumPy" not in doc
        assert f"{SMALL_SCAN} elements" in " ".join(doc.split())
        assert "Numba" in doc and "round" in doc


def test_zarr_example_names_the_extras_it_needs():
    example = ROOT / "examples" / "zarr_dask.py"
    docstring = ast.get_docstring(ast.parse(example.read_text(encoding="utf-8")))
    assert "pip install -e '.[dask,codecs]'" in docstring
    readme = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())
    assert "`examples/zarr_dask.py`" in readme and "`pip install -e '.[dask,codecs]'`" in readme
