"""Each host's vars merged in Ansible's order (later wins, whole values replaced):

    1. group ``all``'s vars from the inventory, then every other group of the host's, sorted by
       depth, then ``ansible_group_priority``, then name
    2. group_vars/all beside the inventory, then beside the playbook
    3. group_vars/<group> for those groups in that order, beside the inventory, then the playbook
    4. the host's own inventory vars, then host_vars/<host> beside the inventory, the playbook

    resolved = resolve(data, [VarsDir(Path("inventory"), vault)], [], vault)
    resolved.hostvars["node1"]["rdzv_port"], resolved.origins["node1"]["rdzv_port"]
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from nodeprov.inventory.data import InventoryData, Origin
from nodeprov.inventory.varsdirs import Loaded, VarsDir
from nodeprov.inventory.vaultlib import Vault
from nodeprov.util.yamlfile import YamlMap

EXTRA_VARS = Origin("--extra-vars")

Merged = tuple[dict[str, Any], dict[str, Origin]]


@dataclass(frozen=True)
class Resolved:
    """The inventory as Ansible resolves it: groups, and every host's merged vars (raw,
    untemplated, as ``ansible-inventory --list`` prints them) with where each came from."""

    data: InventoryData
    hostvars: dict[str, dict[str, Any]]
    origins: dict[str, dict[str, Origin]]
    # what decrypts inline values as they are used, and knows which files were vaults
    vault: Vault = field(default_factory=Vault)

    def group_names(self, host: str) -> list[str]:
        """``group_names`` as Ansible sets it: sorted, without ``all`` and ``ungrouped``."""
        return sorted(g for g in self.data.host_groups(host) if g not in ("all", "ungrouped"))

    def add_extra_vars(self, values: Mapping[str, Any]) -> None:
        """Give every host ``values`` (``-e``) above all it had, as Ansible's extra vars."""
        for name, host_vars in self.hostvars.items():
            host_vars.update(values)
            self.origins[name].update(dict.fromkeys(values, EXTRA_VARS))


def sort_groups(data: InventoryData, names: Iterable[str]) -> list[str]:
    return sorted(names, key=lambda name: (data.groups[name].depth,
                                           data.groups[name].priority, name))


def resolve(data: InventoryData, inventory_dirs: Sequence[VarsDir],
            playbook_dirs: Sequence[VarsDir], vault: Vault) -> Resolved:
    by_groups: dict[tuple[str, ...], Merged] = {}  # hosts in the same groups share this part
    hostvars: dict[str, dict[str, Any]] = {}
    origins: dict[str, dict[str, Origin]] = {}
    for name, host in data.hosts.items():
        groups = tuple(sort_groups(data, (g for g in data.host_groups(name) if g != "all")))
        if groups not in by_groups:
            by_groups[groups] = _group_part(data, groups, inventory_dirs, playbook_dirs)
        values, where = dict(by_groups[groups][0]), dict(by_groups[groups][1])
        _merge(values, where, host.vars, host.var_origins)
        for folder in (*inventory_dirs, *playbook_dirs):
            _merge_files(values, where, folder.load("host_vars", name))
        hostvars[name], origins[name] = values, where
    return Resolved(data, hostvars, origins, vault)


def _group_part(data: InventoryData, groups: Sequence[str], inventory_dirs: Sequence[VarsDir],
                playbook_dirs: Sequence[VarsDir]) -> Merged:
    values: dict[str, Any] = {}
    where: dict[str, Origin] = {}
    for name in ("all", *groups):
        _merge(values, where, data.groups[name].vars, data.groups[name].var_origins)
    for names in (("all",), groups):
        for folder in (*inventory_dirs, *playbook_dirs):
            for name in names:
                _merge_files(values, where, folder.load("group_vars", name))
    return values, where


def _merge(values: dict[str, Any], where: dict[str, Origin], new: Mapping[str, Any],
           new_origins: Mapping[str, Origin]) -> None:
    values.update(new)
    where.update(new_origins)


def _merge_files(values: dict[str, Any], where: dict[str, Origin],
                 files: Sequence[Loaded]) -> None:
    for loaded, source in files:
        values.update(loaded)
        lines = loaded if isinstance(loaded, YamlMap) else None
        where.update({key: Origin(source, lines.line_of(key) if lines else None)
                      for key in loaded})
