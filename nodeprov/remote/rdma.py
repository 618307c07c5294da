"""The fast fabric as the job's user sees it on a node: RDMA ports and their GIDs, what the
user may open and load, the locked-memory limit, the peer-memory module, ACS on the NICs'
bridges, the GPU-NIC topology, MTUs and NCCL's settings, read by ``facts.sh`` in the same
round trip as every other fact::

    rdma = read_rdma(sections)
    rdma.present, rdma.summary()["fast interconnect"]   # False, 'no fast interconnect'
    rdma.as_json()     # what ``nodeprov facts --json`` reports as ``fabric``
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from nodeprov.remote import rdmatext


@dataclass(frozen=True)
class Gid:
    """One GID table entry: its index, the GID, ``RoCE v2``/``IB/RoCE v1`` and its netdev."""

    index: int
    gid: str
    type: str
    netdev: str


@dataclass(frozen=True)
class RdmaPort:
    """One port of an RDMA device, as sysfs and ``ibv_devinfo`` give it."""

    device: str
    port: int
    state: str  # "4: ACTIVE"
    phys_state: str  # "5: LinkUp"
    link_layer: str  # "InfiniBand", "Ethernet" (RoCE), EFA's "Unspecified"
    rate: str  # "400 Gb/sec (4X NDR)"
    active_mtu: int | None
    gids: tuple[Gid, ...]

    @property
    def active(self) -> bool:
        return self.state.endswith("ACTIVE")

    @property
    def kind(self) -> str:
        """IB, RoCE or EFA, as NCCL's logs name them."""
        if self.device.startswith("efa"):
            return "EFA"
        return {"InfiniBand": "IB", "Ethernet": "RoCE"}.get(self.link_layer, self.link_layer)


@dataclass(frozen=True)
class RdmaFacts:
    """Everything a node shows of its fast fabric; empty on a node without one."""

    ports: tuple[RdmaPort, ...] = ()
    netdevs: Mapping[str, tuple[str, ...]] | None = None  # device -> its netdevs
    char_devices: tuple[tuple[str, str], ...] = ()  # (path, rw|denied|absent|empty)
    libraries: tuple[str, ...] = ()
    memlock_kib: int | None = None  # None: unlimited
    memlock_known: bool = False
    modules_loaded: tuple[str, ...] = ()
    peer_memory_installed: tuple[str, ...] = ()
    acs: Mapping[str, str] | None = None  # bridge slot -> ACSCtl, above the NICs and GPUs
    acs_unread: str | None = None  # why ACS could not be read
    topology: tuple[tuple[str, str, str], ...] = ()  # (GPU, nearest NIC, relation)
    mtus: Mapping[str, int] | None = None  # every interface's MTU
    nccl: tuple[tuple[str, str, str], ...] = ()  # (name, value, where it is set)

    @property
    def present(self) -> bool:
        return bool(self.ports)

    def summary(self) -> dict[str, str]:
        """Rows for ``nodeprov facts``; a node without RDMA: one row saying so."""
        rows = {"fast interconnect": "; ".join(map(_port_text, self.ports))
                or "no fast interconnect"}
        if self.present:
            peer = [name for name in rdmatext.PEER_MEMORY if name in self.modules_loaded]
            rows |= {
                "rdma access": ", ".join(f"{path} {access}" for path, access
                                         in self.char_devices) or "-",
                "rdma libraries": ", ".join(lib.rsplit("/", 1)[-1] for lib in self.libraries)
                or "libibverbs not found",
                "memlock": _memlock_text(self),
                "peer memory": (f"{peer[0]} loaded" if peer else "not loaded" + (
                    f" ({', '.join(self.peer_memory_installed)} installed)"
                    if self.peer_memory_installed else "")),
                "acs": self.acs_unread or (", ".join(
                    f"{slot} {flags}" for slot, flags in (self.acs or {}).items())
                    or "no ACS capability on the NICs' and GPUs' bridges"),
                "gpu-nic": ", ".join(f"{gpu} {nic} {relation}" for gpu, nic, relation
                                     in self.topology) or "-",
            }
        if self.nccl:
            rows["nccl settings"] = ", ".join(f"{name}={value} ({where})"
                                              for name, value, where in self.nccl)
        return rows

    def as_json(self) -> dict[str, Any]:
        """The ``fabric`` entry of a host in ``nodeprov facts --json`` (report.schema.json),
        read back by ``nodeprov fabric --facts``."""
        return {
            "ports": [{"device": port.device, "port": port.port, "kind": port.kind,
                       "state": port.state, "phys_state": port.phys_state,
                       "link_layer": port.link_layer, "rate": port.rate,
                       "active_mtu": port.active_mtu,
                       "netdevs": list((self.netdevs or {}).get(port.device, ())),
                       "gids": [{"index": gid.index, "gid": gid.gid, "type": gid.type,
                                 "netdev": gid.netdev} for gid in port.gids]}
                      for port in self.ports],
            "char_devices": [{"path": path, "access": access}
                             for path, access in self.char_devices],
            "libraries": list(self.libraries),
            "memlock_kib": self.memlock_kib if self.memlock_known else "unknown",
            "modules_loaded": list(self.modules_loaded),
            "peer_memory_installed": list(self.peer_memory_installed),
            "acs": [{"bridge": slot, "acsctl": flags} for slot, flags in
                    (self.acs or {}).items()],
            "acs_unread": self.acs_unread,
            "topology": [{"gpu": gpu, "nic": nic, "relation": relation}
                         for gpu, nic, relation in self.topology],
            "mtus": dict(self.mtus or {}),
            "nccl": [{"name": name, "value": value, "source": where}
                     for name, value, where in self.nccl],
        }


