"""The testbed's network: a bridge in the root namespace and a veth pair into each member.

    create(state)   # bridge, namespaces, veth pairs, then every namespace's addresses and routes
    delete(state)   # exactly the recorded namespaces and links that still exist

The outsider's veth joins the same bridge but its address lies in another subnet, and each side
routes the other's subnet straight onto the link. So the outsider reaches the nodes through the
root namespace at layer 2 and nothing is ever routed there: enabling forwarding on the bridge,
even for that one interface, would let a node's packet for any address leave the machine.

Each node's eth0 gets a MAC made from its address, and every node knows every other node's as a
permanent neighbour entry. The kernel keeps one neighbour table for all namespaces, and its
garbage-collected entries are capped machine-wide (net.ipv4.neigh.default.gc_thresh3, 1024 by
default): node-to-node traffic among more than ~31 nodes (a 64-node connectivity matrix, a
job's full mesh) overflowed it ("neighbor table overflow", packets dropped, connections timing
out). Permanent entries are outside that cap (Linux 4.20 and later), and real nodes each have a
table of their own.
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Sequence

from nodeprov.errors import NodeprovError
from nodeprov.testbed.state import Member, State


def batch_line(argv: Sequence[str]) -> str:
    """One line of ``ip -batch`` input; ip splits lines at whitespace, so words must have none."""
    for word in argv:
        if not word or any(character.isspace() for character in word):
            raise ValueError(f"ip -batch cannot pass {word!r} as one word")
    return " ".join(argv)


def _start_batch(commands: Sequence[Sequence[str]], netns: str | None = None,
                 force: bool = False) -> tuple[subprocess.Popen[str], str]:
    """Start ``ip -batch`` (with ``force``, it runs every line past a failing one)."""
    argv = ["ip", *(["-n", netns] if netns else []), *(["-force"] if force else []), "-batch", "-"]
    process = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True)
    return process, "\n".join(batch_line(command) for command in commands) + "\n"


def run_batches(batches: dict[str | None, list[list[str]]]) -> None:
    """Run one ``ip -batch`` per namespace (None: the root namespace) at once; raise on failure."""
    started = {netns: _start_batch(commands, netns) for netns, commands in batches.items()}
    failures = []
    for netns, (process, script) in started.items():
        output, _ = process.communicate(script)
        if process.returncode != 0:
            failures.append(f"{netns or 'root namespace'}: {output.strip()}")
    if failures:
        raise NodeprovError("testbed: ip -batch failed: " + "; ".join(failures))


def mac_for(address: str) -> str:
    """A locally administered MAC from an IPv4 member address: unique on the bridge.

    >>> mac_for("10.77.3.2/24")
    '02:00:0a:4d:03:02'
    """
    return "02:00:" + ":".join(f"{int(byte):02x}" for byte in address.split("/")[0].split("."))


def _member_commands(state: State, member: Member) -> list[list[str]]:
    commands = [["link", "set", "lo", "up"],
                ["link", "set", "eth0", "address", mac_for(member.address)],
                ["addr", "add", member.address, "dev", "eth0"],
                ["link", "set", "eth0", "up"]]
    if member is not state.outsider:
        commands += [["neigh", "replace", peer.ip, "lladdr", mac_for(peer.address), "dev",
                      "eth0", "nud", "permanent"] for peer in state.nodes if peer is not member]
    if member is state.outsider:
        commands.append(["route", "add", state.subnet, "dev", "eth0"])
    else:
        commands.append(["route", "add", "default", "via", state.bridge_address.split("/")[0]])
        if state.outsider_subnet:
            commands.append(["route", "add", state.outsider_subnet, "dev", "eth0"])
    return commands


def create(state: State) -> None:
    """Make the bridge (holding the subnet's first address), and a namespace and veth per member."""
    root = [["link", "add", state.bridge, "type", "bridge"],
            ["addr", "add", state.bridge_address, "dev", state.bridge],
            ["link", "set", state.bridge, "up"]]
    for member in state.members:
        root += [["netns", "add", member.netns],
                 ["link", "add", member.veth, "type", "veth", "peer", "name", "eth0", "netns",
                  member.netns],
                 ["link", "set", member.veth, "master", state.bridge, "up"]]
    run_batches({None: root})
    run_batches({member.netns: _member_commands(state, member) for member in state.members})


def _existing(argv: list[str], key: str) -> set[str]:
    output = subprocess.run(argv, capture_output=True, text=True, check=True).stdout
    # iproute2 4.20 starts the list with an empty object
    return {entry[key] for entry in json.loads(output or "[]") if key in entry}


def existing(state: State) -> tuple[list[str], list[str]]:
    """(links, namespaces) of the state's that exist now, in the order to delete them."""
    links = _existing(["ip", "-j", "link", "show"], "ifname")
    namespaces = _existing(["ip", "-j", "netns", "list"], "name")
    return ([name for name in [*(member.veth for member in state.members), state.bridge]
             if name in links],
            [member.netns for member in state.members if member.netns in namespaces])


def delete(state: State, settle_timeout: float = 5.0) -> None:
    """Delete the recorded namespaces, veths and bridge that still exist (so it can run twice).

    Namespaces go first: the kernel then destroys all their veth pairs in one batch, far faster
    than deleting link by link; links still there after ``settle_timeout`` are deleted singly.
    """
    _, namespaces = existing(state)
    if namespaces:
        run_batches({None: [["netns", "del", netns] for netns in namespaces]})
    deadline = time.monotonic() + settle_timeout
    links, _ = existing(state)
    while set(links) - {state.bridge} and time.monotonic() < deadline:
        time.sleep(0.01)
        links, _ = existing(state)
    if links:
        _delete_links(state, links)


def _delete_links(state: State, links: list[str]) -> None:
    """Delete ``links``; raise only if one of the state's links is still there afterwards.

    The kernel destroys a deleted namespace's veth pairs in the background, so a veth seen a
    moment ago can be gone before ``ip link del`` reaches it ("Cannot find device"): that is
    the outcome wanted, not a failure (a busy CI machine hit it).
    """
    process, script = _start_batch([["link", "del", link] for link in links], force=True)
    output, _ = process.communicate(script)
    left, _ = existing(state)
    if left:
        raise NodeprovError(f"testbed: could not delete {', '.join(left)}: {output.strip()}")
