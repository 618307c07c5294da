"""Prove the cluster can train: the connectivity matrix, then the torchrun job, then the
bandwidth baseline. ``apply`` ends with it and records the baseline; ``verify`` compares.

    proof = prove_cluster(hosts, sessions, facts, params, Against(path, record=True))
    print_proof(console, proof)          # matrix problems, the sweep table, FAILED lines
    print(proof.verdict)                 # PASS: 3 nodes ... or FAIL: ... (2 FAILED lines above)

``pairwise`` (verify --pairwise) then runs the job on pairs of nodes in rounds of disjoint
pairs (``proof/pairwise.py``), to find the node or link behind a bandwidth drop; ``slow_nodes``
stops once the slow nodes are named.

The matrix runs first: a blocked port or a missing /etc/hosts line is named per node pair in
seconds, where the job would spend its timeout to say less. A broken matrix skips the job.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.table import Table

from nodeprov.engine.node_address import with_node_addresses
from nodeprov.inventory import Host
from nodeprov.proof.baseline import (
    Baseline,
    compare_to_baseline,
    kept_or_recorded,
    load_baseline,
)
from nodeprov.proof.connectivity import check_connectivity
from nodeprov.proof.jobfabric import JobFabric, job_fabric
from nodeprov.proof.launch import JobLaunch, JobOutcome, run_job
from nodeprov.proof.matrix import Matrix
from nodeprov.proof.pairwise import PairResult, Pairwise, Standard, run_pairwise
from nodeprov.proof.results import TABLE_HEADER, result_json, table_rows
from nodeprov.remote.facts import Facts
from nodeprov.remote.session import Session
from nodeprov.util.units import counted
from nodeprov.util.validate import printable

if TYPE_CHECKING:
    from nodeprov.playbook import JobParams


@dataclass(frozen=True)
class Proof:
    matrix: Matrix
    outcome: JobOutcome | None
    bandwidth_problem: str | None = None
    pairs: tuple[PairResult, ...] = ()  # slowest first
    baseline: Baseline | None = None  # the stored one: compared with, or recorded by this run
    baseline_path: Path | None = None
    link: Link | None = None  # the slowest node's link into the subnet, where every node says
    baseline_note: str | None = None  # apply recorded this run as the baseline, and why
    pairwise: Pairwise | None = None  # the rounds behind ``pairs`` and the slow nodes named
    fabric: JobFabric | None = None  # the transport the job took, its busbw against the NICs

    @property
    def slower(self) -> str | None:
        """The named warning of a passing job on a slower path than the nodes have."""
        return self.fabric.slower if self.fabric and self.ok else None

    @property
    def ok(self) -> bool:
        return (self.matrix.ok and self.outcome is not None and self.outcome.ok
                and self.bandwidth_problem is None and all(p.outcome.ok for p in self.pairs)
                and not (self.pairwise and self.pairwise.finding.lines()))

    @property
    def verdict(self) -> str:
        """The last line: the job's PASS only when nothing above it failed; a FAIL counts
        the FAILED lines above it, never repeats one (a failed job, its results wrong too:
        ``FAIL: the gloo job failed on 3 nodes (1 FAILED line above)``)."""
        above = counted(len(self.failures()), "FAILED line") + " above"
        if self.outcome is None:
            return f"FAIL: the connectivity matrix is broken ({above}); the job did not run"
        if self.ok:
            return "; ".join([self.outcome.verdict, *([self.fabric.line()] if self.fabric
                                                      else [])])
        if not self.outcome.ok:
            return f"{self.outcome.verdict} ({above})"
        failed_pairs = sum(not pair.outcome.ok for pair in self.pairs)
        what = [*(["the bus bandwidth is below the baseline"] if self.bandwidth_problem else []),
                *([f"{counted(failed_pairs, 'pair')} of nodes failed"] if failed_pairs else [])]
        return (f"FAIL: the job ran right on {counted(len(self.matrix.nodes), 'node')}, but "
                f"{' and '.join(what)} ({above})")

    def failures(self) -> list[str]:
        lines = self.matrix.problems()
        if self.outcome is not None:
            lines += self.outcome.failures
        lines += [f"pair {pair.line()}" for pair in self.pairs if not pair.outcome.ok]
        lines += self.pairwise.finding.lines() if self.pairwise else []
        return lines + ([self.bandwidth_problem] if self.bandwidth_problem else [])

    def to_json(self) -> dict[str, Any]:
        """docs/json-report.md: the matrix and the job as data, numbers in base units."""
        return {
            "ok": self.ok, "verdict": self.verdict, "failures": self.failures(),
            "connectivity": self.matrix.to_json(),
            "job": _job_json(self.outcome) if self.outcome else None,
            "baseline": (self.baseline.to_json(self.baseline_path)
                         if self.baseline and self.baseline_path else None),
            "bandwidth_problem": self.bandwidth_problem,
            "pairs": [_pair_json(pair) for pair in self.pairs],
            "link": dataclasses.asdict(self.link) if self.link else None,
            "baseline_note": self.baseline_note,
            "pairwise": self.pairwise.to_json() if self.pairwise else None,
            "fabric": self.fabric.to_json() if self.fabric else None,
        }


@dataclass(frozen=True)
class Link:
    """A node's link into the node subnet at the speed its kernel reports: what the sweep's
    busbw can come near (bytes per second, as the sweep's figures)."""

    node: str
    interface: str
    bytes_per_s: float

    def line(self) -> str:
        return (f"slowest link into the node subnet: {self.node} {self.interface}, "
                f"{self.bytes_per_s * 8 / 1e9:g} Gb/s")


def slowest_link(hosts: Sequence[Host], facts: Mapping[str, Facts]) -> Link | None:
    """The slowest of the nodes' links into node_subnet; None unless each node has one
    interface there whose speed its kernel reports (a virtual NIC often does not)."""
    links = []
    for host in hosts:
        found = facts.get(host.name)
        carrying = found.interfaces_in(host.vars["node_subnet"]) if found else []
        if len(carrying) != 1 or carrying[0].speed_mbps is None:
            return None
        links.append(Link(host.name, carrying[0].name, carrying[0].speed_mbps * 1e6 / 8))
    return min(links, key=lambda link: link.bytes_per_s, default=None)


def _job_json(outcome: JobOutcome) -> dict[str, Any]:
    return {**outcome.to_json(), "nodes": {name: dict(found)
                                           for name, found in outcome.versions.items()},
            "result": result_json(outcome.result) if outcome.result else None}


def _pair_json(pair: PairResult) -> dict[str, Any]:
    largest = pair.largest
    return {"nodes": list(pair.pair), "line": pair.line(), "ok": pair.outcome.ok,
            "bytes": largest.bytes if largest else None,
            "busbw_bytes_per_s": largest.busbw_gbps * 1e9 if largest else None,
            "round": pair.round, "slow": pair.slow, "link_bytes_per_s": pair.link_bytes_per_s,
            "of_link": pair.of_link, "duration_s": round(pair.outcome.duration_s, 3)}


@dataclass(frozen=True)
class Against:
    """The bandwidth baseline a proof is held to, at ``path``: ``record`` is apply's rule
    (``kept_or_recorded``; ``rebaseline`` records this run's over it), else verify's (the
    result is compared with it)."""

    path: Path
    record: bool = False
    rebaseline: bool = False


def prove_cluster(hosts: Sequence[Host], sessions: Mapping[str, Session],
                  facts: Mapping[str, Facts], params: JobParams, against: Against, *,
                  pairwise: bool = False, slow_nodes: bool = False) -> Proof:
    """Matrix, then the job when the matrix is clean, held to the baseline ``against`` says;
    ``pairwise`` adds the job on every pair of nodes (``slow_nodes``: only until the slow
    nodes are named)."""
    baseline = against.path
    hosts, problems = with_node_addresses(hosts, facts)
    if problems:
        return Proof(Matrix(tuple(host.name for host in hosts), (), tuple(problems.values())),
                     None)
    matrix = check_connectivity(hosts, sessions, facts, params.rdzv_port)
    if not matrix.ok:
        return Proof(matrix, None)
    job = JobLaunch(params.backend, params.venv_path, params.rdzv_port, params.timeout,
                    params.max_bytes)
    outcome = run_job(hosts, sessions, facts, job)
    found = run_pairwise(hosts, sessions, facts,
                         Standard(params.bandwidth_drop, load_baseline(baseline)),
                         slow_nodes=slow_nodes, job=job) if pairwise else None
    pairs = found.pairs if found else ()
    link = slowest_link(hosts, facts)
    if outcome.result is None or not outcome.ok:
        return Proof(matrix, outcome, pairs=pairs, link=link, pairwise=found)
    fabric = seen_fabric(hosts, facts, outcome, link)
    if against.record:
        stored, note, problem = kept_or_recorded(
            baseline, outcome.result, drop=params.bandwidth_drop, rebaseline=against.rebaseline,
            nodes=[host.name for host in hosts],
            link_bytes_per_s=link.bytes_per_s if link else None)
        return Proof(matrix, outcome, problem, pairs, stored, baseline, link, note,
                     pairwise=found, fabric=fabric)
    return Proof(matrix, outcome,
                 compare_to_baseline(baseline, outcome.result, params.bandwidth_drop), pairs,
                 load_baseline(baseline), baseline, link, pairwise=found, fabric=fabric)


def seen_fabric(hosts: Sequence[Host], facts: Mapping[str, Facts], outcome: JobOutcome,
                link: Link | None) -> JobFabric:
    """The transport of a job that ran, and its largest size's busbw against the NICs."""
    largest = max(outcome.result.sizes, key=lambda row: row.bytes, default=None) if (
        outcome.result and outcome.result.world_size > 1) else None
    return job_fabric(hosts, facts, outcome.outputs, backend=outcome.backend,
                      busbw_gbps=largest.busbw_gbps if largest else None,
                      link=(link.interface, link.bytes_per_s * 8 / 1e9) if link else None)


def print_proof(console: Console, proof: Proof) -> None:
    if not proof.matrix.ok:
        console.print(proof.matrix.table())
    if proof.outcome is not None and proof.outcome.result is not None:
        table = Table(title="all-reduce sweep (busbw as nccl-tests defines it)",
                      title_justify="left")
        for column in TABLE_HEADER:
            table.add_column(column, justify="right")
        for row in table_rows(proof.outcome.result):
            table.add_row(*row)
        table.caption = proof.link.line() if proof.link else None
        table.caption_justify = "left"
        console.print(table)
    if proof.pairwise:
        console.print(f"pairs, slowest first: {proof.pairwise.summary()}", markup=False,
                      highlight=False)
        for pair in proof.pairs:
            console.print(f"  {pair.line()}", markup=False, highlight=False)
    if proof.baseline_note:
        console.print(proof.baseline_note, markup=False, highlight=False)
    if proof.slower:
        console.print(f"WARNING {proof.slower}", style="bold yellow", markup=False,
                      highlight=False)
    for line in proof.failures():  # the command's last line holds the proof's verdict
        console.print(printable(f"FAILED {line}"), style="bold red", markup=False,
                      highlight=False)
