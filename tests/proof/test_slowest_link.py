"""The slowest node's link into the node subnet, which the sweep's chart draws: known only when
every node reports the speed of its one interface there."""

from __future__ import annotations

from pathlib import Path

from nodeprov.inventory import Host
from nodeprov.proof.prove import Link, slowest_link
from nodeprov.remote.facts import Facts, parse_facts, split_sections

RECORDED = Path(__file__).parents[1] / "data" / "facts" / "debian12-vm.txt"  # eth0 192.0.2.2/24


def node(speeds: str) -> Facts:
    sections = split_sections(RECORDED.read_text(), "TOKEN123")
    return parse_facts({**sections, "link_speeds": speeds})


HOSTS = [Host(name, name, name, vars={"node_subnet": "192.0.2.0/24"})
         for name in ("node1", "node2")]


def test_the_slowest_link_is_the_one_named() -> None:
    facts = {"node1": node("eth0 100000\n"), "node2": node("eth0 25000\n")}
    assert slowest_link(HOSTS, facts) == Link("node2", "eth0", 25000 * 1e6 / 8)
    assert slowest_link(HOSTS, facts).line() == (  # type: ignore[union-attr]
        "slowest link into the node subnet: node2 eth0, 25 Gb/s")


def test_a_node_that_does_not_say_leaves_it_unknown() -> None:
    facts = {"node1": node("eth0 100000\n"), "node2": node("eth0 -1\n")}
    assert slowest_link(HOSTS, facts) is None
    assert slowest_link(HOSTS, {"node1": node("eth0 100000\n")}) is None  # no facts of node2
