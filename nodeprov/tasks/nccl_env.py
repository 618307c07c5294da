"""``nccl_env``: NCCL and gloo use the node_subnet interface, in every session and every job.

    - name: NCCL environment
      nccl_env: {subnet: "{{ node_subnet }}", ifname: "{{ nccl_socket_ifname }}",
                 extra: "{{ nccl_env }}"}

``NCCL_SOCKET_IFNAME==eth0`` (the leading '=' makes NCCL match the name exactly, not as a
prefix), ``GLOO_SOCKET_IFNAME=eth0`` and the ``extra`` variables go into a block of
/etc/environment, which PAM's pam_env reads for every SSH session, login shell or not; the NCCL_*
ones also into /etc/nccl.conf, which NCCL reads whatever the environment. ``wanted_blocks`` is
the one place that says what goes where.

A user's line outside the block that its reader takes over ours (in /etc/environment one after
the block: pam_env keeps the last; in /etc/nccl.conf one before it: NCCL keeps the first; any in
/etc/profile.d/*.sh, which a login shell runs after pam_env) is the user's: the task fails
naming it by line, with the ``sed`` that comments it out (``Plan.conflicts``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING

from nodeprov.remote import reader
from nodeprov.tasks.base import (
    Change,
    Context,
    ParamError,
    Plan,
    Probe,
    TaskFailed,
    TaskType,
    Write,
    checked,
    whole_block,
)
from nodeprov.tasks.textfiles import blocks, byhand, envfile
from nodeprov.util import validate

if TYPE_CHECKING:
    from nodeprov.remote.facts import Facts

BLOCK = "nccl"
ENVIRONMENT = "/etc/environment"
NCCL_CONF = "/etc/nccl.conf"
OWN_NAMES = ("NCCL_SOCKET_IFNAME", "GLOO_SOCKET_IFNAME")
PROFILE_D = "/etc/profile.d/*.sh"
# How each file reads its lines: pam_env (last assignment wins) or NCCL (first one wins).
PARSERS = {ENVIRONMENT: envfile.parse_pam_env, NCCL_CONF: envfile.parse_nccl_conf}


@dataclass(frozen=True)
class NcclEnvParams:
    subnet: str
    ifname: str = "auto"
    extra: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        checked("subnet", validate.cidr, self.subnet)
        if self.ifname != "auto":
            checked("ifname", validate.interface_name, self.ifname)
        for name, value in self.extra.items():
            if name in OWN_NAMES:
                raise ParamError("extra", f"{name} is set from ifname (nccl_socket_ifname); "
                                 "remove it from nccl_env")
            checked("extra", partial(envfile.pam_env_line, name), value)


def probe(params: NcclEnvParams) -> Probe:
    return reader.read_many_probe(*PARSERS, PROFILE_D)


def plan(ctx: Context, params: NcclEnvParams, observed: str) -> Plan:
    ifname = socket_interface(ctx.facts, params)
    in_subnet = [iface.name for iface in ctx.facts.interfaces_in(params.subnet)]
    warnings = [] if ifname in in_subnet else [
        f"{ifname} has no address in {params.subnet}: NCCL and gloo will not use the node subnet"]
    changes, conflicts, unknown = persist(reader.observed_files(observed), BLOCK,
                                          wanted_variables(ifname, params.extra))
    warnings += unknown
    if changes:
        return Plan.of(*changes, warnings=warnings, conflicts=conflicts)
    return Plan.noop(f"{ENVIRONMENT} and {NCCL_CONF} already set "
                     f"NCCL_SOCKET_IFNAME=={ifname}, GLOO_SOCKET_IFNAME={ifname}"
                     + "".join(f", {name}" for name in params.extra), warnings=warnings,
                     conflicts=conflicts)


def persist(found: Mapping[str, str | None], block: str, variables: Mapping[str, str]
            ) -> tuple[list[Change], list[str], list[str]]:
    """(changes, conflicts, warnings) keeping ``variables`` in block ``block`` of
    /etc/environment and, the NCCL_* ones, of /etc/nccl.conf, from the probe's ``found`` files
    (``probe``'s): the nccl_fabric task keeps its own block the same way::

        persist(found, "nccl_fabric", {"NCCL_IB_HCA": "=mlx5_0:1"})
    """
    changes, conflicts, warnings = [], [], []
    wanted = blocks_for(variables)
    for path, lines in wanted.items():
        old = found.get(path)
        whole_block(path, old, block)
        new = blocks.replace_block(old or "", block, lines)
        if new != old:
            changes.append(Change(f"{path}: set {', '.join(_names(lines))}",
                                  (Write(path, new),), diff=blocks.unified_diff(path, old, new)))
        # numbered as read: a block apply appends leaves the lines above it where they are
        read = old if old is not None and blocks.find_block(old, block) else new
        conflicts += overriding(path, read, block_values(path, lines), block)
    ours = block_values(ENVIRONMENT, wanted[ENVIRONMENT])
    for path, text in sorted(found.items()):
        if path not in PARSERS and text is not None:  # /etc/profile.d/*.sh
            overrides, unknown = profile_overrides(path, text, ours)
            conflicts += overrides
            warnings += unknown
    return changes, conflicts, warnings


def wanted_variables(ifname: str, extra: Mapping[str, str]) -> dict[str, str]:
    return {"NCCL_SOCKET_IFNAME": f"={ifname}", "GLOO_SOCKET_IFNAME": ifname, **extra}


def wanted_blocks(ifname: str, extra: Mapping[str, str]) -> dict[str, list[str]]:
    """{path: the block's lines}: everything to /etc/environment, NCCL_* also to nccl.conf."""
    return blocks_for(wanted_variables(ifname, extra))


def blocks_for(variables: Mapping[str, str]) -> dict[str, list[str]]:
    """{path: lines} of ``variables``: all to /etc/environment, NCCL_* also to nccl.conf."""
    return {
        ENVIRONMENT: [envfile.pam_env_line(name, value) for name, value in variables.items()],
        NCCL_CONF: [f"{name}={value}" for name, value in variables.items()
                    if name.startswith("NCCL_")],
    }


def socket_interface(facts: Facts, params: NcclEnvParams) -> str:
    """The interface named by ``ifname``, or with ``auto`` the one holding a subnet address."""
    listing = "; ".join(f"{iface.name} {' '.join(iface.ipv4 + iface.ipv6) or '(no address)'}"
                        for iface in facts.interfaces)
    if params.ifname != "auto":
        if params.ifname not in (iface.name for iface in facts.interfaces):
            raise TaskFailed(f"no interface {params.ifname!r} on this node; it has: {listing}")
        return params.ifname
    matching = facts.interfaces_in(params.subnet)
    if len(matching) != 1:
        found = "no interface" if not matching else f"{len(matching)} interfaces"
        raise TaskFailed(f"{found} with an address in {params.subnet} (interfaces: {listing}); "
                         "set nccl_socket_ifname to the one NCCL should use")
    return matching[0].name


def overriding(path: str, text: str, ours: Mapping[str, str], block: str = BLOCK
               ) -> list[str]:
    """The lines outside our block of ``path`` that its reader takes over the block's value:
    after it in /etc/environment (pam_env keeps the last), before it in /etc/nccl.conf (NCCL
    keeps the first); each with the ``sed`` that comments it out."""
    inside = blocks.find_block(text, block)
    if inside is None:
        return []
    last_wins = path == ENVIRONMENT
    return [_removal(path, text, number, name, ours[name],
                     "pam_env keeps the last assignment" if last_wins else
                     "NCCL keeps the first assignment", "pam_env" if last_wins else "plain")
            for number, name, value in PARSERS[path](text)
            if name in ours and value != ours[name]
            and (number - 1 > inside[1] if last_wins else number - 1 < inside[0])]


def profile_overrides(path: str, text: str, ours: Mapping[str, str]
                      ) -> tuple[list[str], list[str]]:
    """A login shell runs /etc/profile.d/*.sh after pam_env: each line there setting one of
    our variables otherwise, and a warning for each whose value only the shell can tell."""
    overrides, unknown = [], []
    for number, name, value in envfile.parse_profile_sh(text):
        if name not in ours or value == ours[name]:
            continue
        if value is None:
            unknown.append(f"{path}:{number} sets {name} in a way only running it can tell; a "
                           f"login shell may not have the block's {ours[name]!r}")
        else:
            overrides.append(_removal(path, text, number, name, ours[name],
                                      "a login shell runs it after pam_env", "shell"))
    return overrides, unknown


def _removal(path: str, text: str, number: int, name: str, ours: str, why: str,
             syntax: byhand.Syntax) -> str:
    return byhand.line(path, number, text.split("\n")[number - 1],
                       f"overrides nodeprov's {name}={ours!r} ({why})", syntax=syntax)


def block_values(path: str, lines: list[str]) -> dict[str, str]:
    """{name: value} of our block's ``lines`` as ``path``'s reader takes them."""
    return {name: value for _number, name, value in PARSERS[path]("\n".join(lines))}


def _names(lines: list[str]) -> list[str]:
    return [line.partition("=")[0] for line in lines]


TASK = TaskType("nccl_env", "Persist NCCL/gloo socket interface and NCCL variables", NcclEnvParams,
                probe, plan)
