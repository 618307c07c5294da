"""Which network a rank's data took, what it ran on, and whether GPUDirect RDMA was on::

    network_of(log)   # ('RoCE', 'node1:4811 [0] NCCL INFO Using network IB')
    devices_of(log, "RoCE"), gdr_of(log, "RoCE")   # [Device(...)], True / False / None

A channel line (``via NET/IB/0/GDRDMA``) says what a connection used, so it wins over
``Using network`` and ``Assigned NET plugin`` (2.27+), which name the plugin a communicator
chose; without either, a ``NET/IB : Using`` device list means NCCL took IB (it prefers it).
IB-family plugins (IB, IBext, IBext_v8) carry both InfiniBand and RoCE: the devices' ``/IB`` or
``/RoCE`` suffix tells which. A ``NET/Socket : Using`` line names the data path only where the
network is Socket: NCCL before 2.4.8 printed one for its bootstrap first.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from nodeprov.fabric.ranklog import Device, RankLog

FAST = ("IB", "RoCE", "EFA")
NETWORKS = (*FAST, "Socket", "mixed", "unknown")
SLOW_PROVIDERS = ("tcp", "sockets", "udp")  # libfabric's providers that are plain TCP/UDP


@dataclass(frozen=True)
class NodeHints:
    """What other ranks of the same node listed: a rank that names its plugin but not its
    devices (or provider) ran on its node's."""

    layers: frozenset[str] = frozenset()
    provider: str = ""


def provider_of(log: RankLog, hints: NodeHints = NodeHints()) -> str:
    """The OFI provider's first name (``efa`` of ``efa;ofi_rxr``), or empty."""
    return (log.provider or "").split(";")[0] or hints.provider


def hints_of(logs: Iterable[RankLog]) -> NodeHints:
    """The link layers and the OFI provider the ranks of one node listed."""
    listed = list(logs)
    return NodeHints(frozenset(device.link_layer for log in listed for device in log.ib_devices),
                     next((provider_of(log) for log in listed if log.provider), ""))


def _family(name: str, log: RankLog, hints: NodeHints) -> str:
    low = name.lower()
    if low.startswith("ib"):
        layers = {device.link_layer for device in log.ib_devices} or hints.layers
        return "mixed" if len(layers) > 1 else "RoCE" if layers == {"RoCE"} else "IB"
    if low == "socket":
        return "Socket"
    if "libfabric" in low or "ofi" in low:
        if provider_of(log, hints) == "efa" or log.gdr_channel:
            return "EFA"
        return "Socket" if provider_of(log, hints) in SLOW_PROVIDERS else "unknown"
    return "unknown"


def network_of(log: RankLog, hints: NodeHints = NodeHints()) -> tuple[str, str | None]:
    """The rank's network (one of ``NETWORKS``) and the line that says it."""
    named = log.channels or log.networks or (
        log.initialized if len(log.initialized) == 1 else {})
    if named:
        families = {_family(name, log, hints) for name in named}
        network = families.pop() if len(families) == 1 else "mixed"
        return network, next(iter(named.values()))
    if log.ib_devices:
        return _family("IB", log, hints), log.ib_line
    if log.provider_line:
        return _family("Libfabric", log, hints), log.provider_line
    if log.socket_line and any("No device found" in note for note in log.notes):
        return "Socket", log.socket_line
    return "unknown", None


def devices_of(log: RankLog, network: str, hints: NodeHints = NodeHints()) -> list[Device]:
    """The NICs the rank's network ran on, as NCCL listed them."""
    if network in ("IB", "RoCE", "mixed"):
        return list(log.ib_devices)
    if network == "EFA":
        return [Device(provider_of(log, hints) or "efa", "EFA")]
    if network == "Socket":
        if provider_of(log, hints):
            return [Device(provider_of(log, hints), "IP")]
        return list(log.socket_devices)
    return []


def gdr_of(log: RankLog, network: str) -> bool | None:
    """GPUDirect RDMA: a ``/GDRDMA`` channel is yes; NET channels without one, or NCCL's
    "GPU Direct RDMA Disabled", no; sockets never; None where the log does not say."""
    if network == "Socket":
        return False
    if log.gdr_channel:
        return True
    if log.plain_channel or log.gdr_disabled:
        return False
    return None
