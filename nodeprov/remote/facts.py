"""Facts: what a node is, read in one round trip by ``facts.sh`` and parsed by pure functions.

    >>> sections = split_sections("\\n@@T hostname\\nnode1\\n@@T end\\n", "T")
    >>> sections["hostname"]
    'node1'
"""

from __future__ import annotations

import dataclasses
import ipaddress
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import resources

from nodeprov.gpu import Accelerators, GpuInfo, read_gpus
from nodeprov.remote.actions import Probe
from nodeprov.remote.factcheck import (
    ARCH,
    KERNEL,
    OS_NAME,
    OS_WORD,
    PORT,
    PYTHON_PATH,
    PYTHON_VERSION,
    TOOL,
    VERSIONED_PYTHON,
    checked_answers,
    checked_interface,
    checked_name,
    checked_text,
)
from nodeprov.remote.rdma import RdmaFacts, read_rdma
from nodeprov.util.safejson import loads

FACTS_SCRIPT = resources.files("nodeprov.nodeside").joinpath("facts.sh").read_text()
# facts.sh runs it only where nvidia-smi lacks compute_cap (drivers before 510)
CUDA_PROBE = resources.files("nodeprov.nodeside").joinpath("cuda_capability.py").read_text()


@dataclass(frozen=True)
class Interface:
    name: str
    up: bool
    ipv4: tuple[str, ...]  # with prefix, e.g. "10.0.0.11/24"
    ipv6: tuple[str, ...]
    speed_mbps: int | None = None  # as the kernel reports the link; None: it does not say

    def addresses_in(self, subnet: str) -> list[str]:
        network = ipaddress.ip_network(subnet)
        return [a for a in (*self.ipv4, *self.ipv6)
                if ipaddress.ip_interface(a).ip in network]


@dataclass(frozen=True)
class Facts:
    hostname: str
    fqdn: str
    os_id: str
    os_version: str
    os_name: str
    kernel: str
    arch: str
    python_path: str | None
    python_version: str | None
    interfaces: tuple[Interface, ...]
    ephemeral_port_range: tuple[int, int]
    ufw_installed: bool
    ufw_active: bool
    systemd: bool
    package_manager: str | None
    gpu: GpuInfo | None
    accelerators: Accelerators = Accelerators()  # PCI GPUs, ROCm, why a GPU is unusable
    firewalld_active: bool = False  # its zones filter beside ufw (RHEL-family default)
    ufw_rules_in_var_lib: bool = False  # Fedora's and EPEL's ufw layout
    # /usr/bin/python3.X and /usr/local/bin/python3.X that run: (path, version)
    pythons: tuple[tuple[str, str], ...] = ()
    rdma: RdmaFacts = RdmaFacts()  # the fast fabric as the job's user sees it
    hostname_in_dns: tuple[str, ...] = ()  # what DNS alone answers for the hostname

    @property
    def gpu_count(self) -> int:
        """GPUs torch can use: NVIDIA's as nvidia-smi lists them, else AMD's where ROCm is
        installed (torch's ``cuda`` devices there too); 0 on a CPU node."""
        if self.gpu is not None:
            return self.gpu.count
        if self.accelerators.rocm is not None:
            return len(self.accelerators.vendor("amd"))
        return 0

    def interfaces_in(self, subnet: str) -> list[Interface]:
        """Interfaces holding an address in ``subnet``."""
        return [iface for iface in self.interfaces if iface.addresses_in(subnet)]

    def summary(self) -> dict[str, str]:
        """Flat, printable view for ``nodeprov facts``."""
        gpu = "none"
        if self.gpu:
            gpu = (f"{len(self.gpu.gpus)}x {self.gpu.gpus[0].name if self.gpu.gpus else '?'}, "
                   f"driver {self.gpu.driver_version}, CUDA {self.gpu.cuda_version[0]}."
                   f"{self.gpu.cuda_version[1]}")
        if self.accelerators.problem:
            gpu = f"unusable: {self.accelerators.problem}"
        elif self.accelerators.rocm:
            gpu = (f"{len(self.accelerators.vendor('amd'))}x AMD, ROCm "
                   f"{'.'.join(map(str, self.accelerators.rocm))}")
        low, high = self.ephemeral_port_range
        return {
            "hostname": self.hostname, "fqdn": self.fqdn, "os": self.os_name,
            "kernel": self.kernel, "arch": self.arch,
            "python3": f"{self.python_version} ({self.python_path})" if self.python_path else "-",
            "interfaces": " ".join(f"{i.name}={','.join(i.ipv4) or '-'}" for i in self.interfaces
                                   if i.name != "lo"),
            "ephemeral ports": f"{low}-{high}",
            "ufw": "absent" if not self.ufw_installed else (
                "active" if self.ufw_active else "inactive"),
            **({"firewalld": "active"} if self.firewalld_active else {}),
            "gpu": gpu, **self.rdma.summary(),
        }


