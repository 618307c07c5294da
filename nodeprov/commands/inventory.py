"""``nodeprov inventory``: the inventory as nodeprov (and Ansible) resolve it; connects to
nothing::

    print(show_inventory(Path("inventory.yaml"), as_list=True, graph=None, host=None))
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from nodeprov.inventory.extravars import parse_extra_vars
from nodeprov.inventory.listing import show


def show_inventory(inventory_path: Path, *, as_list: bool, graph: str | None, host: str | None,
                   extra_vars: Sequence[str] = ()) -> str:
    """What to print: ``ansible-inventory``'s --list, --graph or --host; the -e values as read,
    before nodeprov's own checks (as ``ansible-inventory -e`` shows them)."""
    return show(inventory_path, as_list=as_list, graph=graph, host=host,
                extra_vars=parse_extra_vars(extra_vars, checked=False))
