"""What the verification job says of the fabric: the transport NCCL took between the nodes and
inside them (its own INFO lines, read back from each node's output), and the largest size's
busbw against the rated speed of the NICs it used::

    seen = job_fabric(hosts, facts, outputs, backend="nccl", busbw_gbps=361.0,
                      link=("eth0", 10.0))   # the node subnet's slowest interface, Gb/s
    seen.line()
    # 'NCCL IB between nodes, GPUDirect RDMA, P2P inside them; busbw 361 GB/s = 0.90 of
    #  8 x 400 Gb/s (IB, GPUDirect): healthy'
    seen.slower    # 'slower-path: node3: NCCL used Socket although it has mlx5_0 (IB, ...'

``NCCL_ENV`` is what the job runs with on GPU nodes. The healthy ratios (``HEALTHY``) are
the public record's large-message ring figures (issue #36, docs/fabric.md).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from nodeprov.fabric import read_outputs
from nodeprov.fabric.factcauses import with_facts
from nodeprov.fabric.network import FAST
from nodeprov.fabric.verdict import FabricReport, NodeFabric
from nodeprov.util.validate import printable

if TYPE_CHECKING:
    from nodeprov.inventory import Host
    from nodeprov.remote.facts import Facts

NCCL_ENV = {"NCCL_DEBUG": "INFO", "NCCL_DEBUG_SUBSYS": "INIT,NET,GRAPH"}
# busbw / summed line rate that a healthy large-message ring reaches (the low end of each range)
HEALTHY = {("IB", True): 0.9, ("RoCE", True): 0.9, ("EFA", True): 0.6, ("EFA", None): 0.6,
           ("Socket", False): 0.3}
_RATE = re.compile(r"(\d+(?:\.\d+)?) Gb/sec")


@dataclass(frozen=True)
class JobFabric:
    """The transport, the busbw against the rated speed (None: one node, no sweep, or a mixed
    path), and the named warning when the path is slower than the nodes have."""

    transport: str
    rate: str | None
    slower: str | None
    report: FabricReport | None = None

    def line(self) -> str:
        return "; ".join(part for part in (self.transport, self.rate) if part)

    def to_json(self) -> dict[str, Any]:
        return {"transport": self.transport, "rate": self.rate, "slower_path": self.slower,
                "nccl_verdict": self.report.verdict if self.report else None}


def job_fabric(hosts: Sequence[Host], facts: Mapping[str, Facts], outputs: Mapping[str, str],
               *, backend: str, busbw_gbps: float | None,
               link: tuple[str, float] | None) -> JobFabric:
    """The job's fabric from each node's output (``outputs``, node -> its text) and facts."""
    if backend != "nccl":
        return _sockets(hosts, facts, backend, busbw_gbps, link)
    report = read_outputs({f"{name} job output": text for name, text in outputs.items()})
    if report is None:
        return JobFabric("NCCL's transport not said: no NCCL INFO line in the job's output",
                         None, None)
    fabrics = {host.name: {"fabric": facts[host.name].rdma.as_json(),
                           "facts": {"hostname": facts[host.name].hostname,
                                     "fqdn": facts[host.name].fqdn,
                                     "gpu": "yes" if facts[host.name].gpu_count else "none"}}
               for host in hosts if host.name in facts}
    report = with_facts(report, fabrics)
    slower = _slower(report, hosts, facts)
    return JobFabric(_transport(report), _nccl_rate(report, hosts, facts, busbw_gbps, link),
                     slower, report)


def _host_of(node: NodeFabric, hosts: Sequence[Host], facts: Mapping[str, Facts]) -> str | None:
    """The inventory name of a log's node (NCCL names it by its hostname)."""
    for host in hosts:
        found = facts.get(host.name)
        names = {host.name} | ({found.hostname, found.fqdn, found.hostname.split(".")[0]}
                               if found else set())
        if node.node in names:
            return host.name
    return None


def _transport(report: FabricReport) -> str:
    networks = {node.network for node in report.nodes}
    network = networks.pop() if len(networks) == 1 else "mixed"
    gdrs = {node.gdr for node in report.nodes}
    gdr = ("" if network not in FAST else ", GPUDirect RDMA" if gdrs == {True}
           else ", no GPUDirect RDMA" if False in gdrs else ", GPUDirect RDMA not said")
    intra = [path for node in report.nodes for path in node.intra]
    inside = (f"{'/'.join(dict.fromkeys(intra))} inside them" if intra
              else "the path inside them not said")
    between = (f"NCCL {network} between nodes{gdr}, " if len(report.nodes) > 1
               else "NCCL on one node, ")
    return printable(between + inside)


