"""docs/writing-a-task.md stays true: the files its table says every task has are exactly the
ones checked here, every registered task has each of them, and every path it names exists.
docs/tasks.md's tags are the default playbook's."""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from nodeprov.tasks.registry import REGISTRY

ROOT = Path(__file__).parent.parent
PAGE = ROOT / "docs" / "writing-a-task.md"
TASKS_PAGE = ROOT / "docs" / "tasks.md"
PLAYBOOK = ROOT / "nodeprov" / "playbooks" / "site.yaml"
ROW = re.compile(r"^\| (.+?) \| .+ \| (.+?) \|$", re.MULTILINE)
CODE = re.compile(r"`([^`]+)`")


def page_rows() -> list[tuple[str, str]]:
    """(first cell, last cell) of each row of the page's table of files."""
    return [(first, when) for first, when in ROW.findall(PAGE.read_text())
            if first not in ("file", "---")]


def one_of(*paths: Path) -> Path:
    found = [path for path in paths if path.exists()]
    assert found, f"none of {[str(path.relative_to(ROOT)) for path in paths]} exists"
    return found[0]


def holds_the_task(name: str) -> None:
    one_of(ROOT / "nodeprov" / "tasks" / f"{name}.py",
           ROOT / "nodeprov" / "tasks" / name / "__init__.py")
    assert importlib.import_module(f"nodeprov.tasks.{name}").TASK is REGISTRY[name]


def registered_in_one_line(name: str) -> None:
    source = (ROOT / "nodeprov" / "tasks" / "registry.py").read_text()
    assert re.search(rf"^ +{name}\.TASK,$", source, re.MULTILINE), f"{name}.TASK"


def has_tests(name: str) -> None:
    found = one_of(ROOT / "tests" / "tasks" / f"test_{name}.py", ROOT / "tests" / "tasks" / name)
    texts = [path.read_text() for path in
             ([found] if found.is_file() else sorted(found.glob("test_*.py")))]
    imports = re.compile(rf"from nodeprov\.tasks(\.{name}\b| import [^\n]*\b{name}\b)")
    assert any(imports.search(text) for text in texts), f"no test imports nodeprov.tasks.{name}"


def playbook_tags(name: str) -> set[str] | None:
    """The tags of the default playbook's entries of task ``name`` (None: it runs none)."""
    entries = [entry for play in yaml.safe_load(PLAYBOOK.read_text())
               for entry in play.get("tasks", ()) if name in entry]
    return {tag for entry in entries for tag in entry.get("tags", ())} if entries else None


def a_row_with_the_playbooks_tags(name: str, page: str = "") -> None:
    page = page or TASKS_PAGE.read_text()
    row = re.search(rf"^\| `{name}`(?: \(([^)]*)\))? \|", page, re.MULTILINE)
    assert row, f"docs/tasks.md has no row for {name}"
    tags = set(row[1].split(", ")) if row[1] else None
    wanted = playbook_tags(name)
    assert tags == wanted, f"docs/tasks.md says {tags}, site.yaml {wanted}"


def named_in_the_code_map(name: str) -> None:
    text = (ROOT / "docs" / "where-things-are.md").read_text()
    assert f"`{name}.py`" in text or f"`nodeprov/tasks/{name}/`" in text, name


# the page's rows "always", and what each means for every registered task
EVERY_TASK: dict[str, Callable[[str], None]] = {
    "`nodeprov/tasks/NAME.py` or `nodeprov/tasks/NAME/`": holds_the_task,
    "`nodeprov/tasks/registry.py`": registered_in_one_line,
    "`tests/tasks/test_NAME.py` or `tests/tasks/NAME/`": has_tests,
    "`docs/tasks.md`": a_row_with_the_playbooks_tags,
    "`docs/where-things-are.md`": named_in_the_code_map,
}


def test_the_page_lists_exactly_the_files_every_task_is_checked_for() -> None:
    always = [first for first, when in page_rows() if when == "always"]
    assert always == list(EVERY_TASK)


@pytest.mark.parametrize("name", sorted(REGISTRY))
@pytest.mark.parametrize("row", list(EVERY_TASK))
def test_every_registered_task_has_each_file(row: str, name: str) -> None:
    EVERY_TASK[row](name)


def test_every_path_the_page_names_exists() -> None:
    paths = {path for first, _ in page_rows() for path in CODE.findall(first) if "/" in path}
    assert len(paths) >= 10, paths
    missing = [path for path in sorted(paths)
               if not any((ROOT / path.replace("NAME", name)).exists() for name in REGISTRY)]
    assert not missing, missing


def test_the_playbook_runs_only_registered_tasks() -> None:
    used = {key for play in yaml.safe_load(PLAYBOOK.read_text())
            for entry in play.get("tasks", ()) for key in entry if key not in ("name", "tags")}
    assert used and used <= set(REGISTRY), used - set(REGISTRY)


def test_a_wrong_tag_on_the_tasks_page_is_caught() -> None:
    page = TASKS_PAGE.read_text()
    assert "| `firewall` (firewall) |" in page
    with pytest.raises(AssertionError, match="docs/tasks.md says"):
        a_row_with_the_playbooks_tags("firewall", page.replace("| `firewall` (firewall) |",
                                                                "| `firewall` (fw) |"))
    with pytest.raises(AssertionError, match="docs/tasks.md says"):  # sysctl: not in site.yaml
        a_row_with_the_playbooks_tags("sysctl", page.replace("| `sysctl` |", "| `sysctl` (x) |"))
