"""The reader's report as a person reads it, what ``nodeprov fabric`` prints::

    print("\n".join(fabric_text(read_logs([Path("train.log")]))))
    # node2 [rank 3]: Socket over eth0 (IP); GPUDirect RDMA no; intra-node not said
    # ...
    # verdict: no-fast-fabric-seen: sockets or emulated RDMA, and the log shows no RDMA NIC

Here, not in ``commands/``: scripts/gpu-proof.sh prints it too, on a machine with the
standard library only.
"""

from __future__ import annotations

from nodeprov.fabric.causes import NEEDS_FACTS
from nodeprov.fabric.verdict import FabricReport, NodeFabric
from nodeprov.util.validate import printable

SAYS = {
    "fast-fabric": "the fast fabric is used",
    "slower-path": "a slower path than the nodes have: repair the causes above",
    "no-fast-fabric-seen": "sockets or emulated RDMA, and the log shows no RDMA NIC",
    "unknown": "the log does not say which network NCCL took",
}


def fabric_text(report: FabricReport, facts_read: bool = False) -> list[str]:
    """What a person reads: a line per node, a line per cause and its repair, what the log
    could not tell, the verdict. Log text is escaped: a log is untrusted input."""
    lines: list[str] = []
    for node in report.nodes:
        lines.append(printable(_summary(node)))
        for found in node.causes:
            lines += [printable(f"  {found.code}: {found.evidence}"),
                      f"    repair: {found.repair}"]
        lines += [f"  could not tell {what}" for what in node.unknown]
    if not facts_read:
        lines.append("not read from a log (they need the nodes' facts, --facts): "
                     f"{', '.join(NEEDS_FACTS)}")
    lines += [f"verdict: {report.verdict}: {SAYS[report.verdict]}"]
    return lines


def _summary(node: NodeFabric) -> str:
    devices = ", ".join(f"{device.name} ({device.link_layer})" for device in node.devices)
    gdr = {True: "yes", False: "no", None: "not said"}[node.gdr]
    ranks = ", ".join(rank.label for rank in node.ranks)
    return (f"{node.node} [{ranks}]: {node.network}" + (f" over {devices}" if devices else "")
            + f"; GPUDirect RDMA {gdr}; intra-node {'/'.join(node.intra) or 'not said'}")
