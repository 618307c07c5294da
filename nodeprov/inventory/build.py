"""From Ansible's resolution to nodeprov's hosts: values templated, connection variables read
under every alias, below them what the command line and ansible.cfg give (``defaults``, as
Ansible ranks them), nodeprov's variables validated, and every problem one InputError naming the
file, the line (or the setting), the host and the variable.

    hosts = build_hosts(resolved, HostTemplar(resolved), path, warn=print,
                        defaults={"ansible_user": ("ops", "-u")})
"""

from __future__ import annotations

import difflib
import ipaddress
import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from jinja2 import TemplateError

from nodeprov.errors import InputError
from nodeprov.inventory import connection
from nodeprov.inventory.data import Origin
from nodeprov.inventory.model import Host
from nodeprov.inventory.resolve import Resolved
from nodeprov.inventory.sshargs import SshArgs, first_of, hop_places, hop_text, parse_ssh_args
from nodeprov.inventory.templating import HostTemplar
from nodeprov.inventory.variables import PATH_VARIABLES, VARIABLES, subnet_too_wide
from nodeprov.inventory.vaultlib import VaultError
from nodeprov.util import validate

KNOWN = frozenset(VARIABLES) | connection.CONNECTION_NAMES
Defaults = Mapping[str, tuple[Any, str]]  # variable -> (value, where: "-u", "ansible.cfg: ...")
# what Ansible's names are made of (ranges already expanded, host:port split off)


