"""The sysctl.d drift corpus: IPv6 turned back on, the ephemeral range moved, each by a later
sysctl file as packages and cloud images ship them. Named with file:line, run as printed, verify
passes, and the kernel keeps the wanted value after a simulated boot."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from nodeprov.testbed.cluster import Testbed
from tests.checks.drift.printed import (
    applied,
    boot,
    clean,
    kernel,
    named,
    reaches,
    run_printed,
    verify,
)

pytestmark = pytest.mark.integration
Network = tuple[Testbed, Path]
IPV6_ON = "/etc/sysctl.d/99-zzz-cloud-ipv6.conf"
PORTS = "/etc/sysctl.d/99-zz-ports.conf"
RANGE = "net.ipv4.ip_local_port_range"


# a line's end as printf writes it, and what the printed pattern has for a CRLF's "\r"
ENDS = {"LF": ("\\n", ""), "CRLF": ("\\r\\n", ".")}


@pytest.mark.parametrize("end", ENDS)
def test_ipv6_back_on_by_a_later_file_is_named_and_stays_off_after_boot(
        network: Network, end: str) -> None:
    bed, playbook = network
    eol, cr = ENDS[end]
    bed.exec("node2", "sh", "-c", f"printf '# a cloud image{eol}net.ipv6.conf.all.disable_ipv6 = "
             f"0{eol}' > {IPV6_ON}", check=True)
    boot(bed, "node2")
    assert kernel(bed, "node2", "net.ipv6.conf.all.disable_ipv6") == "0"  # the drift is real

    code, lines = verify(bed, playbook)
    # the kernel copies "all" to "default" too, so both are set again
    line = named(lines, "node2", "ipv6", "plan: disable IPv6 now: net.ipv6.conf.all."
                 "disable_ipv6=1, net.ipv6.conf.default.disable_ipv6=1; by hand: "
                 f"{IPV6_ON}:2 'net.ipv6.conf.all.disable_ipv6 = 0' is applied after "
                 "/etc/sysctl.d/99-zz-nodeprov-ipv6.conf at boot, so IPv6 would not stay as "
                 "asked: comment it out: sed -i "
                 f"'/^net\\.ipv6\\.conf\\.all\\.disable_ipv6 = 0{cr}$/s/^/# /' {IPV6_ON}; "
                 "repair: ")
    assert code == 1 and line.endswith(" --limit node2 --tags ipv6"), line

    run_printed(bed, line)
    clean(bed, playbook)
    boot(bed, "node2")
    assert kernel(bed, "node2", "net.ipv6.conf.all.disable_ipv6") == "1"
    clean(bed, playbook)


@pytest.fixture()
def ports_file(network: Network) -> Iterator[Testbed]:
    """node3's own range file, removed after, and the range and rules as they were."""
    bed, playbook = network
    was = kernel(bed, "node3", RANGE)
    yield bed
    bed.exec("node3", "sh", "-c", f"rm -f {PORTS} && sysctl -qw '{RANGE}={was}'", check=True)
    applied(bed, playbook, "--limit", "node3", "--tags", "firewall")  # the rules for that range


def test_the_range_moved_by_a_later_file_is_named_then_opened(
        network: Network, ports_file: Testbed) -> None:
    bed, playbook = network
    bed.exec("node3", "sh", "-c", f"echo '{RANGE} = 40000 50000' > {PORTS}", check=True)
    low, high = kernel(bed, "node3", RANGE).split()

    code, lines = verify(bed, playbook)
    line = named(lines, "node3", "firewall", f"by hand: {PORTS}:1 sets {RANGE} = 40000 50000, "
                 f"the range the next boot gives the kernel, which has {low}-{high} now, what "
                 f"the rules open: apply it now, then repair again: sysctl -w '{RANGE}=40000 "
                 "50000'")
    assert code == 1 and "repair:" not in line, line
    run_printed(bed, line)

    code, lines = verify(bed, playbook)
    line = named(lines, "node3", "firewall", f"plan: add ufw rule(s): allow from {bed.subnet} to "
                 f"any port 40000:50000 proto tcp; remove stale nodeprov ufw rule(s): allow from "
                 f"{bed.subnet} to any port {low}:{high} proto tcp; repair: ")
    assert code == 1
    run_printed(bed, line)
    clean(bed, playbook)
    boot(bed, "node3")
    assert kernel(bed, "node3", RANGE) == "40000 50000"
    assert reaches(bed, "node1", "node3", 45000)
    clean(bed, playbook)
