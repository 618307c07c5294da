"""A node's address in node_subnet read from the node when the inventory names it by DNS name."""

from __future__ import annotations

import pytest

from nodeprov.engine.node_address import with_node_addresses
from nodeprov.inventory import Host
from nodeprov.remote.facts import Interface
from tests.tasks.kit import RECORDED, make_facts

# the recorded VM holds 192.0.2.2/24 on eth0 (and loopback, an ifb0 without addresses)
SUBNET = {"node_subnet": "192.0.2.0/24"}


def dns_host(name: str = "gpu01", subnet: str = "192.0.2.0/24") -> Host:
    return Host(name, f"{name}.example.org", "", vars={"node_subnet": subnet})


def test_the_one_address_in_the_subnet_is_the_node_address() -> None:
    hosts, problems = with_node_addresses([dns_host()], {"gpu01": RECORDED})
    assert problems == {}
    assert hosts[0].node_address == "192.0.2.2"
    assert hosts[0].address == "gpu01.example.org"  # SSH still goes where the inventory says


def test_an_ipv6_subnet_reads_the_ipv6_address() -> None:
    eth1 = Interface("eth1", True, (), ("fd00:1::7/64", "fe80::1/64"))
    facts = make_facts(interfaces=(*RECORDED.interfaces, eth1))
    hosts, problems = with_node_addresses([dns_host(subnet="fd00:1::/64")], {"gpu01": facts})
    assert (hosts[0].node_address, problems) == ("fd00:1::7", {})


def test_an_address_given_by_the_inventory_is_kept() -> None:
    given = Host("gpu01", "gpu01.example.org", "192.0.2.99", vars=SUBNET)
    assert with_node_addresses([given], {"gpu01": RECORDED}) == ([given], {})


def test_no_address_in_the_subnet_names_the_host_the_subnet_and_what_it_has() -> None:
    _, problems = with_node_addresses([dns_host(subnet="10.0.0.0/24")], {"gpu01": RECORDED})
    assert problems["gpu01"].startswith(
        "gpu01: node_address: gpu01.example.org has no address in node_subnet 10.0.0.0/24 on an "
        "interface that is up (its addresses: 127.0.0.1/8, ::1/128, 192.0.2.2/24")
    assert problems["gpu01"].endswith("fix node_subnet, or set node_address")


def test_an_address_on_a_down_interface_does_not_count() -> None:
    down = [Interface("eth0", False, ("192.0.2.2/24",), ())]
    _, problems = with_node_addresses([dns_host()], {"gpu01": make_facts(interfaces=down)})
    assert "has no address in node_subnet 192.0.2.0/24" in problems["gpu01"]


def test_several_addresses_in_the_subnet_ask_for_node_address() -> None:
    eth1 = Interface("eth1", True, ("192.0.2.3/24",), ())
    facts = make_facts(interfaces=(*RECORDED.interfaces, eth1))
    _, problems = with_node_addresses([dns_host()], {"gpu01": facts})
    assert problems == {"gpu01": "gpu01: node_address: gpu01.example.org has 2 addresses in "
                        "node_subnet 192.0.2.0/24 (192.0.2.2, 192.0.2.3); set node_address to "
                        "the one training uses"}


def test_two_nodes_reporting_one_address_are_refused() -> None:
    other = Host("gpu00", "192.0.2.2", "192.0.2.2", vars=SUBNET)
    hosts, problems = with_node_addresses([other, dns_host()],
                                          {"gpu00": RECORDED, "gpu01": RECORDED})
    assert problems == {"gpu01": "gpu01: node_address: 192.0.2.2 is also gpu00's address; set "
                        "node_address for each"}
    assert [h.node_address for h in hosts] == ["192.0.2.2", "192.0.2.2"]


@pytest.mark.parametrize("facts", [{}, {"gpu01": None}], ids=["not-read", "unreachable"])
def test_a_node_without_facts_keeps_an_empty_address(facts: dict[str, None]) -> None:
    assert with_node_addresses([dns_host()], facts) == ([dns_host()], {})
