"""The runner's round trips, on a fake session whose node is a dict of files: a first apply
costs one round trip per changed task, and every plan sees what the tasks before it did."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

import pytest

from nodeprov.engine.outcome import HostResult, TaskResult
from nodeprov.engine.runner import RunOptions, run_playbook
from nodeprov.inventory import Host, load_inventory
from nodeprov.playbook import load_playbook
from nodeprov.remote import reader
from nodeprov.remote.actions import Action, Probe, Write
from nodeprov.remote.facts import Facts, parse_facts, split_sections
from nodeprov.remote.session import Session
from nodeprov.tasks.base import Context, Plan
from nodeprov.tasks.registry import REGISTRY
from nodeprov.tasks.textfiles import blocks

FACTS = parse_facts(split_sections(
    (Path(__file__).parents[1] / "data" / "facts" / "debian12-vm.txt").read_text(), "TOKEN123"))
INVENTORY = """\
all:
  vars: {node_subnet: 10.0.0.0/24}
  hosts:
    node1: {ansible_host: 10.0.0.11}
"""
# the third task's lines need the facts: its probe is known only at its turn
PLAYBOOK = """\
- name: notices
  hosts: all
  tasks:
    - {name: one, block: {path: /etc/motd, name: one, lines: [first]}}
    - {name: two, block: {path: /etc/issue, name: two, lines: [second]}}
    - {name: three, block: {path: /etc/motd, name: three, lines: ["{{ facts.hostname }}"]}}
"""


class FakeNode:
    """Stands in for a Session: a node holding ``texts``; reads the block probes' files."""

    def __init__(self, texts: dict[str, str]) -> None:
        self.texts = texts
        self.host = Host("node1", "10.0.0.1", "10.0.0.1", port=22)  # as a Session after open
        self.connections = self.round_trips = 0
        self.locked = False
        self.calls: list[str] = []

    def open(self) -> None:
        self.connections += 1

    def unlock(self) -> None:
        self.locked = False

    def gather(self, probes: Sequence[Probe | None], *,
               lock_wait: float | None = None) -> tuple[Facts, list[str]]:
        self.round_trips += 1
        self.calls.append("gather")
        self.locked = self.locked or lock_wait is not None
        return FACTS, self._read(probes)

    def execute(self, task: str, actions: Sequence[Action], *,
                then_read: Sequence[Probe | None] | None = None
                ) -> tuple[Facts, list[str]] | None:
        self.round_trips += 1
        self.calls.append("execute")
        for action in actions:
            assert isinstance(action, Write)
            self.texts[action.path] = action.content
        return None if then_read is None else (FACTS, self._read(then_read))

    def _read(self, probes: Sequence[Probe | None]) -> list[str]:
        # reader.read_many_probe(path): sh -c SCRIPT NAME ROOT PATH
        return ["" if probe is None else reader.files_output({probe.argv[5]:
                                                             self.texts.get(probe.argv[5])})
                for probe in probes]


class Quiet:
    def task_done(self, host: str, result: TaskResult) -> None:
        pass

    def host_done(self, result: Any) -> None:
        pass


def apply(tmp_path: Path, node: FakeNode, check: bool = False) -> list[str]:
    result = applied(tmp_path, node, check)
    assert result.error is None, result.error
    return [task.status for task in result.tasks]

def applied(tmp_path: Path, node: FakeNode, check: bool = False) -> HostResult:
    """The playbook applied to ``node``: its host's result, whatever it is."""
    (tmp_path / "inventory.yaml").write_text(INVENTORY)
    (tmp_path / "playbook.yaml").write_text(PLAYBOOK)
    inventory = load_inventory(tmp_path / "inventory.yaml")
    outcome = run_playbook(load_playbook(tmp_path / "playbook.yaml", inventory), inventory,
                           inventory.hosts, RunOptions(check=check), Quiet(),
                           {"node1": cast(Session, node)})
    (result,) = outcome.results
    return result


def test_first_apply_reads_the_next_probes_with_each_change(tmp_path: Path) -> None:
    issue = blocks.replace_block("", "two", ["second"])
    node = FakeNode({"/etc/motd": "welcome\n", "/etc/issue": issue})
    assert apply(tmp_path, node) == ["changed", "ok", "changed"]
    # the third task's probe needs its parameters (facts): read at its turn, so it sees the
    # first task's block, and keeps it
    assert node.calls == ["gather", "execute", "gather", "execute"]
    motd = node.texts["/etc/motd"]
    assert motd.startswith("welcome\n") and blocks.block_lines(motd, "one") == ["first"]
    assert blocks.block_lines(motd, "three") == [FACTS.hostname]
    assert node.texts["/etc/issue"] == issue

    again = FakeNode(node.texts)
    assert apply(tmp_path, again) == ["ok", "ok", "ok"]
    assert again.calls == ["gather", "gather"]  # the second: the facts-dependent probe


def test_each_change_reads_the_next_probes_in_its_round_trip(tmp_path: Path) -> None:
    node = FakeNode({})
    assert apply(tmp_path, node) == ["changed", "changed", "changed"]
    assert node.calls == ["gather", "execute", "execute", "gather", "execute"]
    assert blocks.block_lines(node.texts["/etc/issue"], "two") == ["second"]


def test_check_reads_once_and_changes_nothing(tmp_path: Path) -> None:
    node = FakeNode({})
    assert apply(tmp_path, node, check=True) == ["changed", "changed", "changed"]
    assert node.texts == {} and node.calls == ["gather", "gather"]



def test_what_a_change_left_is_read_in_its_round_trip_and_its_warnings_reported(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    block = REGISTRY["block"]

    def plan(ctx: Context, params: Any, observed: str) -> Plan:
        """block's plan, warning about a block once it is in sync (as torch's about uv)."""
        planned = block.plan(ctx, params, observed)
        return planned if planned.changes else Plan.noop(
            *planned.notes, warnings=[f"{params.path} holds block {params.name}"])

    monkeypatch.setitem(REGISTRY, "block", dataclasses.replace(block, plan=plan))
    node = FakeNode({})
    result = applied(tmp_path, node)
    assert [(task.status, task.warnings) for task in result.tasks] == [
        ("changed", ["/etc/motd holds block one"]), ("changed", ["/etc/issue holds block two"]),
        ("changed", ["/etc/motd holds block three"])]
    assert node.calls == ["gather", "execute", "execute", "gather", "execute"]  # no more


def test_a_conflict_fails_its_task_after_its_changes_and_the_next_tasks_still_run(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    block = REGISTRY["block"]

    def plan(ctx: Context, params: Any, observed: str) -> Plan:
        """block's plan, with a user's line in /etc/issue that nodeprov must not touch."""
        planned = block.plan(ctx, params, observed)
        if params.path != "/etc/issue":
            return planned
        return dataclasses.replace(planned, conflicts=("/etc/issue:1 'x': remove that line",))

    monkeypatch.setitem(REGISTRY, "block", dataclasses.replace(block, plan=plan))
    node = FakeNode({})
    result = applied(tmp_path, node)
    assert [(task.status, task.conflicted) for task in result.tasks] == [
        ("changed", False), ("failed", True), ("changed", False)]
    assert result.status == "failed"  # a later change does not hide it
    assert result.error == "node1: block: /etc/issue:1 'x': remove that line"
    # the conflicted task's own change was made, and so was the third task's
    assert blocks.block_lines(node.texts["/etc/issue"], "two") == ["second"]
    assert blocks.block_lines(node.texts["/etc/motd"], "three") == [FACTS.hostname]
