"""Ansible-format YAML inventories: load, merge vars, validate before any connection.

    all:
      vars: {node_subnet: 10.0.0.0/24}
      hosts:
        node1: {ansible_host: 10.0.0.11}
      children:
        gpu:
          hosts: {node1: {}}

Vars merge as Ansible does: host vars > child group vars > parent group vars > all vars >
nodeprov's defaults (``nodeprov.variables``).

    >>> inventory = load_inventory(Path("inventory/example.yaml"))  # doctest: +SKIP
    >>> inventory.hosts[0].address  # doctest: +SKIP
    '10.0.0.11'
"""

from __future__ import annotations

import fnmatch
import ipaddress
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nodeprov import validate
from nodeprov.errors import InputError
from nodeprov.variables import PATH_VARIABLES, VARIABLES, subnet_too_wide
from nodeprov.yamlfile import YamlMap, load_yaml_file

if TYPE_CHECKING:
    from paramiko import SSHConfig

GROUP_KEYS = ("hosts", "vars", "children")
USER_SSH_CONFIG = "~/.ssh/config"


@dataclass(frozen=True)
class Host:
    """One node: where to reach it, its address in node_subnet, and its merged vars."""

    name: str
    address: str
    node_address: str
    port: int = 22
    user: str | None = None
    key_file: str | None = None
    become: bool = False
    become_password: str | None = field(default=None, repr=False)
    # SSH hops from the inventory (ansible_ssh_common_args / ansible_ssh_extra_args): a
    # ProxyJump spec "[user@]host[:port][,...]" or a ProxyCommand; None: ssh_config decides
    proxy_jump: str | None = None
    proxy_command: str | None = None
    groups: tuple[str, ...] = ()
    vars: Mapping[str, Any] = field(default_factory=dict, repr=False)


@dataclass(frozen=True)
class Inventory:
    path: Path
    hosts: tuple[Host, ...]
    groups: Mapping[str, tuple[str, ...]]
    # the ssh_config files read while loading, for the connections to reuse
    ssh_configs: SshConfigs = field(repr=False, compare=False)

    def host(self, name: str) -> Host:
        return next(host for host in self.hosts if host.name == name)

    def select(self, pattern: str) -> list[Host]:
        """Hosts matching an Ansible-style pattern: ``all``, groups, names, globs, ``a,b``,
        ``!excluded``; raises InputError when a term matches nothing."""
        chosen: list[str] = []
        excluded: set[str] = set()
        for term in (t.strip() for t in pattern.replace(":", ",").split(",")):
            if not term:
                continue
            negate = term.startswith("!")
            names = self._match(term.lstrip("!"))
            if not names:
                raise InputError(f"pattern {term!r} matches no host or group; groups: "
                                 f"{', '.join(sorted(self.groups))}; hosts: "
                                 f"{', '.join(h.name for h in self.hosts)}")
            if negate:
                excluded.update(names)
            else:
                chosen.extend(name for name in names if name not in chosen)
        return [self.host(name) for name in chosen if name not in excluded]

    def _match(self, term: str) -> list[str]:
        if term in self.groups:
            return list(self.groups[term])
        return [host.name for host in self.hosts if fnmatch.fnmatchcase(host.name, term)]


@dataclass
class _Collected:
    """Raw host entries and group vars found while walking the group tree."""

    host_vars: dict[str, dict[str, Any]] = field(default_factory=dict)
    host_lines: dict[str, int] = field(default_factory=dict)
    host_groups: dict[str, list[tuple[int, str]]] = field(default_factory=dict)
    group_vars: dict[str, tuple[int, YamlMap]] = field(default_factory=dict)
    groups: dict[str, list[str]] = field(default_factory=dict)


