"""``nodeprov inventory``: the inventory as nodeprov (and Ansible) resolve it, with ansible.cfg's
inventory and vault settings and the vault options; connects to nothing::

    print(show_inventory([], AnsibleOptions(), Redactor(), as_list=True, graph=None,
                         host=None))
"""

from __future__ import annotations

import getpass
from collections.abc import Sequence
from pathlib import Path

from nodeprov.config.defaults import AnsibleOptions
from nodeprov.inventory.extravars import parse_extra_vars
from nodeprov.inventory.listing import show
from nodeprov.inventory.opening import prepare
from nodeprov.util.redact import Redactor


def show_inventory(inventory_path: Sequence[Path] | None, ansible: AnsibleOptions,
                   redactor: Redactor, *,
                   as_list: bool, graph: str | None, host: str | None,
                   extra_vars: Sequence[str] = (), show_vaulted: bool = False) -> str:
    """What to print: ``ansible-inventory``'s --list, --graph or --host; the -e values as read,
    before nodeprov's own checks (as ``ansible-inventory -e`` shows them); the project's
    group_vars/host_vars too (as ``ansible-inventory`` run in the project's folder)."""
    prepared = prepare(inventory_path or [], ansible, prompt=getpass.getpass,
                       redactor=redactor)
    return show(prepared.sources, as_list=as_list, graph=graph, host=host,
                extra_vars=parse_extra_vars(extra_vars, checked=False), vault=prepared.vault,
                show_vaulted=show_vaulted, playbook_dir=prepared.project,
                ignored=prepared.ignored)
