"""Ansible inventories as people write them: INI or YAML (or a dynamic inventory script, or
the JSON ``ansible-inventory --list`` prints), group_vars/ and host_vars/, ranges, aliases,
patterns, Jinja, resolved as ``ansible-inventory`` resolves them, then validated for nodeprov
before any connection.

    >>> inventory = load_inventory(Path("inventory/example.yaml"))  # doctest: +SKIP
    >>> inventory.hosts[0].address  # doctest: +SKIP
    '10.0.0.11'

One module per concern: ``ranges`` (host names), ``ini`` and ``yamlsrc`` (the formats),
``source`` (which format, scripts), ``data`` (groups and hosts as Ansible holds them),
``varsdirs`` (group_vars/host_vars), ``resolve`` (precedence), ``templating`` (sandboxed Jinja),
``connection`` (connection variables), ``variables`` (nodeprov's own: defaults and checks),
``extravars`` (-e), ``build`` (nodeprov's checks), ``sshargs`` (ssh arguments), ``patterns``,
``listing`` (``nodeprov inventory``), ``guard`` (hostile input), ``vaultformat``,
``vaultsecrets`` and ``vaultlib`` (Ansible Vault; what output must not show: util/redact.py),
``opening`` (an inventory with ansible.cfg, vault and the command line's options).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from nodeprov.inventory.build import Defaults, build_hosts
from nodeprov.inventory.model import Host, Inventory
from nodeprov.inventory.reading import Sources, as_sources, folder_of, read_inventory, warn_stderr
from nodeprov.inventory.source import DEFAULT_IGNORED
from nodeprov.inventory.sshconfigs import SshConfigs
from nodeprov.inventory.templating import HostTemplar
from nodeprov.inventory.vaultlib import Vault

__all__ = ["Host", "Inventory", "SshConfigs", "load_inventory", "read_inventory"]


def load_inventory(sources: Sources, playbook_dir: Path | None = None,
                   warn: Callable[[str], None] = warn_stderr, *,
                   extra_vars: Mapping[str, Any] | None = None,
                   defaults: Defaults | None = None, vault: Vault | None = None,
                   ignored: re.Pattern[str] = DEFAULT_IGNORED) -> Inventory:
    """Load and validate an inventory (one source or several, merged in order); every problem
    is an InputError naming file and line. ``playbook_dir``: the project's folder, whose
    group_vars/host_vars apply after the sources'; ``extra_vars`` (``-e``) override every
    host's vars, as Ansible's extra vars do; ``defaults`` (the command line's and
    ansible.cfg's) give what a host does not set; ``vault`` decrypts vault-encrypted files and
    values; ``ignored``: the names an inventory folder's reading skips."""
    from nodeprov.errors import InputError

    resolved = read_inventory(sources, playbook_dir, warn, vault=vault, ignored=ignored)
    resolved.add_extra_vars(extra_vars or {})
    paths = as_sources(sources)
    path = paths[0]
    if not resolved.hostvars:
        where = ("in any of these sources" if len(paths) > 1 else
                 "in any inventory file in this folder" if path.is_dir() else "in this file")
        raise InputError(f"no hosts {where}; add hosts to a group (all: hosts: in YAML, or a "
                         "[group] section in INI)", source=", ".join(map(str, paths)),
                         line=None if len(paths) > 1 or path.is_dir() else 1)
    # what the first source is for nodeprov's own relative paths and magic variables
    hosts = build_hosts(resolved, HostTemplar(resolved, playbook_dir), folder_of(path),
                        warn, defaults)
    groups = {name: tuple(resolved.data.group_hosts(name)) for name in resolved.data.groups}
    return Inventory(path=path, hosts=hosts, groups=groups, ssh_configs=SshConfigs(),
                     resolved=resolved)
