"""Verification: plan every task, run the checks, and collect the drift; change nothing.

    verification = run_checks(load_inventory(Path("inventory.yaml")))
    for line in verification.drift_lines():
        print(line)   # node2 firewall: plan: enable ufw ...; repair: nodeprov apply ...

First every task of the playbook is planned on its nodes as ``apply --check`` plans it
(``nodeprov.checks.plans``): a non-empty plan is drift. Then the pytest-testinfra modules of
``nodeprov.checks`` run in this process over the same sessions, for what a plan cannot see
from inside a node. A small plugin collects one result per check from pytest's reports; a
failed check's assertion message is its drift line, so nothing scrapes pytest's output.

Each check is a CheckResult: outcome passed, failed (drift), error (could not run: an
unreachable node) or skipped (the playbook has no such task). A task's plan is a check named
``plan::<task name>[<node>]`` whose area is the task type; a plan in sync with warnings passes,
the warnings as its message. ``nodeprov verify`` (commands.verify) prints them and writes the
JSON report.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from nodeprov.checks import (
    AREA_PROPERTY,
    NODE_PROPERTY,
    REPAIR_SEPARATOR,
    CheckResult,
    Drift,
    Outcome,
    failure_message,
)
from nodeprov.checks.cluster import Opened
from nodeprov.checks.fresh import AREAS, read_all_fresh
from nodeprov.checks.plans import node_specs, plan_playbook, plan_results
from nodeprov.errors import InputError, NodeprovError
from nodeprov.inventory import Inventory
from nodeprov.inventory.extravars import parse_extra_vars
from nodeprov.playbook import default_playbook, load_playbook
from nodeprov.remote.facts import Facts
from nodeprov.remote.options import SshOptions
from nodeprov.remote.session import Session
from nodeprov.util.fanout import DEFAULT_FORKS

if TYPE_CHECKING:
    from nodeprov.engine.outcome import PlaybookOutcome

__all__ = ["CheckResult", "Collector", "Outcome", "Verification", "run_checks"]


@dataclass(frozen=True)
class Verification:
    """Every check's result; what ``nodeprov verify`` prints, and what a later step builds on."""

    results: tuple[CheckResult, ...]
    duration: float

    @property
    def drifted(self) -> list[CheckResult]:
        """The checks that failed or could not run, in run order."""
        return [result for result in self.results if result.outcome in ("failed", "error")]

    @property
    def ok(self) -> bool:
        return not self.drifted

    def drift_lines(self) -> list[str]:
        """One line per drifted item; an unreachable node fails all its checks: said once."""
        return list(dict.fromkeys(result.message for result in self.drifted))

    def count(self, outcome: Outcome) -> int:
        return sum(result.outcome == outcome for result in self.results)


class Collector:
    """pytest plugin: one CheckResult per check (its call, or the setup that failed or skipped),
    plus collection errors (a check module that cannot even be imported)."""

    def __init__(self) -> None:
        self.results: list[CheckResult] = []

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when != "call" and report.passed:
            return
        properties = {key: str(value) for key, value in report.user_properties}
        message = ""
        outcome: Outcome = report.outcome
        if report.failed:
            message = failure_message(_crash_text(report))
            outcome = "failed" if report.when == "call" else "error"
        elif report.skipped and isinstance(report.longrepr, tuple):
            message = failure_message(report.longrepr[2])
        self.results.append(CheckResult(
            check=report.nodeid, node=properties.get(NODE_PROPERTY),
            area=properties.get(AREA_PROPERTY), outcome=outcome, message=message,
            repair=message.rpartition(REPAIR_SEPARATOR)[2] if REPAIR_SEPARATOR in message else "",
            duration=report.duration))

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.failed:
            # an import error's text ends with the exception: "E   ModuleNotFoundError: ..."
            last = str(report.longrepr).strip().splitlines()[-1].removeprefix("E").strip()
            self.results.append(CheckResult(
                check=report.nodeid, node=None, area=None, outcome="error",
                message=f"{report.nodeid}: checks could not be loaded: {last}"))


