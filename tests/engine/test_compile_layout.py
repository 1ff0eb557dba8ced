"""The compiler package keeps its shape: layers import downwards only, no import cycles, no module
reaches into another's private names, and only the entry module knows the compiler class.

The layer order is the one docs/engine.md ("Layers") draws; a module may import its own layer
(without a cycle) or a lower one. Imports under ``if TYPE_CHECKING:`` only name types for
annotations and may point anywhere except at the compiler class.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import bzrk.engine.compile as compile_package

PACKAGE = "bzrk.engine.compile"
ROOT = Path(compile_package.__file__).parent

# Lowest first: (layer name, module prefixes relative to the package).
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    (
        "core",
        (
            "errors",
            "deadline",
            "typed",
            "literals",
            "naming",
            "rewrite",
            "join_filters",
            "registry_facts",
            "bag_paths",
            "annotated",
            "relation",
            "summarize_budget",
            "scope",
            "semantics",
            "search_terms",
            "bag_search",
            "sharing",
        ),
    ),
    ("functions", ("functions",)),
    ("expressions", ("expressions",)),
    ("passes", ("passes",)),
    ("context", ("context", "row_order")),
    ("operators", ("operators",)),
    ("operator table", ("operators.table",)),
    ("compiler", ("query",)),
]


def _modules() -> dict[str, Path]:
    found = {}
    for path in sorted(ROOT.rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        name = ".".join(p for p in parts if p != "__init__")
        found[name] = path
    return found


MODULES = _modules()


def _layer(module: str) -> int:
    best, best_len = None, -1
    for index, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > best_len:
                best, best_len = index, len(prefix)
    if module == "":  # the package's own __init__
        return 0
    assert best is not None, f"{module} is in no layer of LAYERS: place it there and in the docs"
    return best


def _type_checking_nodes(tree: ast.Module) -> set[int]:
    nodes: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            nodes.update(id(n) for n in ast.walk(node))
    return nodes


def _imports(module: str) -> list[tuple[ast.ImportFrom | ast.Import, str, bool]]:
    """(node, imported module relative to the package, type-only) for each package import."""
    tree = ast.parse(MODULES[module].read_text())
    type_only = _type_checking_nodes(tree)
    out = []
    for node in ast.walk(tree):
        targets: list[str] = []
        if isinstance(node, ast.ImportFrom) and node.module:
            base = node.module
            for alias in node.names:
                full = f"{base}.{alias.name}"
                targets.append(full if full[len(PACKAGE) + 1 :] in MODULES else base)
        elif isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        for target in targets:
            if target == PACKAGE or target.startswith(PACKAGE + "."):
                out.append((node, target[len(PACKAGE) + 1 :], id(node) in type_only))
    return out


def _runtime_graph() -> dict[str, set[str]]:
    return {
        module: {target for _, target, type_only in _imports(module) if not type_only}
        for module in MODULES
    }


def test_every_module_has_a_layer() -> None:
    for module in MODULES:
        _layer(module)


@pytest.mark.parametrize("module", sorted(MODULES))
def test_imports_point_down_the_layers(module: str) -> None:
    mine = _layer(module)
    for node, target, type_only in _imports(module):
        if type_only:
            continue
        assert _layer(target) <= mine, (
            f"{module} (layer {LAYERS[mine][0]}) imports {target} "
            f"(layer {LAYERS[_layer(target)][0]}) at line {node.lineno}"
        )


def test_the_import_graph_is_acyclic() -> None:
    graph = _runtime_graph()
    state: dict[str, int] = {}  # 1 visiting, 2 done

    def visit(module: str, path: list[str]) -> None:
        state[module] = 1
        for target in sorted(graph.get(module, ())):
            if state.get(target) == 1:
                cycle = [*path[path.index(target) :], target] if target in path else [target]
                raise AssertionError("import cycle: " + " -> ".join(cycle))
            if state.get(target) is None and target in graph:
                visit(target, [*path, target])
        state[module] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module, [module])


@pytest.mark.parametrize("module", sorted(MODULES))
def test_only_the_entry_module_knows_the_compiler_class(module: str) -> None:
    if module == "query":
        return
    for node, target, _ in _imports(module):
        names = [a.name for a in node.names] if isinstance(node, ast.ImportFrom) else []
        assert target != "query" and "QueryCompiler" not in names, (
            f"{module} imports the compiler (line {node.lineno}); operators take a CompileContext"
        )


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_import_after_the_first_definition(module: str) -> None:
    tree = ast.parse(MODULES[module].read_text())
    defined = False
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.ClassDef):
            defined = True
        elif isinstance(node, ast.Import | ast.ImportFrom) and defined:
            raise AssertionError(f"{module}: import at line {node.lineno} below a definition")


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_module_uses_another_modules_private_names(module: str) -> None:
    tree = ast.parse(MODULES[module].read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith(PACKAGE):
            for alias in node.names:
                assert not (alias.name.startswith("_") and not alias.name.startswith("__")), (
                    f"{module} imports the private {alias.name} from {node.module}"
                )
        if isinstance(node, ast.Attribute) and node.attr.startswith("_"):
            if node.attr.startswith("__") and node.attr.endswith("__"):
                continue
            owner = node.value
            assert isinstance(owner, ast.Name) and owner.id in ("self", "cls"), (
                f"{module} line {node.lineno}: {ast.unparse(node)} reaches into a private member"
            )


def test_every_operator_module_is_in_the_operator_table() -> None:
    """An operator module nothing dispatches to is dead code or a missing table entry."""
    from bzrk.engine.compile.operators.table import OPERATORS, SOURCES

    used = {f.__module__ for f in [*OPERATORS.values(), *SOURCES.values()]}
    helpers = {
        "table",
        "geo_lookup",
        "lookups",
        "patterns",
        "analytics",
        "pivot",
        "narrow",
    }  # plugins, helpers
    for module in MODULES:
        if module.startswith("operators.") and module.split(".", 1)[1] not in helpers:
            assert f"{PACKAGE}.{module}" in used, f"{module} has no entry in operators/table.py"
