"""The node's own name resolves to its subnet address: gloo binds where the hostname resolves
(127.0.1.1 would be loopback). The hosts task's plan checks the /etc/hosts block; this asks the
resolver (nsswitch, DNS, a line another tool added) what a process on the node really gets."""

from __future__ import annotations

from collections.abc import Mapping

from nodeprov.checks import Drift
from nodeprov.checks.fresh import Fresh
from nodeprov.inventory import Host
from nodeprov.tasks import hosts
from nodeprov.tasks.base import Context

AREA = "hosts"


def test_own_name_resolves_to_subnet_address(fresh: Mapping[str, Fresh | str], node: Host,
                                             params: hosts.HostsParams, context: Context,
                                             drift: Drift) -> None:
    seen = fresh[node.name]
    assert not isinstance(seen, str), drift.line(f"a new SSH session failed: {seen}",
                                                 context.host.node_address)
    assert seen.addresses[:1] == [context.host.node_address], drift.line(
        f"its hostname {context.facts.hostname} resolves to "
        f"{', '.join(seen.addresses) or 'nothing'}", context.host.node_address)
