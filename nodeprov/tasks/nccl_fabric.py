"""``nccl_fabric``: NCCL takes exactly the node's Active RDMA ports, and on RoCE the GID of
the node-subnet address, in every session and every job.

    - name: NCCL on the RDMA ports
      nccl_fabric: {subnet: "{{ node_subnet }}"}

``NCCL_IB_HCA==mlx5_0:1,mlx5_1:1`` (the leading '=' makes NCCL match the names exactly: without
it ``mlx5_1`` also takes ``mlx5_10``) lists the Active InfiniBand ports from the facts, or where
there are none the Active RoCE ones (a RoCE port beside IB ones is a front-end NIC, left out
with a warning);
on RoCE, ``NCCL_IB_GID_INDEX`` is the index of the RoCE v2 GID that holds the port's node-subnet
address in its GID table (the same index on every such port: NCCL takes one; none where no
port has such a GID, as when each rail has a subnet of its own). Both go into a
block of /etc/environment and /etc/nccl.conf the way ``nccl_env`` keeps its own
(``nccl_env.persist``), with the same conflicts. A node without RDMA ports, or with only EFA
ones (NCCL reaches them through the OFI plugin, not these variables), gets nothing, and the
plan says so. NCCL_SOCKET_IFNAME, the bootstrap interface, is ``nccl_env``'s.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

from nodeprov.remote import reader
from nodeprov.remote.rdma import Gid, RdmaFacts, RdmaPort
from nodeprov.tasks import nccl_env
from nodeprov.tasks.base import Context, Plan, Probe, TaskFailed, TaskType, checked
from nodeprov.util import validate

BLOCK = "nccl_fabric"


@dataclass(frozen=True)
class NcclFabricParams:
    subnet: str

    def __post_init__(self) -> None:
        checked("subnet", validate.cidr, self.subnet)


def probe(params: NcclFabricParams) -> Probe:
    """The files nccl_env reads: the block goes beside its own, in the same files."""
    return reader.read_many_probe(*nccl_env.PARSERS, nccl_env.PROFILE_D)


def plan(ctx: Context, params: NcclFabricParams, observed: str) -> Plan:
    variables, notes, warnings = wanted_variables(ctx.facts.rdma, params.subnet)
    if not variables:
        return Plan.noop(*notes, warnings=warnings)
    changes, conflicts, unknown = nccl_env.persist(reader.observed_files(observed), BLOCK,
                                                   variables)
    warnings += unknown
    if changes:
        return Plan.of(*changes, warnings=warnings, conflicts=conflicts)
    return Plan.noop(f"{nccl_env.ENVIRONMENT} and {nccl_env.NCCL_CONF} already set "
                     + ", ".join(f"{name}={value}" for name, value in variables.items()),
                     warnings=warnings, conflicts=conflicts)


def wanted_variables(rdma: RdmaFacts, subnet: str
                     ) -> tuple[dict[str, str], list[str], list[str]]:
    """({name: value} NCCL should get, notes, warnings): none, with a note or warning saying
    why, on a node without an Active IB or RoCE port; ``verify`` checks the same values."""
    ports = [port for port in rdma.ports if port.kind in ("IB", "RoCE")]
    if not ports:
        efa = " (EFA only: NCCL reaches it through the OFI plugin)" if rdma.present else ""
        return {}, [f"no InfiniBand or RoCE port on this node{efa}: nothing to select"], []
    active = [port for port in ports if port.active]
    if not active:
        return {}, [], [
            "no Active RDMA port (" + ", ".join(f"{port.device}/{port.port} {port.state}"
                                                for port in ports)
            + "): nodeprov fabric --facts names the cause (port-down); nothing to select"]
    skipped = [port for port in active if port.kind == "RoCE"] if any(
        port.kind == "IB" for port in active) else []
    chosen = [port for port in active if port not in skipped]
    variables = {"NCCL_IB_HCA": "=" + ",".join(f"{port.device}:{port.port}" for port in chosen)}
    index, warnings = gid_index([port for port in chosen if port.kind == "RoCE"], subnet)
    if skipped:  # a front-end Ethernet NIC beside the IB fabric (Azure's mlx5_an0)
        warnings.append("left out of NCCL_IB_HCA, beside the InfiniBand ports: RoCE "
                        + ", ".join(f"{port.device}/{port.port}" for port in skipped)
                        + " (NCCL would mix the two: transport-mismatch)")
    if index is not None:
        variables["NCCL_IB_GID_INDEX"] = str(index)
    return variables, [], warnings


def gid_index(ports: list[RdmaPort], subnet: str) -> tuple[int | None, list[str]]:
    """(the GID index whose RoCE v2 entry holds a ``subnet`` address, warnings): None with a
    warning where no port has one (its rails are on other subnets: NCCL picks a GID itself);
    TaskFailed naming each port's GIDs where ports have it at different indexes."""
    found = {f"{port.device}/{port.port}": [gid for gid in port.gids if gid.type == "RoCE v2"
                                            and in_subnet(gid, subnet)] for port in ports}
    indexes = sorted({gid.index for gids in found.values() for gid in gids})
    if len(indexes) > 1:
        raise TaskFailed(f"the RoCE v2 GIDs holding a {subnet} address are at different indexes "
                         "(" + "; ".join(f"{name}: {', '.join(str(gid.index) for gid in gids)}"
                                         for name, gids in found.items() if gids)
                         + "); NCCL takes one NCCL_IB_GID_INDEX: set it in nccl_env and leave "
                         "this task out")
    missing = [name for name, gids in found.items() if not gids]
    warnings = [f"{', '.join(missing)}: no RoCE v2 GID with a {subnet} address"
                + ("" if indexes else "; NCCL_IB_GID_INDEX left to NCCL") ] if missing else []
    return (indexes[0] if indexes else None), warnings


def in_subnet(gid: Gid, subnet: str) -> bool:
    """Is the GID's address (an IPv4-mapped ::ffff:a.b.c.d, or IPv6) in ``subnet``?"""
    address = ipaddress.IPv6Address(gid.gid)
    network = ipaddress.ip_network(subnet)
    return (address.ipv4_mapped or address) in network


TASK = TaskType("nccl_fabric", "NCCL_IB_HCA and the RoCE GID index of the Active RDMA ports",
                NcclFabricParams, probe, plan)