def read_script(probes: Sequence[Probe | None]) -> str:
    """One sh script, its token as $1: facts.sh, each probe's output as section ``probe.N``,
    then ``end``. A probe ``sh -c SCRIPT NAME ARGS..`` runs as a shell function in a subshell
    (a fork, no new sh; ``exit`` ends only the subshell), seeing the facts' shell variables
    besides its own; one whose script uses ``$0`` runs as its own sh.

        run(["sh", "-c", read_script([probe_a, None, probe_b]), "nodeprov-facts", token])
    """
    script = [f"nodeprov_cuda_probe={shlex.quote(CUDA_PROBE)}\n", FACTS_SCRIPT]
    for index, probe in enumerate(probes):
        if probe is None:
            continue
        argv = probe.argv
        if argv[:2] == ("sh", "-c") and len(argv) >= 4 and "$0" not in argv[2] and (
                "${0" not in argv[2]):
            name = f"nodeprov_probe{index}"
            # ":" first: a script of comments only still makes a valid function
            script.append(f"{name}() {{ :\n{argv[2]}\n}}\n")
            command = f"( {shlex.join((name, *argv[4:]))} )"
        else:
            command = shlex.join(argv)
        script.append(f"section probe.{index}\n{command} || true\n")
    script.append("section end\n")
    return "".join(script)


def split_sections(stdout: str, token: str) -> dict[str, str]:
    """Cut output printed as ``\\n@@TOKEN name\\n<content>`` blocks into {name: content}."""
    marker = f"\n@@{token} "
    sections: dict[str, str] = {}
    for chunk in stdout.split(marker)[1:]:
        name, _, content = chunk.partition("\n")
        sections[name] = content
    return sections


def parse_facts(sections: Mapping[str, str]) -> Facts:
    """Build Facts from the sections ``facts.sh`` printed, each fact checked (factcheck): a
    value out of pattern raises ValueError naming it."""
    def text(name: str) -> str:
        return sections.get(name, "").strip()

    os_release = parse_os_release(text("os_release"))
    python_lines = text("python").splitlines()
    ufw_lines = text("ufw").splitlines()
    hostname = checked_name("hostname", text("hostname"))
    speeds = parse_link_speeds(text("link_speeds"))
    interfaces = tuple(dataclasses.replace(interface, speed_mbps=speeds.get(interface.name))
                       for interface in parse_ip_addr_json(text("interfaces")))
    for interface in interfaces:
        checked_interface(interface.name, (*interface.ipv4, *interface.ipv6))
    gpu, accelerators = read_gpus(sections)
    return Facts(
        hostname=hostname,
        fqdn=checked_name("fqdn", text("fqdn") or hostname),
        os_id=checked_text("os id", os_release.get("ID", "linux"), OS_WORD),
        os_version=checked_text("os version", os_release.get("VERSION_ID", ""), OS_WORD),
        os_name=checked_text("os name", os_release.get("PRETTY_NAME", "Linux"), OS_NAME),
        kernel=checked_text("kernel", text("kernel"), KERNEL),
        arch=checked_text("arch", text("arch"), ARCH),
        python_path=(checked_text("python path", python_lines[0], PYTHON_PATH)
                     if python_lines else None),
        python_version=(checked_text("python version",
                                     python_lines[1].removeprefix("Python "), PYTHON_VERSION)
                        if len(python_lines) > 1 else None),
        interfaces=interfaces,
        ephemeral_port_range=parse_port_range(text("ephemeral_ports")),
        ufw_installed=bool(ufw_lines),
        ufw_active="ENABLED=yes" in ufw_lines and "chains=yes" in ufw_lines,
        systemd=text("systemd") == "yes",
        package_manager=(checked_text("package manager", text("package_manager").rsplit(
            "/", 1)[-1], TOOL) if text("package_manager") else None),
        gpu=gpu,
        accelerators=accelerators,
        firewalld_active=text("firewalld") == "running",
        ufw_rules_in_var_lib="rules=/var/lib/ufw" in ufw_lines,
        pythons=parse_pythons(text("pythons")),
        rdma=read_rdma(sections),
        hostname_in_dns=checked_answers(text("names_dns"), hostname),
    )


