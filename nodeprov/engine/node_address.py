"""A node's address in node_subnet: from the inventory, or read from the node itself.

An inventory of DNS names (``ansible_host: gpu01.example.org``), or of management addresses
outside node_subnet, without ``node_address`` leaves ``Host.node_address`` empty. Once the facts
are read, the one address the node holds in the subnet fills it::

    hosts, problems = with_node_addresses(inventory.hosts, facts)
    # problems: {"gpu02": "gpu02: node_address: ... set node_address ..."}

A host without facts (unreachable) keeps its empty address; whoever lists it says so.
"""

from __future__ import annotations

import dataclasses
import ipaddress
from collections.abc import Iterable, Mapping

from nodeprov.inventory import Host
from nodeprov.remote.facts import Facts


def with_node_addresses(hosts: Iterable[Host], facts: Mapping[str, Facts | None]
                        ) -> tuple[list[Host], dict[str, str]]:
    """``hosts`` with every address the node had to tell filled in, and a one-line problem per
    host whose address cannot be told (none or several in the subnet, or another node's)."""
    resolved: list[Host] = []
    problems: dict[str, str] = {}
    for host in hosts:
        found = facts.get(host.name)
        if host.node_address or found is None:
            resolved.append(host)
            continue
        try:
            resolved.append(dataclasses.replace(host, node_address=_read(host, found)))
        except ValueError as error:
            problems[host.name] = f"{host.name}: node_address: {error}"
            resolved.append(host)
    owners: dict[str, str] = {}
    for host in resolved:
        other = owners.setdefault(host.node_address, host.name) if host.node_address else None
        if other not in (None, host.name) and host.name not in problems:
            problems[host.name] = (f"{host.name}: node_address: {host.node_address} is also "
                                   f"{other}'s address; set node_address for each")
    return resolved, problems


def _read(host: Host, facts: Facts) -> str:
    subnet = str(host.vars["node_subnet"])
    found = list(dict.fromkeys(str(ipaddress.ip_interface(address).ip)
                               for iface in facts.interfaces if iface.up
                               for address in iface.addresses_in(subnet)))
    if len(found) == 1:
        return found[0]
    held = ", ".join(address for iface in facts.interfaces
                     for address in (*iface.ipv4, *iface.ipv6)) or "none"
    if not found:
        raise ValueError(f"{host.address} has no address in node_subnet {subnet} on an interface "
                         f"that is up (its addresses: {held}); fix node_subnet, or set "
                         "node_address")
    raise ValueError(f"{host.address} has {len(found)} addresses in node_subnet {subnet} "
                     f"({', '.join(found)}); set node_address to the one training uses")
