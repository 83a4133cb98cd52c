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


#: A path of the package (``prefixscan/backends/cpu/``) and a dotted name of a module or
#: of a name in one (``prefixscan.primitives.scan.api.shared_scan``), as the docs cite them;
#: ``torch.ops.prefixscan.scan`` (an operator, not a module) is left out by the lookbehind.
DOC_PATH = re.compile(r"(?<![\w/.])prefixscan/[\w/.-]*\w/?")
DOC_NAME = re.compile(r"(?<![\w.])prefixscan(?:\.\w+)+")
#: Dotted names that are not modules: the delta codec's registered id.
NOT_MODULES = {"prefixscan.delta"}


def _top_level_names(path: Path) -> set:
    """The names a module defines or imports at any level (its attributes, roughly)."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.isidentifier():
            names.add(node.value)  # __all__ and lazily exported names (prefixscan.dask)
    return names


def _stale_name(name: str) -> str | None:
    """Why the dotted ``name`` names nothing in the checkout, or None."""
    parts = name.split(".")
    for k in range(len(parts), 0, -1):
        base = ROOT.joinpath(*parts[:k])
        module = base / "__init__.py" if base.is_dir() else base.with_suffix(".py")
        if module.is_file():
            break
    else:
        return "no such module"
    rest = parts[k:]
    if rest and rest[0] not in _top_level_names(module):
        return f"{'.'.join(parts[:k])} has no {rest[0]}"
    return None


def test_docs_name_paths_and_modules_that_exist():
    """Every package path and dotted module name the docs cite exists (the package was
    reorganized once: no page may point into the old layout)."""
    texts = [ROOT / "README.md", ROOT / "tests" / "README.md", *(ROOT / "docs").rglob("*.md"),
             *(ROOT / "benchmarks").glob("*.md")]
    stale = []
    for path in texts:
        text = path.read_text(encoding="utf-8")
        for cited in DOC_PATH.findall(text):
            if not (ROOT / cited.rstrip("/")).exists():
                stale.append(f"{path.relative_to(ROOT)}: {cited}: no such file")
        for cited in set(DOC_NAME.findall(text)) - NOT_MODULES:
            why = _stale_name(cited)
            if why:
                stale.append(f"{path.relative_to(ROOT)}: {cited}: {why}")
    assert not stale, "\n".join(stale)


def test_the_doc_check_finds_a_stale_name():
    assert _stale_name("prefixscan.backends.triton.tuner.shipped") == "prefixscan.backends.triton.tuner has no shipped"
    assert _stale_name("prefixscan.algorithms.pieces") == "prefixscan has no algorithms"
    assert _stale_name("numpy.cumsum") == "no such module"
    assert _stale_name("prefixscan.primitives.scan.api.shared_scan") is None
    assert _stale_name("prefixscan.dask.graph") is None
    assert DOC_NAME.findall("torch.ops.prefixscan.scan.default and prefixscan.dask") == ["prefixscan.dask"]
