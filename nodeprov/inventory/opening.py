"""An inventory opened as ``ansible-playbook`` would open it: with the ansible.cfg and
``ANSIBLE_*`` settings in force (``nodeprov.config``), the vault passwords from every source
Ansible takes them from, and what the command line says, each below or above the inventory's
own variables as in Ansible.

    opened = open_inventory([], AnsibleOptions(vault_ids=("prod@prompt",)),
                            Surroundings(getpass, redactor))  # masks each password and value
    opened.inventory.hosts, opened.forks(None)
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nodeprov.config import Settings, read_settings
from nodeprov.config.defaults import AnsibleOptions, CommandLine, host_defaults
from nodeprov.inventory import load_inventory
from nodeprov.inventory.finding import (
    ignored,
    inventory_sources,
    project_folder,
    refuse_if_planted,
)
from nodeprov.inventory.model import Inventory
from nodeprov.inventory.reading import warn_stderr
from nodeprov.inventory.vaultlib import Vault
from nodeprov.inventory.vaultsecrets import DEFAULT_IDENTITY, load_secrets
from nodeprov.util.fanout import DEFAULT_FORKS
from nodeprov.util.redact import Redactor

Prompt = Callable[[str], str]  # asks for a password without echo (getpass)


@dataclass(frozen=True)
class Surroundings:
    """What opening an inventory meets on this machine: ``prompt`` asks for each password,
    ``redactor`` learns every secret as soon as it is known, ``warn`` says what the settings
    hold that matters, ``environ`` is the environment (None: this process's)."""

    prompt: Prompt
    redactor: Redactor
    warn: Callable[[str], None] = warn_stderr
    environ: Mapping[str, str] | None = None


@dataclass(frozen=True)
class Opened:
    inventory: Inventory
    settings: Settings
    vault: Vault

    def forks(self, given: int | None) -> int:
        """-f, else forks from ansible.cfg or ANSIBLE_FORKS, else nodeprov's own default."""
        return given or int(self.settings.get("forks", DEFAULT_FORKS))


def open_inventory(given: Sequence[Path], options: AnsibleOptions, around: Surroundings, *,
                   extra_vars: Mapping[str, Any] | None = None,
                   playbook_dir: Path | None = None) -> Opened:
    """Read the settings, say once those nodeprov does not use that might matter, ask for the
    passwords the options and settings ask for, then load the inventory with them: ``given``
    (INVENTORY) and ``-i``, else the configured sources (``finding``), with the
    group_vars/host_vars beside ``playbook_dir``, else beside the project's ansible.cfg.
    The redactor learns every password and decrypted value as soon as it is known, errors of
    the loading included.
    """
    prepared = prepare(given, options, around, become=True)
    inventory = load_inventory(prepared.sources, playbook_dir or prepared.project, around.warn,
                               extra_vars=extra_vars,
                               defaults=host_defaults(prepared.settings, prepared.command_line),
                               vault=prepared.vault, ignored=prepared.ignored)
    around.redactor.add(host.become_password for host in inventory.hosts
                        if host.become_password)
    return Opened(inventory, prepared.settings, prepared.vault)


@dataclass(frozen=True)
class Prepared:
    """What reading an inventory needs: its sources, the settings, the vault, the command line,
    the project's folder and the names an inventory folder's reading skips."""

    sources: tuple[Path, ...]
    settings: Settings
    vault: Vault
    command_line: CommandLine
    project: Path | None
    ignored: re.Pattern[str]


def prepare(given: Sequence[Path], options: AnsibleOptions, around: Surroundings, *,
            become: bool = False) -> Prepared:
    """The settings (their warnings said), the inventory's sources, the vault with its secrets
    and (``become``) the sudo password asked for: what ``nodeprov inventory`` needs too."""
    environ = os.environ if around.environ is None else around.environ
    warn, redactor = around.warn, around.redactor
    settings = read_settings(environ, Path.cwd())
    for warning in settings.warnings:
        warn(warning)
    if settings.might_matter():
        where = settings.config_file or "the environment"
        warn(f"{where}: not used by nodeprov (nodeprov config lists all): "
             f"{', '.join(settings.might_matter())}")
    sources = inventory_sources([*given, *options.inventories], settings, environ, warn)
    command_line = options.command_line
    if become and (options.ask_become_pass or settings.get("become_ask_pass")):
        typed = around.prompt("BECOME password: ")
        redactor.add({typed})
        command_line = dataclasses.replace(command_line, become_password=typed)
    if settings.get("become_pass"):
        redactor.add({settings.get("become_pass")})
    vault = _vault(options, settings, around)
    redactor.follow(vault.snapshot)
    redactor.add(secret.password.decode(errors="replace") for secret in vault.secrets)
    return Prepared(sources, settings, vault, command_line, project_folder(settings, environ),
                    ignored(settings))


def _vault(options: AnsibleOptions, settings: Settings, around: Surroundings) -> Vault:
    """The vault secrets in Ansible's order: vault_identity_list, --vault-id, each password
    file (--vault-password-file, then vault_password_file), then the prompt."""
    def asked(text: str) -> str:
        typed = around.prompt(text)
        around.redactor.add({typed})
        return typed

    identity = str(settings.get("vault_identity") or DEFAULT_IDENTITY)
    _refuse_planted_vault_files(settings)
    configured_file = settings.get("vault_password_file")
    secrets = load_secrets(
        [*filter(None, settings.get("vault_identity_list", [])), *options.vault_ids],
        [*options.vault_password_files, *([configured_file] if configured_file else [])],
        ask=options.ask_vault_pass or bool(settings.get("ask_vault_pass")),
        prompt=asked, warn=around.warn, identity=identity)
    # no type in Ansible: any text turns it on, "False" too
    return Vault(secrets, identity=identity, id_match=bool(settings.get("vault_id_match")))


def _refuse_planted_vault_files(settings: Settings) -> None:
    """A password file or script the settings name must not be where others can write: a
    script runs as this user (--vault-password-file and --vault-id are read wherever)."""
    for name in ("vault_password_file", "vault_identity_list"):
        setting = settings.values.get(name)
        if setting is None:
            continue
        for item in [setting.value] if isinstance(setting.value, str) else setting.value:
            source = str(item).partition("@")[2] if "@" in str(item) else str(item)
            if source and not source.startswith("prompt"):
                refuse_if_planted(Path(source), "give it as --vault-password-file",
                                  setting.origin, setting.entry)
