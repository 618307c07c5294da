"""docs/variables.md is ``VARIABLES`` (nodeprov/inventory/variables.py) in words: the same
variables in the same order, and where a variable has a default, the page shows that value."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from nodeprov.inventory.variables import VARIABLES

PAGE = Path(__file__).parent.parent / "docs" / "variables.md"
ROW = re.compile(r"^\| `(\w+)`[^|]* \| ([^|]+) \|", re.MULTILINE)
CODE = re.compile(r"`([^`]+)`")


def rows(page: str) -> list[tuple[str, str]]:
    """(variable, default cell) of each row of the page's table."""
    return ROW.findall(page)


def shown(value: Any) -> str:
    """A default as the page writes it (YAML's spelling).

    >>> [shown(value) for value in (False, 29500, 0.3, (), {}, "auto")]
    ['false', '29500', '0.3', '[]', '{}', 'auto']
    """
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (tuple, list)):
        return "[]" if not value else str(list(value))
    return str(value)


def disagreements(page: str) -> list[str]:
    found = rows(page)
    names = [name for name, _ in found]
    wrong = [] if names == list(VARIABLES) else [f"the page lists {names}, VARIABLES "
                                                 f"{list(VARIABLES)}"]
    for name, cell in found:
        default = VARIABLES[name].default if name in VARIABLES else None
        if default in (None, ""):
            continue  # no value to show: the page says what happens instead, in words
        spans = CODE.findall(cell)
        if not spans or spans[-1] != shown(default):
            wrong.append(f"{name}: the page says {cell.strip()!r}, the default is "
                         f"{shown(default)!r}")
    return wrong


def test_the_page_and_the_table_agree() -> None:
    assert len(rows(PAGE.read_text())) == len(VARIABLES) > 30
    assert not disagreements(PAGE.read_text())


def test_a_changed_default_or_a_missing_row_is_caught() -> None:
    page = PAGE.read_text()
    moved = page.replace("| `rdzv_port` | `29500` |", "| `rdzv_port` | `29400` |")
    assert disagreements(moved) == ["rdzv_port: the page says '`29400`', the default is '29500'"]
    without = re.sub(r"^\| `wheelhouse` .*\n", "", page, flags=re.MULTILINE)
    (missing,) = disagreements(without)
    assert missing.startswith("the page lists") and "'wheelhouse'" in missing
