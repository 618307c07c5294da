"""The connectivity matrix: cause mapping from recorded probe outputs, the node-side script run on
this machine, and the real matrix on a testbed with one node's ports blocked."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from typer.testing import CliRunner

from nodeprov.gpu import GpuInfo
from nodeprov.inventory import Host, load_inventory
from nodeprov.nodeside import netcheck as netcheck_module
from nodeprov.proof.connectivity import (
    STOP,
    check_connectivity,
    listener_errors,
    listener_ports,
    parse_probe,
)
from nodeprov.proof.matrix import Check, Matrix, explain
from nodeprov.remote.facts import Facts
from nodeprov.remote.options import SshOptions
from nodeprov.remote.session import Result, Session
from nodeprov.testbed.cluster import Testbed
from nodeprov.testbed.lifecycle import temporary

SCRIPT = resources.files("nodeprov.nodeside").joinpath("netcheck.py").read_text()
NODES = ("node1", "node2", "node3")
ADDRESSES = {"node1": "10.92.12.2", "node2": "10.92.12.3", "node3": "10.92.12.4"}
TARGETS = [{"name": name, "hostname": name, "address": ADDRESSES[name],
            "ports": {"eph": [ADDRESSES[name], port], "rdzv": [ADDRESSES[name], 29500]}}
           for name, port in zip(NODES, (47054, 47627, 46061), strict=True)]
# Recorded on a testbed with node3 dropping the ephemeral range from the subnet (no conntrack)
# and node2 rejecting the rendezvous port with a TCP reset.
FROM_NODE1 = ('{"node1": {"dns": {"addresses": ["10.92.12.2"]}, "eph": "ok", "rdzv": "ok"}, '
              '"node2": {"dns": {"addresses": ["10.92.12.3"]}, "eph": "ok", '
              '"rdzv": "ECONNREFUSED"}, "node3": {"dns": {"addresses": ["10.92.12.4"]}, '
              '"eph": "timeout", "rdzv": "ok"}}')
FROM_NODE3 = ('{"node1": {"dns": {"addresses": ["10.92.12.2"]}, "eph": "timeout", '
              '"rdzv": "timeout"}, "node2": {"dns": {"addresses": ["10.92.12.3"]}, '
              '"eph": "timeout", "rdzv": "timeout"}, "node3": {"dns": {"addresses": '
              '["10.92.12.4"]}, "eph": "timeout", "rdzv": "timeout"}}')
FROM_NODE2 = FROM_NODE1  # node2 sees what node1 sees
# Before the hosts task: peers unknown, the own name on Debian's 127.0.1.1 line.
UNNAMED = ('{"node1": {"dns": {"addresses": ["127.0.1.1"]}, "eph": "ok", "rdzv": "ok"}, '
           '"node2": {"dns": {"error": "Temporary failure in name resolution"}, "eph": "ok", '
           '"rdzv": "ok"}, "node3": {"dns": {"error": "Temporary failure in name resolution"}, '
           '"eph": "ok", "rdzv": "ok"}}')
ALL_OK = ('{"node1": {"dns": {"addresses": ["10.92.12.2"]}, "eph": "ok", "rdzv": "ok"}, '
          '"node2": {"dns": {"addresses": ["10.92.12.3"]}, "eph": "ok", "rdzv": "ok"}, '
          '"node3": {"dns": {"addresses": ["10.92.12.4"]}, "eph": "ok", "rdzv": "ok"}}')


def matrix_of(*outputs: str) -> Matrix:
    checks = [check for name, output in zip(NODES, outputs, strict=True)
              for check in parse_probe(name, output, TARGETS)]
    return Matrix(NODES, tuple(checks))


# --- cause mapping from recorded outputs --------------------------------------------------------

def test_all_ok_renders_an_ok_table_and_no_problems() -> None:
    matrix = matrix_of(ALL_OK, ALL_OK, ALL_OK)
    assert matrix.ok and matrix.problems() == []
    assert matrix.rows() == [("from \\ to", *NODES), *((n, "ok", "ok", "ok") for n in NODES)]
    console = Console(width=100, file=io.StringIO(), record=True)
    console.print(matrix.table())
    text = console.export_text()
    assert "│ node3     │ ok    │ ok    │ ok    │" in text


def test_a_node_dropping_its_ephemeral_range_is_named_from_both_directions() -> None:
    matrix = matrix_of(FROM_NODE1, FROM_NODE2, FROM_NODE3)
    assert not matrix.ok
    assert matrix.cell("node1", "node3") == "eph"
    assert matrix.cell("node3", "node1") == "eph,rdzv"
    problems = matrix.problems()
    assert ("node1 -> node3: TCP to 10.92.12.4:46061 (ephemeral range) timed out: firewall on "
            "node3 blocks the node subnet (nodeprov apply --limit node3 --tags firewall)"
            in problems)
    # node3's own connections die too (the replies hit its DROP): blamed on node3, not node1.
    outgoing = [line for line in problems if line.startswith("node3 -> node1")]
    assert outgoing and all("firewall on node3 drops its own connections" in line
                            and "--limit node3" in line for line in outgoing)


def test_refused_and_no_route_and_unknown_errors_name_different_causes() -> None:
    refused = Check("node1", "node2", "rdzv", "ECONNREFUSED", "10.92.12.3:29500")
    assert explain(refused) == (
        "node1 -> node2: TCP to 10.92.12.3:29500 (rendezvous port) refused: firewall on node2 "
        "rejects the node subnet (nodeprov listened there) (nodeprov apply --limit node2 "
        "--tags firewall)")
    no_route = explain(Check("node1", "node2", "eph", "EHOSTUNREACH", "10.92.12.3:40000"))
    assert "no route to host: node2 is down" in no_route and "icmp-host-prohibited" in no_route
    unreachable = explain(Check("node1", "node2", "eph", "ENETUNREACH", "10.92.12.3:40000"))
    assert "node1 has no route to the node subnet" in unreachable
    assert "failed: EPIPE" in explain(Check("node1", "node2", "eph", "EPIPE", "a:1"))


def test_name_resolution_failures_point_at_the_hosts_task_on_the_resolving_node() -> None:
    matrix = matrix_of(UNNAMED, ALL_OK, ALL_OK)
    assert [matrix.cell("node1", n) for n in NODES] == ["dns", "dns", "dns"]
    problems = matrix.problems()
    assert problems[0] == (
        "node1 -> node1: node1 resolves 'node1' to 127.0.1.1, not node1's subnet address: an "
        "/etc/hosts line (Debian's 127.0.1.1) or DNS maps it elsewhere (nodeprov apply "
        "--limit node1 --tags hosts)")
    assert problems[1] == (
        "node1 -> node2: node1 cannot resolve 'node2' (Temporary failure in name resolution): "
        "/etc/hosts on node1 lacks the node names (nodeprov apply --limit node1 --tags hosts)")


def test_a_wrong_node_address_is_named_as_such() -> None:
    listening = {"eph_error": "cannot listen on 10.0.0.99: Cannot assign requested address",
                 "rdzv": "error: Cannot assign requested address", "pid": 0}
    assert listener_errors("node2", listening, "10.0.0.99", 29500) == [
        "node2: connectivity: cannot listen on 10.0.0.99: Cannot assign requested address "
        "(node_address 10.0.0.99 is not on the node: fix it in the inventory)",
        "node2: connectivity: cannot listen on 10.0.0.99:29500: Cannot assign requested address "
        "(node_address 10.0.0.99 is not on the node: fix it in the inventory)"]
    assert listener_errors("node2", {"eph": 1, "rdzv": "busy"}, "10.0.0.2", 29500) == []


def test_ports_nobody_listens_on_are_untested_not_broken() -> None:
    assert listener_ports({"eph": 40001, "rdzv": "listening"}, "10.0.0.1", 29500) == {
        "eph": ("10.0.0.1", 40001), "rdzv": ("10.0.0.1", 29500)}
    assert listener_ports({"eph": 40001, "rdzv": "busy"}, "10.0.0.1", 29500)["rdzv"] == (
        "10.0.0.1", 29500)
    assert listener_ports({"eph_error": "cannot listen", "rdzv": "error: x"}, "a", 1) == {}
    targets = [{**TARGETS[0], "ports": {}}]
    checks = parse_probe("node2", '{"node1": {"dns": {"addresses": ["10.92.12.2"]}}}', targets)
    matrix = Matrix(("node1",), tuple(c for c in checks), errors=("node1: cannot listen",))
    assert [c.status for c in checks] == ["ok", "untested", "untested"]
    assert not matrix.ok and matrix.problems() == ["node1: cannot listen"]
    assert matrix.cell("node2", "node1") == "?"


def test_a_large_broken_matrix_says_it_in_a_line_and_a_small_break_in_a_small_table() -> None:
    nodes = tuple(f"n{i}" for i in range(1, 65))
    # every node times out on the ephemeral range of n57..n64: 504 broken checks
    checks = tuple(Check(s, t, kind, "timeout" if kind == "eph" and int(t[1:]) > 56 else "ok",
                         f"{t}:40000") for s in nodes for t in nodes for kind in ("eph", "rdzv"))
    matrix = Matrix(nodes, checks)
    assert matrix.table() == ("connectivity: 512 of 8192 checks failed, involving 64 of 64 "
                              "nodes (one line each below)")
    problems = matrix.problems()
    assert len(problems) == 512 and all("timed out: firewall on n5" in line or
                                        "timed out: firewall on n6" in line for line in problems)
    one = Matrix(nodes, tuple(Check(c.source, c.target, c.kind, "ok", c.detail)
                              for c in checks[:-1]) + (Check("n64", "n64", "rdzv", "timeout",
                                                             "n64:29500"),))
    table = one.table()
    assert not isinstance(table, str) and [c.header for c in table.columns] == ["from \\ to",
                                                                                "n64"]
    assert table.caption == "63 other nodes: every check between them passed"


def test_a_small_matrix_shows_every_node_and_no_markup_on_a_console_without_it() -> None:
    # run's console prints node text with markup off: the cells said `[red]rdzv[/]` there, and
    # the nodes no failure involved were left out
    matrix = Matrix(NODES, (*(Check(s, t, "rdzv", "ok", f"{t}:29500") for s in NODES
                              for t in NODES if (s, t) != ("node1", "node3")),
                            Check("node1", "node3", "rdzv", "timeout", "node3:29500")))
    console = Console(width=100, file=io.StringIO(), record=True, markup=False)
    console.print(matrix.table())
    text = console.export_text()
    assert "[red]" not in text and "[/]" not in text
    assert "│ node1     │ ok    │ ok    │ rdzv  │" in text
    assert "│ node2     │ ok    │ ok    │ ok    │" in text


def test_a_connection_that_timed_out_is_tried_once_more(monkeypatch: pytest.MonkeyPatch) -> None:
    tries: list[tuple[str, int]] = []

    def starved_once(address: str, port: int, timeout: float) -> str:
        tries.append((address, port))
        if port == 29500:  # a firewall that drops it: timed out both times
            return "timeout"
        return "timeout" if tries.count((address, port)) == 1 else "ok"

    monkeypatch.setattr(netcheck_module, "connect", starved_once)
    monkeypatch.setattr(netcheck_module, "resolve", lambda name: {"addresses": ["10.0.0.2"]})
    found = netcheck_module.probe_all(1.0, [{"name": "node2", "hostname": "node2", "ports": {
        "eph": ["10.0.0.2", 40002], "rdzv": ["10.0.0.2", 29500]}}])
    assert found == {"node2": {"dns": {"addresses": ["10.0.0.2"]}, "eph": "ok",
                               "rdzv": "timeout"}}
    assert sorted(tries) == [("10.0.0.2", 29500)] * 2 + [("10.0.0.2", 40002)] * 2


# --- the node-side script, on this machine ------------------------------------------------------

def netcheck(*argv: str) -> dict[str, Any]:
    done = subprocess.run([sys.executable, "-c", SCRIPT, *argv], capture_output=True, text=True,
                          check=True, timeout=30)
    found: dict[str, Any] = json.loads(done.stdout)
    return found


@pytest.fixture
def listener() -> Iterator[dict[str, Any]]:
    """A listener on 127.0.0.2 for 20 s, stopped by the matrix's stop step afterwards."""
    token = f"nodeprov-test-{time.monotonic_ns()}"
    started = netcheck("listen", "127.0.0.2", "40000", "40100", "0", "20", token)
    yield {**started, "token": token}
    subprocess.run(["sh", "-c", STOP, "stop", str(started["pid"]), token], check=True)


