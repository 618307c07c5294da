"""The time `verify --pairwise` takes to name a throttled node at 8, 32 and 128 nodes: rounds of
disjoint pairs (``--pairwise``, ``--slow-nodes``) against one pair at a time (before).

    sudo .venv/bin/python -m tests.bench.pairwise --nodes 8,32,128 --rate 1mbit --reps 3

One real small run, then a model built on it; nothing at 8 nodes or more is run for real.

- Real: a 2-node testbed with nodeprov's default playbook (torch from this machine's wheels),
  the verification job on the pair ``--reps`` times at full speed, then ``--reps`` times with
  node2's link throttled (tc tbf at ``--rate`` on its end of the veth). Per pair: run_job's own
  clock (launch to verdict, torch's start included) and busbw at the largest size; the median.
- Model: nodeprov's own ``run_pairwise`` on N made-up nodes, one of them throttled, with
  ``run_job`` replaced by a fake that hands back the real result and seconds measured above
  (throttled when the pair holds that node). A round lasts as long as its slowest pair, since
  its pairs run at once on their own nodes' links, as on a real cluster (not on this 2-core
  machine, where concurrent pairs share the cores). Before: every pair one after another, each
  with its measured seconds. The throttled node takes every position in turn; the worst and
  the median are printed.
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nodeprov.inventory import Host, load_inventory
from nodeprov.proof.baseline import Baseline
from nodeprov.proof.launch import JobLaunch, JobOutcome, run_job
from nodeprov.proof.pairwise import Pairwise, Standard, run_pairwise
from nodeprov.remote.options import SshOptions
from nodeprov.remote.session import Session
from nodeprov.testbed.cluster import Testbed
from nodeprov.testbed.lifecycle import down
from tests.bench.job import RDZV_PORT, VENV, provision

MAX_BYTES = 256 << 10  # as tests/proof/test_slow_node.py: a throttled sweep stays short
DIRECTORY = Path("/srv/nodeprov-bench/pairwise")


@dataclass(frozen=True)
class Measured:
    fast: JobOutcome  # the median run (by seconds) of the pair at full speed
    slow: JobOutcome  # ... and with one node throttled


def measure(reps: int, rate: str) -> Measured:
    """The job on a real pair, at full speed and throttled, ``reps`` times each."""
    down(DIRECTORY)
    bed, _ = provision(DIRECTORY, nodes=2)
    try:
        fast = _runs(bed, reps)
        bed.exec("node2", "tc", "qdisc", "add", "dev", "eth0", "root", "tbf", "rate", rate,
                 "burst", "32kbit", "latency", "400ms", check=True)
        slow = _runs(bed, reps)
    finally:
        down(DIRECTORY)
    return Measured(_median(fast), _median(slow))


def _runs(bed: Testbed, reps: int) -> list[JobOutcome]:
    hosts = list(load_inventory(bed.inventory_path).hosts)
    sessions = {host.name: Session(host, SshOptions()) for host in hosts}
    try:
        for session in sessions.values():
            session.open()
        facts = {name: session.gather([])[0] for name, session in sessions.items()}
        outcomes = [run_job(hosts, sessions, facts,
                            JobLaunch("gloo", VENV, RDZV_PORT, 300, MAX_BYTES))
                    for _ in range(reps)]
    finally:
        for session in sessions.values():
            session.close()
    failed = [outcome.cause for outcome in outcomes if not outcome.ok]
    if failed:
        raise RuntimeError(f"the real pair failed: {failed[0]}")
    return outcomes


def _median(outcomes: Sequence[JobOutcome]) -> JobOutcome:
    return sorted(outcomes, key=lambda outcome: outcome.duration_s)[len(outcomes) // 2]


def _busbw(outcome: JobOutcome) -> float:
    assert outcome.result is not None
    return max(outcome.result.sizes, key=lambda row: row.bytes).busbw_gbps


def model(count: int, throttled: str, measured: Measured, slow_nodes: bool) -> Pairwise:
    """nodeprov's run_pairwise on ``count`` nodes, each pair's job the measured one."""
    def fake_run_job(pair: list[Host], sessions: Any, facts: Any, **options: Any) -> JobOutcome:
        return measured.slow if throttled in (pair[0].name, pair[1].name) else measured.fast

    assert measured.fast.result is not None
    result = measured.fast.result
    baseline = Baseline("the real pair at full speed", result.backend, result.nnodes,
                        result.world_size, {row.bytes: row.busbw_gbps for row in result.sizes})
    nodes = [Host(f"node{n}", f"node{n}", "", vars={"node_subnet": "10.0.0.0/8"})
             for n in range(1, count + 1)]
    return run_pairwise(nodes, {}, {}, Standard(0.3, baseline), slow_nodes=slow_nodes,
                        launch=fake_run_job)


def rounds_seconds(found: Pairwise) -> float:
    """A round lasts as long as its slowest pair."""
    by_round: dict[int, float] = {}
    for pair in found.pairs:
        by_round[pair.round] = max(by_round.get(pair.round, 0.0), pair.outcome.duration_s)
    return sum(by_round.values())


def one_at_a_time_seconds(count: int, measured: Measured) -> float:
    """Before: every pair, one after another (the throttled node is in count-1 of them)."""
    pairs = count * (count - 1) // 2
    return (count - 1) * measured.slow.duration_s + (pairs - count + 1) * measured.fast.duration_s


def row(count: int, measured: Measured) -> list[str]:
    names = [f"node{n}" for n in range(1, count + 1)]
    early: list[tuple[float, int, int]] = []
    own = time.perf_counter()
    for throttled in names:
        found = model(count, throttled, measured, slow_nodes=True)
        if found.finding.culprits != (throttled,):
            raise RuntimeError(f"{count} nodes: named {found.finding.culprits}, not {throttled}")
        early.append((rounds_seconds(found), found.rounds_run, len(found.pairs)))
    own = (time.perf_counter() - own) / count
    full = model(count, names[-1], measured, slow_nodes=False)
    assert full.finding.culprits == (names[-1],)
    worst = max(early)
    median = statistics.median(seconds for seconds, _, _ in early)
    return [str(count), f"{len(list(itertools.combinations(names, 2)))}",
            f"{one_at_a_time_seconds(count, measured):,.0f}",
            f"{full.rounds_run} rounds, {rounds_seconds(full):,.0f}",
            f"{worst[1]} rounds ({worst[2]} pairs), {worst[0]:,.0f} (median {median:,.0f})",
            f"{one_at_a_time_seconds(count, measured) / worst[0]:,.0f}x", f"{own:.3f}"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", default="8,32,128")
    parser.add_argument("--rate", default="1mbit")
    parser.add_argument("--reps", type=int, default=3)
    options = parser.parse_args()
    measured = measure(options.reps, options.rate)
    print(f"real pair (2 testbed nodes, gloo, up to {MAX_BYTES >> 10} KiB, median of "
          f"{options.reps}): full speed {measured.fast.duration_s:.1f} s at "
          f"{_busbw(measured.fast):.4f} GB/s; node2 throttled to {options.rate} "
          f"{measured.slow.duration_s:.1f} s at {_busbw(measured.slow):.4f} GB/s\n")
    header = ["nodes", "pairs", "one at a time (s)", "--pairwise (s)",
              "--slow-nodes, worst position (s)", "speed-up", "nodeprov's own s per search"]
    print("| " + " | ".join(header) + " |")
    print("|" + "|".join("---" for _ in header) + "|")
    for count in (int(each) for each in options.nodes.split(",")):
        print("| " + " | ".join(row(count, measured)) + " |", flush=True)


if __name__ == "__main__":
    main()