def _crash_text(report: pytest.TestReport) -> str:
    crash = getattr(report.longrepr, "reprcrash", None)
    return str(crash.message) if crash is not None else str(report.longrepr)


def run_checks(inventory: Inventory, playbook_path: Path | None = None, *,
               limit: str | None = None, accept_new_host_keys: bool = False,
               extra_vars: Sequence[str] = (), forks: int = DEFAULT_FORKS) -> Verification:
    """Plan every task on the inventory's nodes (or ``limit``), ``forks`` at once, then run
    every check over the same sessions (and the same inventory: ``Opened``); raises
    InputError first when the playbook or limit is invalid, before any connection."""
    from nodeprov.remote.hostkeys import SshFiles  # lazy: Fabric is slow to import

    extra = parse_extra_vars(extra_vars)
    playbook = load_playbook(playbook_path or default_playbook(), inventory, extra)
    targets = inventory.limited(limit)
    started = time.monotonic()
    ssh = SshOptions(accept_new_host_keys=accept_new_host_keys)
    files = SshFiles(inventory.ssh_configs)
    sessions = {host.name: Session(host, ssh, files) for host in inventory.hosts}
    fresh = [node.name for node in targets
             if any(spec.type.name in AREAS for spec in node_specs(playbook, node.name))]
    try:
        outcome = plan_playbook(playbook, inventory, targets, sessions, ssh, forks)
        results = plan_results(outcome, playbook, lambda node, spec: Drift(
            node, spec.type.name, str(inventory.path), spec.tags[0] if spec.tags else None,
            str(playbook_path) if playbook_path else None, tuple(extra_vars)))
        gathered = _gathered(outcome)
        opened = Opened(sessions, gathered, outcome.probed,
                        read_all_fresh(fresh, sessions, gathered, forks), forks, inventory)
        results += _run_modules(inventory.path, playbook_path, limit, accept_new_host_keys,
                                extra_vars, opened)
    finally:
        for session in sessions.values():
            session.close()
    return Verification(tuple(results), time.monotonic() - started)


def _gathered(outcome: PlaybookOutcome) -> dict[str, Facts | str]:
    """Every inventory node's facts, or why there are none (what a check then fails with)."""
    errors = {result.name: result.error for result in outcome.results}
    return {name: facts if facts is not None else errors.get(name) or f"{name}: not reachable"
            for name, facts in outcome.facts.items()}


def _run_modules(inventory_path: Path, playbook_path: Path | None, limit: str | None,
                 accept_new_host_keys: bool, extra_vars: Sequence[str],
                 opened: Opened) -> list[CheckResult]:
    """The check modules of ``nodeprov.checks`` under pytest, in this process."""
    checks_dir = str(resources.files("nodeprov.checks"))
    args = [
        # the folder, not --pyargs: pytest loads the conftest.py of the directory verify is
        # run from (and its test* folders) when its arguments name no existing path
        "-p", "nodeprov.checks", checks_dir,
        # isolate from the caller's pytest config and plugins' output: the report is ours
        "-c", os.devnull, "--rootdir", checks_dir, "--confcutdir", checks_dir,
        "-p", "no:cacheprovider", "-p", "no:terminal", "--continue-on-collection-errors",
        "--inventory", str(inventory_path),
    ]
    if playbook_path:
        args += ["--playbook", str(playbook_path)]
    if limit:
        args += ["--limit", limit]
    if accept_new_host_keys:
        args.append("--accept-new-host-keys")
    for value in extra_vars:
        args += ["--extra-vars", value]
    collector = Collector()
    status = pytest.main(args, plugins=[collector, opened])
    if status in (pytest.ExitCode.USAGE_ERROR, pytest.ExitCode.INTERNAL_ERROR,
                  pytest.ExitCode.INTERRUPTED):
        raise (InputError if status == pytest.ExitCode.USAGE_ERROR else NodeprovError)(
            f"the checks did not run (pytest exit status {int(status)}); run them with pytest "
            f"to see why: pytest -p nodeprov.checks --pyargs nodeprov.checks --inventory "
            f"{inventory_path}")
    return collector.results
