"""Did a tool reach the benchmark's end state? Checked from outside, through `testbed exec`.

    problems = check(bed, "node1")   # [] when ufw, /etc/hosts, IPv6, NCCL env and venv are right

The same checks for every tool keep the comparison honest: equal work, not just equal speed.
"""

from __future__ import annotations

from nodeprov.testbed.cluster import Testbed

VENV = "/opt/nodeprov/venv"
IPV6_KEYS = ("net.ipv6.conf.all.disable_ipv6", "net.ipv6.conf.default.disable_ipv6")
READ = r"""section() { printf '\n@@bench %s\n' "$1"; }
section ufw; ufw status verbose
section hosts; cat /etc/hosts
section live; cd /proc/sys/net/ipv6/conf && cat all/disable_ipv6 default/disable_ipv6
section persisted; cat /etc/sysctl.d/99-zz-nodeprov-ipv6.conf
section ufw_default; grep '^IPV6=' /etc/default/ufw
section environment; cat /etc/environment
section nccl; cat /etc/nccl.conf
section venv; [ -x "$1/bin/python" ] && echo yes
true
"""


def sections(text: str) -> dict[str, str]:
    found = {}
    for chunk in text.split("\n@@bench ")[1:]:
        name, _, body = chunk.partition("\n")
        found[name] = body
    return found


def check(bed: Testbed, node: str, *, venv: bool = True) -> list[str]:
    """What is not as every tool must leave it on ``node``, one phrase each."""
    seen = sections(bed.exec(node, "sh", "-c", READ, "bench", VENV, check=True).stdout)
    problems = []
    ufw = seen.get("ufw", "")
    if "Status: active" not in ufw or "deny (incoming)" not in ufw:
        problems.append("ufw not active with default deny incoming")
    rules = [line for line in ufw.splitlines() if "ALLOW IN" in line]
    wanted = [("22/tcp", "Anywhere"), ("32768:60999/tcp", bed.subnet), ("29500/tcp", bed.subnet)]
    for port, source in wanted:
        if not any(line.split()[0] == port and source in line for line in rules):
            problems.append(f"no ufw rule allowing {port} from {source}")
    if len(rules) != len(wanted):
        problems.append(f"{len(rules)} ufw allow rules, expected {len(wanted)}")
    hosts = seen.get("hosts", "").splitlines()
    for name in bed.nodes:
        if not any(line.split()[:1] == [bed.address(name)] and name in line.split()
                   for line in hosts):
            problems.append(f"/etc/hosts does not map {name} to {bed.address(name)}")
    if any(line.startswith("127.0.1.1") for line in hosts):
        problems.append("/etc/hosts still maps the hostname to 127.0.1.1")
    if not any(line.startswith("#") and "127.0.1.1" in line and node in line.split()
               for line in hosts):
        problems.append("/etc/hosts lacks Debian's 127.0.1.1 line, commented out")
    if seen.get("live", "").split() != ["1", "1"]:
        problems.append("IPv6 not disabled live")
    persisted = {key.strip(): value.strip() for key, _, value in
                 (line.partition("=") for line in seen.get("persisted", "").splitlines())}
    if any(persisted.get(key) != "1" for key in IPV6_KEYS):
        problems.append("IPv6 off not persisted in /etc/sysctl.d/99-zz-nodeprov-ipv6.conf")
    if seen.get("ufw_default", "").strip() != "IPV6=no":
        problems.append("ufw's IPV6= is not no")
    if ('NCCL_SOCKET_IFNAME="=eth0"' not in seen.get("environment", "")
            or 'GLOO_SOCKET_IFNAME="eth0"' not in seen.get("environment", "")):
        problems.append("/etc/environment lacks NCCL/GLOO_SOCKET_IFNAME for eth0")
    if "NCCL_SOCKET_IFNAME==eth0" not in seen.get("nccl", ""):
        problems.append("/etc/nccl.conf lacks NCCL_SOCKET_IFNAME==eth0")
    if venv and seen.get("venv", "").strip() != "yes":
        problems.append(f"no venv at {VENV}")
    return problems
