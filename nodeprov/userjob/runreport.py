"""How a ``nodeprov run`` went: per node, the verdict line, the exit code and the JSON report.

    outcome.closing_line()  # PASS: 3 nodes, 3 ranks: every rank exited 0 in 14.2 s, or
                            # FAIL: node2 failed (rank 1: ValueError: boom); node1, node3 were ...
    outcome.exit_code     # 0, 1, 130 after Ctrl-C (128+N after signal N: 143 SIGTERM)
    outcome.to_json()     # the "run" report: {"schema_version", "command", "ok", "exit_code", ...}

Which node failed first: one whose failure is its own before one that only lost its peer,
whatever the clocks say (``runfailures.cause_order``), then the ranks' own records
(``RankEnd.ended``, the node's clock to the microsecond): torchrun's "Root Cause (first
observed failure)" is only the first among its own node's ranks, timed to the second
(``ChildFailedError.get_first_failure``).
"""

from __future__ import annotations

import signal
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from nodeprov.errors import EXIT_HOST_FAILED, EXIT_OK
from nodeprov.jsonreport import document
from nodeprov.userjob.ranklog import raised
from nodeprov.util.units import clipped, counted

if TYPE_CHECKING:
    from nodeprov.job.nodejob import RankEnd
    from nodeprov.proof.matrix import Matrix


@dataclass(frozen=True)
class NodeRun:
    """One node's ranks: their exit code (the first rank's that is not 0; torchrun's when a
    rank never ended by itself; None: the round trip failed, see ``error``), seconds from the
    start to its end, whether nodeprov stopped it while a rank ran, its log here, files
    synced and the seconds that took, and each rank's own end."""

    exit_code: int | None
    duration_s: float
    stopped: bool
    log: str
    synced: int | None = None
    error: str = ""
    nproc: int = 0  # the ranks torchrun started on it (which global ranks: the rendezvous says)
    sync_s: float | None = None
    ranks: Mapping[int, RankEnd] = field(default_factory=dict)


@dataclass(frozen=True)
class FirstFailure:
    """The node that failed first, its failing rank (None: torchrun named none), and the tail."""

    node: str
    rank: int | None
    tail: str


@dataclass(frozen=True)
class UserJobOutcome:
    """How ``nodeprov run`` ended: each node's ranks, the diagnosis, the preflight matrix."""

    run_id: str
    nodes: Mapping[str, NodeRun]
    diagnosis: tuple[str, ...]
    duration_s: float
    matrix: Matrix | None = None
    refused: bool = False  # the preflight matrix or the sync found a problem: nothing started
    interrupted: str = ""  # the signal that stopped it: SIGINT (Ctrl-C), SIGTERM, SIGHUP
    first_failure: FirstFailure | None = None
    log_dir: str = ""
    ranks: int = 0
    notes: tuple[str, ...] = ()  # what the nodes said of the run before (stopped by the node)
    unreached: int = 0  # nodes no session reached: nothing started
    failed: tuple[str, ...] = ()  # the failing nodes, the first cause first (cause_order)
    lost_peer: tuple[str, ...] = ()  # of those, the ones that only lost their peer

    @classmethod
    def not_reached(cls, errors: Mapping[str, str], names: Sequence[str]) -> UserJobOutcome:
        """The run that did not start: ``errors`` (node -> one line) of the nodes ``names``
        that no session reached (or whose address could not be told)."""
        return cls("", {name: NodeRun(None, 0.0, False, "", error=errors.get(name, ""))
                        for name in names},
                   tuple(errors.values()), 0.0, refused=True, unreached=len(errors))

    @property
    def ok(self) -> bool:
        return (not self.refused and not self.interrupted and not self.diagnosis
                and bool(self.nodes) and all(n.exit_code == 0 for n in self.nodes.values()))

    @property
    def exit_code(self) -> int:
        if self.interrupted:  # as shells report a signal: 130 for Ctrl-C
            return 128 + signal.Signals[self.interrupted].value
        return EXIT_OK if self.ok else EXIT_HOST_FAILED

    def _plain_verdict(self) -> str:
        """The verdict where no failing node's lines came first (closing_line)."""
        if self.refused and self.matrix is not None and not self.matrix.ok:
            return (f"FAIL: not started: the connectivity matrix found "
                    f"{len(self.diagnosis)} problem(s); first: {self.diagnosis[0]}")
        if self.unreached:
            return (f"FAIL: not started: {self.unreached} of {len(self.nodes)} nodes "
                    "unreachable")
        if self.refused:
            return f"FAIL: not started: {self.diagnosis[0]}"
        if self.interrupted:
            by = "Ctrl-C" if self.interrupted == "SIGINT" else self.interrupted
            return (f"INTERRUPTED ({by}): stopped every rank on every node after "
                    f"{self.duration_s:.1f} s (logs: {self.log_dir})")
        if self.ok:
            return (f"PASS: {counted(len(self.nodes), 'node')}, {self.ranks} ranks: every rank "
                    f"exited 0 in {self.duration_s:.1f} s (logs: {self.log_dir})")
        return f"FAIL: {counted(len(self.nodes), 'node')}: a node failed"

    def closing_line(self) -> str:
        """The verdict as the terminal's last line, after the failing nodes' lines: the node
        that failed first and the nodes stopped because of it (``FAIL: node2 failed (rank 1:
        ValueError: boom); node1, node3 were stopped by it (logs: DIR)``), or how many failed
        alike (``FAIL: 3 of 3 nodes failed (node1, node2, node3), as said above ...``)."""
        if (self.refused or self.unreached or self.interrupted or self.ok
                or not self.diagnosis):
            return self._plain_verdict()
        failed = list(self.failed) or [name for name, node in self.nodes.items()
                                       if _failed_itself(node)]
        if not failed:  # every node was stopped (the deadline): none failed by itself
            return (f"FAIL: {counted(len(self.nodes), 'node')} stopped, as said above "
                    f"(logs: {self.log_dir})")
        first = root_causes(failed, self.lost_peer, self.diagnosis)
        stopped = [name for name, node in self.nodes.items()
                   if name not in first and node.exit_code not in (0, None)]
        if not stopped:  # they failed alike, or on their own: named in the inventory's order
            return (f"FAIL: {len(first)} of {counted(len(self.nodes), 'node')} failed "
                    f"({', '.join(n for n in self.nodes if n in first)}), as said above "
                    f"(logs: {self.log_dir})")
        return (f"FAIL: {', '.join(first)} failed{self._cause(first[0], len(first) > 1)}; "
                f"{', '.join(stopped)} {'was' if len(stopped) == 1 else 'were'} stopped by "
                f"{'it' if len(first) == 1 else 'them'} (logs: {self.log_dir})")

    def _cause(self, name: str, several: bool) -> str:
        """`` (rank 1: ValueError: boom)``: the node's first failing rank, with the exception
        it raised where its tail shows one; empty where nothing names a rank."""
        said = self.first_failure if self.first_failure and self.first_failure.node == name \
            else None
        rank = first_failed_rank(self.nodes[name].ranks)
        rank = said.rank if rank is None and said else rank
        if rank is None:
            return ""
        exception = raised(said.tail.splitlines()) if said and said.rank == rank else None
        where = f"rank {rank}{f' on {name}' if several else ''}"
        return f" ({where}: {clipped(exception, 160)})" if exception else f" ({where})"

    def to_json(self) -> dict[str, Any]:
        """The ``run`` report of the one schema (``nodeprov.jsonreport``)."""
        failure = self.first_failure
        return document(
            "run", self.ok, exit_code=self.exit_code, verdict=self.closing_line(),
            run_id=self.run_id, duration_s=round(self.duration_s, 3),
            log_dir=self.log_dir, ranks=self.ranks,
            preflight=None if self.matrix is None else self.matrix.to_json(),
            refused=self.refused, interrupted=bool(self.interrupted),
            interrupted_by=self.interrupted or None, notes=list(self.notes),
            nodes={name: {"exit_code": node.exit_code, "duration_s": round(node.duration_s, 3),
                          "stopped": node.stopped, "log": node.log, "synced": node.synced,
                          "sync_s": None if node.sync_s is None else round(node.sync_s, 3),
                          "error": node.error, "nproc": node.nproc,
                          "ranks": {str(rank): {"exit_code": end.exit_code,
                                                "duration_s": round(end.seconds, 3)}
                                    for rank, end in sorted(node.ranks.items())}}
                   for name, node in self.nodes.items()},
            diagnosis=list(self.diagnosis),
            first_failure=None if failure is None else {
                "node": failure.node, "rank": failure.rank, "tail": failure.tail})


