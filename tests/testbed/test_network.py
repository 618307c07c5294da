import os
import subprocess

import pytest

from nodeprov.errors import NodeprovError
from nodeprov.testbed import network
from nodeprov.testbed.network import batch_line
from nodeprov.testbed.state import Member, State


def sample(outsider: bool) -> State:
    state = State(dir="/srv/tb", created_dir=False, subnet="10.77.3.0/24", bridge="ntabcdefbr",
                  bridge_address="10.77.3.1/24",
                  nodes=[Member("node1", "10.77.3.2/24", "ntabcdef-node1", "ntabcdefn1")])
    if outsider:
        state.outsider = Member("outsider", "10.9.9.2/24", "ntabcdef-outsider", "ntabcdefo")
        state.outsider_subnet = "10.9.9.0/24"
    return state


def test_batch_line_refuses_words_ip_would_split() -> None:
    assert batch_line(["link", "del", "ntabcdefn1"]) == "link del ntabcdefn1"
    for bad in (["link", "del", "a b"], ["addr", ""], ["x\ny"]):
        with pytest.raises(ValueError, match="ip -batch cannot pass"):
            batch_line(bad)


def test_create_runs_root_batch_then_one_batch_per_namespace(
        monkeypatch: pytest.MonkeyPatch) -> None:
    batches: list[dict[str | None, list[list[str]]]] = []
    monkeypatch.setattr(network, "run_batches", batches.append)
    network.create(sample(outsider=True))
    root, inside = batches
    assert root[None][:3] == [["link", "add", "ntabcdefbr", "type", "bridge"],
                              ["addr", "add", "10.77.3.1/24", "dev", "ntabcdefbr"],
                              ["link", "set", "ntabcdefbr", "up"]]
    assert ["link", "add", "ntabcdefo", "type", "veth", "peer", "name", "eth0", "netns",
            "ntabcdef-outsider"] in root[None]
    # Nodes: default route via the bridge; the outsider's subnet straight on the link.
    assert inside["ntabcdef-node1"][-2:] == [["route", "add", "default", "via", "10.77.3.1"],
                                             ["route", "add", "10.9.9.0/24", "dev", "eth0"]]
    # The outsider reaches the node subnet on its link: nothing is routed in the root namespace.
    assert inside["ntabcdef-outsider"][-1] == ["route", "add", "10.77.3.0/24", "dev", "eth0"]
    assert not any("forwarding" in " ".join(command) for command in root[None])


def test_without_outsider_nodes_get_only_the_default_route(
        monkeypatch: pytest.MonkeyPatch) -> None:
    batches: list[dict[str | None, list[list[str]]]] = []
    monkeypatch.setattr(network, "run_batches", batches.append)
    network.create(sample(outsider=False))
    routes = [command for command in batches[1]["ntabcdef-node1"] if command[0] == "route"]
    assert routes == [["route", "add", "default", "via", "10.77.3.1"]]


def test_every_node_knows_every_other_node_as_a_permanent_neighbour(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # Permanent entries stay out of the machine-wide cap on the shared neighbour table, which
    # a 64-node connectivity matrix overflowed (every namespace's ARP entries count against it).
    batches: list[dict[str | None, list[list[str]]]] = []
    monkeypatch.setattr(network, "run_batches", batches.append)
    state = sample(outsider=True)
    state.nodes.append(Member("node2", "10.77.3.3/24", "ntabcdef-node2", "ntabcdefn2"))
    network.create(state)
    inside = batches[1]
    assert ["link", "set", "eth0", "address", "02:00:0a:4d:03:02"] in inside["ntabcdef-node1"]
    neighbours = {name: [c for c in commands if c[0] == "neigh"]
                  for name, commands in inside.items()}
    assert neighbours == {
        "ntabcdef-node1": [["neigh", "replace", "10.77.3.3", "lladdr", "02:00:0a:4d:03:03",
                            "dev", "eth0", "nud", "permanent"]],
        "ntabcdef-node2": [["neigh", "replace", "10.77.3.2", "lladdr", "02:00:0a:4d:03:02",
                            "dev", "eth0", "nud", "permanent"]],
        "ntabcdef-outsider": []}


@pytest.mark.integration
def test_a_link_the_kernel_removed_before_its_delete_is_not_an_error() -> None:
    # A deleted namespace's veths go in the background: one listed a moment ago may be gone
    # when `ip link del` comes (CI saw "Cannot find device"); the others must still go.
    state = sample(outsider=False)
    state.bridge = f"ntt{os.getpid() % 100000:05d}br"
    subprocess.run(["ip", "link", "add", state.bridge, "type", "bridge"], check=True)
    try:
        network._delete_links(state, [state.nodes[0].veth, state.bridge])
        assert network.existing(state) == ([], [])
    finally:
        subprocess.run(["ip", "link", "del", state.bridge], capture_output=True)


def test_a_link_still_there_after_the_delete_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(network, "existing", lambda state: (["ntabcdefn1"], []))
    monkeypatch.setattr(network, "_start_batch", lambda commands, force: (
        subprocess.Popen(["cat"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True),
        "Cannot find device\n"))
    with pytest.raises(NodeprovError, match="could not delete ntabcdefn1: "):
        network._delete_links(sample(outsider=False), ["ntabcdefn1"])
