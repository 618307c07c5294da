"""What the command line and Ansible's configuration give every host, as the values of the
inventory variables they stand for: below the host's own variables, as in Ansible (an
``ansible_user`` in the inventory beats ``-u``, which beats ``remote_user`` in ansible.cfg, which
an ``ANSIBLE_REMOTE_USER`` beats; ``-e`` beats them all).

    defaults = host_defaults(settings, CommandLine(user="ops"))
    defaults["ansible_user"]        # Default('ops', '-u')
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from nodeprov.config.settings import Settings


class Default(NamedTuple):
    value: Any
    where: str  # "-u", or "/repo/ansible.cfg: [defaults] remote_user", or "env ANSIBLE_X"


@dataclass(frozen=True)
class CommandLine:
    """The connection options given on the command line (None or False: not given)."""

    user: str | None = None  # -u
    private_key: str | None = None  # --private-key
    timeout: int | None = None  # -T
    become: bool = False  # -b
    become_user: str | None = None  # --become-user
    become_password: str | None = field(default=None, repr=False)  # -K, as typed


@dataclass(frozen=True)
class AnsibleOptions:
    """The command line's Ansible options: inventories, vault, connection, become."""

    inventories: tuple[Path, ...] = ()  # -i, after the INVENTORY arguments
    vault_ids: tuple[str, ...] = ()  # --vault-id
    vault_password_files: tuple[str, ...] = ()  # --vault-password-file
    ask_vault_pass: bool = False  # --ask-vault-pass, -J
    ask_become_pass: bool = False  # --ask-become-pass, -K
    command_line: CommandLine = field(default_factory=CommandLine)  # -u, -b, -T ...


# inventory variable -> the setting that stands for it, and the option that beats the setting
STANDS_FOR: dict[str, tuple[str, str]] = {
    "ansible_user": ("remote_user", "user"),
    "ansible_ssh_private_key_file": ("private_key_file", "private_key"),
    "ansible_port": ("remote_port", ""),
    "ansible_timeout": ("timeout", "timeout"),
    "ansible_become": ("become", "become"),
    "ansible_become_user": ("become_user", "become_user"),
    "ansible_become_method": ("become_method", ""),
    "ansible_become_password": ("become_pass", "become_password"),
    "ansible_host_key_checking": ("host_key_checking", ""),
    "ansible_ssh_args": ("ssh_args", ""),
    "ansible_ssh_common_args": ("ssh_common_args", ""),
    "ansible_ssh_extra_args": ("ssh_extra_args", ""),
}
_FLAGS = {"user": "-u", "private_key": "--private-key", "timeout": "-T", "become": "-b",
          "become_user": "--become-user", "become_password": "-K"}


def host_defaults(settings: Settings, command_line: CommandLine) -> dict[str, Default]:
    """Each inventory variable the command line or the configuration sets, with where from."""
    found: dict[str, Default] = {}
    for variable, (setting, option) in STANDS_FOR.items():
        given = getattr(command_line, option) if option else None
        if given not in (None, False):
            found[variable] = Default(given, _FLAGS[option])
        elif setting in settings.values:
            value = settings.values[setting]
            where = (f"{value.origin}: {value.entry}" if not value.origin.startswith("env: ")
                     else f"environment: {value.entry}")
            found[variable] = Default(value.value, where)
    return found
