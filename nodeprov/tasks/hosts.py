"""``hosts``: every inventory node in /etc/hosts under its subnet address, on every node.

    - name: Cluster names
      hosts: {fix_conflicts: "{{ hosts_fix_conflicts }}"}

The block has one line per inventory host, hosts outside ``--limit`` included: its subnet address,
the FQDN the node reports (first, so ``hostname -f`` keeps answering it), its hostname and its
inventory name. A line elsewhere that maps one of those names to another address (Debian's
``127.0.1.1 node1``, which makes gloo bind to loopback) is commented out with ``# nodeprov: ``
(to revert, remove that prefix and the line nodeprov added under it with the other names), or
kept with a warning when ``fix_conflicts`` is false.

Where cloud-init's ``manage_etc_hosts`` would rewrite the file at every boot, a drop-in
(CLOUD_DROPIN) turns that off: the file then stays as nodeprov and the user wrote it.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import yaml

from nodeprov.remote import reader
from nodeprov.tasks.base import (
    Change,
    Context,
    Plan,
    Probe,
    TaskFailed,
    TaskType,
    Write,
    checked,
)
from nodeprov.tasks.textfiles import blocks
from nodeprov.util import validate
from nodeprov.util.yamlfile import load_limited

if TYPE_CHECKING:
    from nodeprov.inventory import Host
    from nodeprov.remote.facts import Facts

BLOCK = "hosts"
DEFAULT_PATH = "/etc/hosts"
CLOUD_CFG = "/etc/cloud/cloud.cfg"
CLOUD_CFG_D = "/etc/cloud/cloud.cfg.d"
CLOUD_DROPIN = f"{CLOUD_CFG_D}/99-nodeprov.cfg"
CLOUD_DROPIN_TEXT = ("# Written by nodeprov: /etc/hosts lists the cluster's nodes;\n"
                     "# cloud-init must not regenerate it at boot.\nmanage_etc_hosts: false\n")
# cloud-init's translate_bool(addons=["template"]), plus "localhost", which edits the file too.
_CLOUD_MANAGES = ("true", "1", "on", "yes", "template", "localhost")

Entry = tuple[str, tuple[str, ...]]  # (address, names)


@dataclass(frozen=True)
class HostsParams:
    path: str = DEFAULT_PATH
    fix_conflicts: bool = True

    def __post_init__(self) -> None:
        checked("path", validate.absolute_path, self.path)


def probe(params: HostsParams) -> Probe:
    return reader.read_many_probe(params.path, CLOUD_CFG, f"{CLOUD_CFG_D}/*.cfg")


def plan(ctx: Context, params: HostsParams, observed: str) -> Plan:
    found = reader.observed_files(observed)
    old = found.get(params.path)
    entries, warnings = cluster_entries(ctx, blocks.block_lines(old or "", BLOCK) or [])
    lines = [f"{address} {' '.join(names)}" for address, names in entries]
    fixed, conflicts = comment_out_conflicts(old or "", entries, comment=params.fix_conflicts)
    new = blocks.replace_block(fixed, BLOCK, lines)
    changes = []
    if new != old:
        what = [] if blocks.block_lines(old or "", BLOCK) == lines else [
            f"list {len(entries)} nodes"]
        what += [f"comment out {line.strip()!r}" for line in conflicts if params.fix_conflicts]
        changes.append(Change(f"{params.path}: {'; '.join(what) or 'rewrite'}",
                              (Write(params.path, new),),
                              diff=blocks.unified_diff(params.path, old, new)))
    if not params.fix_conflicts:
        warnings += [f"{params.path}: {line.strip()!r} maps a node name to another address "
                     "(kept: hosts_fix_conflicts is false); names may resolve there"
                     for line in conflicts]
    notes = [f"{params.path} lists the {len(entries)} nodes"
             + ("" if conflicts else " and maps no node name elsewhere")]
    if params.path == DEFAULT_PATH:
        cloud_change, cloud_note, cloud_warnings = cloud_init(found)
        changes += [cloud_change] if cloud_change else []
        notes += [cloud_note] if cloud_note else []
        warnings += cloud_warnings
    if changes:
        return Plan.of(*changes, warnings=warnings)
    return Plan.noop(*notes, warnings=warnings)


# --- the block -----------------------------------------------------------------------------------

def cluster_entries(ctx: Context, previous: Sequence[str]) -> tuple[list[Entry], list[str]]:
    """One entry per inventory host, in inventory order; TaskFailed when two share a name.

    An unreachable host keeps the names the block already had for its address, else only its
    inventory name: one node being down must not stop the others (the runner never lets one
    host's failure stop another's run), nor make them forget names they resolved before.
    """
    known = {fields[0]: fields[1:] for fields in (line.split() for line in previous) if fields}
    entries: list[Entry] = []
    warnings = []
    for name, (host, facts) in ctx.cluster.items():
        facts = ctx.facts if name == ctx.host.name else facts
        address = host.node_address or _listed_address(name, known)
        if not address:
            warnings.append(f"{name} is not listed: its address in node_subnet comes from the "
                            "node, which could not tell it (run again once it can)")
            continue
        if facts is None or not host.node_address:
            names = _unique([*known.get(address, []), name])
            warnings.append(f"{name} is unreachable: listed as {' '.join(names)} "
                            "(run again once it is up to list its own hostname)")
        else:
            names = _unique(node_names(host, facts))
        entries.append((address, names))
    owners: dict[str, str] = {}
    for address, names in entries:
        for hostname in names:
            other = owners.setdefault(hostname.lower(), address)
            if other != address:
                raise TaskFailed(f"the name {hostname!r} belongs to both {other} and {address}; "
                                 "give every node its own hostname (hostnamectl set-hostname)")
    return entries, warnings


def _listed_address(name: str, known: Mapping[str, Sequence[str]]) -> str:
    """The address the block already lists ``name`` under: a node whose address only it can
    tell keeps its line while it is down."""
    return next((address for address, names in known.items() if name in names), "")


def node_names(host: Host, facts: Facts) -> list[str]:
    """The node's FQDN (when it really is one of its hostname), hostname and inventory name."""
    try:
        hostname = validate.hostname(facts.hostname)
    except ValueError:
        raise TaskFailed(f"{host.name} reports the hostname {facts.hostname!r}, which /etc/hosts "
                         "cannot hold; give it a valid one (hostnamectl set-hostname)") from None
    short = hostname.split(".")[0].lower()
    # `hostname -f` answers "localhost" when the hostname sits on the 127.0.0.1 line: not a name
    fqdn = facts.fqdn if facts.fqdn.lower().startswith(f"{short}.") else hostname
    try:
        validate.hostname(fqdn)
    except ValueError:
        fqdn = hostname
    return [fqdn, hostname, host.name]


