"""``hosts``: every inventory node in /etc/hosts under its subnet address, on every node.

    - name: Cluster names
      hosts: {fix_conflicts: "{{ hosts_fix_conflicts }}", domain: "{{ hosts_domain }}"}

The block has one line per inventory host, hosts outside ``--limit`` included: its subnet address,
the FQDN the node reports when it lies under ``domain`` (first, so ``hostname -f`` keeps
answering it), its hostname and its inventory name; what a node reports is listed only where it
redirects no one (``tasks.hostnames``). A line elsewhere that maps an inventory name to another
address (Debian's ``127.0.1.1 node1``, which makes gloo bind to loopback), or on a node its own
hostname, is commented out with ``# nodeprov: `` (to revert, remove that prefix and the line
nodeprov added under it with the other names); when ``fix_conflicts`` is false it is kept and
the task fails naming it by line (a conflict: glibc may answer it). A line mapping another
node's own hostname elsewhere is kept, and that name left out.

Where cloud-init's ``manage_etc_hosts`` would rewrite the file at every boot, a drop-in
(CLOUD_DROPIN) turns that off: the file then stays as nodeprov and the user wrote it.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

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
    whole_block,
)
from nodeprov.tasks.hostnames import Entry, cluster_names
from nodeprov.tasks.textfiles import blocks, byhand
from nodeprov.util import validate
from nodeprov.util.yamlfile import load_limited

BLOCK = "hosts"
DEFAULT_PATH = "/etc/hosts"
CLOUD_CFG = "/etc/cloud/cloud.cfg"
CLOUD_CFG_D = "/etc/cloud/cloud.cfg.d"
CLOUD_DROPIN = f"{CLOUD_CFG_D}/99-nodeprov.cfg"
CLOUD_DROPIN_TEXT = ("# Written by nodeprov: /etc/hosts lists the cluster's nodes;\n"
                     "# cloud-init must not regenerate it at boot.\nmanage_etc_hosts: false\n")
# cloud-init's translate_bool(addons=["template"]), plus "localhost", which edits the file too.
_CLOUD_MANAGES = ("true", "1", "on", "yes", "template", "localhost")

Line = tuple[str, tuple[str, ...]]  # (address, names): a line of the block


@dataclass(frozen=True)
class HostsParams:
    path: str = DEFAULT_PATH
    fix_conflicts: bool = True
    domain: str = ""  # a node's FQDN is listed only under it (hosts_domain)

    def __post_init__(self) -> None:
        checked("path", validate.absolute_path, self.path)
        if self.domain:
            checked("domain", validate.hostname, self.domain)


def probe(params: HostsParams) -> Probe:
    return reader.read_many_probe(params.path, CLOUD_CFG, f"{CLOUD_CFG_D}/*.cfg")


def plan(ctx: Context, params: HostsParams, observed: str) -> Plan:
    found = reader.observed_files(observed)
    old = found.get(params.path)
    whole_block(params.path, old, BLOCK)
    names = cluster_names(ctx, blocks.block_lines(old or "", BLOCK) or [], params.domain)
    if names.refused:
        raise TaskFailed(names.refused)
    entries, shadowed = _unshadowed(ctx, names.entries, old or "", params.path)
    warnings = [*names.warnings, *shadowed]
    lines = [f"{address} {' '.join(listed)}" for address, listed in entries]
    # a name a node reports displaces another line only on that node itself
    displacing = [(entry.address, tuple(name for name in entry.names if entry.host ==
                                        ctx.host.name or name.lower() not in entry.reported))
                  for entry in names.entries]
    fixed, conflicts = comment_out_conflicts(old or "", displacing, comment=params.fix_conflicts)
    new = blocks.replace_block(fixed, BLOCK, lines)
    changes = []
    if new != old:
        what = [] if blocks.block_lines(old or "", BLOCK) == lines else [
            f"list {len(entries)} nodes"]
        what += [f"comment out {line.strip()!r}" for line in conflicts if params.fix_conflicts]
        changes.append(Change(f"{params.path}: {'; '.join(what) or 'rewrite'}",
                              (Write(params.path, new),),
                              diff=blocks.unified_diff(params.path, old, new)))
    # kept lines, numbered as read (their sed finds them by text, before or after the write)
    kept = [] if params.fix_conflicts else conflict_lines(old or "", displacing, params.path)
    notes = [f"{params.path} lists the {len(entries)} nodes"
             + ("" if conflicts else " and maps no node name elsewhere")]
    if params.path == DEFAULT_PATH:
        cloud_change, cloud_note, cloud_warnings, cloud_conflicts = cloud_init(found)
        changes += [cloud_change] if cloud_change else []
        notes += [cloud_note] if cloud_note else []
        warnings += cloud_warnings
        kept += cloud_conflicts
    if changes:
        return Plan.of(*changes, warnings=warnings, conflicts=kept)
    return Plan.noop(*notes, warnings=warnings, conflicts=kept)


# --- lines outside the block ---------------------------------------------------------------------

def _unshadowed(ctx: Context, entries: Sequence[Entry], text: str, path: str
                ) -> tuple[list[Line], list[str]]:
    """Each entry's (address, names), less the names another node reported that a line outside
    the block maps elsewhere: that line stays (a node's word never displaces another address
    on other nodes), said in a warning."""
    wanted = {name.lower(): (entry.address, entry.host) for entry in entries
              if entry.host != ctx.host.name for name in entry.names
              if name.lower() in entry.reported}
    shadowed: dict[str, str] = {}
    for _number, line, fields in _outside_block(text):
        for name in fields[1:]:
            target = wanted.get(name.lower())
            if target and not _same_address(fields[0], target[0]):
                shadowed.setdefault(name.lower(), line.strip())
    listed, warnings = [], []
    for entry in entries:
        hidden = [name for name in entry.names if name.lower() in shadowed
                  and wanted.get(name.lower(), ("", ""))[1] == entry.host]
        warnings += [f"{path}: {shadowed[name.lower()]!r} maps {entry.host}'s name {name!r} "
                     f"elsewhere: kept, and {name!r} not listed for {entry.host} (only "
                     "inventory names displace a line; remove it if it is stale)"
                     for name in hidden]
        listed.append((entry.address, tuple(name for name in entry.names if name not in hidden)))
    return listed, warnings


def _outside_block(text: str) -> Iterator[tuple[int, str, list[str]]]:
    """Each line outside the block: its number (from 1, as sed counts), the line, its fields
    (a comment cut off)."""
    block = blocks.find_block(text, BLOCK)
    for index, line in enumerate(blocks.split_lines(text, keepends=True)):
        if block is None or not block[0] <= index <= block[1]:
            yield index + 1, line, line.split("#", 1)[0].split()


def comment_out_conflicts(text: str, entries: Sequence[Line], *,
                  comment: bool) -> tuple[str, list[str]]:
    """Lines outside the block that map a node name to another address, commented out when
    ``comment`` (other names on such a line stay, on a new line after it): (text, lines)."""
    wanted = {name.lower(): address for address, names in entries for name in names}
    block = blocks.find_block(text, BLOCK)
    kept: list[str] = []
    conflicts: list[str] = []
    for index, line in enumerate(blocks.split_lines(text, keepends=True)):
        inside = block is not None and block[0] <= index <= block[1]
        fields = [] if inside else line.split("#", 1)[0].split()
        clashing = _clashing(fields, wanted)
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


def conflict_lines(text: str, entries: Sequence[Line], path: str) -> list[str]:
    """Where ``hosts_fix_conflicts`` is false, what the user must comment out: each line
    outside the block that maps a node name to another address, by number in ``text``. Before
    the block, gethostbyname answers it first; anywhere, getaddrinfo answers its address too,
    sorted by RFC 6724, not by place.

        >>> conflict_lines("10.1.2.77 node1\\n", [("10.0.0.1", ("node1",))], "/h")[0][:48]
        "/h:1 '10.1.2.77 node1' maps node1 to 10.1.2.77, "
    """
    wanted = {name.lower(): address for address, names in entries for name in names}
    return [byhand.line(path, number, line.rstrip("\n"),
                        f"maps {', '.join(clashing)} to {fields[0]}, not "
                        f"{wanted[clashing[0].lower()]} (or set hosts_fix_conflicts: true)")
            for number, line, fields in _outside_block(text)
            for clashing in [_clashing(fields, wanted)] if clashing]


def _clashing(fields: Sequence[str], wanted: Mapping[str, str]) -> list[str]:
    """The names on a line's ``fields`` that ``wanted`` (lowercased name: address) puts at
    another address."""
    return [name for name in fields[1:] if name.lower() in wanted
            and not _same_address(fields[0], wanted[name.lower()])]


def _same_address(first: str, second: str) -> bool:
    try:
        return ipaddress.ip_address(first) == ipaddress.ip_address(second)
    except ValueError:
        return first == second


# --- cloud-init ----------------------------------------------------------------------------------

def cloud_init(found: Mapping[str, str | None]
               ) -> tuple[Change | None, str, list[str], list[str]]:
    """The drop-in that stops cloud-init from rewriting /etc/hosts, when it would: (change,
    note, warnings, conflicts: a later file turning it on again is the user's, by line)."""
    if found.get(CLOUD_CFG) is None:
        return None, "", [], []
    configs = {path: text for path, text in found.items()
               if path == CLOUD_CFG or path.startswith(f"{CLOUD_CFG_D}/")}
    setting, warnings = manage_etc_hosts(configs)
    if not _manages(setting):
        where = f" in {setting[1]}" if setting else ""
        return (None, f"cloud-init leaves /etc/hosts alone (manage_etc_hosts is off{where})",
                warnings, [])
    after, _ = manage_etc_hosts({**configs, CLOUD_DROPIN: CLOUD_DROPIN_TEXT})
    conflicts = []
    if after is not None and _manages(after):
        text = configs.get(after[1]) or ""
        number = _setting_line(text)
        why = f"after {CLOUD_DROPIN}, so it wins: cloud-init will rewrite /etc/hosts at boot"
        conflicts.append(byhand.line(after[1], number, text.split("\n")[number - 1],
                                     f"comes {why}") if number else
                         f"{after[1]} sets manage_etc_hosts: {after[0]} {why}: remove that "
                         "setting")
    if configs.get(CLOUD_DROPIN) == CLOUD_DROPIN_TEXT:
        return None, "", warnings, conflicts
    assert setting is not None
    return (Change(f"stop cloud-init rewriting /etc/hosts at boot ({setting[1]} sets "
                   f"manage_etc_hosts: {setting[0]})", (Write(CLOUD_DROPIN, CLOUD_DROPIN_TEXT),),
                   diff=blocks.unified_diff(CLOUD_DROPIN, configs.get(CLOUD_DROPIN),
                                           CLOUD_DROPIN_TEXT)),
            "", warnings, conflicts)


def _setting_line(text: str) -> int | None:
    """The number of the line setting manage_etc_hosts at the top level of a cloud.cfg file
    (the last: YAML keeps it), if one does in block style."""
    found = [number for number, line in enumerate(text.split("\n"), 1)
             if re.match(r"manage_etc_hosts\s*:", line)]
    return found[-1] if found else None


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