def test_listener_and_probe_on_this_machine(listener: dict[str, Any]) -> None:
    assert 40000 <= listener["eph"] <= 40100 and listener["pid"] > 0
    closed = listener["eph"] + 1 if listener["eph"] < 40100 else listener["eph"] - 1
    targets = [{"name": "here", "hostname": "localhost",
                "ports": {"eph": ["127.0.0.2", listener["eph"]], "rdzv": ["127.0.0.2", closed]}},
               {"name": "nowhere", "hostname": "nodeprov-no-such-host.invalid", "ports": {}}]
    found = netcheck("probe", "2", json.dumps(targets))
    assert found["here"]["eph"] == "ok"
    assert found["here"]["rdzv"] == "ECONNREFUSED"
    assert "127.0.0.1" in found["here"]["dns"]["addresses"]
    assert "error" in found["nowhere"]["dns"]


def test_stop_kills_the_listener_and_nothing_else(listener: dict[str, Any]) -> None:
    alive = Path(f"/proc/{listener['pid']}")
    subprocess.run(["sh", "-c", STOP, "stop", str(listener["pid"]), "another-token"], check=True)
    assert alive.exists()
    subprocess.run(["sh", "-c", STOP, "stop", str(listener["pid"]), listener["token"]],
                   check=True)
    for _ in range(50):
        if not alive.exists() or "Z" in (alive / "stat").read_text().split()[2]:
            break
        time.sleep(0.05)
    else:
        pytest.fail("the listener survived its stop")


