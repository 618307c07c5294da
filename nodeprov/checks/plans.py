"""Drift is a non-empty plan: every task of the playbook planned on its nodes as ``apply --check``
plans it (the same probes, read in one round trip per host), and each task with changes is one
drift line naming what apply would do and the command that does it::

    outcome = plan_playbook(playbook, inventory, targets, sessions, ssh)
    for result in plan_results(outcome, playbook, repairs):
        print(result.message)  # n2 ipv6: plan: disable IPv6 now: ...; repair: nodeprov apply ...

A task added to the registry is verified with no change here: its plan is its promise.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from nodeprov.checks import CheckResult, Drift
from nodeprov.engine.outcome import HostResult, PlaybookOutcome, TaskResult
from nodeprov.engine.runner import RunOptions, run_playbook
from nodeprov.inventory import Host, Inventory
from nodeprov.playbook import Playbook, TaskSpec
from nodeprov.remote.options import SshOptions
from nodeprov.remote.session import Session
from nodeprov.util.fanout import DEFAULT_FORKS


class _Silent:
    """The runner's reporter for a run whose outcome is read afterwards."""

    def task_done(self, host: str, result: TaskResult) -> None:
        pass

    def host_done(self, result: HostResult) -> None:
        pass


def plan_playbook(playbook: Playbook, inventory: Inventory, targets: Sequence[Host],
                  sessions: Mapping[str, Session], ssh: SshOptions,
                  forks: int = DEFAULT_FORKS) -> PlaybookOutcome:
    """Every task's plan on ``targets``, acting on nothing: ``apply --check``'s run (``forks``
    hosts at once). The sessions (one per inventory host) stay open for the caller, who closes
    them."""
    return run_playbook(playbook, inventory, targets,
                        RunOptions(check=True, forks=forks, ssh=ssh), _Silent(), sessions)


def node_specs(playbook: Playbook, node: str) -> list[TaskSpec]:
    """The node's tasks in the order the runner plans them."""
    return [spec for play in playbook.plays if any(host.name == node for host in play.hosts)
            for spec in play.tasks]


def plan_results(outcome: PlaybookOutcome, playbook: Playbook,
                 drift: Callable[[str, TaskSpec], Drift]) -> list[CheckResult]:
    """One result per node and task (one per node that could not be read at all); ``drift``
    builds a node's drift lines for a task (its area and repair command)."""
    results = []
    for host in outcome.results:
        if not host.tasks:  # unreachable, or its facts could not be read
            results.append(CheckResult(f"plan[{host.name}]", host.name, None, "error",
                                       host.error or f"{host.name}: not read"))
            continue
        for spec, task in zip(node_specs(playbook, host.name), host.tasks, strict=True):
            results.append(task_result(host, task, drift(host.name, spec)))
    return results


def task_result(host: HostResult, task: TaskResult, drift: Drift) -> CheckResult:
    check = f"plan::{task.name}[{host.name}]"
    if task.status == "changed":
        return CheckResult(check, host.name, task.type, "failed", drift.plan_line(task.changes),
                           drift.repair, task.duration)
    if task.conflicted:  # what the user must remove: no nodeprov command changes it
        removal = (task.error or "").removeprefix(f"{host.name}: {task.type}: ")
        return CheckResult(check, host.name, task.type, "failed",
                           drift.by_hand_line(removal, task.changes),
                           drift.repair if task.changes else "", task.duration)
    if task.status == "failed":  # the plan says the node cannot get there; its error says why
        return CheckResult(check, host.name, task.type, "failed", task.error or "",
                           duration=task.duration)
    if task.status == "skipped":  # an earlier task failed: that line says it
        return CheckResult(check, host.name, task.type, "error", host.error or "")
    warnings = f"{host.name} {task.type}: warning: {'; '.join(task.warnings)}"
    return CheckResult(check, host.name, task.type, "passed",
                       warnings if task.warnings else "", duration=task.duration)
