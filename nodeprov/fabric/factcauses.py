"""Causes a log alone cannot prove, read from the nodes' facts (``nodeprov facts --json``'s
``fabric`` entry of each host, ``remote/rdma.py``)::

    fabric = report["hosts"]["node1"]["fabric"]
    node_causes(fabric, gdr=None)       # [Cause('memlock', 'ulimit -l ... 64 KiB', ...)]
    mtu_mismatch({"node1": fabric, "node2": other})   # {"node2": Cause('mtu-mismatch', ...)}

Each evidence quotes the fact as the node gave it; the facts are the node's word, so they are
shown escaped (``commands/fabric.py``) like log lines.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

from nodeprov.fabric.causes import Cause, cause
from nodeprov.fabric.network import FAST
from nodeprov.fabric.verdict import FabricReport, verdict_of

Facts = Mapping[str, Any]  # one host's ``fabric`` entry, schema-checked JSON
_REDIRECTS = ("ReqRedir+", "CmpltRedir+")


def node_causes(fabric: Facts, gdr: bool | None, has_gpu: bool = True) -> list[Cause]:
    """Every cause one node's facts show; ``gdr`` is what its log says of GPUDirect RDMA (None:
    no log, or it does not say), ``has_gpu`` whether the node has a GPU to reach the NIC."""
    ports = fabric["ports"]
    if not ports:
        return []
    found = _ports_down(ports) + _access(fabric) + _settings(fabric, ports)
    if isinstance(fabric["memlock_kib"], int):
        found.append(cause("memlock", f"ulimit -l in the job's login: "
                                      f"{fabric['memlock_kib']} KiB, not unlimited"))
    peer = [name for name in ("nvidia_peermem", "nv_peer_mem")
            if name in fabric["modules_loaded"]]
    if has_gpu and not peer and gdr is not True and any(p["kind"] != "EFA" for p in ports):
        installed = fabric["peer_memory_installed"]
        found.append(cause("no-gdr-module", "no peer-memory module loaded (nvidia_peermem, "
                           "nv_peer_mem)" + (f"; installed: {', '.join(installed)}"
                                             if installed else "; none installed")))
    found += [cause("acs", f"bridge {bridge['bridge']} above a NIC or GPU: ACSCtl: "
                           f"{bridge['acsctl']}")
              for bridge in fabric["acs"] if any(flag in bridge["acsctl"].split()
                                                  for flag in _REDIRECTS)][:1]
    found += [cause("numa-placement", f"{link['gpu']}'s nearest NIC {link['nic']} is "
                                      f"{link['relation']} (across the CPUs' interconnect)")
              for link in fabric["topology"] if link["relation"] == "SYS"][:1]
    return found


def _ports_down(ports: list[Facts]) -> list[Cause]:
    """A port whose link is up but which is not Active (no subnet manager: INIT), or every
    port where none is Active."""
    active = [port for port in ports if port["state"].endswith("ACTIVE")]
    found = []
    for port in ports:
        if port in active:
            continue
        waiting = port["phys_state"].endswith("LinkUp")
        if waiting or not active:
            found.append(cause("port-down", f"{port['device']} port {port['port']}: state "
                               f"{port['state'] or '?'}, phys_state {port['phys_state'] or '?'}"
                               + (" (link up, no subnet manager?)" if waiting else "")))
    return found[:1]


def _access(fabric: Facts) -> list[Cause]:
    found = [cause("rdma-not-visible", f"{entry['path']} {entry['access']} for the job's user")
             for entry in fabric["char_devices"] if entry["access"] != "rw"][:1]
    libraries = [path.rsplit("/", 1)[-1] for path in fabric["libraries"]]
    if not any(name.startswith("libibverbs.so") for name in libraries):
        found.append(cause("verbs-missing", "libibverbs.so not on the loader's path "
                                            "(ldconfig -p, LD_LIBRARY_PATH)"))
    efa = [port["device"] for port in fabric["ports"] if port["kind"] == "EFA"]
    if efa and not any(name.startswith("libnccl-net") for name in libraries):
        found.append(cause("net-plugin", f"EFA device {efa[0]} and no libnccl-net*.so on the "
                                         "loader's path"))
    return found


def _settings(fabric: Facts, ports: list[Facts]) -> list[Cause]:
    settings = {entry["name"]: entry for entry in fabric["nccl"]}
    found = []
    if (disabled := settings.get("NCCL_IB_DISABLE")) and disabled["value"].strip() == "1":
        found.append(cause("ib-disabled", f"NCCL_IB_DISABLE=1 ({disabled['source']})"))
    if (index := settings.get("NCCL_IB_GID_INDEX")) is not None:
        for port in ports:
            if port["kind"] != "RoCE" or not port["state"].endswith("ACTIVE"):
                continue
            v2 = [gid["index"] for gid in port["gids"] if gid["type"] == "RoCE v2"]
            if index["value"].strip() not in {str(number) for number in v2}:
                found.append(cause("roce-gid", f"NCCL_IB_GID_INDEX={index['value']} "
                                   f"({index['source']}): {port['device']} port {port['port']}"
                                   f" has RoCE v2 GIDs at {', '.join(map(str, v2)) or 'none'}"))
                break
    return found


def mtu_mismatch(fabrics: Mapping[str, Facts]) -> dict[str, Cause]:
    """Nodes whose active ports' MTU differs from the most common one among ``fabrics``
    (host -> its ``fabric`` entry): RDMA between them runs at the smaller, or not at all."""
    mtus = {host: min(port["active_mtu"] for port in active)
            for host, fabric in fabrics.items()
            if (active := [port for port in fabric["ports"] if port["state"].endswith("ACTIVE")
                           and isinstance(port["active_mtu"], int)])}
    if len(set(mtus.values())) < 2:
        return {}
    usual, _ = Counter(mtus.values()).most_common(1)[0]
    return {host: cause("mtu-mismatch", f"active_mtu {mtu} on {host}; the other nodes' "
                                        f"ports: {usual}")
            for host, mtu in mtus.items() if mtu != usual}


# causes that slow even a fast path with GPUDirect; the others explain only a slower one
_EVEN_WHEN_FAST = ("acs", "mtu-mismatch", "numa-placement")


def with_facts(report: FabricReport, hosts: Mapping[str, Facts]) -> FabricReport:
    """``report`` with the causes the facts report's ``hosts`` show (``nodeprov facts --json``'s
    ``hosts``), each log node found by inventory name or host name; a node the facts do not
    name says so in its ``unknown``."""
    fabrics = {name: entry["fabric"] for name, entry in hosts.items() if entry.get("fabric")}
    mismatch = mtu_mismatch(fabrics)
    for node in report.nodes:
        name = next((name for name in fabrics if node.node in _names(name, hosts[name])), None)
        if name is None:
            node.unknown.append(f"the node's facts: no host of the facts report is "
                                f"{node.node}, or its facts were not read")
            continue
        found = node_causes(fabrics[name], node.gdr,
                            (hosts[name].get("facts") or {}).get("gpu", "none") != "none")
        found += [mismatch[name]] if name in mismatch else []
        if node.network in FAST and node.gdr is True:
            found = [known for known in found if known.code in _EVEN_WHEN_FAST]
        codes = {known.code for known in node.causes}
        node.causes += [known for known in found if known.code not in codes]
        if len(node.causes) > 1:
            node.causes = [known for known in node.causes if known.code != "no-fast-fabric"]
    return FabricReport(report.nodes, verdict_of(report.nodes))


def _names(name: str, entry: Facts) -> set[str]:
    facts = entry.get("facts") or {}
    hostname, fqdn = facts.get("hostname", ""), facts.get("fqdn", "")
    return {name, hostname, fqdn, hostname.split(".")[0]} - {""}
