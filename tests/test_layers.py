"""The import graph: no cycles between modules nor between the subpackages of one package, and no package imports
one above it (mechanism <- models <- server <- clients <- cli <- benchmarks)."""

from __future__ import annotations

import ast
from pathlib import Path

from server.snapshot import PROJECT_PACKAGES, ROOT, imported_modules

# Lowest first: a package may import only those at or below its own place.
LAYERS = ("mechanism", "models", "server", "clients", "cli", "benchmarks")


def project_modules() -> dict[str, Path]:
    modules: dict[str, Path] = {}
    for package in PROJECT_PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            rel = path.relative_to(ROOT).with_suffix("")
            if "gen" in rel.parts:
                continue
            parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
            modules[".".join(parts)] = path
    return modules


def import_graph() -> dict[str, set[str]]:
    modules = project_modules()
    return {name: {m for m in imported_modules(name, path) if m in modules and m != name}
            for name, path in modules.items()}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of module imports (a parent package's __init__ counts only when imported by name), or None."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if nxt.startswith(node + ".") or node.startswith(nxt + "."):
                continue  # a package and its own modules
            if state.get(nxt) == 1:
                return [*stack[stack.index(nxt):], nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)):
            return cycle
    return None


def sibling_graphs(graph: dict[str, set[str]]) -> dict[str, dict[str, set[str]]]:
    """For each package, the graph between its direct children (modules and subpackages, each standing for every
    module inside it): a child imports another if any module inside the one imports any module inside the other."""

    def child(package: str, module: str) -> str | None:
        prefix = f"{package}." if package else ""
        if not module.startswith(prefix) or module == package:
            return None
        return prefix + module[len(prefix):].split(".")[0]

    packages = {".".join(name.split(".")[:i]) for name in graph for i in range(name.count(".") + 1)}
    out: dict[str, dict[str, set[str]]] = {}
    for package in sorted(packages):
        children: dict[str, set[str]] = {}
        for name, deps in graph.items():
            if (a := child(package, name)) is None:
                continue
            children.setdefault(a, set())
            children[a] |= {b for dep in deps if (b := child(package, dep)) is not None and b != a}
        for targets in list(children.values()):
            for b in targets:
                children.setdefault(b, set())
        out[package] = children
    return out


def test_the_layers_cover_every_project_package() -> None:
    assert set(LAYERS) == set(PROJECT_PACKAGES)
    assert {p.name for p in ROOT.iterdir() if (p / "__init__.py").is_file()} - {"tests"} == set(LAYERS)


def test_no_module_imports_a_package_above_its_own() -> None:
    wrong = sorted(f"{name} imports {dep}" for name, deps in import_graph().items() for dep in deps
                   if LAYERS.index(dep.split(".")[0]) > LAYERS.index(name.split(".")[0]))
    assert wrong == []


def test_the_import_graph_has_no_cycle() -> None:
    assert find_cycle(import_graph()) is None


def test_no_two_subpackages_of_one_package_import_each_other_in_a_cycle() -> None:
    cycles = {package or "(root)": cycle for package, children in sibling_graphs(import_graph()).items()
              if (cycle := find_cycle(children)) is not None}
    assert cycles == {}


def test_a_cycle_between_subpackages_is_found_though_their_modules_form_none() -> None:
    modules = {"m.a.x": {"m.b.y"}, "m.b.y": set(), "m.b.z": {"m.a.w"}, "m.a.w": set()}
    assert find_cycle(modules) is None
    assert find_cycle(sibling_graphs(modules)["m"]) == ["m.a", "m.b", "m.a"]
    assert find_cycle(sibling_graphs({**modules, "m.b.z": set()})["m"]) is None


def test_the_cycle_finder_finds_a_planted_cycle_and_the_layer_check_a_planted_upward_import() -> None:
    assert find_cycle({"a.x": {"a.y"}, "a.y": {"a.z"}, "a.z": {"a.x"}}) == ["a.x", "a.y", "a.z", "a.x"]
    assert find_cycle({"a.x": {"a.y"}, "a.y": set()}) is None
    tree = ast.parse("from server import app\nimport mechanism.engine\n")
    assert {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)} == {"server"}


def test_the_mechanism_core_imports_no_io_clock_or_network_module() -> None:
    banned = {"socket", "grpc", "sqlite3", "time", "datetime", "subprocess", "urllib", "http", "requests"}
    found = sorted(f"{name}: {mod}" for name, path in project_modules().items() if name.startswith("mechanism")
                   for node in ast.walk(ast.parse(path.read_bytes()))
                   for mod in ([a.name for a in node.names] if isinstance(node, ast.Import) else
                               [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
                   if mod.split(".")[0] in banned)
    assert found == []
