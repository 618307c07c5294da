"""Reconstructed /sys/class/infiniband trees, built from recorded real outputs
(tests/data/rdma, sources in its README): ``ibstat``'s ports and ``show_gids``' GID tables
written as the kernel's sysfs files hold them (drivers/infiniband/core/sysfs.c)::

    build_tree(tmp_path / "ib", ibstat=DATA / "ibstat-gpud-752-ib.txt")

Only what the output says is written: a value it does not show has no file (facts.sh reads
each file on its own, as the kernel may refuse one).
"""

from __future__ import annotations

import re
from pathlib import Path

DATA = Path(__file__).parents[1] / "data" / "rdma"
# ibstat's words -> the kernel's sysfs text (ib_port_state_str, phys_state_to_str)
STATES = {"Down": "1: DOWN", "Initializing": "2: INIT", "Armed": "3: ARMED",
          "Active": "4: ACTIVE"}
PHYS_STATES = {"Sleep": "1: Sleep", "Polling": "2: Polling", "Disabled": "3: Disabled",
               "LinkUp": "5: LinkUp"}
GID_TYPES = {"v1": "IB/RoCE v1", "v2": "RoCE v2"}
ZERO_GID = ":".join(["0000"] * 8)


def ibstat_ports(text: str) -> dict[tuple[str, int], dict[str, str]]:
    """ibstat's CAs and ports: the sysfs files state, phys_state, rate, link_layer of each."""
    ports: dict[tuple[str, int], dict[str, str]] = {}
    device, port = "", 0
    for line in text.splitlines():
        if match := re.match(r"CA '(\S+)'", line):
            device = match.group(1)
        elif match := re.match(r"\s+Port (\d+):", line):
            port = int(match.group(1))
            ports[(device, port)] = {}
        elif (match := re.match(r"\s+(State|Physical state|Rate|Link layer): (.+)", line)
              ) and (device, port) in ports:
            key, value = match.groups()
            name, sysfs = {"State": ("state", STATES.get(value)),
                          "Physical state": ("phys_state", PHYS_STATES.get(value)),
                          # ibstat drops the kernel's "(4X HDR)" after the rate
                          "Rate": ("rate", f"{value} Gb/sec"),
                          "Link layer": ("link_layer", value)}[key]
            ports[(device, port)][name] = sysfs or value
    return ports


def show_gids(text: str) -> dict[tuple[str, int], list[tuple[int, str, str, str]]]:
    """show_gids' rows: (index, gid, sysfs type, netdev) per port."""
    gids: dict[tuple[str, int], list[tuple[int, str, str, str]]] = {}
    for line in text.splitlines():
        cells = line.split()
        if len(cells) >= 6 and cells[2].isdigit():
            gids.setdefault((cells[0], int(cells[1])), []).append(
                (int(cells[2]), cells[3], GID_TYPES[cells[-2]], cells[-1]))
    return gids


def build_tree(root: Path, ibstat: Path | None = None, gids: Path | None = None,
               state: dict[str, str] | None = None) -> Path:
    """The tree under ``root``: ibstat's ports, show_gids' tables (the indexes before the
    first shown are all-zero, unused entries, as the kernel shows them); ``state`` the files
    written where neither output shows them (the README says which)."""
    ports = ibstat_ports(ibstat.read_text()) if ibstat else {}
    tables = show_gids(gids.read_text()) if gids else {}
    for key in tables:
        ports.setdefault(key, dict(state or {}))
    for (device, number), files in ports.items():
        port = root / device / "ports" / str(number)
        for folder in ("gids", "gid_attrs/types", "gid_attrs/ndevs"):
            (port / folder).mkdir(parents=True, exist_ok=True)
        for name, value in files.items():
            (port / name).write_text(value + "\n")
        entries = tables.get((device, number), [])
        for index in range(max((entry[0] for entry in entries), default=-1) + 1):
            (port / "gids" / str(index)).write_text(ZERO_GID + "\n")
        for index, gid, kind, netdev in entries:
            (port / "gids" / str(index)).write_text(gid + "\n")
            (port / "gid_attrs" / "types" / str(index)).write_text(kind + "\n")
            (port / "gid_attrs" / "ndevs" / str(index)).write_text(netdev + "\n")
    return root


def port_lines(ibstat: Path | None = None, gids: Path | None = None,
               state: dict[str, str] | None = None) -> str:
    """The same ports as facts.sh's ``rdma_ports`` section prints them from such a tree, for
    tests that need the facts without a node (``read_rdma({"rdma_ports": port_lines(...)})``)."""
    ports = ibstat_ports(ibstat.read_text()) if ibstat else {}
    tables = show_gids(gids.read_text()) if gids else {}
    for key in tables:
        ports.setdefault(key, dict(state or {}))
    lines = [f"{device} {number} {name} {value}"
             for (device, number), files in sorted(ports.items())
             for name, value in files.items()]
    lines += [f"{device} {number} gid {index} {gid} {kind}|{netdev}"
              for (device, number), entries in sorted(tables.items())
              for index, gid, kind, netdev in entries]
    return "\n".join(lines) + "\n"


# Run in a test-cluster node: ``tree`` ({path under /sys/class/infiniband: text}) written to
# /run/ib-tree, and mounted as the node's /sys/class/infiniband (a tmpfs over /sys/class holds
# the mount point; /sys/class/net is moved into it, so the node keeps its interfaces).
MOUNT_IN_NODE = """\
import json, os, subprocess, sys
for path, text in json.loads(sys.stdin.read()).items():
    os.makedirs(os.path.dirname("/run/ib-tree/" + path), exist_ok=True)
    with open("/run/ib-tree/" + path, "w") as file:
        file.write(text)
for argv in (["mkdir", "-p", "/run/keep/net"],
             ["mount", "--bind", "/sys/class/net", "/run/keep/net"],
             ["mount", "-t", "tmpfs", "none", "/sys/class"],
             ["mkdir", "/sys/class/net", "/sys/class/infiniband"],
             ["mount", "--move", "/run/keep/net", "/sys/class/net"],
             ["mount", "--bind", "/run/ib-tree", "/sys/class/infiniband"]):
    subprocess.run(argv, check=True)
"""


def tree_files(root: Path) -> dict[str, str]:
    """{path under ``root``: text} of a tree ``build_tree`` made, for MOUNT_IN_NODE."""
    return {str(path.relative_to(root)): path.read_text()
            for path in sorted(root.rglob("*")) if path.is_file()}
