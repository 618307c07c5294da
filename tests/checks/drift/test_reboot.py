"""A reboot, simulated on the test cluster (#32 item 7): the steps a boot takes for the network
items (systemd-sysctl's files, ufw's boot service loading its files, a fresh login's
environment) keep every one of them, checked by verify and by their effect on each node."""

from __future__ import annotations

from pathlib import Path

import pytest

from nodeprov.testbed.cluster import Testbed
from tests.checks.drift.printed import boot, clean, kernel, login_env, reaches, subnet_interface

pytestmark = pytest.mark.integration


def test_a_simulated_boot_keeps_every_network_item(network: tuple[Testbed, Path]) -> None:
    bed, playbook = network
    boot(bed)
    clean(bed, playbook)  # verify's checks include a new SSH session's environment
    for node in bed.nodes:
        assert kernel(bed, node, "net.ipv6.conf.all.disable_ipv6") == "1"
        status = bed.exec(node, "ufw", "status", check=True).stdout
        assert status.startswith("Status: active"), status
        interface = subnet_interface(bed, node)  # NCCL's "=": that name exactly
        assert login_env(bed, node, "NCCL_SOCKET_IFNAME") == f"={interface}"
        assert login_env(bed, node, "GLOO_SOCKET_IFNAME") == interface
    high = int(kernel(bed, "node1", "net.ipv4.ip_local_port_range").split()[1])
    assert reaches(bed, "node2", "node1", high - 9)
    assert not reaches(bed, "node2", "node1", 9)  # and nothing more
