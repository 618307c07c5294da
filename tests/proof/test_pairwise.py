"""verify --pairwise on a fake launcher: rounds of disjoint pairs at once, each pair against
its link or the baseline, and the slow node named (tests/proof/test_prove.py runs it for real).
"""

from __future__ import annotations

import dataclasses
import itertools
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

from nodeprov.inventory import Host
from nodeprov.proof.baseline import load_baseline, record_baseline
from nodeprov.proof.launch import JobOutcome
from nodeprov.proof.pairwise import Pairwise, Standard, run_pairwise
from nodeprov.proof.results import JobResult
from nodeprov.remote.facts import Interface
from tests.proof.test_baseline import LARGEST, RESULT

SUBNET = "10.0.0.0/24"
GBPS = 1e9  # bytes per second in a GB/s


def hosts(count: int) -> list[Host]:
    return [Host(f"node{n}", f"node{n}", f"10.0.0.{n}", vars={"node_subnet": SUBNET})
            for n in range(1, count + 1)]


def at(gbps: float) -> JobResult:
    """The recorded run scaled so that its largest size's busbw is ``gbps`` GB/s."""
    factor = gbps / LARGEST.busbw_gbps
    return dataclasses.replace(RESULT, sizes=tuple(
        dataclasses.replace(row, busbw_gbps=row.busbw_gbps * factor) for row in RESULT.sizes))


class LinkFacts:
    """Facts as far as pairwise reads them: one interface in the subnet at ``mbps``."""

    def __init__(self, mbps: int | None) -> None:
        self.mbps = mbps

    def interfaces_in(self, subnet: str) -> list[Interface]:
        return [Interface("eth0", True, ("10.0.0.9/24",), (), self.mbps)]


class FakeJobs:
    """run_job's stand-in: each pair's busbw from ``speed`` (None: the job failed); the pairs
    launched, in order."""

    def __init__(self, speed: Callable[[str, str], float | None]) -> None:
        self.speed = speed
        self.launched: list[tuple[str, str]] = []

    def __call__(self, pair: list[Host], sessions: Any, facts: Any, **options: Any
                 ) -> JobOutcome:
        names = (pair[0].name, pair[1].name)
        self.launched.append(names)
        busbw = self.speed(*names)
        if busbw is None:
            return JobOutcome(False, None, "FAIL: the gloo job failed on 2 nodes",
                              [f"{names[1]}: venv: ..."], 1.0, cause=f"FAIL: {names[1]}: venv: ...")
        return JobOutcome(True, at(busbw), "PASS", [], 1.0)


def throttled(slow_node: str, fast: float = 1.0, slow: float = 0.01
              ) -> Callable[[str, str], float | None]:
    return lambda first, second: slow if slow_node in (first, second) else fast


def run(fake: FakeJobs, nodes: list[Host], slow_nodes: bool, drop: float = 0.3,
        facts: Mapping[str, Any] | None = None, standard: Standard | None = None) -> Pairwise:
    facts = facts if facts is not None else {host.name: LinkFacts(10000) for host in nodes}
    return run_pairwise(nodes, {}, facts, standard or Standard(drop), slow_nodes=slow_nodes,
                        launch=fake, backend="gloo", timeout=60)


def test_every_pair_runs_once_slowest_first() -> None:
    speeds = {("node1", "node2"): 1.0, ("node1", "node3"): 0.25, ("node2", "node3"): None}
    fake = FakeJobs(lambda *pair: speeds[tuple(sorted(pair))])
    found = run(fake, hosts(3), slow_nodes=False, facts={})
    assert sorted(tuple(sorted(pair)) for pair in fake.launched) == sorted(speeds)
    assert [pair.pair for pair in found.pairs] == [("node2", "node3"), ("node1", "node3"),
                                                   ("node1", "node2")]
    assert found.pairs[0].line() == "node2 + node3: FAIL: node3: venv: ..."
    assert found.pairs[1].line() == "node1 + node3: 0.25 GB/s busbw at 1 MiB"
    assert (found.rounds_run, found.rounds_total) == (3, 3)


def test_the_pairs_of_a_round_run_at_once() -> None:
    # Both pairs of a 4-node round must be inside run_job together to pass the barrier.
    barrier = threading.Barrier(2, timeout=10)

    def speed(first: str, second: str) -> float:
        barrier.wait()
        return 1.0

    fake = FakeJobs(speed)
    found = run(fake, hosts(4), slow_nodes=False)
    assert len(found.pairs) == 6 and all(pair.outcome.ok for pair in found.pairs)
    assert sorted(pair.round for pair in found.pairs) == [1, 1, 2, 2, 3, 3]


def test_each_pair_is_held_against_its_link() -> None:
    fake = FakeJobs(throttled("node2", fast=1.0, slow=0.05))
    facts = {"node1": LinkFacts(10000), "node2": LinkFacts(10000), "node3": LinkFacts(25000),
             "node4": LinkFacts(None)}
    found = run(fake, hosts(4), slow_nodes=False, facts=facts)
    by_pair = {tuple(sorted(pair.pair)): pair for pair in found.pairs}
    fast = by_pair[("node1", "node3")]  # 1 GB/s on min(10, 25) Gb/s = 1.25 GB/s
    assert fast.link_bytes_per_s == 1.25 * GBPS and fast.of_link == pytest.approx(0.8)
    assert not fast.slow and fast.line() == "node1 + node3: 1.00 GB/s busbw at 1 MiB = 0.80 of "\
        "10 Gb/s"
    slow = by_pair[("node1", "node2")]
    assert slow.slow and slow.line() == "node1 + node2: 0.05 GB/s busbw at 1 MiB = 0.04 of 10 "\
        "Gb/s: slow"
    tiny = dataclasses.replace(slow, outcome=dataclasses.replace(slow.outcome, result=at(1e-4)))
    assert tiny.line() == "node1 + node2: 0.0001 GB/s busbw at 1 MiB = 8e-05 of 10 Gb/s: slow"
    unknown = by_pair[("node1", "node4")]  # node4's kernel gives no speed: nothing to hold
    assert unknown.link_bytes_per_s is None and unknown.of_link is None
    assert unknown.slow is None and not by_pair[("node2", "node4")].slow  # not judged
    assert found.finding.culprits == ("node2",)


