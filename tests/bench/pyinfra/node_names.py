"""Every node's names for the /etc/hosts block, read once per node and run.

pyinfra 3 runs a fact's command each time it is asked for (no cache), and network.py runs once
per host, so asking every node from every host would cost N x N commands: ask each node once.
"""

from __future__ import annotations

from functools import cache

from pyinfra import inventory
from pyinfra.api import FactBase


class Names(FactBase[list[str]]):
    """``[hostname, fqdn]``: uname -n and hostname -f."""

    def command(self) -> str:
        return "uname -n; hostname -f"

    def process(self, output: list[str]) -> list[str]:
        return [line.strip() for line in output if line.strip()]


@cache
def hosts_line(name: str) -> str:
    """``ADDRESS FQDN HOSTNAME NAME`` (each name once) for the inventory host ``name``."""
    node = inventory.get_host(name)
    hostname, fqdn = node.get_fact(Names)
    return " ".join([node.data.node_address, *dict.fromkeys([fqdn, hostname, name])])
