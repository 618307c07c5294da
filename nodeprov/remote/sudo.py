"""Become root on a node: a command under sudo, the password typed at sudo's own prompt only.

    as_root(host, ["systemctl", "restart", "ssh"])
    # become with a password: ["sudo", "-S", "-p", SUDO_PROMPT, "--", "systemctl", ...]
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from nodeprov.inventory.model import Host

SUDO_PROMPT = "[nodeprov: sudo password]"
SUDO_REFUSED = "Sorry, try again."


def as_root(host: Host, argv: Sequence[str]) -> list[str]:
    """argv under sudo when the host says become: the password is typed at sudo's prompt
    only, so a sudo that asks for none never passes it on to the command."""
    if not host.become:
        return list(argv)
    if host.become_password:
        return ["sudo", "-S", "-p", SUDO_PROMPT, "--", *argv]
    return ["sudo", "-n", "--", *argv]


def sudo_responders(host: Host) -> list[Any]:
    """Invoke watchers typing the password at SUDO_PROMPT (none without become)."""
    from invoke.watchers import FailingResponder  # lazy, like Fabric

    password = host.become_password
    return [FailingResponder(re.escape(SUDO_PROMPT), password + "\n", SUDO_REFUSED)] if (
        host.become and password) else []
