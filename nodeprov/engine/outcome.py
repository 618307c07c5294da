"""What a run reports: per task, per host, the whole run; and how Ctrl-C ends it.

    outcome.results[0].tasks[0].status     # "ok", "changed", "failed" or "skipped"
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, Protocol

from nodeprov.errors import EXIT_INTERRUPTED, NodeprovError
from nodeprov.remote.facts import Facts

TaskStatus = Literal["ok", "changed", "failed", "skipped"]
HostStatus = Literal["ok", "changed", "failed", "unreachable"]


@dataclass
class TaskResult:
    name: str
    type: str
    status: TaskStatus
    changes: list[str] = field(default_factory=list)
    diffs: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    error: str | None = None
    duration: float = 0.0
    start_s: float | None = None  # seconds after the command began; None: never started
    conflicted: bool = False  # failed on what the user must remove (Plan.conflicts) alone


@dataclass
class HostResult:
    name: str
    status: HostStatus = "ok"
    tasks: list[TaskResult] = field(default_factory=list)
    error: str | None = None
    duration: float = 0.0
    connections: int = 0
    round_trips: int = 0
    facts: Facts | None = None


@dataclass(frozen=True)
class PlaybookOutcome:
    """A playbook's run (apply, or verify's plans; ``nodeprov run`` has UserJobOutcome): one
    result per target host (in order), and every inventory host's facts (None when it could not
    be read), for what runs after the tasks; ``probed``: each target host's last probe output
    per task type (its first task of that type), for verify's checks."""

    results: list[HostResult]
    facts: dict[str, Facts | None]
    probed: dict[str, dict[str, str]] = field(default_factory=dict)


class Interrupted(NodeprovError, KeyboardInterrupt):
    """Ctrl-C stopped the run between round trips; ``outcome`` says where each host stopped.
    Still a KeyboardInterrupt, so no handler of task errors swallows it."""

    exit_code = EXIT_INTERRUPTED

    def __init__(self, outcome: PlaybookOutcome) -> None:
        super().__init__("interrupted (Ctrl-C): each node finished the command in flight; run "
                         "again to converge")
        self.outcome = outcome


class Reporter(Protocol):
    """Receives progress from the runner's threads (implementations must be thread-safe)."""

    def task_done(self, host: str, result: TaskResult) -> None: ...

    def host_done(self, result: HostResult) -> None: ...
