"""An inventory read and resolved as Ansible would, before nodeprov's own checks.

    resolved = read_inventory(Path("inventory/hosts.ini"), vault=Vault(secrets))
    resolved.hostvars["node1"]    # what ansible-inventory --list shows for node1
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

from nodeprov.inventory.data import InventoryData
from nodeprov.inventory.resolve import Resolved, resolve
from nodeprov.inventory.source import read_source
from nodeprov.inventory.varsdirs import VarsDir
from nodeprov.inventory.vaultlib import Vault


def warn_stderr(message: str) -> None:
    sys.stderr.write(f"nodeprov: warning: {message}\n")


def read_inventory(path: Path, playbook_dir: Path | None = None,
                   warn: Callable[[str], None] = warn_stderr, *,
                   vault: Vault | None = None) -> Resolved:
    """Read ``path`` (file, directory or script) with the group_vars/ and host_vars/ beside it
    and beside the playbook, decrypting vault-encrypted files with ``vault`` (inline ``!vault``
    values stay encrypted until used); InputError names the file and line of any problem."""
    vault = vault or Vault()
    data = InventoryData(str(path))
    read_source(path, data, warn, vault)
    data.reconcile()
    folder = path if path.is_dir() else path.parent
    playbook_dirs = [VarsDir(playbook_dir, vault)] if playbook_dir is not None and (
        playbook_dir.resolve() != folder.resolve()) else []
    return resolve(data, [VarsDir(folder, vault)], playbook_dirs, vault)