def test_a_busy_rendezvous_port_is_reported_and_still_probed() -> None:
    with subprocess.Popen([sys.executable, "-c", SCRIPT, "listen", "127.0.0.3", "40200",
                           "40210", "40300", "5", "t1"], stdout=subprocess.PIPE, text=True) as one:
        first = json.loads(one.stdout.readline() if one.stdout else "{}")
    second = netcheck("listen", "127.0.0.3", "40200", "40210", "40300", "1", "t2")
    assert first["rdzv"] == "listening" and second["rdzv"] == "busy"
    assert second["eph"] != first["eph"]  # the taken one was skipped
    for started, token in ((first, "t1"), (second, "t2")):
        subprocess.run(["sh", "-c", STOP, "stop", str(started["pid"]), token], check=True)


# --- the whole matrix, with sessions that run commands on this machine --------------------------

class LocalSession:
    """Runs the matrix's commands here, as if this machine were the node."""

    def __init__(self) -> None:
        self.round_trips = 0

    def run(self, argv: Sequence[str], **_: Any) -> Result:
        self.round_trips += 1
        done = subprocess.run(list(argv), capture_output=True, text=True, check=False,
                              timeout=60)
        return Result(done.stdout, done.stderr, done.returncode)


def facts_for(hostname: str, eph: tuple[int, int] = (40400, 40500),
              gpu: GpuInfo | None = None) -> Facts:
    return Facts(hostname=hostname, fqdn=hostname, os_id="debian", os_version="12",
                 os_name="Debian", kernel="6.1", arch="x86_64", python_path="/usr/bin/python3",
                 python_version="3.11.2", interfaces=(), ephemeral_port_range=eph,
                 ufw_installed=False, ufw_active=False, systemd=False, package_manager="apt-get",
                 gpu=gpu)