def load_inventory(path: Path, extra_vars: Mapping[str, Any] | None = None) -> Inventory:
    """Load and validate an inventory file; every problem is an InputError naming the line.
    ``extra_vars`` (-e) override every host's vars."""
    source = str(path)
    data = load_yaml_file(path)
    if not isinstance(data, YamlMap):
        raise InputError("an inventory is a mapping with one top-level key, all:", source=source,
                         line=1)
    for key in data:
        if key != "all":
            raise InputError(f"unknown top-level key {key!r}; an inventory has one top-level "
                             "key, all: (put groups under all: children:)",
                             source=source, line=data.line_of(key), field=key)
    if not isinstance(data["all"], YamlMap):
        raise InputError("all: must be a mapping with hosts:, vars: and children:",
                         source=source, line=data.line_of("all"), field="all")
    collected = _Collected()
    _walk_group("all", data["all"], 0, ("all",), collected, source)
    if not collected.host_vars:
        raise InputError("no hosts; add hosts under all: hosts:", source=source, line=1,
                         field="all.hosts")
    ssh_configs = SshConfigs()
    hosts = tuple(_build_host(name, collected, path, ssh_configs, extra_vars or {})
                  for name in collected.host_vars)
    _check_unique_addresses(hosts, collected, source)
    groups = {name: tuple(members) for name, members in collected.groups.items()}
    return Inventory(path=path, hosts=hosts, groups=groups, ssh_configs=ssh_configs)


def _walk_group(name: str, group: YamlMap, depth: int, trail: tuple[str, ...],
                collected: _Collected, source: str) -> None:
    """Collect a group's hosts and vars; ``trail`` is the path of keys down to it."""
    where = ".".join(trail)
    ancestors = [(index, group_name) for index, group_name in enumerate(trail[::2])]
    for key in group:
        if key not in GROUP_KEYS:
            raise InputError(f"unknown key {key!r} in group {name!r}; valid: "
                             f"{', '.join(GROUP_KEYS)}", source=source, line=group.line_of(key),
                             field=f"{where}.{key}")
    members = collected.groups.setdefault(name, [])
    group_vars = group.get("vars") or YamlMap()
    if not isinstance(group_vars, YamlMap):
        raise InputError("vars: must be a mapping of name: value", source=source,
                         line=group.line_of("vars"), field=f"{where}.vars")
    collected.group_vars[name] = (depth, group_vars)
    hosts = group.get("hosts") or YamlMap()
    if not isinstance(hosts, YamlMap):
        raise InputError("hosts: must be a mapping of host name: vars (a list is not valid)",
                         source=source, line=group.line_of("hosts"), field=f"{where}.hosts")
    for host_name, host_vars in hosts.items():
        line = hosts.line_of(host_name)
        try:
            validate.hostname(host_name)
        except ValueError as error:
            raise InputError(str(error), source=source, line=line,
                             field=f"{where}.hosts.{host_name}") from None
        if host_vars is not None and not isinstance(host_vars, YamlMap):
            raise InputError("a host's value must be a mapping of vars (or empty)", source=source,
                             line=line, field=f"{where}.hosts.{host_name}")
        merged = collected.host_vars.setdefault(host_name, {})
        for var, value in (host_vars or {}).items():
            merged[var] = (value, (host_vars.line_of(var) if host_vars else line))
        collected.host_lines.setdefault(host_name, line)
        collected.host_groups.setdefault(host_name, []).extend(ancestors)
        if host_name not in members:
            members.append(host_name)
    children = group.get("children") or YamlMap()
    if not isinstance(children, YamlMap):
        raise InputError("children: must be a mapping of group name: group", source=source,
                         line=group.line_of("children"), field=f"{where}.children")
    for child_name, child in children.items():
        if child_name == "all" or child_name in trail:
            raise InputError(f"group {child_name!r} contains itself", source=source,
                             line=children.line_of(child_name), field=f"{where}.children")
        _walk_group(child_name, child if isinstance(child, YamlMap) else YamlMap(), depth + 1,
                    (*trail, "children", child_name), collected, source)
        for member in collected.groups[child_name]:
            if member not in members:
                members.append(member)


