"""Limits on what one inventory file may expand to, so YAML alias bombs and absurd nesting
end as one-line errors instead of exhausted memory or recursion.

    >>> check_size({"a": [1, 2]}, "inv.yaml")
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from nodeprov.errors import StricterThanAnsible

MAX_VALUES = 1_000_000  # scalars, lists and mappings, counted as if YAML aliases were copied
MAX_NESTING = 210  # a YAML group tree at the group depth limit (100) nests twice as deep


def check_size(data: Any, source: str) -> None:
    """Raise InputError when ``data`` expands to too many values or nests too deep."""
    count = 0
    pending: list[tuple[Any, int]] = [(data, 0)]
    while pending:
        value, depth = pending.pop()
        count += 1
        if count > MAX_VALUES:
            raise StricterThanAnsible(f"expands to more than {MAX_VALUES} values (YAML aliases "
                                      "repeating each other?); write the data out plainly",
                                      source=source)
        if depth > MAX_NESTING:
            raise StricterThanAnsible(f"values nested more than {MAX_NESTING} deep; flatten "
                                      "them", source=source)
        if isinstance(value, Mapping):
            pending.extend((item, depth + 1) for item in value.values())
        elif isinstance(value, (list, tuple)):
            pending.extend((item, depth + 1) for item in value)
