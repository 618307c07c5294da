"""An inventory read and resolved as Ansible would, before nodeprov's own checks: one source or
several (``-i a -i b``, ansible.cfg's ``inventory = a,b``), read in order into one inventory, a
later source adding to and overriding what an earlier one said, as Ansible merges them.

    resolved = read_inventory(Path("inventory/hosts.ini"), vault=Vault(secrets))
    resolved = read_inventory([Path("config/inventory"), Path("extra.yml")], Path("."))
    resolved.hostvars["node1"]    # what ansible-inventory --list shows for node1
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from nodeprov.inventory.data import InventoryData
from nodeprov.inventory.resolve import Resolved, resolve
from nodeprov.inventory.source import DEFAULT_IGNORED, is_host_list, read_source
from nodeprov.inventory.varsdirs import VarsDir
from nodeprov.inventory.vaultlib import Vault

Sources = Path | Sequence[Path]  # one inventory source, or several in the order they merge


def warn_stderr(message: str) -> None:
    sys.stderr.write(f"nodeprov: warning: {message}\n")


def as_sources(given: Sources) -> tuple[Path, ...]:
    return (given,) if isinstance(given, Path) else tuple(given)


def folder_of(source: Path) -> Path:
    """Where a source's group_vars/ and host_vars/ are: the folder itself, or the file's."""
    return source if source.is_dir() else source.parent


def read_inventory(sources: Sources, playbook_dir: Path | None = None,
                   warn: Callable[[str], None] = warn_stderr, *,
                   vault: Vault | None = None,
                   ignored: re.Pattern[str] = DEFAULT_IGNORED) -> Resolved:
    """Read each source (file, directory or script; ``ignored``: the names a directory's reading
    skips) with the group_vars/ and host_vars/ beside each, then beside ``playbook_dir`` (the
    project's folder), decrypting vault-encrypted files with ``vault`` (inline ``!vault`` values
    stay encrypted until used); InputError names the file and line of any problem."""
    vault = vault or Vault()
    paths = as_sources(sources)
    data = InventoryData(str(paths[0]))
    for path in paths:
        read_source(path, data, warn, vault, ignored)
    data.reconcile()
    # as Ansible, a folder applies once per source it holds and again as the playbook's:
    # the last one wins; each is read once however often it applies
    found: dict[Path, VarsDir] = {}

    def vars_dir(folder: Path) -> VarsDir:
        return found.setdefault(folder.resolve(), VarsDir(folder, vault))

    playbook_dirs = [vars_dir(playbook_dir)] if playbook_dir is not None else []
    # a host list has no folder: Ansible reads no group_vars/host_vars for it
    beside = [vars_dir(folder_of(path)) for path in paths if not is_host_list(path)]
    return resolve(data, beside, playbook_dirs, vault)
