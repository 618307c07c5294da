"""What the verification job says of the fabric, without a GPU: recorded NCCL INFO logs
(tests/data/nccl-logs) as the nodes' job output, through the path the job's output takes
(``prove.seen_fabric``), with facts read by facts.sh from reconstructed /sys/class/infiniband
trees (tests/data/rdma). A log and a tree come from different public threads: they stand in
for one node's, matched by the device and host names the log gives."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from nodeprov.commands.verdict import proof_parts, verdict, warned
from nodeprov.inventory import Host
from nodeprov.proof.jobfabric import JobFabric, rated
from nodeprov.proof.launch import JobOutcome
from nodeprov.proof.matrix import Matrix
from nodeprov.proof.prove import Link, Proof, seen_fabric
from nodeprov.proof.results import JobResult, SizeResult
from nodeprov.remote.facts import Facts, parse_facts, split_sections
from tests.proof.test_slowest_link import RECORDED
from tests.remote.rdma_trees import DATA, build_tree
from tests.remote.test_rdma import needs_root, run_facts_on

LOGS = Path(__file__).parents[1] / "data" / "nccl-logs"
SUBNET = {"node_subnet": "192.0.2.0/24"}


def vm(hostname: str, speeds: str = "eth0 10000\n") -> Facts:
    """The recorded Debian VM's facts (eth0 in 192.0.2.0/24), named ``hostname``."""
    sections = split_sections(RECORDED.read_text(), "TOKEN123")
    return replace(parse_facts({**sections, "link_speeds": speeds}), hostname=hostname,
                   fqdn=hostname)


def with_tree(facts: Facts, tree: Path, tmp_path: Path) -> Facts:
    """``facts`` with the RDMA facts facts.sh reads from ``tree`` as /sys/class/infiniband."""
    return replace(facts, rdma=parse_facts(run_facts_on(tree, tmp_path)).rdma)


def result(busbw_gbps: float, nnodes: int = 2) -> JobResult:
    sizes = (SizeResult(1 << 20, 1 << 18, 5, 10.0, 1.0, 1.0, 0),
             SizeResult(1 << 30, 1 << 28, 5, 10.0, busbw_gbps, busbw_gbps, 0))
    return JobResult(True, "nccl", nnodes * 8, nnodes, (), "2.5", "12.4", "2.21.5", 1, 5, True,
                     0.0, sizes, 0, 1.0)


def outcome(logs: dict[str, str], busbw_gbps: float, backend: str = "nccl") -> JobOutcome:
    """A passing job whose nodes printed the recorded ``logs`` (node -> file name, or '')."""
    return JobOutcome(True, result(busbw_gbps), "PASS: 2 nodes, 16 ranks (nccl 2.21.5): ...",
                      [], 1.0, backend=backend,
                      outputs={node: (LOGS / name).read_text() if name else ""
                               for node, name in logs.items()})


def test_the_rate_line_of_the_brief() -> None:
    assert rated(361.0, [400.0] * 8, "IB, GPUDirect", "IB", True) == (
        "busbw 361 GB/s = 0.90 of 8 x 400 Gb/s (IB, GPUDirect): healthy")
    assert rated(24.0, [400.0] * 8, "IB, GPUDirect", "IB", True).endswith(
        "= 0.06 of 8 x 400 Gb/s (IB, GPUDirect): below the 0.9 a healthy IB ring reaches")
    assert rated(10.0, [100.0], "EFA, GPUDirect", "EFA", True).endswith("0.80 of 100 Gb/s "
                                                                          "(EFA, GPUDirect): "
                                                                          "healthy")
    assert "not known" in rated(3.0, None, "IB", "IB", True)


def test_gloo_names_the_socket_path_from_the_facts() -> None:
    hosts = [Host(name, name, name, vars=SUBNET) for name in ("node1", "node2")]
    facts = {name: vm(name) for name in ("node1", "node2")}
    seen = seen_fabric(hosts, facts, outcome({}, 0.5, backend="gloo"),
                       Link("node2", "eth0", 10000 * 1e6 / 8))
    assert seen.transport == "gloo over eth0, 10 Gb/s; no RDMA devices on any node"
    assert seen.rate == ("busbw 0.5 GB/s = 0.40 of 10 Gb/s (gloo over eth0): healthy")
    assert seen.slower is None and seen.report is None
    slow = seen_fabric(hosts, {name: vm(name, "eth0 -1\n") for name in facts},
                       outcome({}, 0.5, backend="gloo"), None)
    assert slow.line() == "gloo over eth0, link speed not reported; no RDMA devices on any node"


