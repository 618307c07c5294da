"""``nodeprov inventory``: the inventory as nodeprov (and Ansible) resolve it, with ansible.cfg's
inventory and vault settings and the vault options; connects to nothing::

    print(show_inventory(InventoryRequest(as_list=True), Redactor()))
"""

from __future__ import annotations

import getpass

from nodeprov.commands.requests import InventoryRequest
from nodeprov.inventory.extravars import parse_extra_vars
from nodeprov.inventory.listing import show
from nodeprov.inventory.opening import Surroundings, prepare
from nodeprov.util.redact import Redactor


def show_inventory(request: InventoryRequest, redactor: Redactor) -> str:
    """What to print: ``ansible-inventory``'s --list, --graph or --host; the -e values as read,
    before nodeprov's own checks (as ``ansible-inventory -e`` shows them); the project's
    group_vars/host_vars too (as ``ansible-inventory`` run in the project's folder)."""
    prepared = prepare(request.inventory or [], request.ansible,
                       Surroundings(getpass.getpass, redactor))
    return show(prepared, as_list=request.as_list, graph=request.graph, host=request.host,
                extra_vars=parse_extra_vars(request.extra_vars, checked=False),
                show_vaulted=request.show_vaulted)
