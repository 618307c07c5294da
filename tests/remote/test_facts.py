"""Facts parsing on recorded output of facts.sh."""

from __future__ import annotations

import os
import platform
import re
import shutil
import socket
import subprocess
from pathlib import Path

import pytest

from nodeprov.remote.facts import (
    FACTS_SCRIPT,
    parse_facts,
    parse_ip_addr_json,
    parse_port_range,
    split_sections,
)

DATA = Path(__file__).parent.parent / "data" / "facts"


def test_recorded_debian_vm() -> None:
    sections = split_sections((DATA / "debian12-vm.txt").read_text(), "TOKEN123")
    facts = parse_facts(sections)
    assert facts.hostname == "vm" and facts.fqdn == "vm"
    assert facts.os_id == "debian" and facts.os_version == "12"
    assert facts.arch == "x86_64"
    assert facts.ephemeral_port_range == (32768, 60999)
    assert facts.ufw_installed and not facts.ufw_active
    assert facts.package_manager == "apt-get"
    assert facts.gpu is None
    assert facts.python_version == "3.11.7"
    eth0 = next(i for i in facts.interfaces if i.name == "eth0")
    assert eth0.ipv4 == ("192.0.2.2/24",) and eth0.up
    assert [i.name for i in facts.interfaces_in("192.0.2.0/24")] == ["eth0"]
    assert facts.summary()["ufw"] == "inactive"


def test_sections_keep_content_exactly() -> None:
    stdout = "\n@@T a\nline1\nno newline at end\n@@T b\n\n\n@@T end\n"
    assert split_sections(stdout, "T") == {"a": "line1\nno newline at end", "b": "\n",
                                           "end": ""}


def test_ip_json_with_ipv6_disabled_and_port_range() -> None:
    text = ('[{"ifname":"lo","flags":["LOOPBACK","UP"],"addr_info":[{"family":"inet",'
            '"local":"127.0.0.1","prefixlen":8}]},{"ifname":"ens5","flags":["BROADCAST"],'
            '"addr_info":[{"family":"inet","local":"10.0.0.11","prefixlen":24}]}]')
    lo, ens5 = parse_ip_addr_json(text)
    assert lo.up and not ens5.up and ens5.ipv6 == ()
    assert ens5.addresses_in("10.0.0.0/24") == ["10.0.0.11/24"]
    assert parse_port_range("1024\t65000\n") == (1024, 65000)


@pytest.mark.parametrize("said", ["61000 32768", "0 65535", "32768 65536", "1 2 3", "32768",
                                  "", "32768 60999x", "٣٢٧٦٨ 60999"])
def test_a_port_range_the_kernel_would_refuse_is_refused_naming_it(said: str) -> None:
    # the firewall opens this range to the subnet: inverted, 0, past 65535 or not two numbers
    # was (61000, 32768), (0, 65535) or "too many values to unpack (expected 2)"
    with pytest.raises(ValueError, match=re.escape(
            f"the node's ephemeral port range {said!r} is not valid here (expected two ports")):
        parse_port_range(said)
    assert parse_port_range("40000 40000") == (40000, 40000)  # one port: the kernel takes it


def test_ip_json_of_iproute2_4_20_starts_with_an_empty_object() -> None:
    # iproute2 4.20 (Debian 10) prints an empty object first (i3status-rust issues 812 and
    # 825, where the bug was bisected to 4.20, fixed in 5.0); no verbatim recording was
    # found, so the shape is the one those reports describe, on the recorded VM's interfaces.
    recorded = split_sections((DATA / "debian12-vm.txt").read_text(), "TOKEN123")["interfaces"]
    with_bug = "[{}," + recorded.strip()[1:]
    assert parse_ip_addr_json(with_bug) == parse_ip_addr_json(recorded)
    # and an address entry without the fields (as a hostile node may send) is skipped
    assert parse_ip_addr_json('[{"ifname": "eth0", "addr_info": [{}, {"family": "inet"}]}]')[
        0].ipv4 == ()


def test_an_ip_without_json_output_is_named() -> None:
    # CentOS 7's iproute 4.11 rejects -j (on stderr, which facts.sh drops): the section is empty
    with pytest.raises(ValueError, match="install iproute2 4.13 or later"):
        parse_ip_addr_json("")
    with pytest.raises(ValueError, match="not a list of interfaces"):
        parse_ip_addr_json('{"ifname": "eth0"}')


