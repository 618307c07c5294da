"""Which inventory sources a command reads, and how, from the command line and Ansible's
settings: INVENTORY and ``-i`` (each given, in order), else ansible.cfg's ``inventory`` or
``ANSIBLE_INVENTORY`` (a comma-separated list), else ``$NODEPROV_INVENTORY``, else
``./inventory.yaml``; the project's folder (the ansible.cfg's, whose group_vars/host_vars
apply too); which names of an inventory folder are skipped.

    sources = inventory_sources([], settings, os.environ)   # (Path('config/inventory'), ...)
    project_folder(settings, os.environ)                    # Path('/repo'), or None

What was not given on the command line is never read from a folder others can write
(``config.trust``): an inventory script runs as the user, often root.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from nodeprov.config import Settings
from nodeprov.config.convert import expand
from nodeprov.config.search import SYSTEM_CONFIG
from nodeprov.config.trust import writable_by_others
from nodeprov.errors import InputError
from nodeprov.inventory.source import IGNORED_EXTENSIONS, ignored_names

DEFAULT_INVENTORY = Path("inventory.yaml")
ENVIRONMENT_INVENTORY = "NODEPROV_INVENTORY"


def inventory_sources(given: Sequence[Path], settings: Settings, environ: Mapping[str, str],
                      warn: Callable[[str], None]) -> tuple[Path, ...]:
    """The sources to read, in the order they merge (a later one wins)."""
    if given:
        return tuple(given)
    configured = settings.values.get("inventory")
    if configured is not None:
        origin, entry = configured.origin, configured.entry
        found = []
        for path in map(Path, configured.value):
            if not path.exists():  # as Ansible: a source it cannot read is skipped
                warn(f"{origin}: {entry}: {path} does not exist; skipped, as Ansible skips it")
                continue
            refuse_if_planted(path, "give the inventory as INVENTORY", origin, entry)
            found.append(path)
        if not found:
            raise InputError(f"{', '.join(configured.value)}: none exists; fix the setting or "
                             "give the inventory as INVENTORY", source=origin, field=entry)
        return tuple(found)
    if environ.get(ENVIRONMENT_INVENTORY):
        path = Path(environ[ENVIRONMENT_INVENTORY])
        refuse_if_planted(path, "give the inventory as INVENTORY", "environment",
                          ENVIRONMENT_INVENTORY)
        return (path,)
    if DEFAULT_INVENTORY.exists():
        refuse_if_planted(DEFAULT_INVENTORY, "give it as INVENTORY if it is yours")
        return (DEFAULT_INVENTORY,)
    raise InputError("no inventory: give a path, set inventory in ansible.cfg, set "
                     f"{ENVIRONMENT_INVENTORY}, or create ./inventory.yaml")


def refuse_if_planted(path: Path, fix: str, source: str = "", field: str = "") -> None:
    """InputError when ``path``, not given on the command line, is in a place others can
    write; ``fix`` says how to give it instead, ``source`` and ``field`` what named it."""
    why = writable_by_others(path)
    if why:
        raise InputError(f"{path}: not read: {why}, so anyone could have put it there; {fix}, "
                         "or move it to a folder only you can write", source=source,
                         field=field)


def project_folder(settings: Settings, environ: Mapping[str, str]) -> Path | None:
    """The folder of the ansible.cfg in use: the project's, where Ansible would find the
    playbooks and their group_vars/host_vars. A user's ``~/.ansible.cfg`` or the system's
    ``/etc/ansible/ansible.cfg`` is no project's: None then, as without an ansible.cfg."""
    config = settings.config_file
    if config is None or config in (Path(expand("~/.ansible.cfg", environ)), SYSTEM_CONFIG):
        return None
    return config.parent


def ignored(settings: Settings) -> re.Pattern[str]:
    """The names an inventory folder's reading skips, as the settings say (Ansible's
    ``inventory_ignore_extensions`` and ``inventory_ignore_patterns``)."""
    patterns = settings.get("inventory_ignore_patterns", [])
    try:
        return ignored_names(settings.get("inventory_ignore_extensions", IGNORED_EXTENSIONS),
                             patterns)
    except re.error as error:
        setting = settings.values["inventory_ignore_patterns"]
        raise InputError(f"not a regular expression: {error}; fix the pattern",
                         source=setting.origin, field=setting.entry) from None
