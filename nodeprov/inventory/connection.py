"""Ansible's connection variables under every name Ansible reads, resolved as Ansible does
(``ansible_ssh_host`` beats ``ansible_host``; ``ansible_sudo_pass`` beats ``ansible_become_pass``
beats ``ansible_become_password``), and the ones nodeprov cannot honour refused by name.

    >>> ALIASES["ansible_host"]
    ('ansible_ssh_host', 'ansible_host')
"""

from __future__ import annotations

from typing import Any

# canonical name -> the names Ansible reads it from, the winner first
ALIASES: dict[str, tuple[str, ...]] = {
    "ansible_host": ("ansible_ssh_host", "ansible_host"),
    "ansible_port": ("ansible_ssh_port", "ansible_port"),
    "ansible_user": ("ansible_ssh_user", "ansible_user"),
    "ansible_ssh_private_key_file": ("ansible_ssh_private_key_file", "ansible_private_key_file"),
    "ansible_become_password": ("ansible_sudo_pass", "ansible_become_pass",
                                "ansible_become_password"),
    "ansible_timeout": ("ansible_ssh_timeout", "ansible_timeout"),
    # the ssh plugin's: the later of its names wins
    "ansible_host_key_checking": ("ansible_ssh_host_key_checking", "ansible_host_key_checking"),
}
# read in this order, as ssh reads its arguments (the first value of an option wins)
SSH_ARGS = ("ansible_ssh_args", "ansible_ssh_common_args", "ansible_ssh_extra_args")
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
    "ansible_become_user": (("root",), "nodeprov becomes root only (its tasks need root)"),
    "ansible_sudo_user": (("root",), "nodeprov becomes root only (its tasks need root)"),
    "ansible_become_exe": (("sudo",), "nodeprov runs sudo itself"),
    "ansible_become_flags": ((), "nodeprov runs sudo with its own flags"),
}
_PARAMIKO = "nodeprov connects with paramiko, not the ssh program; use ssh_config_file"
# connection variables nodeprov reads but does not apply: a warning says so, never silence
NOT_APPLIED: dict[str, str] = {
    **dict.fromkeys(("ansible_ssh_executable", "ansible_scp_extra_args",
                     "ansible_sftp_extra_args", "ansible_ssh_transfer_method",
                     "ansible_scp_if_ssh", "ansible_pipelining", "ansible_ssh_pipelining",
                     "ansible_ssh_retries"), _PARAMIKO),
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
    if name not in NOT_APPLIED or value is None:
        return None
    return f"not applied: {NOT_APPLIED[name]}"