def test_check_connectivity_with_two_local_nodes() -> None:
    hosts = [Host("a", "127.0.0.4", "127.0.0.4"), Host("b", "127.0.0.5", "127.0.0.5")]
    sessions = {"a": LocalSession(), "b": LocalSession()}
    # "localhost" resolves, but not to either node's address: a name problem, TCP fine.
    facts = {"a": facts_for("localhost"), "b": facts_for("nodeprov-no-such-host.invalid")}
    matrix = check_connectivity(hosts, sessions, facts, rdzv_port=40600, timeout=2)  # type: ignore[arg-type]
    assert matrix.errors == ()
    assert [c.status for c in matrix.checks if c.kind != "dns"] == ["ok"] * 8
    assert matrix.cell("a", "b") == "dns"
    assert all(s.round_trips == 3 for s in sessions.values())
    assert matrix.duration_s < 10


# --- on a testbed ------------------------------------------------------------------------------

PLAYBOOK = """\
- name: names and sockets for torchrun
  hosts: all
  tasks:
    - name: Cluster names
      hosts: {}
    - name: NCCL environment
      nccl_env: {subnet: "{{ node_subnet }}"}
"""


@pytest.fixture(scope="module")
def named_bed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Testbed]:
    """A private 3-node testbed (the shared one stays unconfigured) with the hosts task
    applied."""
    from nodeprov.cli import app

    with temporary(nodes=3, outsider=False) as bed:
        playbook = tmp_path_factory.mktemp("connectivity") / "playbook.yaml"
        playbook.write_text(PLAYBOOK)
        result = CliRunner().invoke(app, ["apply", str(bed.inventory_path), "-p", str(playbook)])
        assert result.exit_code == 0, result.output
        yield bed


