"""Ansible's connection variables under every name Ansible reads, resolved as Ansible does
(``ansible_ssh_host`` beats ``ansible_host``; ``ansible_sudo_pass`` beats ``ansible_become_pass``
beats ``ansible_become_password``), and the ones nodeprov cannot honour refused by name.

    >>> ALIASES["ansible_host"]
    ('ansible_ssh_host', 'ansible_host')
    >>> proxy_from_args("-o ProxyJump=admin@bastion:2222 -o ServerAliveInterval=5")
    ('admin@bastion:2222', None, ['-o ServerAliveInterval=5'])
"""

from __future__ import annotations

import shlex
from typing import Any

from nodeprov.util import validate

# canonical name -> the names Ansible reads it from, the winner first
ALIASES: dict[str, tuple[str, ...]] = {
    "ansible_host": ("ansible_ssh_host", "ansible_host"),
    "ansible_port": ("ansible_ssh_port", "ansible_port"),
    "ansible_user": ("ansible_ssh_user", "ansible_user"),
    "ansible_ssh_private_key_file": ("ansible_ssh_private_key_file", "ansible_private_key_file"),
    "ansible_become_password": ("ansible_sudo_pass", "ansible_become_pass",
                                "ansible_become_password"),
}
SSH_ARGS = ("ansible_ssh_common_args", "ansible_ssh_extra_args")
# variable -> (the values nodeprov can honour, what to do instead)
REFUSED: dict[str, tuple[tuple[str, ...], str]] = {
    "ansible_connection": (("ssh", "smart", "paramiko", "paramiko_ssh"),
                           "nodeprov connects over SSH only; remove the host or use ssh"),
    "ansible_password": ((), "password authentication is not supported; use a key "
                         "(ansible_ssh_private_key_file) or ssh-agent"),
    "ansible_ssh_pass": ((), "password authentication is not supported; use a key "
                         "(ansible_ssh_private_key_file) or ssh-agent"),
    "ansible_ssh_password": ((), "password authentication is not supported; use a key "
                             "(ansible_ssh_private_key_file) or ssh-agent"),
    "ansible_become_method": (("sudo",), "nodeprov becomes root with sudo only"),
    "ansible_become_user": (("root",), "nodeprov becomes root only"),
    "ansible_sudo_user": (("root",), "nodeprov becomes root only"),
    "ansible_become_exe": (("sudo",), "nodeprov runs sudo itself"),
    "ansible_become_flags": ((), "nodeprov runs sudo with its own flags"),
}
_PARAMIKO = "nodeprov connects with paramiko, not the ssh program; use ssh_config_file"
# connection variables nodeprov reads but does not apply: a warning says so, never silence
NOT_APPLIED: dict[str, str] = {
    "ansible_host_key_checking": "host keys are always checked (--accept-new-host-keys "
                                 "records new ones)",
    "ansible_ssh_host_key_checking": "host keys are always checked (--accept-new-host-keys "
                                     "records new ones)",
    **dict.fromkeys(("ansible_ssh_args", "ansible_ssh_executable", "ansible_scp_extra_args",
                     "ansible_sftp_extra_args", "ansible_ssh_transfer_method",
                     "ansible_scp_if_ssh", "ansible_pipelining", "ansible_ssh_pipelining",
                     "ansible_ssh_retries"), _PARAMIKO),
    **dict.fromkeys(("ansible_timeout", "ansible_ssh_timeout"),
                    "nodeprov waits 10 s for a connection"),
    **dict.fromkeys(("ansible_shell_type", "ansible_shell_executable"),
                    "nodeprov runs its commands with sh"),
}
CONNECTION_NAMES = frozenset({*(n for names in ALIASES.values() for n in names), *SSH_ARGS,
                              *REFUSED, *NOT_APPLIED, "ansible_become"})


def pick(values: dict[str, Any], canonical: str) -> tuple[str, Any] | None:
    """The (name, value) Ansible would use for ``canonical``, None when none is set."""
    for name in ALIASES[canonical]:
        if values.get(name) is not None:
            return name, values[name]
    return None


def refusal(name: str, value: Any) -> str | None:
    """Why a connection variable set to ``value`` is refused, None when it is fine."""
    allowed, instead = REFUSED[name]
    if value is None or str(value) in allowed:
        return None
    shown = "(set)" if "pass" in name else repr(value)
    return f"{shown} is not supported: {instead}"


def not_applied(name: str, value: Any) -> str | None:
    """Why a connection variable set to ``value`` changes nothing, None when it is honoured."""
    if name not in NOT_APPLIED or value is None or (
            name.endswith("host_key_checking") and str(value).lower() in ("true", "yes", "1")):
        return None
    return f"not applied: {NOT_APPLIED[name]}"


def proxy_from_args(text: str) -> tuple[str | None, str | None, list[str]]:
    """ProxyJump and ProxyCommand from ssh arguments; the rest comes back, not applied.
    ValueError names what is wrong."""
    words = shlex.split(text)
    jump: str | None = None
    command: str | None = None
    others: list[str] = []
    index = 0
    while index < len(words):
        word = words[index]
        value: str | None = None
        if word in ("-o", "-J") and index + 1 < len(words):
            value, index = words[index + 1], index + 1
            option = value if word == "-o" else f"ProxyJump={value}"
        elif word.startswith(("-o", "-J")) and len(word) > 2:
            option = word[2:] if word.startswith("-o") else f"ProxyJump={word[2:]}"
        else:
            others.append(word)
            index += 1
            continue
        key, _, setting = option.replace("=", " ", 1).partition(" ")
        if key.lower() == "proxyjump":
            jump = check_jump(setting.strip())
        elif key.lower() == "proxycommand":
            command = validate.text_value(setting.strip())
        else:
            others.append(f"-o {option}" if word.startswith("-o") else word)
        index += 1
    return jump, command, others


def check_jump(spec: str) -> str:
    """A ProxyJump value, ``[user@]host[:port][,...]``, every part checked."""
    for hop in spec.split(","):
        hop = hop.removeprefix("ssh://")
        user, at, rest = hop.rpartition("@")
        if at:
            validate.user_name(user)
        host, port = _host_port(rest)
        validate.address(host)
        if port is not None:
            validate.port(port)
    return spec


def _host_port(text: str) -> tuple[str, str | None]:
    if text.startswith("["):
        host, _, port = text[1:].partition("]")
        return host, port.removeprefix(":") or None
    host, colon, port = text.rpartition(":")
    return (host, port) if colon and host.count(":") == 0 else (text, None)

