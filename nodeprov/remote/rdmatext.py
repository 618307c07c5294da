"""Pure parsers of what ``facts.sh`` prints about the fast fabric (its ``rdma_*``, ``mtus``
and ``nccl_*`` sections), each line checked against a strict pattern: a line out of pattern is
left out, the node's words are not trusted (``remote/rdma.py`` builds the facts from them)::

    >>> parse_topology_nics("\\tGPU0\\tmlx5_0\\nGPU0\\t X \\tPIX\\n")
    (('GPU0', 'mlx5_0', 'PIX'),)
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from nodeprov.util import validate

DEVICE = re.compile(r"[A-Za-z0-9_.-]{1,64}")
SLOT = re.compile(r"[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]")
_SHORT_SLOT = re.compile(r"[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]")  # lspci without -D: domain 0000
_PORT_VALUES = {
    "state": re.compile(r"[0-9]: [A-Z_]{1,20}"),
    "phys_state": re.compile(r"[0-9]{1,2}: [A-Za-z ]{1,40}"),
    "link_layer": re.compile(r"[A-Za-z]{1,20}"),
    "rate": re.compile(r"[0-9]{1,5}(?:\.[0-9]{1,3})? Gb/sec(?: \([0-9A-Za-z ]{1,20}\))?"),
}
_GID = re.compile(r"[0-9a-f]{4}(?::[0-9a-f]{4}){7}")
_GID_TYPE = re.compile(r"(?:IB/RoCE v1|RoCE v2)?")
_LIBRARY = re.compile(r"/[A-Za-z0-9_.+/-]{0,255}/(?:libibverbs\.so|libfabric\.so|libnccl-net)"
                      r"[A-Za-z0-9_.+-]{0,64}")
_CHAR_DEVICE = re.compile(r"/dev/infiniband(?:/[A-Za-z0-9_]{1,32} (?:rw|denied)| absent| empty)")
_ACS = re.compile(r"\s+ACSCtl:\s+((?:[A-Za-z]{1,16}[+-]\s?){1,12})")
_MODULE_FILE = re.compile(r"/[A-Za-z0-9_.+/-]{1,255}")
PEER_MEMORY = ("nvidia_peermem", "nv_peer_mem")
# nvidia-smi topo -m's relations, nearest first (its legend)
RELATIONS = ("PIX", "PXB", "PHB", "NODE", "SYS")
NCCL_NAME = re.compile(r"NCCL_[A-Z0-9_]{1,64}")
_NCCL_VALUE = re.compile(f"[^{validate.NOT_SHOWN_CHARS}]{{0,1023}}")


def parse_port_lines(text: str) -> dict[tuple[str, int], dict[str, str]]:
    """``DEV PORT KEY VALUE`` lines: each port's sysfs values (GID lines aside).

    >>> parse_port_lines("mlx5_0 1 state 4: ACTIVE\\nmlx5_0 1 rate 400 Gb/sec (4X NDR)\\n")
    {('mlx5_0', 1): {'state': '4: ACTIVE', 'rate': '400 Gb/sec (4X NDR)'}}
    """
    ports: dict[tuple[str, int], dict[str, str]] = {}
    for device, port, key, value in _port_fields(text):
        pattern = _PORT_VALUES.get(key)
        if pattern is not None and pattern.fullmatch(value):
            ports.setdefault((device, port), {})[key] = value
    return ports


def parse_gid_lines(text: str) -> dict[tuple[str, int], list[tuple[int, str, str, str]]]:
    """``DEV PORT gid INDEX GID TYPE|NETDEV`` lines: (index, gid, type, netdev) per port."""
    gids: dict[tuple[str, int], list[tuple[int, str, str, str]]] = {}
    for device, port, key, value in _port_fields(text):
        index, _, rest = value.partition(" ")
        gid, _, attributes = rest.partition(" ")
        kind, _, netdev = attributes.partition("|")
        if (key == "gid" and index.isdigit() and len(index) < 5 and _GID.fullmatch(gid)
                and _GID_TYPE.fullmatch(kind) and (not netdev or _interface(netdev))):
            gids.setdefault((device, port), []).append((int(index), gid, kind, netdev))
    return gids


def _port_fields(text: str) -> Iterable[tuple[str, int, str, str]]:
    for line in text.splitlines():
        parts = line.split(" ", 3)
        if (len(parts) == 4 and DEVICE.fullmatch(parts[0]) and parts[1].isdigit()
                and len(parts[1]) < 4):
            yield parts[0], int(parts[1]), parts[2], parts[3]


def parse_devices(text: str) -> dict[str, tuple[tuple[str, ...], tuple[str, ...]]]:
    """``DEV NETDEVS PCI-PATH`` lines: each device's netdevs and the PCI slots from the root
    to the device (its bridges, then itself).

    >>> parse_devices("mlx5_0 ibp26s0 /sys/devices/pci0000:17/0000:17:01.0/0000:1a:00.0\\n")
    {'mlx5_0': (('ibp26s0',), ('0000:17:01.0', '0000:1a:00.0'))}
    """
    devices = {}
    for line in text.splitlines():
        parts = line.split(" ")
        if len(parts) == 3 and DEVICE.fullmatch(parts[0]):
            netdevs = tuple(name for name in parts[1].split(",") if _interface(name))
            devices[parts[0]] = (netdevs, pci_slots(parts[2]))
    return devices


def pci_slots(path: str) -> tuple[str, ...]:
    """The slots of a resolved sysfs device path, root first; () for anything else.

    >>> pci_slots("/sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0")
    ('0000:00:01.0', '0000:01:00.0')
    """
    if not path.startswith("/sys/devices/pci"):
        return ()
    return tuple(part for part in path.split("/") if SLOT.fullmatch(part))


def parse_char_devices(text: str) -> tuple[tuple[str, str], ...]:
    """``PATH rw|denied`` lines, or ``/dev/infiniband absent|empty``: what the job's user may
    open under /dev/infiniband."""
    return tuple((line.split(" ")[0], line.split(" ")[1]) for line in text.splitlines()
                 if _CHAR_DEVICE.fullmatch(line))


def parse_libraries(text: str) -> tuple[str, ...]:
    """Paths of libibverbs, libfabric and NCCL network plugins the loader finds."""
    return tuple(dict.fromkeys(line for line in text.splitlines() if _LIBRARY.fullmatch(line)))


def parse_memlock(text: str) -> int | None:
    """``ulimit -l``: KiB, or None for unlimited; ValueError for anything else.

    >>> parse_memlock("64"), parse_memlock("unlimited")
    (64, None)
    """
    if text == "unlimited":
        return None
    if not text.isdigit() or len(text) > 20:
        raise ValueError(f"the node's locked-memory limit {text[:40]!r} is not valid here "
                         "(expected `ulimit -l`'s KiB or 'unlimited')")
    return int(text)


def parse_modules(text: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """``loaded NAME`` and ``installed NAME FILE`` lines: modules loaded, peer-memory modules
    installed (whether loaded or not)."""
    loaded, installed = [], []
    for line in text.splitlines():
        parts = line.split(" ")
        if parts[0] == "loaded" and len(parts) == 2 and DEVICE.fullmatch(parts[1]):
            loaded.append(parts[1])
        elif (parts[0] == "installed" and len(parts) == 3 and parts[1] in PEER_MEMORY
              and _MODULE_FILE.fullmatch(parts[2])):
            installed.append(parts[1])
    return tuple(loaded), tuple(installed)


def parse_acs(text: str) -> tuple[dict[str, str], set[str]]:
    """``lspci -D -vvv``'s slot lines and ACSCtl lines: {slot: ACSCtl flags}, and the slots
    whose capabilities lspci could not read (``<access denied>``: not root).

    >>> parse_acs("0000:00:01.0 PCI bridge: X\\n\\t\\tACSCtl:\\tSrcValid+ ReqRedir+\\n")
    ({'0000:00:01.0': 'SrcValid+ ReqRedir+'}, set())
    """
    acs: dict[str, str] = {}
    denied: set[str] = set()
    slot = None
    for line in text.splitlines():
        head = line.split(" ", 1)[0]
        if SLOT.fullmatch(head) or _SHORT_SLOT.fullmatch(head):
            slot = head if SLOT.fullmatch(head) else f"0000:{head}"
        elif slot and (match := _ACS.match(line)):
            acs[slot] = " ".join(match.group(1).split())
        elif slot and "<access denied>" in line:
            denied.add(slot)
    return acs, denied


def parse_topology_nics(text: str) -> tuple[tuple[str, str, str], ...]:
    """``nvidia-smi topo -m``: each GPU's nearest NIC and their relation (PIX nearest, SYS
    farthest). NICs are named in the header (older drivers) or as ``NIC0: mlx5_0`` in the
    legend below the table."""
    lines = text.splitlines()
    legend = dict(re.findall(r"^\s*(NIC[0-9]{1,3}): ([A-Za-z0-9_.-]{1,64})\s*$", text, re.M))
    header = next((line.split() for line in lines if line.split()[:1] == ["GPU0"]
                   and line[:1].isspace()), None)
    if header is None:
        return ()
    nearest = []
    for line in lines:
        cells = line.split()
        if not cells or not re.fullmatch(r"GPU[0-9]{1,3}", cells[0]) or line[:1].isspace():
            continue
        # the header's "CPU Affinity" is two words, a row's one: cells past the NICs differ
        links = [(legend.get(name, name), relation)
                 for name, relation in zip(header, cells[1:], strict=False)
                 if relation in RELATIONS
                 and not name.startswith("GPU") and DEVICE.fullmatch(legend.get(name, name))]
        if links:
            nic, relation = min(links, key=lambda link: RELATIONS.index(link[1]))
            nearest.append((cells[0], nic, relation))
    return tuple(nearest)


def parse_active_mtus(text: str) -> dict[tuple[str, int], int]:
    """``ibv_devinfo``: each port's active_mtu in bytes.

    >>> parse_active_mtus("hca_id: mlx5_0\\n\\tport:   1\\n\\t\\tactive_mtu:  4096 (5)\\n")
    {('mlx5_0', 1): 4096}
    """
    mtus = {}
    device, port = None, None
    for line in text.splitlines():
        key, _, value = line.strip().partition(":")
        value = value.strip()
        if key == "hca_id" and DEVICE.fullmatch(value):
            device, port = value, None
        elif key == "port" and value.isdigit() and len(value) < 4:
            port = int(value)
        elif key == "active_mtu" and device and port is not None:
            number = value.split(" ")[0]
            if number in ("256", "512", "1024", "2048", "4096"):
                mtus[(device, port)] = int(number)
    return mtus


def parse_mtus(text: str) -> dict[str, int]:
    """``NAME MTU`` lines of /sys/class/net/*/mtu."""
    mtus = {}
    for line in text.splitlines():
        name, _, mtu = line.partition(" ")
        if _interface(name) and mtu.isdigit() and 68 <= int(mtu) <= 65536 + 4:
            mtus[name] = int(mtu)
    return mtus


def parse_nccl_settings(environment: str, user_conf: str, system_conf: str
                        ) -> tuple[tuple[str, str, str], ...]:
    """Every NCCL_* setting NCCL will see, as (name, value, where): the login's environment
    first, then the user's file, then /etc/nccl.conf, each taken only where nothing before set
    it (NCCL's ``setenv(name, value, 0)``, src/misc/param.cc). In a file, ``#`` lines and
    lines without ``=`` are skipped and the name is all before the first ``=``, as NCCL reads
    them; the user file's first line is ``# PATH``, the file facts.sh read.

    >>> parse_nccl_settings("NCCL_IB_HCA=mlx5", "# /root/.nccl.conf\\nNCCL_IB_HCA=x",
    ...                     "NCCL_DEBUG=WARN")
    (('NCCL_IB_HCA', 'mlx5', 'environment'), ('NCCL_DEBUG', 'WARN', '/etc/nccl.conf'))
    """
    user_path = user_conf.split("\n", 1)[0][2:] if user_conf.startswith("# /") else ""
    settings: dict[str, tuple[str, str, str]] = {}
    for source, text in (("environment", environment),
                         (user_path if _MODULE_FILE.fullmatch(user_path) else "user file",
                          user_conf), ("/etc/nccl.conf", system_conf)):
        for line in text.split("\n"):
            name, sep, value = line.partition("=")
            if (sep and not line.startswith("#") and NCCL_NAME.fullmatch(name)
                    and _NCCL_VALUE.fullmatch(value)):
                settings.setdefault(name, (name, value, source))
    return tuple(settings.values())


def _interface(name: str) -> bool:
    try:
        validate.interface_name(name)
    except ValueError:
        return False
    return True