class _HostBuilder:
    """Builds each Host of one inventory, warning once per place a problem is written."""

    def __init__(self, resolved: Resolved, templar: HostTemplar, folder: Path,
                 warn: Callable[[str], None], defaults: Defaults) -> None:
        self.resolved, self.templar, self.folder, self.warn = resolved, templar, folder, warn
        self.defaults = defaults
        self.near_misses: dict[str, str | None] = {}
        self.warned: set[tuple[str, int | None, str]] = set()
        # per host: canonical name -> the alias its value came from, so errors name that one
        self.written_as: dict[str, dict[str, str]] = {}

    def error(self, host: str, var: str, message: str) -> InputError:
        """``message`` at the place ``var`` (as the inventory spells it) was written."""
        var = self.written_as.get(host, {}).get(var, var)
        origin = self.resolved.origins[host].get(var)
        if origin is None and var in self.defaults:  # from the command line or ansible.cfg
            return InputError(message, source=self.defaults[var][1], field=f"{host}: {var}")
        origin = origin or self.resolved.data.hosts[host].origin
        return InputError(message, source=origin.source, line=origin.line, field=f"{host}: {var}")

    def _rendered(self, name: str, raw: dict[str, Any]) -> dict[str, Any]:
        """nodeprov's defaults, then the host's vars templated; a connection variable nodeprov
        cannot honour is refused here."""
        values: dict[str, Any] = {var: spec.default for var, spec in VARIABLES.items()}
        for var in raw:
            if var in KNOWN:
                values[var] = self.value(name, var)
                why = connection.refusal(var, values[var]) if var in connection.REFUSED else None
                if why:
                    raise self.error(name, var, why)
                unused = connection.not_applied(var, values[var])
                if unused:
                    self._warn_once(name, var, unused)
                continue
            self._check_spelling(name, var)
            try:
                values[var] = self.templar.value(name, var)
            except (TemplateError, TypeError, ValueError, ArithmeticError, RecursionError,
                    VaultError):
                values[var] = raw[var]  # Ansible fails only where it is used; kept as written
        for var in self._defaulted(raw):
            values[var] = value = self.defaults[var][0]
            why = connection.refusal(var, value) if var in connection.REFUSED else None
            if why:
                raise self.error(name, var, why)
        return values

    def _defaulted(self, raw: Mapping[str, Any]) -> list[str]:
        """The defaults a host takes: the inventory's own value wins, under any of its names."""
        return [var for var in self.defaults
                if not any(alias in raw for alias in connection.ALIASES.get(var, (var,)))]

    def value(self, host: str, var: str) -> Any:
        try:
            return self.templar.value(host, var)
        except (TemplateError, TypeError, ValueError, ArithmeticError, RecursionError) as error:
            raise self.error(host, var, f"template error: {error}") from None

    def build(self, name: str) -> Host:
        try:
            validate.inventory_name(name)
        except ValueError as error:
            origin = self.resolved.data.hosts[name].origin
            raise InputError(f"inventory name {error}", source=origin.source, line=origin.line,
                             field=name) from None
        raw = self.resolved.hostvars[name]
        values = self._rendered(name, raw)
        written = {var: values[var] for var in (*raw, *self._defaulted(raw))}
        written_as = self.written_as.setdefault(name, {})
        for canonical in connection.ALIASES:
            picked = connection.pick(written, canonical)
            values[canonical] = picked[1] if picked else VARIABLES[canonical].default
            if picked:
                written_as[canonical] = picked[0]
        for var, spec in VARIABLES.items():
            if var not in raw and var not in written_as and var not in self.defaults:
                continue
            try:
                if var in PATH_VARIABLES and isinstance(values[var], str):
                    # relative paths are from the inventory's folder
                    values[var] = str(self.folder.joinpath(os.path.expanduser(values[var]))
                                      .resolve())
                values[var] = spec.check(values[var])
            except ValueError as error:
                raise self.error(name, var, str(error)) from None
        # the order of Ansible's ssh command line, where ssh takes the first value of each
        # option: ssh_args, then Ansible's own -o StrictHostKeyChecking=no (host_key_checking
        # false) and -o Port, then ssh_common_args, then ssh_extra_args
        parsed = self._ssh_args(name, values)
        for later in hop_places(parsed)[1:]:  # ssh takes the first hop it reads
            self._warn_once(name, connection.SSH_ARGS[later], f"{hop_text(parsed[later])} not "
                            "applied: an earlier ProxyJump or ProxyCommand came first, as in ssh")
        args, common, extra = parsed
        ssh = first_of([args, SshArgs(port=values["ansible_port"], strict_host_keys=(
            False if not values["ansible_host_key_checking"] else None)), common, extra])
        if ssh.ssh_config_file and not values["ssh_config_file"]:
            written_in = next(var for var, found in zip(
                connection.SSH_ARGS, (args, common, extra), strict=True)
                if found.ssh_config_file == ssh.ssh_config_file)
            values["ssh_config_file"] = self._config_file(name, written_in, ssh.ssh_config_file)
        elif values["ssh_config_file"] and not _readable_config(values["ssh_config_file"]):
            raise self.error(name, "ssh_config_file",
                             f"{values['ssh_config_file']} is not a file")
        values["inventory_hostname"] = name
        address = values["ansible_host"] or self._name_as_address(name)
        node_address = self._node_address(name, address, values)
        values["node_address"] = node_address or None
        return Host(
            name=name, address=address, node_address=node_address,
            port=ssh.port, user=values["ansible_user"],
            key_file=values["ansible_ssh_private_key_file"], become=values["ansible_become"],
            become_password=values["ansible_become_password"],
            proxy_jump=ssh.jump,
            proxy_command=ssh.proxy_command, timeout=values["ansible_timeout"],
            accept_new_host_key=ssh.strict_host_keys is False,
            known_hosts_files=ssh.known_hosts_files,
            groups=tuple(self.resolved.group_names(name)), vars=values)

    def _config_file(self, name: str, var: str, given: str) -> str:
        """ssh's -F FILE: from where nodeprov runs, as ssh reads it (``~`` is this user's home,
        which ssh would not expand: Ansible passes it without a shell), ``none`` for none."""
        if given.lower() == "none":
            return os.devnull
        path = os.path.abspath(os.path.expanduser(given))
        if not _readable_config(path):
            raise self.error(name, var, f"-F {given}: {path} is not a file")
        return path

    def _ssh_args(self, name: str, values: dict[str, Any]) -> list[SshArgs]:
        """ansible_ssh_args, the common and the extra args, each parsed; what nodeprov does not
        apply is named in a warning, once per place it is written."""
        parsed = []
        for var in connection.SSH_ARGS:
            try:
                found = parse_ssh_args(str(values.get(var) or ""))
            except ValueError as error:
                raise self.error(name, var, f"{error} (expected -o ProxyJump=[user@]host[:port]"
                                 ", -J ..., -o ProxyCommand=..., -p PORT, -F FILE)") from None
            if found.not_applied:
                self._warn_once(name, var, f"{' '.join(found.not_applied)} not applied: "
                                "nodeprov applies ProxyJump, ProxyCommand, the port, -F and "
                                "the host-key options (put others in ssh_config_file)")
            parsed.append(found)
        return parsed

    def _name_as_address(self, name: str) -> str:
        """Without ansible_host, SSH goes to the inventory name: then it must be an address."""
        try:
            return validate.address(name)
        except ValueError as error:
            raise self.error(name, "ansible_host", f"{error}: without ansible_host, SSH connects "
                             "to the inventory name; set ansible_host") from None

    def _node_address(self, name: str, address: str, values: dict[str, Any]) -> str:
        """The node's address in node_subnet, or "" when the node tells it (``ansible_host``
        is a DNS name, or a management address outside the subnet): ``node_address`` reads it
        from the node's interfaces with the facts."""
        subnet = values["node_subnet"]
        if subnet is None:
            raise self.error(name, "node_subnet", "node_subnet is required (the nodes' subnet, "
                             "e.g. 10.0.0.0/24); set it for group all")
        if wide := subnet_too_wide(subnet, values["node_subnet_allow_wide"]):
            raise self.error(name, "node_subnet", wide)
        network = ipaddress.ip_network(subnet)
        if not values["node_address"]:
            try:
                return address if ipaddress.ip_address(address) in network else ""
            except ValueError:  # a DNS name
                return ""
        if ipaddress.ip_address(values["node_address"]) not in network:
            raise self.error(name, "node_address", f"address {values['node_address']} is "
                             f"outside node_subnet {subnet}; fix the address or the subnet, or "
                             "remove node_address to read it from the node")
        return str(values["node_address"])

    def _check_spelling(self, host: str, var: str) -> None:
        """Warn about a near-miss of nodeprov's own variables (``rdvz_port``), once per
        place it is written."""
        if var not in self.near_misses:
            # Ansible's own names sit close to each other (ansible_ssh_args, ansible_ssh_pass):
            # only a closer match warns there
            cutoff = 0.9 if var.startswith("ansible_") else 0.85
            close = difflib.get_close_matches(var, KNOWN, n=1, cutoff=cutoff)
            self.near_misses[var] = close[0] if close else None
        meant = self.near_misses[var]
        if meant:
            self._warn_once(host, var, f"unknown variable; did you mean {meant}?")

    def _warn_once(self, host: str, var: str, message: str) -> None:
        origin = self.resolved.origins[host].get(var) or Origin(
            self.defaults[var][1] if var in self.defaults else "")
        key = (origin.source, origin.line, var)
        if key not in self.warned:
            self.warned.add(key)
            line = f":{origin.line}" if origin.line else ""
            self.warn(f"{origin.source}{line}: {var}: {message}")


