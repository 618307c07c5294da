"""What one rank's NCCL lines say about its fabric, folded line by line::

    ranks = fold(lines)                     # {(host, pid, dev): RankLog}
    ranks[("node1", 4811, 0)].networks      # {'IB'}: the NET plugins it named
    ranks[("node1", 4811, 0)].ib_devices    # [Device('mlx5_0', 'IB', 1)]

Only what the lines say is kept, each with the line that says it (``evidence``); deciding what
it means is ``fabric.verdict``'s and ``fabric.causes``'s.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from nodeprov.fabric.lines import NcclLine

_USING_NETWORK = re.compile(r"^(?:Using network|Assigned NET plugin) (?P<net>.+?)(?: to comm)?$")
_INITIALIZED = re.compile(r"^Initialized NET plugin (?P<net>\S+)$")
# PXN (2.12+): "via NET/IB/0(8)/GDRDMA", the NIC of proxy rank 8 (src/transport/net.cc)
_NET_CHANNEL = re.compile(r"via NET/(?P<net>[A-Za-z][\w ]*?)/\d+(?:\(\d+\))?(?P<flags>/\S+)?")
_INTRA_CHANNEL = re.compile(r"via (?P<path>P2P|SHM|direct shared memory)")
_IB_DEVICES = re.compile(r"^NET/IB ?: Using (?P<list>.*?); OOB (?P<oob>[^:\s]+)")
_IB_DEVICE = re.compile(r"\[\d+\](?P<name>[^:\s\[]+):(?P<port>\d+)/(?P<layer>IB|RoCE)")
# one device a line: 2.3's "NET/IB: [0] mlx5_0:1/IB", 2.27's "NET/IB: [0] mlx5_0:uverbs0:1/RoCE
# provider=..." (before its "NET/IB : Using" list, which wins)
_IB_DEVICE_LINE = re.compile(
    r"^NET/IB: \[\d+\] (?P<name>[^:\s]+):(?:[^:\s]+:)?(?P<port>\d+)/(?P<layer>IB|RoCE)\b")
_SOCKET_DEVICES = re.compile(r"^NET/Socket ?: Using (?P<list>.*)")
_SOCKET_DEVICE = re.compile(r"\[\d+\](?P<name>[^:\s\[]+):")
_BOOTSTRAP = re.compile(r"^Bootstrap ?: Using (?:\[\d+\])?(?P<name>[^:\s]+):")
_PROVIDER = re.compile(r"NET/OFI Selected [Pp]rovider is (?P<provider>[\w;]+)")
_SETTING = re.compile(r"^(?P<name>NCCL_\w+) set (?:by environment )?to (?P<value>.*?)\.?$")
_GDR_HCA = re.compile(r"GPU Direct RDMA (?P<state>Enabled|Disabled) for HCA")
# NCCL 2.5+: "GPU Direct RDMA Disabled for GPU 18000 / HCA 0 (distance 5 > 4)", 2.29:
# "... for GPU/0-18000 (rank 3) - NET/0-0 (distance 5 > 4)": one GPU-NIC pair of the node
_GDR_DISTANCE = re.compile(r"distance \d+ >=? \d+\)$")
_RANK = re.compile(r"comm 0x[0-9a-f]+ rank (?P<rank>\d+) n[Rr]anks")
_NVLS = re.compile(r"^(?:NVLS comm 0x|Connected NVLS)|^[1-9]\d* coll channels, [1-9]\d* nvls")
_VERSION = re.compile(r"^NCCL version (?P<version>\d+\.\d+\.\d+)")
MAX_WARNINGS = 200  # per rank: a rule needs one line; a log repeating one is untrusted input


@dataclass(frozen=True)
class Device:
    """A NIC NCCL listed: its name, link layer (IB, RoCE, IP for a socket's interface, EFA)
    and port (None where NCCL gives none)."""

    name: str
    link_layer: str
    port: int | None = None


@dataclass
class RankLog:
    """One rank's fabric as its lines tell it; every ``evidence`` entry is a line verbatim."""

    host: str
    pid: int
    dev: int
    rank: int | None = None
    version: str | None = None
    lines: int = 0                       # NCCL lines of this rank read
    networks: dict[str, str] = field(default_factory=dict)   # plugin name -> its line
    channels: dict[str, str] = field(default_factory=dict)   # NET name of a channel -> line
    initialized: dict[str, str] = field(default_factory=dict)  # 2.27+: plugins that loaded
    gdr_channel: str | None = None       # a channel line ending /GDRDMA
    plain_channel: str | None = None     # a NET channel line without it
    gdr_disabled: str | None = None      # "GPU Direct RDMA Disabled for HCA ..."
    gdr_distance: str | None = None      # "... Disabled for GPU 18000 / HCA 0 (distance 5 > 4)"
    ib_devices: list[Device] = field(default_factory=list)
    ib_line: str | None = None
    ib_listed: bool = False              # the "NET/IB : Using ... ; OOB" list was read
    socket_devices: list[Device] = field(default_factory=list)
    socket_line: str | None = None
    bootstrap: str | None = None         # the bootstrap interface's name
    bootstrap_line: str | None = None
    provider: str | None = None          # the OFI provider (efa, tcp, ...)
    provider_line: str | None = None
    intra: dict[str, str] = field(default_factory=dict)      # P2P, SHM, NVLS -> a line
    settings: dict[str, tuple[str, str]] = field(default_factory=dict)  # NCCL_X -> value, line
    notes: list[str] = field(default_factory=list)           # INFO lines a cause rule reads
    warnings: list[str] = field(default_factory=list)        # every WARN line

    @property
    def label(self) -> str:
        """``rank 3`` where the log says the rank, else ``pid 4811 [0]``."""
        return f"rank {self.rank}" if self.rank is not None else f"pid {self.pid} [{self.dev}]"


Ranks = dict[tuple[str, int, int], RankLog]


def fold(lines: Iterable[NcclLine], ranks: Ranks | None = None) -> Ranks:
    """Every rank's lines folded into its RankLog (into ``ranks``, to fold file after file),
    in the order the ranks first appear."""
    ranks = {} if ranks is None else ranks
    for line in lines:
        log = ranks.get(line.process)
        if log is None:
            log = ranks[line.process] = RankLog(line.host, line.pid, line.dev)
        if log.rank is None and line.rank is not None:
            log.rank = line.rank
        log.lines += 1
        add(log, line)
    return ranks


def add(log: RankLog, line: NcclLine) -> None:
    """What ``line`` tells about the fabric, into ``log``."""
    text, whole = line.text, line.evidence
    if line.level == "WARN":
        if len(log.warnings) < MAX_WARNINGS:
            log.warnings.append(whole)
        return
    _add_network(log, text, whole)
    _add_devices(log, text, whole)
    _add_paths(log, text, whole)
    if (setting := _SETTING.match(text)) is not None:
        log.settings.setdefault(setting.group("name"), (setting.group("value"), whole))
    if (ranked := _RANK.search(text)) is not None and log.rank is None:
        log.rank = int(ranked.group("rank"))
    if (version := _VERSION.match(text)) is not None:
        log.version = version.group("version")
    if len(log.notes) < MAX_WARNINGS and any(marker in text for marker in (
            "Failed to open libibverbs", "No device found", "Failed to initialize NET plugin",
            "P2P plugin IB")):
        log.notes.append(whole)


def _add_network(log: RankLog, text: str, whole: str) -> None:
    if (using := _USING_NETWORK.match(text)) is not None:
        log.networks.setdefault(using.group("net"), whole)
    if (loaded := _INITIALIZED.match(text)) is not None:
        log.initialized.setdefault(loaded.group("net"), whole)
    if (channel := _NET_CHANNEL.search(text)) is not None:
        log.channels.setdefault(channel.group("net"), whole)
        if "/GDRDMA" in (channel.group("flags") or ""):
            log.gdr_channel = log.gdr_channel or whole
        else:
            log.plain_channel = log.plain_channel or whole
    if (provider := _PROVIDER.search(text)) is not None and log.provider is None:
        log.provider, log.provider_line = provider.group("provider"), whole
    if (gdr := _GDR_HCA.search(text)) is not None and gdr.group("state") == "Disabled":
        log.gdr_disabled = log.gdr_disabled or whole
    if "GPU Direct RDMA Disabled for GPU" in text and _GDR_DISTANCE.search(text):
        log.gdr_distance = log.gdr_distance or whole


def _add_devices(log: RankLog, text: str, whole: str) -> None:
    if (ib := _IB_DEVICES.match(text)) is not None and not log.ib_listed:
        log.ib_devices = [_device(found) for found in _IB_DEVICE.finditer(ib.group("list"))]
        log.ib_line, log.ib_listed = whole, True
    elif (one := _IB_DEVICE_LINE.match(text)) is not None and not log.ib_listed:
        if (device := _device(one)) not in log.ib_devices:
            log.ib_devices.append(device)
            log.ib_line = log.ib_line or whole
    elif (socket := _SOCKET_DEVICES.match(text)) is not None:
        log.socket_devices = [Device(found.group("name"), "IP")
                              for found in _SOCKET_DEVICE.finditer(socket.group("list"))]
        if log.bootstrap is None and log.socket_devices:  # NCCL before 2.4.8: the first
            log.bootstrap, log.bootstrap_line = log.socket_devices[0].name, whole  # is it
        log.socket_line = whole
    elif (boot := _BOOTSTRAP.match(text)) is not None and log.bootstrap is None:
        log.bootstrap, log.bootstrap_line = boot.group("name"), whole


def _device(found: re.Match[str]) -> Device:
    return Device(found.group("name"), found.group("layer"), int(found.group("port")))


def _add_paths(log: RankLog, text: str, whole: str) -> None:
    if (intra := _INTRA_CHANNEL.search(text)) is not None and "via NET/" not in text:
        path = "P2P" if intra.group("path") == "P2P" else "SHM"
        log.intra.setdefault(path, whole)
    if _NVLS.search(text):
        log.intra.setdefault("NVLS", whole)