@pytest.mark.parametrize(("said", "expected"), [
    ('[{"ifname": "eth0", "addr_info": 5}]', ()),  # a TypeError took every node's run down
    ('[{"ifname": "eth0", "flags": "UP", "addr_info": [{"family": "inet", "local": ["10.0.0.1"],'
     ' "prefixlen": 24}, {"local": "10.0.0.2", "prefixlen": 24}]}]', ()),
    ('[{"ifname": "eth0", "addr_info": [{"family": "inet", "local": "10.0.0.1", "prefixlen": '
     'true}, {"family": "inet", "local": "10.0.0.1", "prefixlen": 24}]}]', ("10.0.0.1/24",)),
])
def test_ip_json_of_unexpected_types_is_read_as_no_address(said: str,
                                                            expected: tuple[str, ...]) -> None:
    eth0, = parse_ip_addr_json(said)
    assert eth0.ipv4 == expected and not eth0.up


@pytest.mark.parametrize("said", ['[{"ifname":', "[" * 100_000 + "]" * 100_000, "\x00[]"])
def test_ip_json_that_is_no_json_is_named(said: str) -> None:
    # a JSONDecodeError's bare words, or a RecursionError that stopped every node's run
    with pytest.raises(ValueError, match=r"`ip -j addr show` printed no valid JSON \("):
        parse_ip_addr_json(said)


@pytest.mark.parametrize("name", ["Debian \u202egnikcah", "Ubuntu \u2066x\u2069 24.04",
                                  "Debian \u200fgnikcah", "Ubuntu \u061c24.04"])
def test_an_os_name_with_a_bidirectional_control_is_refused(name: str) -> None:
    # it reordered the os column of `nodeprov facts` and the HTML report after it
    sections = {"ephemeral_ports": "32768 60999", "interfaces": '[{"ifname": "lo"}]',
                "os_release": f'PRETTY_NAME="{name}"\nID=debian'}
    with pytest.raises(ValueError, match=re.escape(f"the node's os name {name!r} is not valid "
                                                   "here (expected up to 128 printable")):
        parse_facts(sections)
    sections["os_release"] = 'PRETTY_NAME="Debian GNU/Linux 12 (bookworm) – ελληνικά"'
    assert parse_facts(sections).os_name == "Debian GNU/Linux 12 (bookworm) – ελληνικά"


def test_a_hostname_past_253_characters_is_refused_in_one_short_line() -> None:
    # the message quoted all 300 characters (a megabyte from a hostile node)
    sections = {"ephemeral_ports": "32768 60999", "interfaces": '[{"ifname": "lo"}]',
                "hostname": "a" * 300}
    with pytest.raises(ValueError) as raised:
        parse_facts(sections)
    assert str(raised.value) == (f"the node's hostname {'a' * 80!r}... is 300 characters; a "
                                 "host name has at most 253")


def test_a_running_firewalld_is_a_fact() -> None:
    sections = {"ephemeral_ports": "32768 60999", "interfaces": '[{"ifname": "lo"}]'}
    assert not parse_facts(sections).firewalld_active
    facts = parse_facts({**sections, "firewalld": "running\n"})
    assert facts.firewalld_active and facts.summary()["firewalld"] == "active"
    # Fedora's and EPEL's ufw layout
    ufw = "/usr/sbin/ufw\nENABLED=yes\nchains=yes\nrules=/var/lib/ufw\n"
    assert parse_facts({**sections, "ufw": ufw}).ufw_rules_in_var_lib
    assert not parse_facts({**sections, "ufw": "/usr/sbin/ufw\nENABLED=no\n"}).ufw_rules_in_var_lib


def test_versioned_pythons_are_read_and_checked() -> None:
    sections = {"ephemeral_ports": "32768 60999", "interfaces": '[{"ifname": "lo"}]',
                "pythons": "/usr/bin/python3.11 Python 3.11.9\n"
                           "/usr/local/bin/python3.13 Python 3.13.0rc1\n"
                           "/usr/bin/python3.10 /usr/bin/python3.10: error while loading\n"}
    # one that does not run is left out, as is anything not a path and a version
    assert parse_facts(sections).pythons == (("/usr/bin/python3.11", "3.11.9"),
                                             ("/usr/local/bin/python3.13", "3.13.0rc1"))
    for hostile in ("/usr/bin/python3.11; reboot Python 3.11.9", "/x/python3.11 Python 3.11 $(id)"):
        assert parse_facts({**sections, "pythons": hostile}).pythons == ()


