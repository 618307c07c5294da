"""The ephemeral range against the next boot's: a sysctl file moving it is a conflict naming
its line and the command that applies it now (recorded on real files by record.sh)."""

from __future__ import annotations

import dataclasses

from nodeprov.inventory import Host
from nodeprov.tasks.base import Context, parse_params
from nodeprov.tasks.firewall import FirewallParams, plan, ports
from tests.tasks.firewall.ufw_cases import FACTS, recorded

MOVED = ("/etc/sysctl.d/99-zz-ports.conf:1 sets net.ipv4.ip_local_port_range = 40000 50000, the "
         "range the next boot gives the kernel, which has 32768-60999 now, what the rules open: "
         "apply it now, then repair again: sysctl -w 'net.ipv4.ip_local_port_range=40000 50000'")


def range_plan(live: tuple[int, int]) -> tuple[tuple[str, ...], list[str]]:
    """The conflicts and change summaries of the recorded range-moved node, its range ``live``."""
    facts = dataclasses.replace(FACTS, ephemeral_port_range=live)
    result = plan(Context(Host("node1", "10.0.0.11", "10.0.0.11"), facts, {}),
                  parse_params(FirewallParams, {"subnet": "10.0.0.0/24"}),
                  recorded("range-moved"))
    return result.conflicts, [change.summary for change in result.changes]


def test_a_later_file_moving_the_range_is_a_conflict_until_the_kernel_has_that_range() -> None:
    assert range_plan((32768, 60999)) == ((MOVED,), [])
    # applied now, as printed: no conflict, and the rules follow the kernel's range
    assert range_plan((40000, 50000)) == ((), [
        "add ufw rule(s): allow from 10.0.0.0/24 to any port 40000:50000 proto tcp",
        "remove stale nodeprov ufw rule(s): allow from 10.0.0.0/24 to any port 32768:60999 "
        "proto tcp"])


def test_no_file_setting_the_range_or_one_agreeing_is_no_conflict() -> None:
    assert ports.boot_conflicts({}, (32768, 60999)) == []
    agreeing = {"/usr/lib/sysctl.d/50-ports.conf": "net.ipv4.ip_local_port_range=40000 50000\n",
                "/etc/sysctl.d/60-ports.conf": "net.ipv4.ip_local_port_range = 32768\t60999\n"}
    assert ports.boot_conflicts(agreeing, (32768, 60999)) == []
