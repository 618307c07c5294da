"""What ``ansible-inventory`` prints, for ``nodeprov inventory --list | --graph | --host``.

    print(as_json(resolved))     # JSON: groups with hosts/children, _meta.hostvars
    print(as_graph(resolved))    # @all: / |--@gpu: / |  |--node1

An inline ``!vault`` value is listed as Ansible lists it (``{"__ansible_vault": "..."}``), as is
text never templated (``{"__ansible_unsafe": "..."}`` in --list; --host prints it as text);
a variable from a vault-encrypted file as ``<vaulted>``, unless ``show_vaulted``: then as
ansible-inventory lists it, decrypted.
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Mapping
from typing import Any

from nodeprov.errors import InputError
from nodeprov.inventory.data import InventoryData
from nodeprov.inventory.opening import Prepared
from nodeprov.inventory.reading import read_inventory
from nodeprov.inventory.resolve import Resolved
from nodeprov.util.tagged import Unsafe, Vaulted

# what ansible-inventory 2.19 writes beside hostvars: the variable-precedence profile it used
PROFILE = "inventory_legacy"
VAULTED = "<vaulted>"  # a value from a vault-encrypted file, not shown


def show(prepared: Prepared, *, as_list: bool, graph: str | None, host: str | None,
         extra_vars: Mapping[str, Any] | None = None, show_vaulted: bool = False) -> str:
    """What ``nodeprov inventory`` prints: exactly one of --list, --graph GROUP, --host NAME;
    ``extra_vars`` (-e) join every host's vars, as with ``ansible-inventory -e``; the project's
    group_vars/host_vars apply, as with ``ansible-inventory --playbook-dir``."""
    if [as_list, graph is not None, host is not None].count(True) != 1:
        raise InputError("give one of --list, --graph GROUP or --host NAME")
    resolved = read_inventory(prepared.sources, prepared.project, vault=prepared.vault,
                              ignored=prepared.ignored)
    resolved.add_extra_vars(extra_vars or {})
    if host is not None:
        return as_host(resolved, host, show_vaulted=show_vaulted)
    if graph is not None:
        return as_graph(resolved, graph)
    return as_json(resolved, show_vaulted=show_vaulted)


def as_json(resolved: Resolved, *, show_vaulted: bool = False) -> str:
    data = resolved.data
    groups: dict[str, Any] = {}
    for name in data.descendants("all"):
        group = data.groups[name]
        entry: dict[str, Any] = {}
        if name != "all" and group.hosts:
            entry["hosts"] = list(group.hosts)
        if group.children:
            entry["children"] = list(group.children)
        if entry:
            groups[name] = entry
    hostvars = {name: _shown(resolved, name, show_vaulted)
                for name, values in resolved.hostvars.items() if values}
    groups["_meta"] = {"hostvars": hostvars, "profile": PROFILE}
    return _dump(groups)


def as_host(resolved: Resolved, name: str, *, show_vaulted: bool = False) -> str:
    if name not in resolved.hostvars:
        raise InputError(f"no host {name!r} in the inventory; hosts: "
                         f"{', '.join(resolved.hostvars)}", field="--host")
    # ansible-core 2.19 marks unsafe text only under _meta.hostvars and a group's vars
    return _dump(_shown(resolved, name, show_vaulted), mark_unsafe=False)


def _shown(resolved: Resolved, host: str, show_vaulted: bool) -> dict[str, Any]:
    """A host's vars, those from a vault-encrypted file masked unless ``show_vaulted``."""
    vaulted = resolved.vault.vaulted_files
    values = resolved.hostvars[host]
    if show_vaulted or not vaulted:
        return values
    origins = resolved.origins[host]
    return {var: VAULTED if var in origins and origins[var].source in vaulted else value
            for var, value in values.items()}


def as_graph(resolved: Resolved, top: str = "all") -> str:
    data = resolved.data
    if top not in data.groups:
        raise InputError(f"no group {top!r}; groups: {', '.join(data.groups)}", field="--graph")
    return "\n".join(_graph(data, top, 0))


def _graph(data: InventoryData, name: str, depth: int) -> list[str]:
    lines = [_indent(f"@{name}:", depth)]
    # recursion is bounded: InventoryData refuses groups nested deeper than MAX_GROUP_DEPTH
    for child in data.groups[name].children:
        lines += _graph(data, child, depth + 1)
    if name != "all":
        lines += [_indent(host, depth + 1) for host in data.groups[name].hosts]
    return lines


def _indent(text: str, depth: int) -> str:
    return "  |" * depth + "--" + text if depth else text


def _dump(value: Any, *, mark_unsafe: bool = True) -> str:
    return json.dumps(_marked(value) if mark_unsafe else value, sort_keys=True, indent=4,
                      ensure_ascii=False, default=_plain)


def _marked(value: Any) -> Any:
    """Unsafe text as Ansible's encoder writes it; JSON would write it as any text."""
    if isinstance(value, Unsafe):
        return {"__ansible_unsafe": str(value)}
    if isinstance(value, Mapping):
        return {key: _marked(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_marked(item) for item in value]
    return value


def _plain(value: Any) -> Any:
    """What JSON cannot hold, as Ansible's encoder writes it: sets as lists, dates and times
    in ISO 8601 (YAML timestamps), an inline vault value as its ciphertext, else text."""
    if isinstance(value, (set, frozenset)):
        return list(value)
    if isinstance(value, datetime.date):  # datetimes too
        return value.isoformat()
    if isinstance(value, Vaulted):
        return {"__ansible_vault": value.ciphertext}
    return str(value)