def read_rdma(sections: Mapping[str, str]) -> RdmaFacts:
    """RdmaFacts from facts.sh's sections (see ``rdmatext`` for each one's lines)."""
    def text(name: str) -> str:
        return sections.get(name, "").strip("\n")

    nccl = rdmatext.parse_nccl_settings(text("nccl_environment"), text("nccl_user_conf"),
                                        text("nccl_system_conf"))
    mtus = rdmatext.parse_mtus(text("mtus"))
    values = rdmatext.parse_port_lines(text("rdma_ports"))
    if not values:
        return RdmaFacts(nccl=nccl, mtus=mtus)
    gids = rdmatext.parse_gid_lines(text("rdma_ports"))
    active_mtus = rdmatext.parse_active_mtus(text("rdma_devinfo"))
    devices = rdmatext.parse_devices(text("rdma_devices"))
    ports = tuple(RdmaPort(
        device, number, found.get("state", ""), found.get("phys_state", ""),
        found.get("link_layer", ""), found.get("rate", ""), active_mtus.get((device, number)),
        tuple(Gid(*entry) for entry in gids.get((device, number), [])))
        for (device, number), found in sorted(values.items()))
    loaded, installed = rdmatext.parse_modules(text("rdma_modules"))
    paths = [slots for _, slots in devices.values()] + [
        rdmatext.pci_slots(line) for line in text("rdma_gpu_paths").splitlines()]
    acs, acs_unread = _acs(text("rdma_acs"), paths)
    memlock = text("rdma_memlock").strip()
    return RdmaFacts(
        ports=ports,
        netdevs={name: netdevs for name, (netdevs, _) in devices.items()},
        char_devices=rdmatext.parse_char_devices(text("rdma_char_devices")),
        libraries=rdmatext.parse_libraries(text("rdma_libraries")),
        memlock_kib=rdmatext.parse_memlock(memlock) if memlock else None,
        memlock_known=bool(memlock),
        modules_loaded=loaded, peer_memory_installed=installed,
        acs=acs, acs_unread=acs_unread,
        topology=rdmatext.parse_topology_nics(text("rdma_topology")),
        mtus=mtus, nccl=nccl)


def _acs(text: str, paths: list[tuple[str, ...]]) -> tuple[dict[str, str], str | None]:
    """ACSCtl of the bridges above each NIC and GPU (a path but its last slot), or why it is
    unknown."""
    if text.strip() == "lspci absent":
        return {}, "not read: lspci is not installed (pciutils)"
    if not text.strip():
        return {}, "not read: lspci printed nothing"
    acs, denied = rdmatext.parse_acs(text)
    bridges = list(dict.fromkeys(slot for slots in paths for slot in slots[:-1]))
    if any(slot in denied for slot in bridges):
        return {}, "not read: lspci shows PCI capabilities to root only"
    return {slot: acs[slot] for slot in bridges if slot in acs}, None


def _port_text(port: RdmaPort) -> str:
    words = (port.kind, port.state.split(": ")[-1], port.phys_state.split(": ")[-1],
             port.rate.split(" (")[0].replace("Gb/sec", "Gb/s"),
             f"mtu {port.active_mtu}" if port.active_mtu else "")
    return f"{port.device}/{port.port} " + " ".join(word for word in words if word)


def _memlock_text(rdma: RdmaFacts) -> str:
    if not rdma.memlock_known:
        return "unknown"
    return "unlimited" if rdma.memlock_kib is None else f"{rdma.memlock_kib} KiB"
