"""Changes a provisioning run makes inside one node touch neither the machine nor other nodes."""

import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from nodeprov.testbed.cluster import Testbed

MakeTestbed = Callable[..., Testbed]

pytestmark = pytest.mark.integration

CONNECT = ("import socket, sys\n"
           "try:\n"
           "    print(socket.create_connection((sys.argv[1], 22), 2).recv(4).decode())\n"
           "except OSError as error:\n"
           "    print(type(error).__name__)\n")


def machine(*argv: str) -> str:
    return subprocess.run(argv, capture_output=True, text=True, check=True).stdout


def test_hosts_edits_and_ufw_stay_inside_their_node(make_testbed: MakeTestbed) -> None:
    bed = make_testbed(nodes=2, outsider=True)
    machine_before = (Path("/etc/hosts").read_text(), machine("iptables", "-S"),
                      machine("ip6tables", "-S"))
    node2_before = (bed.exec("node2", "cat", "/etc/hosts").stdout,
                    bed.exec("node2", "iptables", "-S").stdout)

    edit = bed.ssh("node1", "sh", "-c",
                   "sed -i 's/^127.0.1.1/# 127.0.1.1/' /etc/hosts && "
                   "echo '10.1.2.3 elsewhere' >> /etc/hosts")
    assert edit.returncode == 0, edit.stderr
    enabled = bed.ssh("node1", "ufw", "--force", "enable")
    assert enabled.returncode == 0, enabled.stdout + enabled.stderr

    node1_hosts = bed.exec("node1", "cat", "/etc/hosts").stdout
    assert "# 127.0.1.1\tnode1" in node1_hosts and "10.1.2.3 elsewhere" in node1_hosts
    assert "ufw-before-input" in bed.exec("node1", "iptables", "-S").stdout
    assert (Path("/etc/hosts").read_text(), machine("iptables", "-S"),
            machine("ip6tables", "-S")) == machine_before
    assert (bed.exec("node2", "cat", "/etc/hosts").stdout,
            bed.exec("node2", "iptables", "-S").stdout) == node2_before
    # ufw's default policy now drops the outsider at node1 only.
    outsider = [bed.exec("outsider", "python3", "-c", CONNECT, bed.address(name)).stdout.strip()
                for name in ("node1", "node2")]
    assert outsider == ["TimeoutError", "SSH-"]


def test_a_node_can_rename_a_directory_that_exists_only_below(make_testbed: MakeTestbed) -> None:
    bed = make_testbed(nodes=1)
    moved = bed.exec("node1", "mv", "/etc/ufw", "/etc/ufw.moved")
    assert moved.returncode == 0, moved.stderr
    assert bed.exec("node1", "test", "-d", "/etc/ufw.moved/applications.d").returncode == 0
    assert Path("/etc/ufw").is_dir() and not Path("/etc/ufw.moved").exists()
