"""A fresh node is isolated from the machine and from its peers (read-mostly checks)."""

import subprocess
from collections.abc import Iterator
from ipaddress import ip_address, ip_network
from pathlib import Path

import pytest

from nodeprov.testbed.cluster import Testbed
from nodeprov.testbed.lifecycle import temporary

pytestmark = pytest.mark.integration

CLEAN_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


SHARED = Path(__file__).parent  # a folder of this machine's a test shares with the nodes


@pytest.fixture(scope="module")
def bed() -> Iterator[Testbed]:
    """Nodes no other test touches, so their files are as `up` made them."""
    with temporary(nodes=2, outsider=True, shared=[str(SHARED)]) as made:
        yield made


def machine(*argv: str) -> str:
    return subprocess.run(argv, capture_output=True, text=True, check=True).stdout


def test_each_node_answers_ssh_with_its_own_name_and_address(bed: Testbed) -> None:
    for name in bed.nodes:
        result = bed.ssh(name, "sh", "-c", "hostname; ip -4 -o addr show dev eth0")
        assert result.returncode == 0, result.stderr
        hostname, address_line = result.stdout.splitlines()
        assert hostname == name
        assert f" {bed.address(name)}/24 " in address_line


def test_a_node_has_debians_stock_hosts_file(bed: Testbed) -> None:
    hosts = bed.ssh("node1", "cat", "/etc/hosts").stdout
    entries = [line.split() for line in hosts.splitlines() if line and not line.startswith("#")]
    assert ["127.0.0.1", "localhost"] in entries and ["127.0.1.1", "node1"] in entries
    assert all(entry[0] in ("127.0.0.1", "127.0.1.1", "::1", "ff02::1", "ff02::2")
               for entry in entries)


def test_ssh_sessions_get_a_clean_path_and_debians_python(bed: Testbed) -> None:
    result = bed.ssh("node1", "sh", "-c", 'echo "$PATH"; command -v python3; ls -A ~')
    path, python, *home = result.stdout.splitlines()
    assert path == CLEAN_PATH
    assert python == "/usr/bin/python3"
    assert ".pyenv" not in home and {".bashrc", ".profile", ".ssh"} <= set(home)


def test_a_venv_made_in_a_node_stays_in_that_node(bed: Testbed) -> None:
    venv = Path("/opt/nodeprov-testbed-venv")
    made = bed.ssh("node1", "python3", "-m", "venv", str(venv))
    assert made.returncode == 0, made.stderr
    assert bed.ssh("node1", f"{venv}/bin/python", "-c", "import sys; print(sys.prefix)"
                   ).stdout.strip() == str(venv)
    assert not venv.exists()
    assert bed.exec("node2", "test", "-e", str(venv)).returncode == 1


def test_kernel_sysctls_are_read_only_in_a_node(bed: Testbed) -> None:
    before = Path("/proc/sys/kernel/pid_max").read_text()
    refused = bed.exec("node1", "sysctl", "-w", f"kernel.pid_max={int(before) - 1}")
    assert refused.returncode != 0
    assert Path("/proc/sys/kernel/pid_max").read_text() == before


def test_ipv6_toggling_in_a_node_is_visible_there_and_nowhere_else(bed: Testbed) -> None:
    key = "/proc/sys/net/ipv6/conf/all/disable_ipv6"
    machine_before = (Path(key).read_text(), machine("ip", "-6", "addr", "show", "dev", "lo"))
    assert "::1" in bed.exec("node1", "ip", "-6", "addr", "show", "dev", "lo").stdout
    try:
        assert bed.exec("node1", "sysctl", "-w", "net.ipv6.conf.all.disable_ipv6=1"
                        ).returncode == 0
        assert "::1" not in bed.exec("node1", "ip", "-6", "addr", "show", "dev", "lo").stdout
        assert bed.exec("node2", "cat", key).stdout == "0\n"
        assert (Path(key).read_text(), machine("ip", "-6", "addr", "show", "dev", "lo")
                ) == machine_before
    finally:
        bed.exec("node1", "sysctl", "-w", "net.ipv6.conf.all.disable_ipv6=0", check=True)