def open_sessions(bed: Testbed) -> tuple[list[Host], dict[str, Session], dict[str, Facts]]:
    hosts = list(load_inventory(bed.inventory_path).hosts)
    sessions = {host.name: Session(host, SshOptions()) for host in hosts}
    for session in sessions.values():
        session.open()
    return hosts, sessions, {name: s.gather([])[0] for name, s in sessions.items()}


@pytest.mark.integration
def test_matrix_on_a_testbed_names_the_blocked_node(named_bed: Testbed) -> None:
    hosts, sessions, facts = open_sessions(named_bed)
    try:
        matrix = check_connectivity(hosts, sessions, facts, rdzv_port=29500)
        assert matrix.ok, matrix.problems()
        print(f"\nconnectivity matrix, 3 nodes, all ok: {matrix.duration_s:.2f} s")
        low, high = facts["node3"].ephemeral_port_range
        rule = ["INPUT", "-s", named_bed.subnet, "-p", "tcp", "--dport", f"{low}:{high}",
                "-j", "DROP"]
        named_bed.exec("node3", "iptables", "-I", *rule, check=True)
        try:
            blocked = check_connectivity(hosts, sessions, facts, rdzv_port=29500, timeout=2)
        finally:
            named_bed.exec("node3", "iptables", "-D", *rule, check=True)
        print(f"connectivity matrix, node3 blocked: {blocked.duration_s:.2f} s")
        assert blocked.cell("node1", "node3") == "eph" and blocked.cell("node1", "node2") == "ok"
        problems = blocked.problems()
        assert problems and all("firewall on node3" in line for line in problems)
        assert blocked.duration_s < 10
        leftovers = [named_bed.exec(n, "pgrep", "-f", "nodeprov-connectivity").stdout
                     for n in named_bed.nodes]
        assert leftovers == ["", "", ""]
    finally:
        for session in sessions.values():
            session.close()
