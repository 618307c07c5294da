"""The firewall's drift corpus: a user's deny above ours, ufw disabled, our rule deleted. Each
is named (node, item, cause), what verify printed is run as printed, verify passes, and the
subnet reaches the node's data ports again (a listener on the node, a peer connecting)."""

from __future__ import annotations

from pathlib import Path

import pytest

from nodeprov.testbed.cluster import Testbed
from tests.checks.drift.printed import clean, named, reaches, run_printed, verify

pytestmark = pytest.mark.integration
Network = tuple[Testbed, Path]


def ephemeral(bed: Testbed, node: str) -> tuple[int, int]:
    low, high = bed.exec(node, "cat", "/proc/sys/net/ipv4/ip_local_port_range").stdout.split()
    return int(low), int(high)


def test_a_deny_rule_above_ours_is_named_and_removed_by_hand(network: Network) -> None:
    bed, playbook = network
    high = ephemeral(bed, "node1")[1]
    # one peer, as a quick fix would: the whole subnet would shut out this machine's SSH too
    # (it is in the subnet), and a deny of exactly our rule's traffic replaces ours in ufw
    peer = bed.address("node2")
    bed.exec("node1", "ufw", "insert", "1", "deny", "from", peer, check=True)
    assert not reaches(bed, "node2", "node1", high - 5)  # the drift is real

    code, lines = verify(bed, playbook)
    line = named(lines, "node1", "firewall", f"by hand: ufw rule '[ 1] Anywhere DENY IN {peer}' "
                 f"comes before ours and stops 'allow from any to any port 22 proto tcp', "
                 f"'allow from {bed.subnet} to any port ")
    assert code == 1 and line.endswith(
        f": remove it: ufw delete deny from {peer}/32 to 0.0.0.0/0"), line
    assert "repair:" not in line  # no apply: it would change nothing
    # the rule as ufw itself numbers it
    shown = [" ".join(row.split()) for row in
             bed.exec("node1", "ufw", "status", "numbered", check=True).stdout.splitlines()]
    assert f"[ 1] Anywhere DENY IN {peer}" in shown

    run_printed(bed, line)
    clean(bed, playbook)
    assert reaches(bed, "node2", "node1", high - 6)  # another port: the listener may linger


def test_ufw_disabled_is_enabled_by_the_printed_repair(network: Network) -> None:
    bed, playbook = network
    bed.exec("node2", "ufw", "disable", check=True)
    code, lines = verify(bed, playbook)
    line = named(lines, "node2", "firewall", "plan: enable ufw")
    assert code == 1 and line.endswith(" --limit node2 --tags firewall"), line

    run_printed(bed, line)
    clean(bed, playbook)
    assert bed.exec("node2", "ufw", "status", check=True).stdout.startswith("Status: active")
    assert reaches(bed, "node3", "node2", ephemeral(bed, "node2")[0] + 5)
    assert not reaches(bed, "node3", "node2", 9)  # active: what is not opened stays shut


def test_our_rule_deleted_is_named_by_its_rule_and_added_back(network: Network) -> None:
    bed, playbook = network
    low, high = ephemeral(bed, "node3")
    bed.exec("node3", "ufw", "delete", "allow", "proto", "tcp", "from", bed.subnet, "to", "any",
             "port", f"{low}:{high}", check=True)
    assert not reaches(bed, "node1", "node3", low + 5)

    code, lines = verify(bed, playbook)
    line = named(lines, "node3", "firewall", f"plan: add ufw rule(s): allow from {bed.subnet} "
                 f"to any port {low}:{high} proto tcp; repair: nodeprov apply ")
    assert code == 1

    run_printed(bed, line)
    clean(bed, playbook)
    assert reaches(bed, "node1", "node3", low + 6)
