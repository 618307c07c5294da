"""How a ``nodeprov run`` went: per node, the verdict line, the exit code and the JSON report.

    outcome.verdict()     # PASS: 3 nodes, 3 ranks: every rank exited 0 in 14.2 s
    outcome.exit_code     # 0, 1, 130 after Ctrl-C (128+N after signal N: 143 SIGTERM)
    outcome.to_json()     # the "run" report: {"schema_version", "command", "ok", "exit_code", ...}
"""

from __future__ import annotations

import signal
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from nodeprov.errors import EXIT_HOST_FAILED, EXIT_OK
from nodeprov.jsonreport import document

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
    failed: tuple[str, ...] = ()  # the nodes the diagnosis names as failing, not their peers

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

    def verdict(self) -> str:
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
            return (f"PASS: {_nodes(len(self.nodes))}, {self.ranks} ranks: every rank exited 0 "
                    f"in {self.duration_s:.1f} s (logs: {self.log_dir})")
        first = self.diagnosis[0] if self.diagnosis else "a node failed"
        return f"FAIL: {_nodes(len(self.nodes))}: {first}"

    def closing_line(self) -> str:
        """The verdict as the terminal's last line, after the failing nodes' lines: a run that
        started and failed names how many nodes failed rather than repeat the first of those
        lines (``FAIL: 3 of 3 nodes failed, as said above (logs: DIR)``)."""
        if (self.refused or self.unreached or self.interrupted or self.ok
                or not self.diagnosis):
            return self.verdict()
        # the nodes the diagnosis names; a peer whose ranks ended because of them is not one
        failed = list(self.failed) or [name for name, node in self.nodes.items()
                                       if _failed_itself(node)]
        if not failed:  # every node was stopped (the deadline): none failed by itself
            return (f"FAIL: {_nodes(len(self.nodes))} stopped, as said above "
                    f"(logs: {self.log_dir})")
        return (f"FAIL: {len(failed)} of {_nodes(len(self.nodes))} failed ({', '.join(failed)}), "
                f"as said above (logs: {self.log_dir})")

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


def _failed_itself(node: NodeRun) -> bool:
    """A rank of the node exited non-zero by itself, or its torchrun did before any stop: the
    nodes nodeprov stopped because another failed are not counted (their ranks end -15)."""
    return (any(end.exit_code > 0 for end in node.ranks.values())
            or (node.exit_code not in (0, None) and not node.stopped))


def _nodes(count: int) -> str:
    return f"{count} node{'s' if count != 1 else ''}"
