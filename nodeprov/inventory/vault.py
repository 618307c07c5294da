"""Ansible Vault in an inventory: refused with the file, line and variable, and how to supply
the value (nodeprov holds no vault password).

    >>> check_vault("all:\\n  vars:\\n    x: 1\\n", "inv.yaml")
"""

from __future__ import annotations

import re

from nodeprov.errors import StricterThanAnsible

_INLINE = re.compile(r"^\s*(?:-\s+)?['\"]?([^'\":#]+?)['\"]?\s*:\s*!vault\b", re.MULTILINE)
HOW = ("nodeprov cannot decrypt vault: put the plain value (ansible-vault view shows it) in a "
       "group_vars/ or host_vars/ file only you can read (chmod 600)")


class VaultEncrypted(StricterThanAnsible):
    """A value nodeprov cannot read: never skipped, even where unreadable files are."""


def check_vault(text: str, source: str) -> None:
    """Raise VaultEncrypted naming the first vault-encrypted value (or the whole file)."""
    if text.lstrip().startswith("$ANSIBLE_VAULT"):
        raise VaultEncrypted(f"the whole file is vault-encrypted; {HOW}", source=source, line=1)
    if "!vault" not in text:
        return
    match = _INLINE.search(text)
    if match:
        line = text.count("\n", 0, match.start(1)) + 1
        raise VaultEncrypted(f"value is vault-encrypted (!vault); {HOW}", source=source,
                             line=line,
                         field=match[1].strip())
