"""The layers point one way, read from the source (AST), so a lazy import counts too.

- nodeprov/remote/ (the SSH layer) imports only itself and the leaves below it;
- only the CLI imports nodeprov.commands;
- no two modules import each other, however indirectly, TYPE_CHECKING imports included;
- every exception class nodeprov defines sits under NodeprovError (errors.py).
"""

from __future__ import annotations

import ast
from collections.abc import Mapping

from tests.sources import PACKAGE, Module, imported, imported_modules, package_modules

# what the remote layer may import from nodeprov: itself and modules that import nothing above
REMOTE_MAY_IMPORT = ("nodeprov.remote", "nodeprov.errors", "nodeprov.validate", "nodeprov.fanout",
                     "nodeprov.factcheck", "nodeprov.gpu", "nodeprov.inventory.model",
                     "nodeprov.inventory.sshconfigs")


def nodeprov_names(module: Module) -> set[str]:
    return {name for name in imported(module) if name == "nodeprov" or name.startswith("nodeprov.")}


def allowed(name: str, prefixes: tuple[str, ...]) -> bool:
    return name == "nodeprov" or any(
        name == prefix or name.startswith(prefix + ".") for prefix in prefixes)


def test_the_remote_layer_imports_nothing_above_it() -> None:
    remote = [module for module in package_modules() if allowed(module.name, ("nodeprov.remote",))]
    assert len(remote) >= 8  # the walk found the layer
    wrong = {f"{module.name} imports {target}" for module in remote
             for target in nodeprov_names(module) if not allowed(target, REMOTE_MAY_IMPORT)}
    assert not wrong, sorted(wrong)


def test_the_import_walk_sees_a_lazy_import_from_above() -> None:
    tree = ast.parse("def f():\n    from nodeprov.tasks.base import Plan\n"
                     "from nodeprov import runner\n")
    found = nodeprov_names(Module("nodeprov.remote.x", PACKAGE / "remote" / "x.py", tree))
    assert {"nodeprov.tasks.base.Plan", "nodeprov.runner"} <= found
    assert not all(allowed(name, REMOTE_MAY_IMPORT) for name in found)


def test_only_the_cli_imports_the_commands() -> None:
    importers = {module.name for module in package_modules()
                 if any(target == "nodeprov.commands" or target.startswith("nodeprov.commands.")
                        for target in nodeprov_names(module))}
    assert importers <= {"nodeprov.cli"}, sorted(importers)


def cycles(graph: Mapping[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
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


def import_graph() -> dict[str, set[str]]:
    return {module.name: imported_modules(module) for module in package_modules()}


def test_no_import_cycle_not_even_through_type_checking_imports() -> None:
    assert not cycles(import_graph()), cycles(import_graph())


def test_a_cycle_through_a_type_only_import_is_found() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    graph = import_graph()
    assert "nodeprov.job.matrix" in graph["nodeprov.prove"]  # the walk sees real edges
    graph["nodeprov.job.matrix"].add("nodeprov.prove")  # as a TYPE_CHECKING import would
    assert any({"nodeprov.job.matrix", "nodeprov.prove"} <= set(cycle) for cycle in cycles(graph))


def exception_classes() -> dict[str, list[str]]:
    """{class name: its bases' names} of every class nodeprov defines."""
    classes: dict[str, list[str]] = {}
    for module in package_modules():
        for node in ast.walk(module.tree):
            if isinstance(node, ast.ClassDef):
                classes[node.name] = [ast.unparse(base).rsplit(".", 1)[-1] for base in node.bases]
    return classes


def roots(name: str, classes: dict[str, list[str]]) -> set[str]:
    """The classes outside nodeprov that ``name`` derives from (its own name if outside)."""
    if name not in classes:
        return {name}
    return {root for base in classes[name] for root in roots(base, classes)}


def is_under(name: str, ancestor: str, classes: dict[str, list[str]]) -> bool:
    return name == ancestor or any(is_under(base, ancestor, classes)
                                   for base in classes.get(name, []))


def test_every_exception_nodeprov_defines_is_a_nodeprov_error() -> None:
    classes = exception_classes()
    exceptions = {name for name in classes if any(
        root.endswith(("Error", "Exception", "Interrupt")) for root in roots(name, classes))}
    assert {"NodeprovError", "HostError", "TaskFailed", "ParamError"} <= exceptions
    outside = sorted(name for name in exceptions if not is_under(name, "NodeprovError", classes))
    assert not outside, outside
