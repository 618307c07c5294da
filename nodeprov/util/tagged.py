"""Values that carry a mark from where they were written, as Ansible's tags do: ``Vaulted``, an
inline ``!vault`` value still encrypted, and ``Unsafe``, text Ansible never templates (the
YAML tag ``!unsafe``, a bytes literal in an INI inventory).

    >>> unsafe(["a{{b}}", {"k": "{% x %}", "n": 1}])
    [Unsafe('a{{b}}'), {'k': Unsafe('{% x %}'), 'n': 1}]
"""

from __future__ import annotations

import copy
from collections.abc import MutableMapping
from typing import Any


class Vaulted:
    """An inline ``!vault`` value as written: still encrypted (``inventory.vaultlib`` opens
    it). Using it as text before that is an error, never the ciphertext in its place."""

    def __init__(self, ciphertext: str, line: int) -> None:
        self.ciphertext, self.line = ciphertext, line

    def __repr__(self) -> str:
        return f"Vaulted(line={self.line})"

    def __str__(self) -> str:
        raise ValueError(f"a !vault value (line {self.line}) no given vault password opens")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Vaulted) and other.ciphertext == self.ciphertext

    def __hash__(self) -> int:
        return hash(self.ciphertext)


class Unsafe(str):
    """Text used as written, never rendered as a template: a password holding ``{{`` stays
    that password. ``ansible-inventory --list`` shows it as ``{"__ansible_unsafe": text}``."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"Unsafe({str(self)!r})"


def unsafe(value: Any) -> Any:
    """``value`` with every text in it (list items, mapping values; not keys) ``Unsafe``, as
    Ansible marks all that a ``!unsafe`` tag covers. Containers are copied (keeping a YAML
    mapping's line numbers): a YAML alias may share them with a value that is not unsafe."""
    if isinstance(value, str):
        return Unsafe(value)
    if isinstance(value, MutableMapping):
        marked = copy.copy(value)
        for key, item in value.items():
            marked[key] = unsafe(item)
        return marked
    if isinstance(value, list):
        items = copy.copy(value)
        items[:] = [unsafe(item) for item in value]
        return items
    return value
