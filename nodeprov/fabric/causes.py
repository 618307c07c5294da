"""Why a rank's NCCL took a slower path, from its own lines, each cause with the line that
shows it and its repair in one line::

    rank_causes(log, "Socket", False)
    # [Cause('ib-disabled', 'node1:4811 [0] NCCL INFO NCCL_IB_DISABLE set by environment to 1.',
    #        'unset NCCL_IB_DISABLE ...')]

The codes are issue #36's fixed list. A log proves some causes (a variable, a missing library,
a WARN); the others (``port-down``, ``acs``, ``mtu-mismatch``, ``numa-placement``) need the
node's facts, so the log reader never names them (``NEEDS_FACTS``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from nodeprov.fabric.network import FAST, SLOW_PROVIDERS, provider_of
from nodeprov.fabric.ranklog import RankLog

REPAIRS = {
    "no-fast-fabric": "none if the node has no RDMA NIC; if it has one (ibv_devinfo as the "
                      "job's user), the job does not see it: nodeprov facts tells why",
    "rdma-not-visible": "give the job the RDMA devices: /dev/infiniband in its container "
                        "(--device=/dev/infiniband, the RDMA device plugin on Kubernetes)",
    "verbs-missing": "install libibverbs and its providers where the job runs (rdma-core: "
                     "apt install libibverbs1 ibverbs-providers), in its container too",
    "ib-disabled": "remove NCCL_IB_DISABLE=1 (or NCCL_NET=Socket) from the job's environment, "
                   "/etc/nccl.conf and ~/.nccl.conf",
    "hca-selection": "NCCL_IB_HCA matches names by prefix: write it with a leading '=' "
                     "(NCCL_IB_HCA==mlx5_0,mlx5_1) to use exactly those devices (nodeprov's "
                     "nccl_fabric task writes the Active ports so)",
    "memlock": "raise the job's locked-memory limit to unlimited (memlock in "
               "/etc/security/limits.d, LimitMEMLOCK=infinity for a service or container; "
               "nodeprov's memlock task does both for an SSH login)",
    "no-gdr-module": "load the peer-memory module (modprobe nvidia-peermem: nodeprov's "
                     "peermem task); if it is loaded, the GPU and NIC may be too far apart "
                     "(nvidia-smi topo -m)",
    "gdr-level": "NCCL_NET_GDR_LEVEL is set below the GPU-NIC distance: unset it, or raise "
                 "it to that distance (nvidia-smi topo -m)",
    "roce-gid": "set NCCL_IB_GID_INDEX to the RoCE v2 GID of the subnet address (show_gids, "
                "or /sys/class/infiniband/*/ports/*/gid_attrs; nodeprov's nccl_fabric task "
                "sets it)",
    "net-plugin": "install the network plugin the fabric needs (aws-ofi-nccl for EFA) where "
                  "the job finds it (LD_LIBRARY_PATH), matching NCCL's version",
    "ofi-tcp-provider": "libfabric fell back to TCP: give the job the EFA devices and set "
                        "FI_PROVIDER=efa (fi_info -p efa must list them)",
    "bootstrap-interface": "set NCCL_SOCKET_IFNAME to the interface of the nodes' subnet "
                           "(nodeprov's nccl_env task persists it)",
    "transport-mismatch": "make every node take the same fabric: this node's other causes say "
                          "why it did not",
    "port-down": "bring the port up: a cable or switch port if the link is down; a subnet "
                 "manager (opensm, or the switch's) if the link is up but not Active",
    "acs": "turn PCIe ACS off on the GPU-NIC bridges (BIOS, or setpci as NCCL's "
           "troubleshooting page shows); it sends GPUDirect traffic through the CPU",
    "mtu-mismatch": "give every node's RDMA ports the same MTU (the netdev's mtu for RoCE, "
                    "the IPoIB and switch MTU for IB): RDMA runs at the smallest or fails",
    "numa-placement": "put each rank on the GPU nearest its NIC (or add a NIC on that CPU): "
                      "a GPU whose nearest NIC is SYS sends across the CPUs' interconnect",
    "fabric-errors": "the link drops work: check both ends' ports (ibstat, perfquery error "
                     "counters), the cable and the switch",
}
NEEDS_FACTS = ("port-down", "acs", "mtu-mismatch", "numa-placement")
VIRTUAL_INTERFACES = re.compile(r"^(?:lo|docker\d*|virbr\d*|veth\w*|br-\w+|cni\d*|flannel\S*)$")
_NO_PCI_DEVICE = re.compile(r"Could not find real path of (?P<name>\S+) \(")
_WARN_RULES = (  # the first rule that matches a line names its cause
    ("memlock", re.compile(r"ibv_reg_mr\S* failed with error Cannot allocate memory")),
    ("roce-gid", re.compile(r"ibv_modify_qp failed with error (?:Network is unreachable|"
                            r"Invalid argument)")),
    ("fabric-errors", re.compile(r"Got completion (?:from peer .*)?with (?:error|status=)")),
    # the OFI plugin is there (it wrote this) and libfabric lists no device for it; a rank
    # that still reached EFA saw its devices (a protocol it did not use has none)
    ("rdma-not-visible", re.compile(r"NET/OFI .*fi_getinfo\(\) call failed: No data available")),
    ("net-plugin", re.compile(r"NET/OFI|NET/Plugin|fi_getinfo|Couldn't find any optimal")),
)


@dataclass(frozen=True)
class Cause:
    """One cause: its code, the log line that shows it, the repair."""

    code: str
    evidence: str
    repair: str


def cause(code: str, evidence: str) -> Cause:
    """``code`` with its repair from ``REPAIRS``."""
    return Cause(code, evidence, REPAIRS[code])


def rank_causes(log: RankLog, network: str, gdr: bool | None) -> list[Cause]:
    """Every cause ``log`` proves, given the rank's network and GPUDirect state."""
    found = [cause(code, line) for line in log.warnings
             if (code := _warn_code(line)) is not None
             and not (code == "rdma-not-visible" and network in FAST)]
    if (disabled := log.settings.get("NCCL_IB_DISABLE")) is not None and disabled[0] == "1":
        found.append(cause("ib-disabled", disabled[1]))
    found += [cause("verbs-missing", note) for note in log.notes
              if "Failed to open libibverbs" in note]
    if provider_of(log) in SLOW_PROVIDERS and log.provider_line:
        found.append(cause("ofi-tcp-provider", log.provider_line))
    found += _visibility(log, network) + _software_rdma(log, network)
    if network in ("IB", "RoCE", "mixed", "EFA") and gdr is False:
        level = log.settings.get("NCCL_NET_GDR_LEVEL")
        evidence = log.gdr_disabled or log.plain_channel or ""
        found.append(cause("gdr-level", level[1]) if level else cause("no-gdr-module", evidence))
    if log.gdr_distance and "NCCL_NET_GDR_LEVEL" in log.settings:  # some GPU of the node
        found.append(cause("gdr-level", log.gdr_distance))
    found += _hca_prefix(log)
    found += [cause("bootstrap-interface", line) for name, line in _interfaces(log)
              if VIRTUAL_INTERFACES.match(name)]
    if len(found) > 1:  # another cause says why this rank had no fast fabric
        found = [known for known in found if known.code != "no-fast-fabric"]
    return _first_of_each(found)


