"""The package as a whole: what it imports is declared, and its modules stay small.

- every third-party module nodeprov imports (at any depth: lazy imports count) comes from a
  dependency pyproject.toml declares (the job's torch from the ``job`` extra), and each declared
  dependency is installed here in a version it allows;
- no module is over 300 lines (STYLE: modules stay well under that);
- at most 8 modules sit loose at the package root: every other one is in the folder of its
  concern (tests/test_layering.py gives each folder its layer).
"""

from __future__ import annotations

import ast
import sys
from importlib.metadata import PackageNotFoundError, packages_distributions, version
from typing import Any

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.sources import PACKAGE, REPO, Module, imported, package_modules

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

MAX_LINES = 300
MAX_LOOSE = 8
# the torchrun job runs in the nodes' venv, which the torch task fills: the ``job`` extra
EXTRA_OF = {"nodeprov.proof.allreduce": "job"}


def requirements(extra: str | None = None) -> list[Requirement]:
    """pyproject.toml's dependencies, or those of an extra."""
    project: dict[str, Any] = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    listed = project["dependencies"] if extra is None else project["optional-dependencies"][extra]
    return [Requirement(text) for text in listed]


def third_party(module: Module) -> set[str]:
    """The top-level names of what ``module`` imports from outside the standard library."""
    tops = {name.partition(".")[0] for name in imported(module)}
    return {top for top in tops
            if top and top != "nodeprov" and top not in sys.stdlib_module_names}


def distributions(top: str) -> set[str]:
    """The distributions that install import name ``top`` (its own name if none here, as for
    tomli, needed only before Python 3.11)."""
    return {canonicalize_name(name) for name in packages_distributions().get(top, [top])}


def declared_for(module: Module) -> set[str]:
    declared: set[str] = {canonicalize_name(req.name) for req in requirements()}
    for prefix, extra in EXTRA_OF.items():
        if module.name == prefix or module.name.startswith(prefix + "."):
            declared |= {canonicalize_name(req.name) for req in requirements(extra)}
    return declared


def undeclared_imports() -> list[str]:
    return sorted(f"{module.name} imports {top} ({', '.join(sorted(distributions(top)))})"
                  for module in package_modules() for top in third_party(module)
                  if not distributions(top) & declared_for(module))


def test_every_third_party_import_is_a_declared_dependency() -> None:
    assert not undeclared_imports(), undeclared_imports()


def test_the_import_check_sees_a_lazy_import_of_an_undeclared_package() -> None:
    tree = ast.parse("def f():\n    import rich.console\n    from yaml import safe_load\n"
                     "    import json\n    from nodeprov import errors\n")
    module = Module("nodeprov.x", REPO / "nodeprov" / "x.py", tree)
    assert third_party(module) == {"rich", "yaml"}
    assert distributions("yaml") == {"pyyaml"}
    assert "pyyaml" in declared_for(module) and "torch" not in declared_for(module)


def test_every_declared_dependency_is_installed_in_an_allowed_version() -> None:
    wrong = []
    for requirement in requirements():
        if requirement.marker is not None and not requirement.marker.evaluate():
            continue
        try:
            found = version(requirement.name)
        except PackageNotFoundError:
            wrong.append(f"{requirement.name}: not installed")
            continue
        if not requirement.specifier.contains(found, prereleases=True):
            wrong.append(f"{requirement.name} {found}: not {requirement.specifier}")
    assert not wrong, wrong


def test_no_module_is_over_300_lines() -> None:
    long = {str(module.path.relative_to(REPO)): lines for module in package_modules()
            if (lines := len(module.path.read_text().splitlines())) > MAX_LINES}
    assert not long, (f"{long}: split where a concept ends, not by size "
                      "(docs/development.md, Commits and modules)")


def test_at_most_8_modules_are_loose_at_the_package_root() -> None:
    loose = sorted(module.path.name for module in package_modules()
                   if module.path.parent == PACKAGE and not module.is_package)
    assert len(loose) <= MAX_LOOSE, loose