def test_the_baseline_is_the_reference_where_apply_recorded_one(tmp_path: Path) -> None:
    # 1 GB/s is 0.8 of a 10 Gb/s link, but a third of the 3 GB/s this cluster reached before.
    record_baseline(tmp_path / "b.json", at(3.0), nodes=["n1", "n2"])
    standard = Standard(0.3, load_baseline(tmp_path / "b.json"))
    fake = FakeJobs(lambda first, second: 1.0)
    found = run(fake, hosts(2), slow_nodes=False, standard=standard)
    assert found.pairs[0].slow and found.pairs[0].of_link == pytest.approx(0.8)
    assert "below 0.70 of the baseline of" in found.standard
    assert found.finding.lines() == [
        "slow pair: node1 + node2: no pair tells yet which of them is slow (each needs a pair "
        "with a third node)"]
    # a baseline recorded up to 512 KiB says nothing of 1 MiB: the link does (0.8 of it is fast)
    shorter = dataclasses.replace(at(3.0), sizes=at(3.0).sizes[:-1])
    record_baseline(tmp_path / "b.json", shorter, nodes=["n1", "n2"])
    found = run(fake, hosts(2), slow_nodes=False,
                standard=Standard(0.3, load_baseline(tmp_path / "b.json")))
    assert found.pairs[0].slow is False and found.finding.lines() == []


@pytest.mark.parametrize("count", [4, 8, 9, 32])
def test_slow_nodes_names_the_throttled_node_in_two_rounds(count: int) -> None:
    nodes = hosts(count)
    for culprit in nodes:
        fake = FakeJobs(throttled(culprit.name))
        found = run(fake, nodes, slow_nodes=True)
        assert found.finding.culprits == (culprit.name,)
        # a node sitting out round 1 (odd N) is measured in round 2, or round 3 if it is
        # the culprit's round-2 partner
        assert found.rounds_run <= (2 if count % 2 == 0 else 3), culprit.name
        assert len(fake.launched) == len(found.pairs) < count * (count - 1) // 2
        assert found.finding.lines()[0].startswith(f"slow node: {culprit.name}: each of its "
                                                   "pairs is slow (")


def test_without_slow_nodes_every_pair_runs_and_the_culprit_is_the_same() -> None:
    fake = FakeJobs(throttled("node5"))
    found = run(fake, hosts(8), slow_nodes=True)
    early = len(fake.launched)
    found_all = run(fake, hosts(8), slow_nodes=False)
    assert len(fake.launched) - early == 28 and found_all.rounds_run == 7
    assert found_all.finding.culprits == found.finding.culprits == ("node5",)
    assert "stopped early: every node ran" in found.summary()
    assert "stopped early" not in found_all.summary()


def test_no_slow_pair_stops_once_every_node_ran() -> None:
    fake = FakeJobs(lambda first, second: 1.0)
    assert run(fake, hosts(8), slow_nodes=True).rounds_run == 1
    assert run(fake, hosts(7), slow_nodes=True).rounds_run == 2  # round 1 leaves one node out
    assert run(fake, hosts(7), slow_nodes=True).finding.lines() == []


def test_without_a_reference_only_failures_count_and_nothing_stops_early() -> None:
    fake = FakeJobs(lambda *pair: None if "node3" in pair else 0.001)
    found = run(fake, hosts(4), slow_nodes=True, facts={})
    assert found.rounds_run == 3 and {pair.slow for pair in found.pairs} == {True, None}
    assert sorted(found.finding.unresolved) == ["node1", "node2", "node3", "node4"]


def test_two_slow_nodes_are_both_named() -> None:
    fake = FakeJobs(lambda *pair: 0.01 if {"node2", "node6"} & set(pair) else 1.0)
    assert run(fake, hosts(8), slow_nodes=True).finding.culprits == ("node2", "node6")


def test_a_failed_pair_counts_as_slow() -> None:
    fake = FakeJobs(lambda *pair: None if "node3" in pair else 1.0)
    found = run(fake, hosts(6), slow_nodes=True)
    assert found.finding.culprits == ("node3",) and not found.pairs[0].outcome.ok


def test_a_slow_path_between_two_fast_nodes_is_the_link() -> None:
    fake = FakeJobs(lambda *pair: 0.01 if set(pair) == {"node1", "node3"} else 1.0)
    found = run(fake, hosts(4), slow_nodes=False)
    assert found.finding.culprits == () and found.finding.slow_paths == (("node1", "node3"),)
    assert found.finding.lines() == [
        "slow path: node1 + node3: both are fast with other nodes, so the link between them "
        "is slow (a switch port, a route)"]


def test_the_schedule_meets_every_pair_at_128_nodes_in_127_rounds() -> None:
    fake = FakeJobs(lambda first, second: 1.0)
    found = run(fake, hosts(128), slow_nodes=False)
    assert found.rounds_run == 127 and len(fake.launched) == len(set(fake.launched)) == 8128
    assert {frozenset(pair) for pair in fake.launched} == {
        frozenset(pair) for pair in itertools.combinations([h.name for h in hosts(128)], 2)}
