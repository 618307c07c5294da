"""The layers point one way, read from the source (AST), so a lazy import counts too.

- nodeprov/remote/ (the SSH layer) imports only itself and the leaves below it;
- only the CLI imports nodeprov.commands;
- every exception class nodeprov defines sits under NodeprovError (errors.py).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "nodeprov"
# what the remote layer may import from nodeprov: itself and modules that import nothing above
REMOTE_MAY_IMPORT = ("nodeprov.remote", "nodeprov.errors", "nodeprov.validate", "nodeprov.fanout",
                     "nodeprov.factcheck", "nodeprov.gpu", "nodeprov.inventory.model",
                     "nodeprov.inventory.sshconfigs")


def modules() -> Iterator[tuple[str, ast.Module]]:
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        yield name, ast.parse(path.read_text(), str(path))


def imported(module: str, tree: ast.Module) -> set[str]:
    """Every nodeprov module ``tree`` imports, at any depth (functions, TYPE_CHECKING)."""
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: from the module's package
                package = module.split(".")[:len(module.split(".")) - node.level]
                base = ".".join([*package, *([base] if base else [])])
            # "from nodeprov import files" imports the module nodeprov.files
            found.update(f"{base}.{alias.name}" for alias in node.names)
            found.add(base)
    return {name for name in found if name == "nodeprov" or name.startswith("nodeprov.")}


def allowed(name: str, prefixes: tuple[str, ...]) -> bool:
    return name == "nodeprov" or any(
        name == prefix or name.startswith(prefix + ".") for prefix in prefixes)


def test_the_remote_layer_imports_nothing_above_it() -> None:
    remote = {name: tree for name, tree in modules() if allowed(name, ("nodeprov.remote",))}
    assert len(remote) >= 8  # the walk found the layer
    wrong = {f"{name} imports {target}" for name, tree in remote.items()
             for target in imported(name, tree) if not allowed(target, REMOTE_MAY_IMPORT)}
    assert not wrong, sorted(wrong)


def test_the_import_walk_sees_a_lazy_import_from_above() -> None:
    tree = ast.parse("def f():\n    from nodeprov.tasks.base import Plan\n"
                     "from nodeprov import runner\n")
    found = imported("nodeprov.remote.x", tree)
    assert {"nodeprov.tasks.base.Plan", "nodeprov.runner"} <= found
    assert not all(allowed(name, REMOTE_MAY_IMPORT) for name in found)


def test_only_the_cli_imports_the_commands() -> None:
    importers = {name for name, tree in modules()
                 if any(target == "nodeprov.commands" or target.startswith("nodeprov.commands.")
                        for target in imported(name, tree))}
    assert importers <= {"nodeprov.cli"}, sorted(importers)


def exception_classes() -> dict[str, list[str]]:
    """{class name: its bases' names} of every class nodeprov defines."""
    classes: dict[str, list[str]] = {}
    for _, tree in modules():
        for node in ast.walk(tree):
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