def _unique(names: Iterable[str]) -> tuple[str, ...]:
    seen: dict[str, str] = {}
    for name in names:
        seen.setdefault(name.lower(), name)
    return tuple(seen.values())


# --- lines outside the block ---------------------------------------------------------------------

def comment_out_conflicts(text: str, entries: Sequence[Entry], *,
                  comment: bool) -> tuple[str, list[str]]:
    """Lines outside the block that map a node name to another address, commented out when
    ``comment`` (other names on such a line stay, on a new line after it): (text, lines)."""
    wanted = {name.lower(): address for address, names in entries for name in names}
    block = blocks.find_block(text, BLOCK)
    kept: list[str] = []
    conflicts: list[str] = []
    for index, line in enumerate(text.splitlines(keepends=True)):
        inside = block is not None and block[0] <= index <= block[1]
        fields = [] if inside else line.split("#", 1)[0].split()
        clashing = [name for name in fields[1:] if name.lower() in wanted
                    and not _same_address(fields[0], wanted[name.lower()])]
        if not clashing:
            kept.append(line)
            continue
        conflicts.append(line)
        if not comment:
            kept.append(line)
            continue
        body = line.rstrip("\r\n")
        ending = line[len(body):]
        others = [name for name in fields[1:] if name not in clashing]
        kept.append(blocks.COMMENT_PREFIX + body + (ending or ("\n" if others else "")))
        if others:
            kept.append(" ".join([fields[0], *others]) + ending)
    return "".join(kept), conflicts


def _same_address(first: str, second: str) -> bool:
    try:
        return ipaddress.ip_address(first) == ipaddress.ip_address(second)
    except ValueError:
        return first == second


# --- cloud-init ----------------------------------------------------------------------------------

def cloud_init(found: Mapping[str, str | None]) -> tuple[Change | None, str, list[str]]:
    """The drop-in that stops cloud-init from rewriting /etc/hosts, when it would: (change,
    note, warnings)."""
    if found.get(CLOUD_CFG) is None:
        return None, "", []
    configs = {path: text for path, text in found.items()
               if path == CLOUD_CFG or path.startswith(f"{CLOUD_CFG_D}/")}
    setting, warnings = manage_etc_hosts(configs)
    if not _manages(setting):
        where = f" in {setting[1]}" if setting else ""
        return None, f"cloud-init leaves /etc/hosts alone (manage_etc_hosts is off{where})", \
            warnings
    after, _ = manage_etc_hosts({**configs, CLOUD_DROPIN: CLOUD_DROPIN_TEXT})
    if after is not None and _manages(after):
        warnings.append(f"{after[1]} sets manage_etc_hosts: {after[0]} after {CLOUD_DROPIN}: "
                        "cloud-init will rewrite /etc/hosts at boot; remove that setting")
    if configs.get(CLOUD_DROPIN) == CLOUD_DROPIN_TEXT:
        return None, "", warnings
    assert setting is not None
    return (Change(f"stop cloud-init rewriting /etc/hosts at boot ({setting[1]} sets "
                   f"manage_etc_hosts: {setting[0]})", (Write(CLOUD_DROPIN, CLOUD_DROPIN_TEXT),),
                   diff=blocks.unified_diff(CLOUD_DROPIN, configs.get(CLOUD_DROPIN),
                                           CLOUD_DROPIN_TEXT)),
            "", warnings)


def manage_etc_hosts(configs: Mapping[str, str | None]
                     ) -> tuple[tuple[object, str] | None, list[str]]:
    """The effective manage_etc_hosts and the file that sets it, merging like cloud-init:
    cloud.cfg, then cloud.cfg.d/*.cfg by name, later files winning: ((value, path) | None,
    warnings about files that are not YAML)."""
    order = [CLOUD_CFG, *sorted(path for path in configs if path != CLOUD_CFG)]
    setting: tuple[object, str] | None = None
    warnings = []
    for path in order:
        try:
            data = load_limited(configs.get(path) or "")  # a node's YAML: alias bombs too
        except yaml.YAMLError as error:
            warnings.append(f"{path} is not valid YAML, so cloud-init ignores it too: "
                            f"{str(error).splitlines()[0]}")
            continue
        if isinstance(data, dict) and "manage_etc_hosts" in data:
            setting = (data["manage_etc_hosts"], path)
    return setting, warnings


def _manages(setting: tuple[object, str] | None) -> bool:
    return setting is not None and str(setting[0]).lower() in _CLOUD_MANAGES


TASK = TaskType("hosts", "List every node in /etc/hosts under its subnet address", HostsParams,
                probe, plan)