@needs_root
def test_sockets_on_a_node_with_an_active_ib_port_is_a_slower_path(tmp_path: Path) -> None:
    # nccl-1267: a cloud VM's NCCL fell back to sockets (NET/IB : No device found); the tree:
    # gpud-752's InfiniBand port, Active at 200
    tree = build_tree(tmp_path / "ib", ibstat=DATA / "ibstat-gpud-752-ib.txt")
    host = "instance-8g-96c-4"
    facts = {host: with_tree(vm(host), tree, tmp_path)}
    seen = seen_fabric([Host(host, host, host, vars=SUBNET)], facts,
                       outcome({host: "nccl-1267-no-ib-device-2.19.3.log"}, 1.0), None)
    assert seen.slower == ("slower-path: instance-8g-96c-4: NCCL used Socket although it has "
                           "mlx5_7 (IB, Active, 200 Gb/sec)")
    assert seen.transport == "NCCL on one node, the path inside them not said"
    assert seen.report is not None and seen.report.nodes[0].network == "Socket"


@needs_root
def test_ib_on_two_nodes_is_rated_against_the_nics_nccl_used(tmp_path: Path) -> None:
    # nccl-1925: two pods on IB over mlx5_0 (2.27+'s "Assigned NET plugin"); the tree:
    # Mooncake-1999's mlx5_0 and mlx5_1, Active at 200 (its link layer is Ethernet: matched
    # by name, the rate is what is read)
    tree = build_tree(tmp_path / "ib", ibstat=DATA / "ibstat-mooncake-1999-roce.txt")
    names = ("nccl-sleep-c7d759db6-2bp29", "nccl-sleep-c7d759db6-cgz82")
    facts = {name: with_tree(vm(name), tree, tmp_path) for name in names}
    hosts = [Host(name, name, name, vars=SUBNET) for name in names]
    seen = seen_fabric(hosts, facts, outcome(dict.fromkeys(names, ""), 22.5), None)
    assert seen.report is None and seen.transport.startswith("NCCL's transport not said")
    # the recorded log holds both pods' lines: as the first node's output, the second's empty
    both = seen_fabric(hosts, facts, outcome({names[0]: "nccl-1925-assigned-net-plugin-ib.log",
                                              names[1]: ""}, 22.5), None)
    assert both.transport.startswith("NCCL IB between nodes, GPUDirect RDMA not said, ")
    assert both.rate == ("busbw 22.5 GB/s = 0.90 of 200 Gb/s (IB, GPUDirect not said): "
                         "no healthy ratio known for this path")
    # this machine, the stand-in node, has no /dev/infiniband: the fabric reader's cause, named
    assert both.slower == (
        "slower-path: nccl-sleep-c7d759db6-2bp29: rdma-not-visible: /dev/infiniband absent for "
        "the job's user; repair: give the job the RDMA devices: /dev/infiniband in its "
        "container (--device=/dev/infiniband, the RDMA device plugin on Kubernetes)")


def test_apply_warns_and_verify_fails_a_pass_on_a_slower_path() -> None:
    slow = JobFabric("NCCL Socket between nodes, SHM inside them", None,
                     "slower-path: node3: NCCL used Socket although it has mlx5_0 (IB, ...)")
    proof = Proof(Matrix(("node1", "node3"), ()),
                  JobOutcome(True, result(1.0), "PASS: 2 nodes, 16 ranks (nccl 2.21.5): ok",
                             [], 1.0), fabric=slow)
    assert proof.ok and proof.slower == slow.slower
    applied = verdict(proof_parts([proof]))
    assert warned(applied) and applied == (
        "WARN: job: 2 nodes, 16 ranks (nccl 2.21.5): ok; NCCL Socket between nodes, SHM "
        "inside them; slower-path: node3: NCCL used Socket although it has mlx5_0 (IB, ...)")
    verified = verdict(proof_parts([proof], strict=True))
    assert verified.startswith("FAIL: job: 2 nodes") and verified.endswith("(IB, ...)")
    plain = replace(proof, fabric=replace(slow, slower=None))
    assert verdict(proof_parts([plain], strict=True)).startswith("PASS: job: ")


@pytest.mark.parametrize("cut", [70_000, 200_000])
def test_node_output_is_read_bounded(cut: int) -> None:
    # an endless line (node output is untrusted) is cut, and the NCCL lines after it still read
    text = "x" * cut + "\n" + (LOGS / "nccl-1267-no-ib-device-2.19.3.log").read_text()
    host = "instance-8g-96c-4"
    seen = seen_fabric([Host(host, host, host, vars=SUBNET)], {host: vm(host)},
                       replace(outcome({}, 1.0), outputs={host: text}), None)
    assert seen.report is not None and seen.report.nodes[0].network == "Socket"
    assert seen.slower is None  # no RDMA port in this node's facts: sockets are all it has
