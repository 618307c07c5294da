"""pyinfra twin of the network tasks of tests/bench/nodeprov/playbook.yaml: the same end state,
written the usual pyinfra way (server.sysctl, files.line/block/replace, facts deciding).

    pyinfra -y --parallel N INVENTORY venv.py network.py

Host data (tests/bench/tools.py writes the inventory): ``node_address`` (the node's subnet
address), ``node_subnet``. Each node's names are read once per run (node_names.py, imported
from pyinfra's working directory, this folder). pyinfra 3 has no ufw operation: a small fact
reads ufw's saved state (cheap files, not the ufw CLI) and ``server.shell`` runs only the ufw
commands still needed, so a second run has nothing to do.
"""

from __future__ import annotations

import shlex
from typing import Any

from node_names import hosts_line
from pyinfra import host, inventory
from pyinfra.api import FactBase
from pyinfra.facts.hardware import Ipv4Addrs
from pyinfra.facts.server import Sysctl
from pyinfra.operations import files, server

IPV6_KEYS = ("net.ipv6.conf.all.disable_ipv6", "net.ipv6.conf.default.disable_ipv6")
IPV6_FILE = "/etc/sysctl.d/99-zz-nodeprov-ipv6.conf"
RDZV_PORT = 29500


class UfwSaved(FactBase[dict[str, Any]]):
    """ufw's saved state: ``{"enabled": bool, "incoming": "DROP", "ipv6": "no", "rules":
    {(action, proto, port, source)}}`` from ufw.conf, /etc/default/ufw and user.rules."""

    def command(self) -> str:
        return "cat /etc/ufw/ufw.conf /etc/default/ufw /etc/ufw/user.rules 2>/dev/null || true"

    def process(self, output: list[str]) -> dict[str, Any]:
        settings: dict[str, str] = {}
        rules = set()
        for line in output:
            if line.startswith("### tuple ### "):
                # action proto dport dst sport src direction [comment=...]
                fields = line.split()[3:]
                rules.add((fields[0], fields[1], fields[2], fields[5]))
            elif "=" in line and not line.startswith("#"):
                key, _, value = line.partition("=")
                settings[key.strip()] = value.strip().strip('"')
        return {"enabled": settings.get("ENABLED") == "yes",
                "incoming": settings.get("DEFAULT_INPUT_POLICY", ""),
                "ipv6": settings.get("IPV6", ""), "rules": rules}


def interface_of(address: str) -> str:
    """The interface holding ``address`` (the node's subnet address)."""
    addresses: dict[str, list[str]] = host.get_fact(Ipv4Addrs)
    return next(name for name, found in addresses.items() if address in found)


ufw = host.get_fact(UfwSaved)

# IPv6 off, live and persisted; ufw's IPV6= with it (ufw will not start with IPV6=yes then)
for key in IPV6_KEYS:
    server.sysctl(name=f"IPv6 off: {key}", key=key, value=1, persist=True,
                  persist_file=IPV6_FILE)
files.line(name="ufw's IPv6 off too", path="/etc/default/ufw", line="^IPV6=.*",
           replace="IPV6=no")
if ufw["enabled"] and ufw["ipv6"] != "no":
    server.shell(name="Reload ufw for IPV6=no", commands=["ufw reload"])

# ufw: SSH open, the ephemeral range and rendezvous port from the subnet only, deny incoming
subnet = host.data.node_subnet
low, high = host.get_fact(Sysctl, keys=["net.ipv4.ip_local_port_range"])[
    "net.ipv4.ip_local_port_range"]
wanted = [("0.0.0.0/0", "22", "nodeprov: ssh"),
          (subnet, f"{low}:{high}", "nodeprov: nccl ephemeral"),
          (subnet, str(RDZV_PORT), "nodeprov: rdzv")]
missing = [shlex.join(["ufw", "allow", "proto", "tcp", "from",
                       "any" if source == "0.0.0.0/0" else source, "to", "any", "port", port,
                       "comment", comment])
           for source, port, comment in wanted
           if ("allow", "tcp", port, source) not in ufw["rules"]]
if missing:
    server.shell(name="ufw rules for SSH, NCCL/gloo and rendezvous", commands=missing)
if ufw["incoming"] != "DROP":
    server.shell(name="ufw: deny incoming by default", commands=["ufw default deny incoming"])
if not ufw["enabled"]:
    server.shell(name="Enable ufw", commands=["ufw --force enable"])

# Every node in /etc/hosts under its subnet address; Debian's 127.0.1.1 line commented out
files.block(name="Every node in /etc/hosts", path="/etc/hosts",
            content="\n".join(hosts_line(node.name) for node in inventory),
            marker="# {mark} nodeprov hosts")
files.replace(name="Debian's 127.0.1.1 line commented out", path="/etc/hosts",
              text=r"^(127\.0\.1\.1[[:space:]].*)$", replace=r"# \1", extended_regex=True)

# NCCL and gloo use the node-subnet interface, in every session and whatever the environment
ifname = interface_of(host.data.node_address)
files.block(name="NCCL/gloo interface in /etc/environment", path="/etc/environment",
            content=f'NCCL_SOCKET_IFNAME="={ifname}"\nGLOO_SOCKET_IFNAME="{ifname}"',
            marker="# {mark} nodeprov nccl")
files.block(name="NCCL interface in /etc/nccl.conf", path="/etc/nccl.conf",
            content=f"NCCL_SOCKET_IFNAME=={ifname}", marker="# {mark} nodeprov nccl")
