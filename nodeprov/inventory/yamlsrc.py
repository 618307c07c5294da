"""YAML inventories as Ansible's ``yaml`` plugin reads them, and the JSON that dynamic
inventory scripts and ``ansible-inventory --list`` print.

    all:                      # or any top-level group, with or without all:
      children:
        gpu:
          hosts: {gpu[01:04]: }
    gpu:                      # the same group again: vars and members merge
      vars: {rdzv_port: 29600}

A ``_meta`` key marks the JSON shape (``{"gpu": {"hosts": [...]}, "_meta": {"hostvars": ...}}``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

from nodeprov.errors import InputError, StricterThanAnsible
from nodeprov.inventory.data import MAX_GROUP_DEPTH, InventoryData, Origin
from nodeprov.inventory.ranges import expand_host_pattern
from nodeprov.util.yamlfile import YamlMap, kind_of

SECTIONS = ("vars", "children", "hosts")
Warn = Callable[[str], None]


def _line(mapping: Any, key: str) -> int | None:
    return mapping.line_of(key) if isinstance(mapping, YamlMap) else None


def _name(mapping: Any, key: Any, what: str, origin: Origin) -> str:
    """``key`` as a group or host name: Ansible refuses one YAML reads as a number."""
    if isinstance(mapping, YamlMap) and str(key) in mapping.number_keys:
        raise InputError(f"{what} {key} is a number in YAML; quote it ('{key}'), as Ansible "
                         "requires", source=origin.source, line=origin.line, field=str(key))
    return str(key)


def parse_yaml(document: Mapping[str, Any], source: str, data: InventoryData,
               warn: Warn) -> None:
    """Fill ``data`` from a parsed YAML inventory (top-level keys are groups)."""
    if "plugin" in document:
        raise InputError("this is an inventory plugin's configuration, not an inventory; run "
                         f"ansible-inventory -i {source} --list > inventory.json and give "
                         "nodeprov inventory.json", source=source, line=_line(document, "plugin"))
    # Depth first in the order written, as Ansible's recursion goes, but on a list of frames:
    # deep trees (and recursive YAML aliases) stop at the depth limit, not at Python's stack.
    stack: list[tuple[Iterator[tuple[str, Any, Origin]], str, Origin | None]] = []
    for name in document:
        origin = Origin(source, _line(document, name))
        name = _name(document, name, "group name", origin)
        stack.append((_group(name, document[name], origin, data, warn), name, None))
        while stack:
            frame, group, link = stack[-1]
            child = next(frame, None)
            if child is not None:
                if len(stack) > MAX_GROUP_DEPTH:
                    raise StricterThanAnsible(f"groups nested more than {MAX_GROUP_DEPTH} deep; "
                                              "flatten the group tree", source=source,
                                              line=child[2].line, field=child[0])
                stack.append((_group(*child, data, warn), child[0], child[2]))
                continue
            stack.pop()
            if link is not None and group in data.groups:
                data.add_child(stack[-1][1], group, link)


def _group(name: str, group: Any, origin: Origin, data: InventoryData,
           warn: Warn) -> Iterator[tuple[str, Any, Origin]]:
    """Read a group's vars and hosts into ``data``, yielding each child group to read next."""
    if group is not None and not isinstance(group, Mapping):
        warn(f"{origin}: skipping {name!r}: a group is a mapping of "
             "hosts:, vars: and children:")
        return
    data.add_group(name, origin)
    source = origin.source
    for key, section in (group or {}).items():
        where = Origin(source, _line(group, key))
        if isinstance(section, str) and key in SECTIONS:
            section = {section: None}  # Ansible reads "hosts: node1" as one host
        if key not in SECTIONS:
            warn(f"{where}: skipping key {key!r} in group {name!r}: only vars, "
                 "children and hosts are read")
            continue
        if section is None:
            continue
        if not isinstance(section, Mapping):
            raise InputError(f"{key}: must be a mapping (name: value), not "
                             f"{kind_of(section)}", source=source, line=where.line,
                             field=f"{name}.{key}")
        if key == "vars":
            for var, value in section.items():
                data.set_group_var(name, var, value, Origin(source, _line(section, var)))
        elif key == "children":
            for child, value in section.items():
                where = Origin(source, _line(section, child))
                yield _name(section, child, "group name", where), value, where
        else:
            for pattern, host_vars in section.items():
                where = Origin(source, _line(section, pattern))
                _add_hosts(_name(section, pattern, "host name", where), host_vars, name, where,
                           data)


def _add_hosts(pattern: str, host_vars: Any, group: str, origin: Origin,
               data: InventoryData) -> None:
    try:
        names, port = expand_host_pattern(pattern)
    except ValueError as error:
        raise InputError(str(error), source=origin.source, line=origin.line,
                         field=pattern) from None
    if host_vars is not None and not isinstance(host_vars, Mapping):
        raise InputError("a host's value must be a mapping of vars (or empty)",
                         source=origin.source, line=origin.line, field=pattern)
    for name in names:
        data.add_host(name, group, origin, port)
        for var, value in (host_vars or {}).items():
            data.set_host_var(name, var, value, Origin(origin.source, _line(host_vars, var)))


def script_group(name: str, group: Any) -> Mapping[str, Any]:
    """A group of a script's ``--list`` in its full form: a bare list is its hosts, and a
    mapping without hosts/vars/children is the vars of one host named as the group (the old
    forms Ansible's script plugin still reads)."""
    if not isinstance(group, Mapping):
        return {"hosts": group}
    if not any(key in group for key in SECTIONS):
        return {"hosts": [name], "vars": group}
    return group


def parse_json_list(document: Mapping[str, Any], source: str, data: InventoryData) -> None:
    """Fill ``data`` from a dynamic inventory's ``--list`` JSON (Ansible's script format)."""
    origin = Origin(source)
    meta = document.get("_meta") or {}
    hostvars = meta.get("hostvars", {}) if isinstance(meta, Mapping) else {}
    if not isinstance(hostvars, Mapping):
        raise InputError("_meta.hostvars must be a mapping of host: vars", source=source,
                         field="_meta.hostvars")
    for name, given in document.items():
        if name == "_meta":
            continue
        data.add_group(name, origin)
        group = script_group(name, given)
        hosts, group_vars = group.get("hosts") or [], group.get("vars") or {}
        if not isinstance(hosts, list) or not isinstance(group_vars, Mapping):
            raise InputError("a group's hosts must be a list and its vars a mapping",
                             source=source, field=name)
        for host in hosts:
            data.add_host(str(host), name, origin)
        for var, value in group_vars.items():
            data.set_group_var(name, var, value, origin)
        for child in group.get("children") or []:
            data.add_group(str(child), origin)
            data.add_child(name, str(child), origin)
    for name, host_vars in hostvars.items():
        if name in data.hosts and isinstance(host_vars, Mapping):
            for var, value in host_vars.items():
                data.set_host_var(name, var, value, origin)
