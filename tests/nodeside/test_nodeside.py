"""What runs on the nodes keeps to what the nodes have (nodeprov/nodeside/): Python that parses
as the oldest python3 nodeprov runs it with and imports only that Python's standard library,
and shell scripts that ``sh -n`` and shellcheck (as POSIX sh) accept.

A module-level string spanning lines in a node-side module is a script too (``python3 -c
SERVE``): it is held to the same rule. Like ansible-test's compile sanity check, this reads
syntax and imports only; a newer function of an old module would still pass.
"""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from nodeprov.tasks.venv import SCRIPTS_PYTHON
from tests.sources import PACKAGE

NODESIDE = PACKAGE / "nodeside"
MAJOR, MINOR = SCRIPTS_PYTHON.split(".")
OLDEST = (int(MAJOR), int(MINOR))
# standard library modules newer than 3.8 (What's New in Python 3.9 and 3.11: new modules)
NEWER_THAN_OLDEST = {"graphlib", "zoneinfo", "tomllib"}
PYTHON = sorted(NODESIDE.glob("*.py"))
SHELL = sorted(NODESIDE.glob("*.sh"))


def scripts(path: Path) -> list[tuple[str, str]]:
    """(name, source) of the file itself and of each multi-line string it assigns at the top."""
    text = path.read_text()
    found = [(path.name, text)]
    for node in ast.parse(text).body:
        if (isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant)
                and isinstance(node.value.value, str) and "\n" in node.value.value.strip()):
            found += [(f"{path.name}:{target.id}", node.value.value) for target in node.targets
                      if isinstance(target, ast.Name)]
    return found


def problems(name: str, source: str) -> list[str]:
    """Why ``source`` would not run on the oldest node python, or [] when it would."""
    try:
        tree = ast.parse(source, name, feature_version=OLDEST)
    except SyntaxError as error:
        return [f"{name}:{error.lineno}: not Python {SCRIPTS_PYTHON}: {error.msg}"]
    tops = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            tops |= {alias.name.partition(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            tops.add("." if node.level else (node.module or "").partition(".")[0])
    return [f"{name}: imports {top}, not in Python {SCRIPTS_PYTHON}'s standard library"
            for top in sorted(tops)
            if top not in sys.stdlib_module_names or top in NEWER_THAN_OLDEST]


def test_the_folder_holds_the_node_side_files() -> None:
    assert {path.name for path in PYTHON} >= {"netcheck.py", "syncnode.py", "peer_scripts.py"}
    assert {path.name for path in SHELL} == {"facts.sh", "ufw-helper.sh", "uv_runs.sh",
                                             "install.sh", "seed.sh"}
    assert [name for name, _ in scripts(NODESIDE / "peer_scripts.py")][1:] == [
        "peer_scripts.py:SERVE", "peer_scripts.py:FETCH"]


@pytest.mark.parametrize("path", PYTHON, ids=lambda path: path.name)
def test_python_parses_as_the_oldest_node_python_and_imports_only_its_stdlib(path: Path) -> None:
    found = [line for name, source in scripts(path) for line in problems(name, source)]
    assert not found, found


def test_the_python_check_refuses_newer_syntax_and_other_imports() -> None:
    assert problems("a.py", "import json, os.path\nfrom __future__ import annotations\n") == []
    (match,) = problems("b.py", "match x:\n    case 1:\n        pass\n")
    assert match.startswith(f"b.py:3: not Python {SCRIPTS_PYTHON}: Pattern matching"), match
    assert problems("c.py", "def f():\n    import yaml, tomllib\n    from . import x\n") == [
        f"c.py: imports {top}, not in Python {SCRIPTS_PYTHON}'s standard library"
        for top in (".", "tomllib", "yaml")]


@pytest.mark.parametrize("path", SHELL, ids=lambda path: path.name)
def test_shell_scripts_pass_sh_n_and_shellcheck(path: Path) -> None:
    syntax = subprocess.run(["sh", "-n", str(path)], capture_output=True, text=True)
    assert syntax.returncode == 0, syntax.stderr
    assert shutil.which("shellcheck"), "shellcheck is missing: run scripts/setup.sh"
    lint = subprocess.run(["shellcheck", "--shell=sh", str(path)], capture_output=True, text=True)
    assert lint.returncode == 0, lint.stdout
