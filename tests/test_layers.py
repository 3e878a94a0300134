"""The package reads as the request path: no import circle, and no layer imports one above it.

Every import of every module counts, those inside functions and under `TYPE_CHECKING` too: a
type-only arrow is still an arrow a reader has to follow.
"""

from __future__ import annotations

import ast
from pathlib import Path

import recovery_proxy

PACKAGE = Path(recovery_proxy.__file__).parent

# Bottom to top. A module may import its own layer and the ones below, never one above.
LAYERS: list[set[str]] = [
    {"config", "metrics", "logs", "tokens", "webhooks", "prices"},
    {"rules"},
    {"core"},
    {"wire", "store", "experiment"},
    {"rewrite", "session"},
    {"pipeline"},
    {"server", "integrations"},
    {"demo"},
    {"cli"},
    {"__main__"},
]


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE).with_suffix("").parts
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(("recovery_proxy", *parts))


MODULES = {module_name(p): p for p in PACKAGE.rglob("*.py")}


def imports_of(name: str) -> set[str]:
    """The package's own modules that module `name` imports (relative imports resolved)."""
    path = MODULES[name]
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                stem = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*stem, *([base] if base else [])])
            names = [base, *(f"{base}.{alias.name}" for alias in node.names)]
        else:
            continue
        for imported in names:
            while imported and imported not in MODULES:
                imported = imported.rpartition(".")[0]
            if imported and imported not in (name, "recovery_proxy"):
                found.add(imported)
    return found


GRAPH = {name: imports_of(name) for name in MODULES}


def layer_of(name: str) -> int:
    top = name.split(".")[1]
    return next(i for i, layer in enumerate(LAYERS) if top in layer)


def test_every_module_has_a_layer() -> None:
    tops = {name.split(".")[1] for name in MODULES if name != "recovery_proxy"}
    assert tops <= set().union(*LAYERS), "give each new package or module a layer"


def test_no_layer_imports_one_above_it() -> None:
    upward = [
        f"{a} -> {b}"
        for a, targets in GRAPH.items()
        if a != "recovery_proxy"
        for b in targets
        if layer_of(b) > layer_of(a)
    ]
    assert upward == []


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_import_circle() -> None:
    assert circles(GRAPH) == []


def test_the_walk_finds_a_circle_and_resolves_relative_imports() -> None:
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert "recovery_proxy.core.plan" in GRAPH["recovery_proxy.core.tracker"]
    assert "recovery_proxy.rules.model" in GRAPH["recovery_proxy.core.tracker"]


def test_the_top_of_the_package_stays_small() -> None:
    loose = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(loose) <= 10, loose
