"""``nccl_env``: NCCL and gloo use the node_subnet interface, in every session and every job.

    - name: NCCL environment
      nccl_env: {subnet: "{{ node_subnet }}", ifname: "{{ nccl_socket_ifname }}",
                 extra: "{{ nccl_env }}"}

``NCCL_SOCKET_IFNAME==eth0`` (the leading '=' makes NCCL match the name exactly, not as a
prefix), ``GLOO_SOCKET_IFNAME=eth0`` and the ``extra`` variables go into a block of
/etc/environment, which PAM's pam_env reads for every SSH session, login shell or not; the NCCL_*
ones also into /etc/nccl.conf, which NCCL reads whatever the environment. ``wanted_blocks`` is
the one place that says what goes where.
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
from nodeprov.tasks.textfiles import blocks, envfile
from nodeprov.util import validate

if TYPE_CHECKING:
    from nodeprov.remote.facts import Facts

BLOCK = "nccl"
ENVIRONMENT = "/etc/environment"
NCCL_CONF = "/etc/nccl.conf"
OWN_NAMES = ("NCCL_SOCKET_IFNAME", "GLOO_SOCKET_IFNAME")
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
    return reader.read_many_probe(*PARSERS)


def plan(ctx: Context, params: NcclEnvParams, observed: str) -> Plan:
    found = reader.observed_files(observed)
    ifname = socket_interface(ctx.facts, params)
    changes = []
    in_subnet = [iface.name for iface in ctx.facts.interfaces_in(params.subnet)]
    warnings = [] if ifname in in_subnet else [
        f"{ifname} has no address in {params.subnet}: NCCL and gloo will not use the node subnet"]
    for path, lines in wanted_blocks(ifname, params.extra).items():
        old = found.get(path)
        whole_block(path, old, BLOCK)
        new = blocks.replace_block(old or "", BLOCK, lines)
        if new != old:
            changes.append(Change(f"{path}: set {', '.join(_names(lines))}",
                                  (Write(path, new),), diff=blocks.unified_diff(path, old, new)))
        ours = {name: value for _number, name, value in PARSERS[path]("\n".join(lines))}
        warnings += outside_assignments(path, new, ours)
    if changes:
        return Plan.of(*changes, warnings=warnings)
    return Plan.noop(f"{ENVIRONMENT} and {NCCL_CONF} already set "
                     f"NCCL_SOCKET_IFNAME=={ifname}, GLOO_SOCKET_IFNAME={ifname}"
                     + "".join(f", {name}" for name in params.extra), warnings=warnings)


def wanted_blocks(ifname: str, extra: Mapping[str, str]) -> dict[str, list[str]]:
    """{path: the block's lines}: everything to /etc/environment, NCCL_* also to nccl.conf."""
    variables = {"NCCL_SOCKET_IFNAME": f"={ifname}", "GLOO_SOCKET_IFNAME": ifname, **extra}
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


def outside_assignments(path: str, text: str, ours: Mapping[str, str]) -> list[str]:
    """Warnings for lines outside our block that set one of our variables otherwise."""
    inside = blocks.find_block(text, BLOCK)
    return [f"{path}:{number} sets {name}={value!r} outside nodeprov's block; remove it (the "
            f"block says {ours[name]!r})"
            for number, name, value in PARSERS[path](text)
            if name in ours and value != ours[name]
            and not (inside and inside[0] < number - 1 < inside[1])]


def _names(lines: list[str]) -> list[str]:
    return [line.partition("=")[0] for line in lines]


TASK = TaskType("nccl_env", "Persist NCCL/gloo socket interface and NCCL variables", NcclEnvParams,
                probe, plan)