def _build_host(name: str, collected: _Collected, path: Path, ssh_configs: SshConfigs,
                extra_vars: Mapping[str, Any]) -> Host:
    source = str(path)
    # (value, line) per var, from the widest scope to the narrowest, so later wins.
    layered: dict[str, tuple[Any, int | None]] = {}
    scopes = sorted({(0, "all"), *collected.host_groups[name]})
    for _depth, group in scopes:
        group_vars = collected.group_vars[group][1]
        layered.update({var: (value, group_vars.line_of(var)) for var, value in group_vars.items()})
    layered.update(collected.host_vars[name])
    layered.update({var: (value, None) for var, value in extra_vars.items()})
    values: dict[str, Any] = {var: spec.default for var, spec in VARIABLES.items()}
    for var, (raw, line) in layered.items():
        spec = VARIABLES.get(var)
        if var in PATH_VARIABLES and isinstance(raw, str):
            # relative paths are from the inventory's folder, as Ansible reads them
            raw = str(path.parent.joinpath(os.path.expanduser(raw)).resolve())
        if spec is None:
            values[var] = raw  # the user's own vars, for their templates
            continue
        try:
            values[var] = spec.check(raw)
        except ValueError as error:
            raise InputError(f"{error}", source=source, line=line, field=f"{name}: {var}") from None
    if values["node_subnet"] is None:
        raise InputError("node_subnet is required (the nodes' subnet, e.g. 10.0.0.0/24); set it "
                         "under all: vars:", source=source, line=collected.host_lines[name],
                         field=f"{name}: node_subnet")
    if wide := subnet_too_wide(values["node_subnet"], values["node_subnet_allow_wide"]):
        raise InputError(wide, source=source, line=layered["node_subnet"][1],
                         field=f"{name}: node_subnet")
    values["inventory_hostname"] = name
    address = values["ansible_host"] or name
    node_address = values["node_address"] or address
    line = layered.get("node_address", layered.get("ansible_host", (None, collected.host_lines[
        name])))[1]
    try:
        in_subnet = ipaddress.ip_address(node_address) in ipaddress.ip_network(
            values["node_subnet"])
    except ValueError:
        raise InputError(f"{node_address!r} is not an IP address; set node_address to the "
                         f"node's address in {values['node_subnet']}", source=source, line=line,
                         field=f"{name}: node_address") from None
    if not in_subnet:
        key = "node_address" if values["node_address"] else "ansible_host"
        raise InputError(f"address {node_address} is outside node_subnet {values['node_subnet']}; "
                         "fix the address, the subnet, or set node_address to the node's "
                         "address in the subnet", source=source, line=line,
                         field=f"{name}: {key}")
    values["node_address"] = node_address
    if "ansible_port" not in layered:
        # the port SSH really uses, so the firewall keeps that one open
        values["ansible_port"] = ssh_configs.port(values["ssh_config_file"], address)
    return Host(
        name=name, address=address, node_address=node_address, port=values["ansible_port"],
        user=values["ansible_user"], key_file=values["ansible_ssh_private_key_file"],
        become=values["ansible_become"], become_password=values["ansible_become_password"],
        groups=tuple(group for _depth, group in scopes),
        vars=values,
    )


def _check_unique_addresses(hosts: Iterable[Host], collected: _Collected, source: str) -> None:
    seen: dict[tuple[str, int], str] = {}
    seen_node: dict[str, str] = {}
    for host in hosts:
        line = collected.host_lines[host.name]
        other = seen.setdefault((host.address, host.port), host.name)
        if other != host.name:
            raise InputError(f"{host.name} and {other} have the same address {host.address}:"
                             f"{host.port}; each host needs its own", source=source, line=line,
                             field=f"{host.name}: ansible_host")
        other = seen_node.setdefault(host.node_address, host.name)
        if other != host.name:
            raise InputError(f"{host.name} and {other} have the same node address "
                             f"{host.node_address}; each host needs its own", source=source,
                             line=line, field=f"{host.name}: node_address")


class SshConfigs:
    """ssh_config files (default ~/.ssh/config), each read once; ports from them.

        SshConfigs().port(None, "10.0.0.11")   # its Port in ~/.ssh/config, else 22
    """

    def __init__(self) -> None:
        self._parsed: dict[Path, SSHConfig | None] = {}

    def parsed(self, ssh_config_file: str | None) -> SSHConfig | None:
        """The file parsed, None when it does not exist."""
        from paramiko import SSHConfig  # lazy: slow to import, and not every run needs it

        path = Path(ssh_config_file or os.path.expanduser(USER_SSH_CONFIG))
        if path not in self._parsed:
            self._parsed[path] = SSHConfig.from_path(str(path)) if path.is_file() else None
        return self._parsed[path]

    def port(self, ssh_config_file: str | None, address: str) -> int:
        config = self.parsed(ssh_config_file)
        return 22 if config is None else validate.port(config.lookup(address).get("port", "22"))
