import json
import subprocess
from ipaddress import IPv4Network

import pytest

from nodeprov.errors import EnvironmentProblem, InputError
from nodeprov.testbed import addressing
from nodeprov.testbed.addressing import (
    chosen_subnet,
    free_subnet,
    parse_routes,
    plan_addresses,
)

# `ip -j -4 route show table all` on a Debian machine with one testbed up.
ROUTES = json.dumps([
    {"dst": "default", "gateway": "192.0.2.1", "dev": "eth0"},
    {"dst": "192.0.2.0/24", "dev": "eth0", "protocol": "kernel", "scope": "link"},
    {"dst": "10.245.9.0/24", "dev": "nt3efa5cbr", "protocol": "kernel", "scope": "link"},
    {"type": "local", "dst": "127.0.0.0/8", "dev": "lo", "table": "local"},
    {"type": "local", "dst": "127.0.0.1", "dev": "lo", "table": "local"},
    {"type": "broadcast", "dst": "192.0.2.255", "dev": "eth0", "table": "local"},
])


def test_parse_routes_keeps_every_destination_but_the_default() -> None:
    assert parse_routes(ROUTES) == [IPv4Network("192.0.2.0/24"), IPv4Network("10.245.9.0/24"),
                                    IPv4Network("127.0.0.0/8"), IPv4Network("127.0.0.1/32"),
                                    IPv4Network("192.0.2.255/32")]


def test_free_subnet_is_a_slash_24_in_ten_slash_8_and_stable_per_seed() -> None:
    subnet = free_subnet("/srv/tb", [])
    assert subnet.prefixlen == 24 and subnet.subnet_of(IPv4Network("10.0.0.0/8"))
    assert free_subnet("/srv/tb", []) == subnet
    assert free_subnet("/srv/other", []) != subnet


def test_free_subnet_skips_taken_ones() -> None:
    first = free_subnet("/srv/tb", [])
    taken = [first, IPv4Network(f"{first.network_address + 256}/24")]
    chosen = free_subnet("/srv/tb", taken)
    assert not any(chosen.overlaps(other) for other in taken)
    # A route covering all of 10.0.0.0/8 leaves nothing.
    with pytest.raises(EnvironmentProblem, match="no free /24"):
        free_subnet("/srv/tb", [IPv4Network("10.0.0.0/8")])


def test_chosen_subnet_refuses_overlaps_ipv6_and_tiny_nets() -> None:
    taken = parse_routes(ROUTES)
    assert chosen_subnet("10.77.3.0/24", taken) == IPv4Network("10.77.3.0/24")
    with pytest.raises(InputError, match="overlaps 10.245.9.0/24"):
        chosen_subnet("10.245.0.0/16", taken)
    with pytest.raises(InputError, match="IPv4 network of at most /29"):
        chosen_subnet("fd00:1::/64", taken)
    with pytest.raises(InputError, match="at most /29"):
        chosen_subnet("10.1.1.0/30", taken)
    with pytest.raises(InputError, match="--subnet"):
        chosen_subnet("10.1.1.1/24", taken)  # host bits set


def test_plan_addresses_gives_the_bridge_the_first_address() -> None:
    bridge, nodes = plan_addresses(IPv4Network("10.77.3.0/24"), ["node1", "node2"])
    assert str(bridge) == "10.77.3.1/24"
    assert {name: str(address) for name, address in nodes.items()} == {
        "node1": "10.77.3.2/24", "node2": "10.77.3.3/24"}


def test_plan_addresses_refuses_more_nodes_than_the_subnet_holds() -> None:
    plan_addresses(IPv4Network("10.0.0.0/29"), ["a", "b", "c", "d", "e"])  # .1 bridge, .2-.6
    with pytest.raises(InputError, match="room for 5 nodes, not 6"):
        plan_addresses(IPv4Network("10.0.0.0/29"), ["a", "b", "c", "d", "e", "f"])


def test_routed_subnets_reads_the_machine(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[list[str]] = []

    def run(argv: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
        calls.append(argv)
        return subprocess.CompletedProcess(argv, 0, stdout=ROUTES)

    monkeypatch.setattr(subprocess, "run", run)
    assert IPv4Network("10.245.9.0/24") in addressing.routed_subnets()
    assert calls == [["ip", "-j", "-4", "route", "show", "table", "all"]]
