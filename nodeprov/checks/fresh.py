"""What a process started by a NEW SSH session sees on a node: the login user (no sudo), as
torchrun's launcher would log in. One round trip per node, on the connection the checks opened
(each command gets a session of its own from sshd, with what PAM set up when the connection
opened: the checks' own connections are new, so that is what a new login gets now): its
environment (/etc/environment, PAM, profiles) and what the node's own hostname resolves to
(nsswitch).

    seen = read_all_fresh(["node1", "node2"], sessions, gathered)   # {"node2": "why not"}

    >>> parse_fresh("A=1\\nB==eth0\\n@@T getent\\n10.0.0.2 STREAM node2\\n", "T").environment
    {'A': '1', 'B': '=eth0'}
"""

from __future__ import annotations

import ipaddress
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from nodeprov.errors import HostError
from nodeprov.remote.facts import Facts
from nodeprov.remote.session import Session
from nodeprov.util.fanout import DEFAULT_FORKS, on_every, raise_first

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


def read_fresh(session: Session, node_subnet: str) -> Fresh | str:
    """What a new session on the session's node sees, or the error's text when it fails."""
    subnet = ipaddress.ip_network(node_subnet)
    family = "ahostsv6" if subnet.version == 6 else "ahostsv4"
    token = secrets.token_hex(8)
    try:
        output = session.run(("sh", "-c", _SCRIPT, "sh", token, family), task="verify",
                             as_login=True).stdout
    except HostError as error:
        return str(error)
    return parse_fresh(output, token)


def read_all_fresh(names: Sequence[str], sessions: Mapping[str, Session],
                   gathered: Mapping[str, Facts | str],
                   forks: int = DEFAULT_FORKS) -> dict[str, Fresh | str]:
    """``read_fresh`` on the named nodes, ``forks`` at once, each over its open session; a
    node whose facts could not be read keeps that reason."""
    def one(name: str) -> Fresh | str:
        facts = gathered[name]
        if isinstance(facts, str):
            return facts
        session = sessions[name]
        return read_fresh(session, session.host.vars["node_subnet"])

    return dict(zip(names, raise_first(on_every(one, names, forks=forks)), strict=True))
