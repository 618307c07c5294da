"""nodeprov's modules read as source (AST), for the tests that guard the package's shape::

    for module in package_modules():
        module.name, module.path     # "nodeprov.tasks.base", PACKAGE / "tasks" / "base.py"
        imported(module)             # every name it imports, at any depth: lazy, TYPE_CHECKING
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PACKAGE = REPO / "nodeprov"


@dataclass(frozen=True)
class Module:
    name: str  # dotted: a package is its __init__.py
    path: Path
    tree: ast.Module

    @property
    def is_package(self) -> bool:
        return self.path.name == "__init__.py"


def package_modules() -> Iterator[Module]:
    """Every .py file of the package, in path order."""
    yield from _read_all()


@functools.cache
def _read_all() -> tuple[Module, ...]:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(REPO).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found.append(Module(name, path, ast.parse(path.read_text(), str(path))))
    return tuple(found)


def imported(module: Module, *, top_level_only: bool = False) -> set[str]:
    """Every dotted name ``module`` imports (``from a import b`` gives ``a.b``), at any depth
    (functions, TYPE_CHECKING), or only its module-level statements."""
    found: set[str] = set()
    nodes = module.tree.body if top_level_only else ast.walk(module.tree)
    for node in nodes:
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: from the module's package
                package = module.name.split(".")
                package = package[:len(package) - node.level + module.is_package]
                base = ".".join([*package, *([base] if base else [])])
            # "from nodeprov import errors" imports the module nodeprov.errors
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return found


def module_names() -> set[str]:
    return {module.name for module in package_modules()}


def imported_modules(module: Module, *, top_level_only: bool = False) -> set[str]:
    """The nodeprov modules ``module`` imports (a name from a module counts as that module)."""
    known = module_names()
    targets = set()
    for name in imported(module, top_level_only=top_level_only):
        while name and name not in known:
            name = name.rpartition(".")[0]
        if name not in ("", "nodeprov", module.name):  # the root package defines nothing
            targets.add(name)
    return targets
