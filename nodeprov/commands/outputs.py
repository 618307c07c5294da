"""No report written over what its command reads: every command with ``--json`` or
``--html`` checks its outputs against its inputs as the command line is read, before anything
runs (issue #34: ``nodeprov facts INV --json INV`` overwrote the inventory)::

    refuse_overwrite({"--json": json_path, "--html": html_path}, ansible,
                     inventory=inventory, playbook=playbook)   # InputError: exit 2
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from nodeprov.config.defaults import AnsibleOptions
from nodeprov.config.settings import read_settings
from nodeprov.errors import InputError
from nodeprov.inventory.finding import inventory_sources
from nodeprov.util.reportfile import refuse_inputs


def refuse_overwrite(outputs: Mapping[str, str | None], ansible: AnsibleOptions | None = None,
                     *, inventory: Sequence[Path] | None = None, playbook: Path | None = None,
                     extra_vars: Sequence[str] = (), also: Sequence[tuple[str, Path]] = ()
                     ) -> None:
    """InputError naming both paths when an output is one of the inputs: the inventory
    (``inventory``'s sources, else those ansible.cfg or the environment names), ansible.cfg, the
    playbook, the vault password files, the SSH key, ``-e @FILE`` files, and ``also``."""
    inputs = [*also, *(_ansible_inputs(ansible, inventory) if ansible else ())]
    if playbook is not None:
        inputs.append(("playbook", playbook))
    inputs += [("-e file", Path(value[1:])) for value in extra_vars if value.startswith("@")]
    refuse_inputs(outputs, inputs)


def _ansible_inputs(ansible: AnsibleOptions, inventory: Sequence[Path] | None
                    ) -> list[tuple[str, Path]]:
    settings = read_settings(os.environ, Path.cwd())
    inputs: list[tuple[str, Path]] = []
    # no inventory found: nothing to overwrite, and the command says so itself when it reads;
    # INVENTORY and -i together, as opening.prepare reads them
    with contextlib.suppress(InputError):
        inputs += [("inventory", source) for source in
                   inventory_sources([*(inventory or ()), *ansible.inventories], settings,
                                     os.environ, lambda _: None)]
    if settings.config_file:
        inputs.append(("ansible.cfg", settings.config_file))
    sources = [*ansible.vault_password_files, *(
        identity.partition("@")[2] or identity for identity in
        [*filter(None, settings.get("vault_identity_list", [])), *ansible.vault_ids])]
    if settings.get("vault_password_file"):
        sources.append(str(settings.get("vault_password_file")))
    inputs += [("vault password file", Path(source)) for source in sources if source != "prompt"]
    if ansible.command_line.private_key:
        inputs.append(("SSH private key", Path(ansible.command_line.private_key)))
    return inputs
