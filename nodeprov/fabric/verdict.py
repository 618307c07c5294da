"""Per node: the network NCCL chose, its devices, GPUDirect, the intra-node path and the
causes; then one verdict for the whole log::

    report = read_fabric(fold(lines))
    report.verdict        # 'slower-path'
    report.nodes[0].causes[0].code, report.nodes[0].unknown   # 'ib-disabled', [...]

``fast-fabric``: every node's data went over IB, RoCE or EFA with GPUDirect where the log
says; ``slower-path``: some node shows a cause; ``no-fast-fabric-seen``: sockets (or RDMA a
CPU emulates, Soft-RoCE), and nothing in the log says an RDMA NIC was there; ``unknown``: the
log does not say which network.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from nodeprov.fabric.causes import Cause, cause, rank_causes
from nodeprov.fabric.network import FAST, devices_of, gdr_of, hints_of, network_of
from nodeprov.fabric.ranklog import Device, RankLog

VERDICTS = ("fast-fabric", "slower-path", "no-fast-fabric-seen", "unknown")
INTRA_PATHS = ("NVLS", "P2P", "SHM")


@dataclass(frozen=True)
class RankFabric:
    """One rank: its label, network, GPUDirect and NCCL version as its own lines say."""

    label: str
    network: str
    gdr: bool | None
    nccl: str | None


@dataclass
class NodeFabric:
    """One node as the log shows it, and what the log could not tell (``unknown``)."""

    node: str
    ranks: list[RankFabric]
    network: str
    evidence: str | None
    devices: list[Device]
    gdr: bool | None
    intra: list[str]
    causes: list[Cause] = field(default_factory=list)
    unknown: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class FabricReport:
    """Every node, in the order the log first shows them, and the verdict."""

    nodes: list[NodeFabric]
    verdict: str


def read_fabric(ranks: Mapping[tuple[str, int, int], RankLog]) -> FabricReport:
    """The report of a folded log (``ranklog.fold``)."""
    by_host: dict[str, list[RankLog]] = {}
    for log in ranks.values():
        by_host.setdefault(log.host, []).append(log)
    nodes = [_node(host, logs) for host, logs in by_host.items()]
    _mismatch(nodes)
    return FabricReport(nodes, verdict_of(nodes))


def _node(host: str, logs: list[RankLog]) -> NodeFabric:
    ranks: list[RankFabric] = []
    causes: list[Cause] = []
    devices: dict[str, Device] = {}
    evidence: str | None = None
    hints = hints_of(logs)
    for log in logs:
        network, said = network_of(log, hints)
        gdr = gdr_of(log, network)
        ranks.append(RankFabric(log.label, network, gdr, log.version))
        evidence = evidence or said
        causes += [found for found in rank_causes(log, network, gdr)
                   if found.code not in {known.code for known in causes}]
        devices.update({device.name: device for device in devices_of(log, network, hints)})
    networks = {rank.network for rank in ranks} - {"unknown"}
    network = networks.pop() if len(networks) == 1 else "mixed" if networks else "unknown"
    gdrs = {rank.gdr for rank in ranks if rank.network != "unknown"} - {None}
    gdr = None if not gdrs else all(gdrs)
    intra = [path for path in INTRA_PATHS if any(path in log.intra for log in logs)]
    node = NodeFabric(host, ranks, network, evidence, list(devices.values()), gdr, intra, causes)
    if network == "mixed" and evidence:
        node.causes.append(cause("transport-mismatch", evidence))
    node.unknown = _unknown(node)
    return node


def _unknown(node: NodeFabric) -> list[str]:
    said = []
    if node.network == "unknown":
        said.append("the network: no 'Using network', 'Assigned NET plugin' or NET channel "
                    "line (NCCL_DEBUG=INFO with NCCL_DEBUG_SUBSYS=INIT,NET)")
    elif node.gdr is None and node.network in FAST:
        said.append("GPUDirect RDMA: no NET channel line (NCCL_DEBUG_SUBSYS=INIT,NET)")
    if not node.intra:
        said.append("the intra-node path: no channel between this node's GPUs in the log")
    return said


def without_fast_fabric(node: NodeFabric) -> bool:
    """Sockets, or RDMA that no NIC carries (its ``no-fast-fabric`` cause says so)."""
    return node.network == "Socket" or any(found.code == "no-fast-fabric"
                                           for found in node.causes)


def _mismatch(nodes: list[NodeFabric]) -> None:
    """A node without the fast fabric while another node of the same log is on one."""
    fast = [node for node in nodes if node.network in FAST and not without_fast_fabric(node)]
    for node in nodes:
        if fast and without_fast_fabric(node) and node.evidence:
            node.causes.append(cause("transport-mismatch", node.evidence))


def verdict_of(nodes: list[NodeFabric]) -> str:
    """The verdict of the nodes as their causes now stand."""
    if any(found.code != "no-fast-fabric" for node in nodes for found in node.causes):
        return "slower-path"
    known = [node for node in nodes if node.network != "unknown"]
    if known and all(without_fast_fabric(node) for node in known):
        return "no-fast-fabric-seen"
    if known and all(node.network in FAST for node in known):
        return "fast-fabric"  # nodes the log says nothing of say so in their ``unknown``
    return "unknown"
