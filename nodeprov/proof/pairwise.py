"""``verify --pairwise``: the job on pairs of nodes, disjoint pairs at once in rounds, each
pair's busbw held against its link, and the slow nodes named.

    standard = Standard(drop=0.3, baseline=load_baseline(path))
    found = run_pairwise(hosts, sessions, facts, standard, slow_nodes=True, job=job)
    for pair in found.pairs:          # slowest first
        print(pair.line())            # node1 + node4: 0.01 GB/s busbw at 1 MiB = 0.01 of ...
    print(found.finding.lines())      # ['slow node: node4: ...']

A pair is slow when its job failed or its busbw at the largest size is below ``1 - drop`` of
the reference: the baseline's busbw at that size when apply recorded one (the path this cluster
really reaches), else the slower of the two nodes' link speeds (/sys/class/net/IFACE/speed);
with neither, a pair that ran is not judged, and clears no node.
A node is named (``slow_nodes``) when it has no fast pair, two or more slow ones, and one of
those partners is fast with another node; with ``slow_nodes`` the rounds stop as soon as every
node has run once and every slow pair is told apart.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from nodeprov.proof.launch import JobOutcome, run_job
from nodeprov.proof.results import SizeResult
from nodeprov.proof.rounds import Pair, round_robin
from nodeprov.util.fanout import on_every
from nodeprov.util.units import human_bytes

if TYPE_CHECKING:
    from nodeprov.inventory import Host
    from nodeprov.proof.baseline import Baseline
    from nodeprov.remote.facts import Facts
    from nodeprov.remote.session import Session

Launch = Callable[..., JobOutcome]  # run_job's shape: (hosts, sessions, facts, job=JobLaunch)


@dataclass(frozen=True)
class PairResult:
    pair: Pair
    outcome: JobOutcome
    link_bytes_per_s: float | None = None  # the slower of the two nodes' links
    round: int = 1
    slow: bool | None = False  # None: nothing to hold its busbw against (Standard.reference)

    @property
    def largest(self) -> SizeResult | None:
        """The largest size the pair measured, None when the pair's job failed."""
        result = self.outcome.result
        if result is None or not result.ok or not result.sizes:
            return None
        return max(result.sizes, key=lambda row: row.bytes)

    @property
    def of_link(self) -> float | None:
        """busbw as a fraction of the pair's link, where both are known."""
        if self.largest is None or not self.link_bytes_per_s:
            return None
        return self.largest.busbw_gbps * 1e9 / self.link_bytes_per_s

    def line(self) -> str:
        first, second = self.pair
        if self.largest is None:
            return f"{first} + {second}: {self.outcome.cause or self.outcome.verdict}"
        link = (f" = {_figure(self.of_link)} of {self.link_bytes_per_s * 8 / 1e9:g} Gb/s"
                if self.of_link is not None and self.link_bytes_per_s else "")
        return (f"{first} + {second}: {_figure(self.largest.busbw_gbps)} GB/s busbw at "
                f"{human_bytes(self.largest.bytes)}{link}{': slow' if self.slow else ''}")


def _figure(value: float) -> str:
    """Two decimals, or two significant digits where those would say 0.00.

    >>> _figure(0.8), _figure(0.0001234), _figure(0.0)
    ('0.80', '0.00012', '0.00')
    """
    return f"{value:.2f}" if value >= 0.01 or value == 0 else f"{value:.2g}"


@dataclass(frozen=True)
class Standard:
    """What a pair's busbw is held against: ``1 - drop`` of the baseline at the same size, or
    of the pair's link where the baseline has no such size."""

    drop: float
    baseline: Baseline | None = None

    def reference(self, pair: PairResult) -> float | None:
        """Bytes per second the pair should come near, None when nothing says."""
        largest = pair.largest
        recorded = (self.baseline.busbw_gbps.get(largest.bytes)
                    if self.baseline is not None and largest is not None else None)
        return recorded * 1e9 if recorded else pair.link_bytes_per_s

    def is_slow(self, pair: PairResult) -> bool | None:
        """True when the job failed or fell below the reference, None without one."""
        reference = self.reference(pair)
        if pair.largest is None:
            return True
        if reference is None:
            return None
        return pair.largest.busbw_gbps * 1e9 < (1 - self.drop) * reference

    def describe(self) -> str:
        link = "the slower node's link speed, where it says"
        against = (f"the baseline of {self.baseline.recorded} at the same size (else {link})"
                   if self.baseline else link)
        return f"a pair is slow below {1 - self.drop:.2f} of {against}, or when its job fails"


@dataclass(frozen=True)
class Finding:
    """Which nodes the slow pairs point at; a slow pair of two nodes that are each fast with
    someone else is the path between them."""

    culprits: tuple[str, ...] = ()
    unresolved: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # node: slow partners
    slow_paths: tuple[Pair, ...] = ()
    cleared_by: Mapping[str, str] = field(default_factory=dict)  # culprit: a fast partner's node
    slow_partners: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    def lines(self) -> list[str]:
        """One line per slow node, undecided node and slow path."""
        named = [f"slow node: {node}: each of its pairs is slow "
                 f"({', '.join(self.slow_partners[node])}), while {self.cleared_by[node]} is "
                 "fast with another node" for node in self.culprits]
        undecided = sorted({tuple(sorted((node, partner)))
                            for node, partners in self.unresolved.items() for partner in partners})
        open_ = [f"slow pair: {first} + {second}: no pair tells yet which of them is slow (each "
                 "needs a pair with a third node)" for first, second in undecided]
        paths = [f"slow path: {first} + {second}: both are fast with other nodes, so the link "
                 "between them is slow (a switch port, a route)"
                 for first, second in self.slow_paths]
        return named + open_ + paths

    def to_json(self) -> dict[str, Any]:
        return {"culprits": list(self.culprits),
                "unresolved": sorted(self.unresolved),
                "slow_paths": [list(pair) for pair in self.slow_paths],
                "lines": self.lines()}


