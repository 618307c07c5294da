"""/etc/hosts lists every inventory node under its subnet address with the node's real hostname,
no other line maps one of those names elsewhere, and the node's own name resolves to its subnet
address (gloo binds where the hostname resolves: 127.0.1.1 would be loopback)."""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence

import pytest
import testinfra.host

from nodeprov import files
from nodeprov.checks import Drift
from nodeprov.inventory import Host
from nodeprov.tasks import hosts
from nodeprov.tasks.base import Context, TaskFailed

AREA = "hosts"


def block_differences(present: Sequence[str], wanted: Sequence[hosts.Entry]) -> list[str]:
    """What the block lacks or lists wrongly, one phrase per address, in wanted order.

        >>> block_differences(["10.0.0.1 n1"], [("10.0.0.1", ("n1",)), ("10.0.0.2", ("n2",))])
        ['10.0.0.2 n2 missing']
    """
    listed = {fields[0]: tuple(fields[1:]) for fields in map(str.split, present) if fields}
    problems = []
    for address, names in wanted:
        line = f"{address} {' '.join(names)}"
        if address not in listed:
            problems.append(f"{line} missing")
        elif listed[address] != names:
            problems.append(f"{address} listed as {' '.join(listed[address])!r} (not {line!r})")
    return problems


@pytest.fixture()
def text(observed: str, params: hosts.HostsParams) -> str:
    return files.observed_files(observed).get(params.path) or ""


@pytest.fixture()
def entries(text: str, context: Context, drift: Drift) -> list[hosts.Entry]:
    try:
        return hosts.cluster_entries(context, files.block_lines(text, hosts.BLOCK) or [])[0]
    except TaskFailed as error:
        pytest.fail(drift.line(str(error), "every node with a name of its own"), pytrace=False)


def test_block_lists_every_node(text: str, entries: list[hosts.Entry],
                                params: hosts.HostsParams, drift: Drift) -> None:
    present = files.block_lines(text, hosts.BLOCK)
    expected = f"a nodeprov block listing {len(entries)} nodes"
    assert present is not None, drift.line(f"{params.path} has no nodeprov block", expected)
    problems = block_differences(present, entries)
    assert not problems, drift.line(f"{params.path}'s block: {'; '.join(problems)}", expected)


def test_no_conflicting_line(text: str, entries: list[hosts.Entry], params: hosts.HostsParams,
                             drift: Drift) -> None:
    if not params.fix_conflicts:
        pytest.skip("hosts_fix_conflicts is false: apply keeps such lines (with a warning)")
    conflicts = hosts.comment_out_conflicts(text, entries, comment=False)[1]
    assert not conflicts, drift.line(
        f"{params.path} maps a node name to another address: "
        + "; ".join(repr(line.strip()) for line in conflicts), "no line outside the block does")


def test_own_name_resolves_to_subnet_address(host: testinfra.host.Host, node: Host,
                                             params: hosts.HostsParams, context: Context,
                                             drift: Drift) -> None:
    hostname = context.facts.hostname
    family = "ahostsv6" if ipaddress.ip_address(node.node_address).version == 6 else "ahostsv4"
    result = host.run("getent %s -- %s", family, hostname)
    addresses = list(dict.fromkeys(line.split()[0] for line in result.stdout.splitlines()))
    assert addresses[:1] == [node.node_address], drift.line(
        f"its hostname {hostname} resolves to {', '.join(addresses) or 'nothing'}",
        node.node_address)
