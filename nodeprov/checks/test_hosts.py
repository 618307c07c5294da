"""Every node resolves every node's names to that node's subnet address, as glibc answers a
process there (nsswitch: files, DNS, a line another tool added; the first answer is the one a
process gets), and none to a loopback: the inventory name, and the hostname and FQDN torch
advertises for it (``socket.getfqdn()``). gloo binds where the hostname resolves (127.0.1.1
would be loopback); the hosts task's plan only checks the /etc/hosts block."""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping

import pytest

from nodeprov.checks import Drift
from nodeprov.checks.fresh import Fresh
from nodeprov.inventory import Host
from nodeprov.tasks import hosts
from nodeprov.tasks.base import Context, Plan

AREA = "hosts"


@pytest.fixture()
def seen(fresh: Mapping[str, Fresh | str], node: Host, context: Context,
         drift: Drift) -> Fresh:
    found = fresh[node.name]
    if isinstance(found, str):
        pytest.fail(drift.line(f"a new SSH session failed: {found}", context.host.node_address),
                    pytrace=False)
    return found


def test_every_nodes_names_resolve_to_its_subnet_address(
        seen: Fresh, context: Context, params: hosts.HostsParams, plan: Plan,
        drift: Drift) -> None:
    wrong = [(peer, name, found) for peer, name, found in _answers(seen, context, params.domain)
             if found[:1] != [_address(context, peer)] or any(_loopback(a) for a in found)]
    assert not wrong, _line(wrong, context, plan, drift)


def _address(context: Context, peer: str) -> str:
    return context.cluster[peer][0].node_address


def _answers(seen: Fresh, context: Context, domain: str) -> list[tuple[str, str, list[str]]]:
    """(peer, name, glibc's addresses) for each peer's inventory name, hostname and, under
    ``domain`` (where the block lists it), FQDN: getaddrinfo's answer and gethostbyname's."""
    found = []
    for peer, (host, facts) in context.cluster.items():
        if not host.node_address:
            continue  # the hosts task says it cannot list it
        reported = (facts.hostname.split(".")[0], facts.hostname, facts.fqdn) if facts else ()
        names = dict.fromkeys([peer, *(name for name in reported if "." not in name or (
            domain and name.lower().endswith(f".{domain.lower()}")))])
        found += [(peer, name, answer) for name in names
                  for answer in (seen.resolved.get(name), seen.first_match.get(name))
                  if answer is not None]
    return found


def _loopback(text: str) -> bool:
    return ipaddress.ip_address(text).is_loopback


def _line(wrong: list[tuple[str, str, list[str]]], context: Context, plan: Plan,
          drift: Drift) -> str:
    said = "; ".join(dict.fromkeys(f"{name!r} resolves to {', '.join(found) or 'nothing'}"
                                   for _, name, found in wrong))
    expected = "; ".join(dict.fromkeys(f"{name!r} {_address(context, peer)}"
                                       for peer, name, _ in wrong))
    hostnames = [(peer, name) for peer, name, _ in wrong if name.lower() != peer.lower()]
    advice = (f"set {hostnames[0][0]}'s hostname to its inventory name (hostnamectl "
              f"set-hostname {hostnames[0][0]} on it), or free the name {hostnames[0][1]!r} "
              "where it resolves elsewhere (DNS, /etc/hosts)" if hostnames else
              "the hosts line of /etc/nsswitch.conf puts a source before files; put files first")
    return drift.effect_line(said, expected, plan, advice)