def _slower(report: FabricReport, hosts: Sequence[Host],
            facts: Mapping[str, Facts]) -> str | None:
    """A node on sockets although it has an Active RDMA port, or a cause the fabric reader
    names with the facts (``slower-path``); the first one, with its evidence."""
    for node in report.nodes:
        name = _host_of(node, hosts, facts)
        active = [port for port in facts[name].rdma.ports if port.active] if name else []
        if node.network == "Socket" and active:
            port = active[0]
            return printable(f"slower-path: {node.node}: NCCL used Socket although it has "
                             f"{port.device} ({port.kind}, Active, {port.rate})")
    for node in report.nodes:
        for found in node.causes:
            if found.code != "no-fast-fabric":
                return printable(f"slower-path: {node.node}: {found.code}: {found.evidence}; "
                                 f"repair: {found.repair}")
    return None


def _rails(node: NodeFabric, name: str | None, facts: Mapping[str, Facts]) -> list[float] | None:
    """The line rate in Gb/s of each NIC the node's NCCL used, from its facts; None where a
    NIC is not in them or its rate is not said."""
    if name is None:
        return None
    ports = facts[name].rdma.ports
    if node.network == "EFA":
        used = [port for port in ports if port.kind == "EFA" and port.active]
    else:
        used = [port for device in node.devices for port in ports
                if port.device == device.name and device.port in (None, port.port)]
        if len(used) < len(node.devices):
            return None
    rates = [_RATE.search(port.rate) for port in used]
    return [float(found.group(1)) for found in rates if found] if all(rates) and used else None


def _nccl_rate(report: FabricReport, hosts: Sequence[Host], facts: Mapping[str, Facts],
               busbw_gbps: float | None, link: tuple[str, float] | None) -> str | None:
    if busbw_gbps is None or len(report.nodes) < 2:
        return None  # one node: no NIC carries the ring
    networks = {node.network for node in report.nodes}
    if networks == {"Socket"}:
        return rated(busbw_gbps, [link[1]] if link else None,
                      f"Socket over {link[0]}" if link else "Socket", "Socket", False)
    if len(networks) > 1 or not networks <= set(FAST):
        return None
    network = networks.pop()
    sums = [_rails(node, _host_of(node, hosts, facts), facts) for node in report.nodes]
    rails = min(sums, key=lambda each: sum(each or [0])) if None not in sums else None
    gdrs = {node.gdr for node in report.nodes}
    gdr = True if gdrs == {True} else False if False in gdrs else None
    words = {True: "GPUDirect", False: "no GPUDirect", None: "GPUDirect not said"}[gdr]
    return rated(busbw_gbps, rails, f"{network}, {words}", network, gdr)


def rated(busbw_gbps: float, rails: list[float] | None, what: str, network: str,
           gdr: bool | None) -> str:
    """'busbw 361 GB/s = 0.90 of 8 x 400 Gb/s (IB, GPUDirect): healthy'."""
    if not rails:
        return f"busbw {busbw_gbps:.3g} GB/s: the rated speed of the NICs used is not known"
    total = sum(rails)
    speeds = (f"{len(rails)} x {rails[0]:g} Gb/s" if len(set(rails)) == 1 and len(rails) > 1
              else " + ".join(f"{rail:g}" for rail in rails) + " Gb/s")
    ratio = busbw_gbps * 8 / total
    healthy = HEALTHY.get((network, gdr))
    judged = ("no healthy ratio known for this path" if healthy is None else "healthy"
              if ratio >= healthy else f"below the {healthy:g} a healthy {network} ring reaches")
    return f"busbw {busbw_gbps:.3g} GB/s = {ratio:.2f} of {speeds} ({what}): {judged}"


def _sockets(hosts: Sequence[Host], facts: Mapping[str, Facts], backend: str,
             busbw_gbps: float | None, link: tuple[str, float] | None) -> JobFabric:
    """gloo: sockets over the node subnet's interface, named with its speed and what RDMA the
    nodes have (gloo uses none of it)."""
    names = sorted({iface.name for host in hosts if host.name in facts
                    for iface in facts[host.name].interfaces_in(host.vars["node_subnet"])})
    over = f"{backend} over {'/'.join(names) or 'the node subnet'}"
    speed = f", {link[1]:g} Gb/s" if link else ", link speed not reported"
    rdma = [f"{host.name} {port.device} ({port.kind})" for host in hosts if host.name in facts
            for port in facts[host.name].rdma.ports]
    has = ("no RDMA devices on any node" if not rdma
           else f"RDMA devices {backend} does not use: {', '.join(rdma)}")
    rate = (rated(busbw_gbps, [link[1]], over, "Socket", False)
            if link and busbw_gbps is not None and len(hosts) > 1 else None)
    return JobFabric(printable(f"{over}{speed}; {has}"), rate, None)
