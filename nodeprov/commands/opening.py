"""The first step of every command that reads an inventory: ansible.cfg, the vault passwords,
the command line's Ansible options, then the inventory (``inventory.opening``), the passwords
asked on the terminal, never echoed.

    opened = open_for([], ansible, redactor, extra=parse_extra_vars(["rdzv_port=29600"]))
"""

from __future__ import annotations

import getpass
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from nodeprov.config.defaults import AnsibleOptions
from nodeprov.inventory.opening import Opened, Surroundings, open_inventory
from nodeprov.util.redact import Redactor


def open_for(given: Sequence[Path] | None, ansible: AnsibleOptions, redactor: Redactor, *,
             extra: Mapping[str, Any] | None = None,
             playbook_dir: Path | None = None) -> Opened:
    """``given``: the INVENTORY arguments (None or empty: -i, else the configured ones)."""
    return open_inventory(given or [], ansible, Surroundings(getpass.getpass, redactor),
                          extra_vars=extra, playbook_dir=playbook_dir)
