"""What a process started by a NEW SSH session sees on a node: the login user (no sudo), as
torchrun's launcher would log in. One connection and one round trip per node: its environment
(/etc/environment, PAM, profiles) and what the node's own hostname resolves to (nsswitch).

    >>> parse_fresh("A=1\\nB==eth0\\n@@T getent\\n10.0.0.2 STREAM node2\\n", "T").environment
    {'A': '1', 'B': '=eth0'}
"""

from __future__ import annotations

import dataclasses
import ipaddress
import secrets
from dataclasses import dataclass
from typing import TYPE_CHECKING

from nodeprov.errors import HostError
from nodeprov.inventory import Host
from nodeprov.remote.options import SshOptions
from nodeprov.remote.session import Session

if TYPE_CHECKING:
    from nodeprov.remote.hostkeys import SshFiles

# $1 a marker token, $2 the getent database; getent fails when nothing resolves
_SCRIPT = 'env; printf "\\n@@%s getent\\n" "$1"; getent "$2" -- "$(hostname)" || true'
# the tasks whose checks look at a new session
AREAS = ("hosts", "nccl_env")


@dataclass(frozen=True)
class Fresh:
    environment: dict[str, str]
    addresses: list[str]  # what the node's hostname resolves to, first the one a process gets


def parse_env(output: str) -> dict[str, str]:
    """``env``'s output as a mapping.

        >>> parse_env("A=1\\nB==eth0\\n")
        {'A': '1', 'B': '=eth0'}
    """
    pairs = (line.partition("=") for line in output.splitlines())
    return {name: value for name, sep, value in pairs if sep}


def parse_fresh(output: str, token: str) -> Fresh:
    environment, _, resolved = output.partition(f"\n@@{token} getent\n")
    return Fresh(parse_env(environment),
                 list(dict.fromkeys(line.split()[0] for line in resolved.splitlines()
                                    if line.strip())))


def read_fresh(node: Host, ssh: SshOptions, files: SshFiles) -> Fresh | str:
    """What a new session on ``node`` sees, or the error's text when it fails; it needs no
    facts, so verify reads it while it plans."""
    subnet = ipaddress.ip_network(node.vars["node_subnet"])
    family = "ahostsv6" if subnet.version == 6 else "ahostsv4"
    token = secrets.token_hex(8)
    try:
        with Session(dataclasses.replace(node, become=False), ssh, files) as session:
            output = session.run(("sh", "-c", _SCRIPT, "sh", token, family),
                                 task="verify").stdout
    except HostError as error:
        return str(error)
    return parse_fresh(output, token)
