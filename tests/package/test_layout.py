"""The package's shape: imports point one way, modules stay small.

Walks every module of the installed ``prefixscan`` package with ``ast`` (no
import is executed), collects the ``prefixscan`` modules each one imports, at
module level and inside functions alike, and checks:

* the import graph has no cycle (public API -> derived algorithms ->
  normalization -> dispatch -> backends -> kernels); a module loaded by its
  name as a string (``importlib``, as dispatch loads backends) counts too;
* nothing under ``prefixscan.backends`` imports the command line, the
  benchmark or the self-check;
* no module is longer than about 600 lines.
"""

from __future__ import annotations

import ast
from pathlib import Path

import prefixscan

PACKAGE_DIR = Path(prefixscan.__file__).parent
MAX_LINES = 600
#: Modules a backend must never import (directly or as a package prefix).
FORBIDDEN_FOR_BACKENDS = ("prefixscan.cli", "prefixscan.benchmark", "prefixscan.check", "prefixscan.__main__")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE_DIR.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(PACKAGE_DIR.rglob("*.py"))}


def _resolve(module: str, is_package: bool, level: int, target: str | None) -> str:
    """The absolute name of a relative import ``from <level dots><target> import ...``."""
    if level == 0:
        return target or ""
    base = module.split(".")
    if not is_package:
        base = base[:-1]
    base = base[: len(base) - (level - 1)]
    return ".".join(base + ([target] if target else []))


def import_graph() -> dict[str, set[str]]:
    """module -> the prefixscan modules it imports (submodules named by ``from x import y`` count)."""
    modules = _modules()
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        is_package = path.name == "__init__.py"
        edges: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = _resolve(name, is_package, node.level, node.module)
                # `from pkg import sub` depends on pkg.sub; `from pkg import name` on pkg itself.
                targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base
                           for alias in node.names]
            elif isinstance(node, ast.Constant) and isinstance(node.value, str) and "." in node.value \
                    and node.value in modules:
                targets = [node.value]  # a module loaded by name (importlib), as dispatch loads backends
            else:
                continue
            for target in targets:
                while target and target not in modules:  # `import a.b.c` -> the longest known prefix
                    target = target.rpartition(".")[0]
                if target and target.startswith("prefixscan") and target != name:
                    edges.add(target)
        graph[name] = edges
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_import_graph_sees_the_package():
    graph = import_graph()
    assert "prefixscan.api" in graph and "prefixscan.backends.cpu" in graph
    assert "prefixscan.backends.cpu" in graph["prefixscan.dispatch"]  # loaded by name
    assert any("prefixscan._arrays" in targets for targets in graph.values())


def test_no_import_cycle():
    cycles = _cycles(import_graph())
    assert not cycles, "import cycles: " + "; ".join(" <-> ".join(c) for c in cycles)


def test_cycle_finder_finds_a_planted_cycle():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycles(graph) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_backends_import_no_cli_benchmark_or_check():
    bad = []
    for module, targets in import_graph().items():
        if not module.startswith("prefixscan.backends"):
            continue
        for target in targets:
            if any(target == f or target.startswith(f + ".") for f in FORBIDDEN_FOR_BACKENDS):
                bad.append(f"{module} imports {target}")
    assert not bad, "; ".join(bad)


def test_modules_stay_small():
    long = {name: n for name, path in _modules().items()
            if (n := len(path.read_text().splitlines())) > MAX_LINES}
    assert not long, f"modules over {MAX_LINES} lines: {long}"


#: Most parameters a Triton kernel takes: more go into grouped (tuple) arguments.
MAX_KERNEL_PARAMETERS = 30


def _kernel_parameters() -> dict[str, int]:
    """``{module.function: parameters}`` of every ``@triton.jit`` / Gluon ``@jit`` function
    launched as a kernel (named ``*_kernel``) in the package."""
    counts = {}
    for name, path in _modules().items():
        for node in ast.walk(ast.parse(path.read_text())):
            if (isinstance(node, ast.FunctionDef) and node.name.endswith("_kernel")
                    and any("jit" in ast.unparse(d) for d in node.decorator_list)):
                counts[f"{name}.{node.name}"] = len(node.args.args)
    return counts


def test_kernels_take_grouped_arguments():
    counts = _kernel_parameters()
    assert "prefixscan.primitives.recurrence.triton_kernel.recurrence_kernel" in counts
    wide = {name: n for name, n in counts.items() if n > MAX_KERNEL_PARAMETERS}
    assert not wide, f"kernels of more than {MAX_KERNEL_PARAMETERS} parameters: {wide}"