def _warn_code(line: str) -> str | None:
    return next((code for code, pattern in _WARN_RULES if pattern.search(line)), None)


def _visibility(log: RankLog, network: str) -> list[Cause]:
    """Socket where an RDMA NIC may be: proven not visible where the node shows RDMA
    (an IPoIB interface, an IB plugin installed), else only "no fast fabric seen"."""
    if network != "Socket":
        return []
    missing = [note for note in log.notes if "No device found" in note
               or "Failed to initialize NET plugin IB" in note]
    hints = [note for note in log.notes if "P2P plugin IB" in note]
    ipoib = (log.bootstrap or "").startswith("ib") or any(
        device.name.startswith("ib") for device in log.socket_devices)
    if (hints or ipoib) and log.settings.get("NCCL_IB_DISABLE", ("0", ""))[0] != "1":
        return [cause("rdma-not-visible", [*missing, *hints, log.bootstrap_line or ""][0])]
    said = next(iter({**log.networks, **log.channels}.values()), "")
    evidence = missing[0] if missing else (log.socket_line or said)
    return [cause("no-fast-fabric", evidence)] if evidence else []


def _software_rdma(log: RankLog, network: str) -> list[Cause]:
    """Devices without a PCI device (NCCL's "Could not find real path of rxe0"): Soft-RoCE or
    siw, RDMA the CPU emulates over an Ethernet NIC; where the rank used only those, no NIC
    carried its RDMA."""
    if network not in ("IB", "RoCE") or not log.ib_devices:
        return []
    virtual = {found.group("name"): line for line in log.warnings
               if (found := _NO_PCI_DEVICE.search(line)) is not None}
    if not all(device.name in virtual for device in log.ib_devices):
        return []
    return [cause("no-fast-fabric", virtual[log.ib_devices[0].name])]


def _hca_prefix(log: RankLog) -> list[Cause]:
    """NCCL_IB_HCA without '=' taking a device that only extends a name it gives by digits
    (mlx5_1 -> mlx5_10): that device was not meant; a stem (``mlx5``) is meant as one."""
    setting = log.settings.get("NCCL_IB_HCA")
    if setting is None or setting[0].startswith(("=", "^")) or not log.ib_line:
        return []
    named = {part.split(":")[0] for part in setting[0].split(",") if part}
    caught = [device.name for device in log.ib_devices for name in named  # mlx5 is meant so
              if device.name[len(name):].isdigit() and device.name.startswith(name)]
    return [cause("hca-selection", log.ib_line)] if caught else []


def _interfaces(log: RankLog) -> list[tuple[str, str]]:
    found = [(log.bootstrap, log.bootstrap_line or "")] if log.bootstrap else []
    if log.socket_line:
        found += [(device.name, log.socket_line) for device in log.socket_devices]
    return found


def _first_of_each(causes: list[Cause]) -> list[Cause]:
    seen: dict[str, Cause] = {}
    for found in causes:
        seen.setdefault(found.code, found)
    return list(seen.values())