def parse_pythons(text: str) -> tuple[tuple[str, str], ...]:
    """``PATH Python X.Y.Z`` lines: (path, version) of each interpreter that ran; a line of
    anything else (one that failed to run) is left out.

    >>> parse_pythons("/usr/bin/python3.12 Python 3.12.1\\n/usr/bin/python3.9 error\\n")
    (('/usr/bin/python3.12', '3.12.1'),)
    """
    found = []
    for line in text.splitlines():
        path, _, said = line.partition(" Python ")
        if VERSIONED_PYTHON.regex.fullmatch(path) and PYTHON_VERSION.regex.fullmatch(said):
            found.append((path, said))
    return tuple(found)


def parse_os_release(text: str) -> dict[str, str]:
    values: dict[str, str] = {}
    for line in text.split("\n"):  # lines end at a newline only, not at U+2028
        key, sep, value = line.partition("=")
        if sep:
            values[key.strip()] = value.strip().strip('"').strip("'")
    return values


def parse_ip_addr_json(text: str) -> tuple[Interface, ...]:
    """Parse ``ip -j addr show``; ValueError when the node's ``ip`` printed no JSON.

    Entries without a name or an address are skipped: iproute2 4.20 (Debian 10) starts the
    array with an empty object (i3status-rust issues 812/825).
    """
    if not text.strip():  # every Linux node has lo: nothing printed means ip failed
        raise ValueError("`ip -j addr show` printed nothing: install iproute2 4.13 or later on "
                         "the node (before it, e.g. CentOS 7's 4.11, ip has no JSON output)")
    try:
        links = loads(text, what="its JSON")  # deep nesting, huge numbers: bounded
    except ValueError as error:
        raise ValueError("`ip -j addr show` printed no valid JSON "
                         f"({str(error)[:80] or type(error).__name__})") from None
    if not isinstance(links, list):
        raise ValueError("`ip -j addr show` printed JSON that is not a list of interfaces")
    interfaces = []
    for link in links:
        if not isinstance(link, dict) or not isinstance(link.get("ifname"), str):
            continue
        infos = link.get("addr_info")
        flags = link.get("flags")
        addresses = [(info.get("family"), f"{info['local']}/{info['prefixlen']}")
                     for info in (infos if isinstance(infos, list) else [])
                     if isinstance(info, dict) and isinstance(info.get("local"), str)
                     and type(info.get("prefixlen")) is int]  # not True, 24.0 or "24; x"
        interfaces.append(Interface(
            name=link["ifname"],
            up=isinstance(flags, list) and "UP" in flags,
            ipv4=tuple(address for family, address in addresses if family == "inet"),
            ipv6=tuple(address for family, address in addresses if family == "inet6"),
        ))
    return tuple(interfaces)


def parse_link_speeds(text: str) -> dict[str, int]:
    """``NAME MBPS`` lines as /sys/class/net/NAME/speed gives them: a speed the kernel does not
    know (-1, or 2**32-1 from older drivers) or past 10 Tb/s is left out, as is a line of
    anything else (the node's words are not trusted).

    >>> parse_link_speeds("eth0 -1\\nib0 200000\\nbond0 4294967295\\nens5 25000\\nx y\\n")
    {'ib0': 200000, 'ens5': 25000}
    """
    speeds = {}
    for line in text.splitlines():
        name, _, speed = line.partition(" ")
        if speed.isdigit() and 0 < int(speed) <= 10_000_000:
            speeds[name] = int(speed)
    return speeds


def parse_port_range(text: str) -> tuple[int, int]:
    """Parse /proc/sys/net/ipv4/ip_local_port_range ("32768\\t60999"): two ports, the first
    not above the second, as the kernel takes them (ipv4_local_port_range); the firewall opens
    this range, so nothing else passes.

    >>> parse_port_range("61000 32768")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: the node's ephemeral port range '61000 32768' is not valid here (expected ...
    """
    parts = text.split()
    if (len(parts) != 2 or not all(PORT.regex.fullmatch(part) for part in parts)
            or not 1 <= int(parts[0]) <= int(parts[1]) <= 65535):
        raise ValueError(f"the node's ephemeral port range {text[:80]!r} is not valid here "
                         "(expected two ports from 1 to 65535, the first not above the second, "
                         "as /proc/sys/net/ipv4/ip_local_port_range has them, e.g. '32768 60999')")
    return int(parts[0]), int(parts[1])