def test_the_outsider_reaches_a_node_before_any_firewall(bed: Testbed) -> None:
    node = bed.address("node1")
    outsider = bed.address("outsider")
    assert ip_address(outsider) not in ip_network(bed.subnet)
    ping = bed.exec("outsider", "ping", "-c", "1", "-W", "2", node)
    assert ping.returncode == 0, ping.stdout + ping.stderr
    connect = bed.exec("outsider", "python3", "-c",
                       "import socket, sys; s = socket.create_connection((sys.argv[1], 22), 3); "
                       "print(s.recv(4).decode(), s.getsockname()[0])", node)
    assert connect.stdout.split() == ["SSH-", outsider]


def test_each_node_has_its_own_processes_tmp_and_interfaces(bed: Testbed) -> None:
    processes = bed.exec("node1", "ps", "-e", "-o", "pid=,comm=").stdout.split("\n")
    assert processes[0].split() == ["1", "sshd"]
    assert len(processes) < 10  # sshd, the ps, and little else: not the machine's processes
    bed.exec("node1", "sh", "-c", "echo mine > /tmp/nodeprov-testbed-probe", check=True)
    assert bed.ssh("node1", "cat", "/tmp/nodeprov-testbed-probe").stdout == "mine\n"
    assert bed.exec("node2", "test", "-e", "/tmp/nodeprov-testbed-probe").returncode == 1
    assert not Path("/tmp/nodeprov-testbed-probe").exists()
    assert bed.exec("node1", "ls", "/sys/class/net").stdout.split() == ["eth0", "lo"]


def test_name_lookups_fail_fast_inside_a_node(bed: Testbed) -> None:
    lookup = bed.exec("node1", "getent", "hosts", "example.com", timeout=5)
    assert lookup.returncode == 2  # not found, answered locally


def test_a_node_shares_nothing_writable_with_this_machine(bed: Testbed, tmp_path: Path) -> None:
    """Issue #22 point 8: a node saw this machine's /srv, /home, /work..., so a file one rank
    wrote there showed on every node, and `--sync /srv/train` found everything already there."""
    top = set(bed.exec("node1", "ls", "-A", "/", check=True).stdout.split())
    top.discard(SHARED.parts[1])  # the way to the shared folder: only that one is in it
    assert bed.exec("node1", "ls", "-A", str(SHARED.parent)).stdout.split() == [SHARED.name]
    assert top <= {"bin", "sbin", "lib", "lib32", "lib64", "libx32", "usr", "etc", "var", "root",
                   "opt", "home", "srv", "mnt", "media", "tmp", "run", "proc", "sys", "dev"}
    mine = Path("/srv") / f"nodeprov-isolation-{tmp_path.name}"
    mine.mkdir()
    try:
        assert bed.exec("node2", "ls", "-A", "/srv", "/home", "/opt", "/mnt", "/media",
                        check=True).stdout.split() == [
            "/home:", "/media:", "/mnt:", "/opt:", "/srv:"]  # empty, though this machine's are not
        assert bed.exec("node2", "test", "-e", str(mine)).returncode == 1
        assert bed.exec("node2", "test", "-e", str(bed.dir)).returncode == 1  # nor its keys
        bed.exec("node2", "sh", "-c", "echo rank0 > /srv/checkpoint", check=True)
        assert bed.exec("node1", "test", "-e", "/srv/checkpoint").returncode == 1
        assert not Path("/srv/checkpoint").exists()
    finally:
        mine.rmdir()


def test_a_shared_folder_is_seen_read_only_at_its_path(bed: Testbed) -> None:
    listed = bed.exec("node2", "ls", str(SHARED), check=True).stdout.split()
    assert Path(__file__).name in listed
    refused = bed.exec("node2", "touch", str(SHARED / "written-by-a-node"))
    assert refused.returncode != 0 and "Read-only file system" in refused.stderr
    assert not (SHARED / "written-by-a-node").exists()
