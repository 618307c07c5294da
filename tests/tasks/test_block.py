"""The block task's plans on a recorded /etc/hosts holding a block (tests/tasks/data): added,
kept, updated and removed, the lines outside it kept byte for byte, broken markers refused.
Its runs on real nodes: tests/engine/test_runner.py and tests/checks/test_plans.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from nodeprov.tasks import block
from nodeprov.tasks.base import Change, TaskFailed, Write
from tests.tasks.kit import plan_task

HOSTS = (Path(__file__).parent / "data" / "hosts-block.txt").read_text()
NODES = ["10.0.0.11 node1.cluster.local node1", "10.0.0.12 gpu2 node2",
         "10.0.0.99 node3.old node3"]
OURS = {"path": "/etc/hosts", "name": "hosts"}


def written(plan_changes: tuple[Change, ...]) -> str:
    (change,) = plan_changes
    (write,) = change.actions
    assert isinstance(write, Write) and write.path == "/etc/hosts"
    return write.content


def test_the_same_lines_are_in_sync_and_say_so() -> None:
    plan = plan_task(block.TASK, {**OURS, "lines": NODES}, {"/etc/hosts": HOSTS})
    assert plan.in_sync and plan.notes == ("/etc/hosts: block 'hosts' already has 3 lines",)


def test_new_lines_replace_the_block_and_keep_every_line_outside_it() -> None:
    plan = plan_task(block.TASK, {**OURS, "lines": NODES[:2]}, {"/etc/hosts": HOSTS})
    assert plan.changes[0].summary == "update block 'hosts' in /etc/hosts"
    new = written(plan.changes)
    assert new == HOSTS.replace(NODES[2] + "\n", "")
    assert "-10.0.0.99 node3.old node3" in plan.changes[0].diff


def test_a_file_without_the_block_gets_it_added_and_absent_removes_it() -> None:
    plan = plan_task(block.TASK, {"path": "/etc/motd", "lines": ["hi"]}, {"/etc/motd": None})
    assert plan.changes[0].summary == "add block 'managed' in /etc/motd"
    removed = plan_task(block.TASK, {**OURS, "state": "absent"}, {"/etc/hosts": HOSTS})
    assert removed.changes[0].summary == "remove block 'hosts' in /etc/hosts"
    assert written(removed.changes) == ("127.0.0.1 localhost\n"
                                        "192.168.1.5 nas  # added after nodeprov\n")


def test_an_end_marker_without_its_begin_fails_naming_the_file_and_writes_nothing() -> None:
    broken = HOSTS.replace("# BEGIN nodeprov hosts", "# BEGUN nodeprov hosts")
    with pytest.raises(TaskFailed, match=r"^/etc/hosts: "):
        plan_task(block.TASK, {**OURS, "lines": NODES}, {"/etc/hosts": broken})
