"""The package layout's promises: no import cycle between modules, ``tablebase`` never
imports ``adjudicator``, a docstring at the top of every module.

The import graph is read from the sources (every ``import`` and ``from ... import``, at any
depth in a module, so a function-level import that would close a cycle counts too).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("tablebase", "adjudicator")


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def project_modules() -> dict[str, Path]:
    return {module_name(p): p for pkg in PACKAGES for p in sorted((ROOT / pkg).rglob("*.py"))}


def import_graph(modules: dict[str, Path]) -> dict[str, set[str]]:
    """Module -> the project modules it imports (``from pkg import mod`` names the module
    ``pkg.mod`` where it is one, else ``pkg``)."""
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        deps: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                for alias in node.names:
                    full = f"{node.module}.{alias.name}"
                    if full in modules:
                        deps.add(full)
                    elif node.module in modules:
                        deps.add(node.module)
            elif isinstance(node, ast.Import):
                deps.update(a.name for a in node.names if a.name in modules)
        deps.discard(name)
        graph[name] = deps
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
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


def test_the_cycle_finder_finds_a_cycle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycle_between_modules() -> None:
    found = cycles(import_graph(project_modules()))
    assert found == [], f"import cycles: {found}"


def test_tablebase_never_imports_adjudicator() -> None:
    graph = import_graph(project_modules())
    wrong = sorted(
        (m, d)
        for m, deps in graph.items()
        if m.startswith("tablebase")
        for d in deps
        if d.startswith("adjudicator")
    )
    assert wrong == []


@pytest.mark.parametrize("name", sorted(project_modules()))
def test_every_module_opens_with_a_docstring(name: str) -> None:
    tree = ast.parse(project_modules()[name].read_text())
    assert ast.get_docstring(tree), f"{name} has no module docstring"


def package_of(name: str, modules: dict[str, Path]) -> str:
    """The package a module belongs to (a package's ``__init__`` belongs to itself)."""
    if modules[name].name == "__init__.py":
        return name
    return name.rpartition(".")[0]


def private_imports(modules: dict[str, Path]) -> list[str]:
    """Every private name (``_x``, not ``__x__``) a module takes from a module of another
    package: ``from pkg.mod import _x``, or ``mod._x`` where ``mod`` names a project module
    it imported (``import pkg.mod as mod``, ``from pkg import mod``)."""
    found = []
    for name, path in modules.items():
        home = package_of(name, modules)
        aliases: dict[str, str] = {}  # local name -> project module
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                for alias in node.names:
                    full = f"{node.module}.{alias.name}"
                    if full in modules:
                        aliases[alias.asname or alias.name] = full
                    elif node.module in modules and _private(alias.name):
                        if package_of(node.module, modules) != home:
                            found.append(f"{name}: from {node.module} import {alias.name}")
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.asname and alias.name in modules:
                        aliases[alias.asname] = alias.name
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id in aliases
                and _private(node.attr)
                and package_of(aliases[node.value.id], modules) != home
            ):
                found.append(f"{name}: {aliases[node.value.id]}.{node.attr}")
    return sorted(set(found))


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def test_the_private_import_finder_finds_both_forms(tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    for sub in ("a", "b"):
        (pkg / sub).mkdir(parents=True)
        (pkg / sub / "__init__.py").write_text('"""x"""\n')
    (pkg / "a" / "low.py").write_text("def _hidden(): ...\ndef shown(): ...\n")
    (pkg / "a" / "near.py").write_text("from pkg.a.low import _hidden\n")  # same package
    (pkg / "b" / "far.py").write_text(
        "from pkg.a.low import _hidden, shown\nfrom pkg.a import low as lo\nlo._hidden()\n"
    )
    modules = {
        ".".join(p.relative_to(tmp_path).with_suffix("").parts): p for p in pkg.rglob("*.py")
    }
    modules = {k.removesuffix(".__init__"): p for k, p in modules.items()}
    assert private_imports(modules) == [
        "pkg.b.far: from pkg.a.low import _hidden",
        "pkg.b.far: pkg.a.low._hidden",
    ]


def test_no_module_imports_a_private_name_from_another_package() -> None:
    offenders = private_imports(project_modules())
    assert offenders == [], "private names taken from another package:\n" + "\n".join(offenders)


MAX_KERNEL_PARAMETERS = 8  # issue 51: more is a record to build (tablebase/solve/records.py)
COMPILED = ("njit", "kernel", "jit")


def compiled_functions() -> list[tuple[str, str, int]]:
    """(module, function, parameters) of every compiled function of the packages: those
    decorated with numba's ``njit``/``jit`` (called or not) or the project's ``kernel``."""
    found = []
    for name, path in project_modules().items():
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.FunctionDef):
                continue
            for dec in node.decorator_list:
                target = dec.func if isinstance(dec, ast.Call) else dec
                label = (
                    target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", "")
                )
                if label in COMPILED:
                    found.append((name, node.name, len(node.args.args)))
                    break
    return found


def test_the_parameter_count_sees_compiled_functions() -> None:
    counts = {(m, f): n for m, f, n in compiled_functions()}
    assert counts[("tablebase.solve.whole", "place_after")] == 8
    assert ("tablebase.solve.skeleton", "init_slice") in counts


def test_no_compiled_function_takes_more_than_eight_parameters() -> None:
    wide = sorted(f"{m}.{f} ({n})" for m, f, n in compiled_functions() if n > MAX_KERNEL_PARAMETERS)
    assert wide == [], "compiled functions with long positional lists: " + ", ".join(wide)