def first_failed_rank(ranks: Mapping[int, RankEnd]) -> int | None:
    """The rank whose record ended first with an exit code that is not 0; None: none did."""
    failing = [(end.ended, rank) for rank, end in ranks.items() if end.exit_code != 0]
    return min(failing)[1] if failing else None


def failed_at(ranks: Mapping[int, RankEnd]) -> float | None:
    """When the first rank of a node failed, on its clock; None where no record says."""
    rank = first_failed_rank(ranks)
    return None if rank is None else ranks[rank].ended


def root_causes(failed: Sequence[str], lost_peer: Collection[str],
                diagnosis: Sequence[str]) -> list[str]:
    """Of the ``failed`` nodes (the first cause first), the causes: the first, those a line
    names with it (they failed alike: each still waiting for a node that had finished, say),
    and each other whose failure is its own, not a lost peer ("Connection closed by peer",
    "Terminated", a rank killed by a signal), which is what a rank says when the first cause
    stopped the job.

    >>> root_causes(["node2", "node1"], {"node1"}, ["node2: job: rank 1 raised ValueError: x",
    ...                                             "node1: job: ... Connection closed by peer"])
    ['node2']
    >>> root_causes(["node2", "node1"], (), ["node2: job: rank 1 raised ValueError: x",
    ...                                      "node1: job: rank 0 raised KeyError: 'y'"])
    ['node2', 'node1']
    >>> root_causes(["node2", "node1"], {"node2", "node1"}, ["node2, node1: job: Broken pipe"])
    ['node2', 'node1']
    """
    alike = {name for line in diagnosis if failed[0] in _named(line) for name in _named(line)}
    return [failed[0], *(name for name in failed[1:]
                         if name in alike or name not in lost_peer)]


def _named(line: str) -> list[str]:
    """The nodes a diagnosis line names first (several: they failed alike): ``node1, node2:
    venv: ...``."""
    who, found, _ = line.partition(": ")
    return who.split(", ") if found else []


def _failed_itself(node: NodeRun) -> bool:
    """A rank of the node exited non-zero by itself, or its torchrun did before any stop: the
    nodes nodeprov stopped because another failed are not counted (their ranks end -15)."""
    return (any(end.exit_code > 0 for end in node.ranks.values())
            or (node.exit_code not in (0, None) and not node.stopped))