def test_python_version_as_python3_dash_dash_version_prints_it() -> None:
    sections = {"python": "/usr/bin/python3\nPython 3.11.2\n", "ephemeral_ports": "32768 60999",
                "interfaces": '[{"ifname": "lo"}]'}
    facts = parse_facts(sections)
    assert (facts.python_path, facts.python_version) == ("/usr/bin/python3", "3.11.2")


def test_the_script_reads_this_machine_as_its_tools_do() -> None:
    """facts.sh reads small files with shell builtins: the same values as the tools."""
    done = subprocess.run(["sh", "-c", FACTS_SCRIPT, "facts", "T"], capture_output=True,
                          text=True, timeout=60, check=True)
    facts = parse_facts(split_sections(done.stdout, "T"))
    assert facts.hostname == socket.gethostname()
    assert (facts.kernel, facts.arch) == (platform.release(), platform.machine())
    assert facts.os_name == platform.freedesktop_os_release()["PRETTY_NAME"]
    assert facts.ephemeral_port_range == parse_port_range(
        Path("/proc/sys/net/ipv4/ip_local_port_range").read_text())
    python3 = shutil.which("python3")
    assert {path for path, _ in facts.pythons} == {
        str(path) for folder in ("/usr/bin", "/usr/local/bin")
        for path in Path(folder).glob("python3.*")
        if re.fullmatch(r"python3\.\d{1,2}", path.name) and os.access(path, os.X_OK)
        and not (python3 and os.path.samefile(path, python3))}  # python3 itself is not listed
    # every PCI function, as sysfs lists it (the GPU detection reads these lines)
    pci = split_sections(done.stdout, "T")["pci_devices"].split()
    assert pci[::4] == sorted(path.name for path in Path("/sys/bus/pci/devices").iterdir())


def test_each_interface_has_the_speed_its_kernel_reports() -> None:
    sections = split_sections((DATA / "debian12-vm.txt").read_text(), "TOKEN123")
    # what facts.sh's link_speeds prints: a virtio NIC that knows none says -1
    facts = parse_facts({**sections, "link_speeds": "eth0 25000\nlo -1\n"})
    assert {i.name: i.speed_mbps for i in facts.interfaces} == {
        "lo": None, "eth0": 25000, "ifb0": None, "ifb1": None}
    assert all(i.speed_mbps is None for i in parse_facts(sections).interfaces)  # older nodeprov


# `getent ahosts NAME` in the layout Debian 12's glibc 2.36 getent prints (recorded here for
# localhost; the addresses and name are changed): a line per address and socket type, the
# name on the first only
GETENT_AHOSTS = ("10.9.9.9        STREAM mirror\n10.9.9.9        DGRAM  \n10.9.9.9        RAW    \n"
                 "fd00::9         STREAM \nfd00::9         DGRAM  \nfd00::9         RAW    \n")


def test_the_hostname_is_asked_of_dns_alone(tmp_path: Path) -> None:
    """facts.sh asks `getent -s dns ahosts HOSTNAME` (/etc/hosts left out): what DNS says the
    node's name is, so a name of another machine is not listed at this node elsewhere."""
    getent = tmp_path / "getent"
    getent.write_text('#!/bin/sh\n[ "$*" = "-s dns ahosts $(cat /proc/sys/kernel/hostname)" ] '
                      f"|| exit 2\nprintf '%s' '{GETENT_AHOSTS}'\n")
    getent.chmod(0o755)
    done = subprocess.run(["sh", "-c", FACTS_SCRIPT, "facts", "T"], capture_output=True,
                          text=True, timeout=60, check=True,
                          env={**os.environ, "PATH": f"{tmp_path}:{os.environ['PATH']}"})
    assert parse_facts(split_sections(done.stdout, "T")).hostname_in_dns == ("10.9.9.9",
                                                                             "fd00::9")
