"""README and docs/ name things that exist.

`mkdocs build --strict` (scripts/test.sh) checks the links between docs/ pages, their anchors and
the nav; it sees neither README.md nor the code. These check the rest: README's links (as GitHub
renders them) and every file, folder, test and module the pages name as code, such as
`tests/test_commands.py::test_unreachable_node_does_not_stop_the_others` or
`python -m tests.bench.run`.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent
README = ROOT / "README.md"
CODE_MAP = ROOT / "docs" / "where-things-are.md"
PAGES = [README, *sorted((ROOT / "docs").glob("*.md"))]

FENCE = re.compile(r"^```.*?^```", re.DOTALL | re.MULTILINE)
LINK = re.compile(r"\]\(([^)\s]+)\)")
HEADING = re.compile(r"^#{1,6} (.+)$", re.MULTILINE)
CODE_PATH = re.compile(r"`((?:nodeprov|tests|scripts|docs|inventory|playbooks|\.ci)/[^`\s]*)`")
MODULE = re.compile(r"python -m\s+((?:nodeprov|tests)(?:\.\w+)+)")


def prose(page: Path) -> str:
    """The page without its fenced code blocks (a `# comment` there is no heading)."""
    return FENCE.sub("", page.read_text())


def github_anchor(heading: str) -> str:
    """The id GitHub gives a heading.

    >>> github_anchor("Rolling application: `serial` and `max_fail_percentage`")
    'rolling-application-serial-and-max_fail_percentage'
    """
    text = re.sub(r"[^\w\- ]", "", heading.replace("`", "").strip().lower())
    return text.replace(" ", "-")


def readme_links() -> list[str]:
    return [link for link in LINK.findall(prose(README)) if "://" not in link]


def named_paths() -> list[tuple[str, str]]:
    """(page, path) for every repository path a page writes as code; a path of the task
    template (``NAME``, writing-a-task.md) exists once per task: test_writing_a_task checks it."""
    return sorted({(page.name, path)
                   for page in PAGES for path in CODE_PATH.findall(page.read_text())
                   if "NAME" not in path})


def named_modules() -> list[tuple[str, str]]:
    """(page, module) for every module a page runs with `python -m`."""
    return sorted({(page.name, module)
                   for page in PAGES for module in MODULE.findall(page.read_text())})


def test_the_pages_name_links_paths_and_modules() -> None:
    """The patterns below still find what they check (an empty list would check nothing)."""
    assert any(link.startswith("docs/") for link in readme_links())
    assert any("::" in path for _, path in named_paths())
    assert named_modules()


@pytest.mark.parametrize("link", readme_links())
def test_a_readme_link_reaches_a_file_and_its_heading(link: str) -> None:
    path, _, anchor = link.partition("#")
    target = (ROOT / path).resolve()
    assert target.exists(), f"README.md links to {link}: no {path}"
    if anchor:
        ids = {github_anchor(heading) for heading in HEADING.findall(prose(target))}
        assert anchor in ids, f"README.md links to {link}: {path} has no heading #{anchor}"


@pytest.mark.parametrize(("page", "named"), named_paths())
def test_a_path_a_page_names_exists(page: str, named: str) -> None:
    path, _, test = named.partition("::")
    target = ROOT / path
    assert target.exists(), f"{page} names {named}: no {path}"
    if test:
        assert f"def {test}(" in target.read_text(), f"{page} names {named}: no test {test}"


@pytest.mark.parametrize(("page", "module"), named_modules())
def test_a_module_a_page_runs_exists(page: str, module: str) -> None:
    path = ROOT / module.replace(".", "/")
    assert path.with_suffix(".py").is_file() or (path / "__main__.py").is_file(), (
        f"{page} runs python -m {module}: no such module")


def mapped() -> list[str]:
    """What the code map must name: every folder and file of the package, every folder of tests/."""
    found = [path.relative_to(ROOT) for top in ("nodeprov", "tests")
             for path in (ROOT / top).rglob("*") if "__pycache__" not in path.parts]
    folder = {path: (ROOT / path).is_dir() for path in found}
    return sorted(f"{path}/" if folder[path] else str(path) for path in found
                  if path.parts[0] == "nodeprov" or (len(path.parts) == 2 and folder[path]))


@pytest.mark.parametrize("path", mapped())
def test_the_code_map_names_every_folder_and_module(path: str) -> None:
    """docs/where-things-are.md names each folder by its path, each file by its name or path."""
    name = path if path.endswith("/") else path.rpartition("/")[2]
    assert re.search(rf"[`/]{re.escape(name)}`", CODE_MAP.read_text()), (
        f"docs/where-things-are.md does not name {path}")
