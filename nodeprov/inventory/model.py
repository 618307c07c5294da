"""What the rest of nodeprov sees of an inventory: its hosts, ready to connect to, and groups.

    inventory.select("gpu:!node3")      # Host objects, Ansible's pattern rules
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nodeprov.errors import InputError
from nodeprov.inventory import patterns
from nodeprov.inventory.resolve import Resolved
from nodeprov.inventory.sshconfigs import SshConfigs
from nodeprov.util.validate import printable


@dataclass(frozen=True)
class Host:
    """One node: where to reach it, its address in node_subnet, and its merged vars."""

    name: str
    address: str
    # "" until read from the node (nodeprov.engine.node_address): the inventory names it by DNS name
    # or by an address outside node_subnet, and gives no node_address
    node_address: str
    # None: ssh_config's Port (else 22), read when connecting, never while loading
    port: int | None = None
    user: str | None = None
    key_file: str | None = None
    become: bool = False
    become_password: str | None = field(default=None, repr=False)
    # SSH hops from the inventory (ansible_ssh_common_args / ansible_ssh_extra_args): a
    # ProxyJump spec "[user@]host[:port][,...]" or a ProxyCommand; "none" in either: no hop,
    # whatever ssh_config says; None: ssh_config decides
    proxy_jump: str | None = None
    proxy_command: str | None = None
    timeout: float | None = None  # to open the connection; None: SshOptions.connect_timeout
    accept_new_host_key: bool = False  # host_key_checking false, StrictHostKeyChecking=no
    known_hosts_files: tuple[str, ...] | None = None  # None: ssh_config's, else ~/.ssh's
    groups: tuple[str, ...] = ()
    vars: Mapping[str, Any] = field(default_factory=dict, repr=False)


@dataclass(frozen=True)
class Inventory:
    path: Path
    hosts: tuple[Host, ...]
    groups: Mapping[str, tuple[str, ...]]
    # the ssh_config files, parsed when a connection first needs them
    ssh_configs: SshConfigs = field(repr=False, compare=False)
    # Ansible's view (groups as written, raw vars), which patterns select from
    resolved: Resolved = field(repr=False, compare=False)

    def host(self, name: str) -> Host:
        return next(host for host in self.hosts if host.name == name)

    def limited(self, limit: str | None) -> list[Host]:
        """The hosts a ``--limit`` pattern selects; every host without one."""
        return self.select(limit, limit=True) if limit else list(self.hosts)

    def select(self, pattern: str | Sequence[str], *, limit: bool = False) -> list[Host]:
        """Hosts matching an Ansible pattern (``limit``: ``@file`` terms allowed, as
        ``--limit`` takes them); InputError names a term that matches nothing."""
        names = patterns.select(self.resolved.data, pattern, limit_files=limit)
        if not names:
            given = pattern if isinstance(pattern, str) else ",".join(pattern)
            raise InputError(f"pattern '{printable(given)}' selects no host",
                             field="--limit" if limit else "")
        by_name = {host.name: host for host in self.hosts}
        return [by_name[name] for name in names]

