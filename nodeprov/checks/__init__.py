"""The checks behind ``nodeprov verify``: each task's plan (plans.py), then pytest-testinfra
modules for the promises a plan cannot see from inside the node (a peer's view, a new session's
environment, torch importing).

Run them through ``nodeprov verify [INVENTORY]``, or the modules directly with pytest::

    pytest -p nodeprov.checks --pyargs nodeprov.checks --inventory inventory.yaml \
        [--playbook P] [--limit node2]

``-p nodeprov.checks`` loads this module as a plugin: its options must exist before pytest
collects the package (a package's conftest.py is too late under --pyargs). The fixtures are in
conftest.py.

A failed check's assertion message is its drift line: the node, the area, what was found, what
was expected, and the command that repairs it; a task's non-empty plan gives the same kind of
line, listing the changes apply would make::

    >>> Drift("n2", "hosts", "inv.yaml", "hosts").line("no block", "3 lines")
    'n2 hosts: no block (expected 3 lines); repair: nodeprov apply inv.yaml --limit n2 --tags hosts'
    >>> Drift("n2", "ipv6", "inv.yaml", None).plan_line(["disable IPv6 now", "write f"])
    'n2 ipv6: plan: disable IPv6 now; write f; repair: nodeprov apply inv.yaml --limit n2'
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import pytest

from nodeprov.inventory.extravars import repeatable
from nodeprov.tasks.base import Plan

# pytest's user_properties keys by which the verify plugin knows a check's node and area.
NODE_PROPERTY = "nodeprov_node"
AREA_PROPERTY = "nodeprov_area"
REPAIR_SEPARATOR = "; repair: "
# pytest prints a crash as "ExceptionType: message"; a drift line's first word has no colon.
_EXCEPTION_PREFIX = re.compile(r"^[A-Za-z_][\w.]*: ")

# "error": the check could not run (an unreachable node, a check that crashed)
Outcome = Literal["passed", "failed", "error", "skipped"]


@dataclass(frozen=True)
class CheckResult:
    """One check (or one task's plan) on one node: ``message`` is the drift line when it
    failed, a passed plan's warnings otherwise."""

    check: str
    node: str | None
    area: str | None
    outcome: Outcome
    message: str = ""
    repair: str = ""
    duration: float = 0.0


@dataclass(frozen=True)
class Drift:
    """Builds one node's drift lines for one area (the check's assertion messages)."""

    node: str
    area: str
    inventory: str
    tag: str | None
    playbook: str | None = None
    extra_vars: tuple[str, ...] = ()  # verify's -e: the repair repeats them, passwords aside

    @property
    def repair(self) -> str:
        """The apply command that brings this node's area back (only that node, that tag)."""
        argv = ["nodeprov", "apply", self.inventory]
        if self.playbook:
            argv += ["--playbook", self.playbook]
        argv += repeatable(self.extra_vars)
        argv += ["--limit", self.node]
        if self.tag:
            argv += ["--tags", self.tag]
        return shlex.join(argv)

    def line(self, found: str, expected: str, repair: str | None = None) -> str:
        """The drift line; ``repair`` replaces the apply command when apply cannot fix it."""
        return (f"{self.node} {self.area}: {found} (expected {expected}){REPAIR_SEPARATOR}"
                f"{repair or self.repair}")

    def plan_line(self, changes: Sequence[str]) -> str:
        """The drift line of a task whose plan is not empty: the changes apply would make."""
        return f"{self.node} {self.area}: plan: {'; '.join(changes)}{REPAIR_SEPARATOR}{self.repair}"

    def by_hand_line(self, removal: str, changes: Sequence[str] = ()) -> str:
        """The drift line of what the user must remove (a task's conflicts): no apply command
        when that is all, since none would change it; with apply's own changes, both.

            >>> Drift("n2", "hosts", "i.yaml", "hosts").by_hand_line("/etc/hosts:5: remove it")
            'n2 hosts: by hand: /etc/hosts:5: remove it'
        """
        if not changes:
            return f"{self.node} {self.area}: by hand: {removal}"
        return (f"{self.node} {self.area}: plan: {'; '.join(changes)}; by hand: {removal}"
                f"{REPAIR_SEPARATOR}{self.repair}")


    def effect_line(self, found: str, expected: str, plan: Plan, by_hand: str) -> str:
        """An effect check's drift line, its repair what would change it: apply where the task's
        plan has changes, else what the plan says to remove, else ``by_hand`` (never an apply
        command that changes nothing).

            >>> Drift("n2", "hosts", "i.yaml", "hosts").effect_line("x", "y", Plan(), "do z")
            'n2 hosts: x (expected y): by hand: do z'
        """
        if plan.changes:
            return self.line(found, expected)
        removal = "; ".join(plan.conflicts) or by_hand
        return f"{self.node} {self.area}: {found} (expected {expected}): by hand: {removal}"


def failure_message(crash: str) -> str:
    """A failed check's one line from pytest's crash text ("AssertionError: line\\nassert ...")

        >>> failure_message("AssertionError: node2 hosts: no block\\nassert None")
        'node2 hosts: no block'
        >>> failure_message("nodeprov.errors.Unreachable: node2: cannot connect")
        'node2: cannot connect'
    """
    first = crash.strip().splitlines()[0] if crash.strip() else "failed without a message"
    return _EXCEPTION_PREFIX.sub("", first, count=1)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("nodeprov")
    group.addoption("--inventory", default=os.environ.get("NODEPROV_INVENTORY"),
                    help="nodeprov inventory whose nodes are checked (default: "
                         "$NODEPROV_INVENTORY)")
    group.addoption("--playbook", default=None,
                    help="the playbook whose promises are checked (default: nodeprov's "
                         "site.yaml)")
    group.addoption("--limit", default=None, help="only these nodes (as nodeprov apply --limit)")
    group.addoption("--extra-vars", action="append", default=[], metavar="VARS",
                    help="as nodeprov apply -e: KEY=VALUE or @FILE, above every inventory var")
    group.addoption("--accept-new-host-keys", action="store_true",
                    help="trust and record unknown SSH host keys (changed keys are always "
                         "refused)")