def build_hosts(resolved: Resolved, templar: HostTemplar, folder: Path,
                warn: Callable[[str], None], defaults: Defaults | None = None
                ) -> tuple[Host, ...]:
    builder = _HostBuilder(resolved, templar, folder, warn, defaults or {})
    hosts = tuple(builder.build(name) for name in resolved.hostvars)
    _check_unique(hosts, builder)
    return hosts


def _check_unique(hosts: Iterable[Host], builder: _HostBuilder) -> None:
    seen: dict[tuple[str, int | None], str] = {}
    seen_node: dict[str, str] = {}
    for host in hosts:
        other = seen.setdefault((host.address, host.port), host.name)
        if other != host.name:
            raise builder.error(host.name, "ansible_host", f"{host.name} and {other} have the "
                                f"same address {host.address}:{host.port or 22}; each host "
                                "needs its own")
        if not host.node_address:  # read from the node later (nodeprov.engine.node_address)
            continue
        other = seen_node.setdefault(host.node_address, host.name)
        if other != host.name:
            raise builder.error(host.name, "node_address", f"{host.name} and {other} have the "
                                f"same node address {host.node_address}; each host needs its "
                                "own")


def _readable_config(path: str) -> bool:
    """An ssh_config to read: a file, or ``os.devnull`` (none at all)."""
    return path == os.devnull or os.path.isfile(path)