def find_slow_nodes(pairs: Sequence[PairResult]) -> Finding:
    """Name the nodes the slow pairs share.

    >>> def pair(first, second, slow):
    ...     return PairResult((first, second), JobOutcome(True, None, "", [], 0), slow=slow)
    >>> found = find_slow_nodes([pair("a", "d", True), pair("b", "c", False),
    ...                          pair("a", "c", False), pair("d", "b", True)])
    >>> found.culprits, dict(found.unresolved), found.slow_paths
    (('d',), {}, ())
    >>> dict(find_slow_nodes([pair("a", "d", True), pair("b", "c", False)]).unresolved)
    {'a': ('d',), 'd': ('a',)}
    """
    fast: dict[str, list[str]] = {}
    slow: dict[str, list[str]] = {}
    for each in pairs:
        if each.slow is None:
            continue
        first, second = each.pair
        into = slow if each.slow else fast
        into.setdefault(first, []).append(second)
        into.setdefault(second, []).append(first)
    cleared_by = {node: next(partner for partner in partners if partner in fast)
                  for node, partners in slow.items()
                  if node not in fast and len(partners) >= 2
                  and any(partner in fast for partner in partners)}
    culprits = tuple(sorted(cleared_by))
    unresolved = {node: tuple(partners) for node, partners in sorted(slow.items())
                  if node not in fast and node not in cleared_by
                  and not all(partner in cleared_by for partner in partners)}
    paths = tuple(each.pair for each in pairs
                  if each.slow and each.pair[0] in fast and each.pair[1] in fast)
    return Finding(culprits, unresolved, paths, cleared_by,
                   {node: tuple(partners) for node, partners in slow.items()})


@dataclass(frozen=True)
class Pairwise:
    pairs: tuple[PairResult, ...]  # slowest first
    finding: Finding
    rounds_run: int
    rounds_total: int
    standard: str
    seconds: float

    def summary(self) -> str:
        stopped = " (stopped early: every node ran, no slow pair is left undecided)" if (
            self.rounds_run < self.rounds_total) else ""
        return (f"{len(self.pairs)} pairs in {self.rounds_run} of {self.rounds_total} rounds, "
                f"{self.seconds:.1f}s{stopped}; {self.standard}")

    def to_json(self) -> dict[str, Any]:
        return {**self.finding.to_json(), "rounds_run": self.rounds_run,
                "rounds_total": self.rounds_total, "standard": self.standard,
                "duration_s": round(self.seconds, 3)}


def link_speeds(hosts: Sequence[Host], facts: Mapping[str, Facts]) -> dict[str, float]:
    """Bytes per second of each node's one link into node_subnet, where its kernel says."""
    speeds = {}
    for host in hosts:
        found = facts.get(host.name)
        carrying = found.interfaces_in(host.vars["node_subnet"]) if found else []
        if len(carrying) == 1 and carrying[0].speed_mbps:
            speeds[host.name] = carrying[0].speed_mbps * 1e6 / 8
    return speeds


def run_pairwise(hosts: Sequence[Host], sessions: Mapping[str, Session],
                 facts: Mapping[str, Facts], standard: Standard, *, slow_nodes: bool = False,
                 launch: Launch = run_job, **job_options: Any) -> Pairwise:
    """The job on every pair of nodes, a round's disjoint pairs at once (no two share a node's
    link); ``slow_nodes`` stops after the first round that leaves nothing undecided.
    ``job_options`` are run_job's keyword arguments (``launch``: run_job, or a stand-in for
    it in tests and tests/bench/pairwise.py)."""
    started = time.monotonic()
    by_name = {host.name: host for host in hosts}
    speeds = link_speeds(hosts, facts)
    rounds = round_robin(list(by_name))
    done: list[PairResult] = []

    def run(pair: Pair) -> JobOutcome:
        return launch([by_name[pair[0]], by_name[pair[1]]], sessions, facts, **job_options)

    for number, pairs in enumerate(rounds, 1):
        for pair, outcome in zip(pairs, on_every(run, pairs), strict=True):
            if isinstance(outcome, Exception):  # run_job reports; this is a bug's last stop
                outcome = JobOutcome(False, None, f"FAIL: {outcome}", [str(outcome)], 0.0)
            link = (min(speeds[name] for name in pair)
                    if all(name in speeds for name in pair) else None)
            measured = PairResult(pair, outcome, link, number)
            done.append(dataclasses.replace(measured, slow=standard.is_slow(measured)))
        ran = {name for each in done if each.slow is not None for name in each.pair}
        if slow_nodes and ran == set(by_name) and not find_slow_nodes(done).unresolved:
            break

    def speed(pair: PairResult) -> tuple[bool, float]:
        return pair.largest is not None, pair.largest.busbw_gbps if pair.largest else 0.0

    return Pairwise(tuple(sorted(done, key=speed)), find_slow_nodes(done),
                    max((each.round for each in done), default=0), len(rounds),
                    standard.describe(), time.monotonic() - started)
