"""Rolling application on fake nodes: a play's serial: and max_fail_percentage: as Ansible
defines them, and the batches the report and the recap show."""

from __future__ import annotations

import io
from collections.abc import Sequence
from pathlib import Path
from typing import cast

import pytest
from rich.console import Console
from test_runner import FakeNode, Quiet

from nodeprov.commands.console import print_batches
from nodeprov.engine.rolling import Batch, Rolled, run_rolling
from nodeprov.engine.runner import RunOptions
from nodeprov.errors import InputError, Unreachable
from nodeprov.inventory import load_inventory
from nodeprov.playbook import load_playbook
from nodeprov.remote.actions import Action, Probe
from nodeprov.remote.session import Session
from nodeprov.tasks.base import TaskFailed
from nodeprov.tasks.textfiles import blocks

NAMES = [f"node{number}" for number in range(1, 6)]
INVENTORY = "all:\n  vars: {node_subnet: 10.0.0.0/24}\n  hosts:\n" + "".join(
    f"    {name}: {{ansible_host: 10.0.0.1{index}}}\n" for index, name in enumerate(NAMES, 1))
PLAY = """\
- name: notice
  hosts: all
{rolling}
  tasks:
    - {{name: motd, block: {{path: /etc/motd, name: motd, lines: [managed]}}}}
"""


class BrokenNode(FakeNode):
    """A node whose file system refuses every write."""

    def execute(self, task: str, actions: Sequence[Action], *,
                then_read: Sequence[Probe | None] | None = None) -> None:
        raise TaskFailed("/etc/motd: Read-only file system")


class DownNode(FakeNode):
    """A node that refuses connections."""

    def open(self) -> None:
        self.connections += 1
        raise Unreachable("node", "", "cannot connect")


def roll(tmp_path: Path, rolling: str, broken: Sequence[str] = (),
         playbook: str = PLAY, down: Sequence[str] = ()) -> tuple[Rolled, dict[str, FakeNode]]:
    (tmp_path / "inventory.yaml").write_text(INVENTORY)
    (tmp_path / "playbook.yaml").write_text(playbook.format(rolling=rolling))
    inventory = load_inventory(tmp_path / "inventory.yaml")
    playbook_ = load_playbook(tmp_path / "playbook.yaml", inventory)
    nodes = {name: (BrokenNode if name in broken else DownNode if name in down else FakeNode)({})
             for name in NAMES}
    rolled = run_rolling(playbook_, inventory, inventory.hosts, RunOptions(), Quiet(),
                         {name: cast(Session, node) for name, node in nodes.items()})
    return rolled, nodes


def batches(rolled: Rolled) -> list[tuple[tuple[str, ...], tuple[str, ...]]]:
    return [(batch.hosts, batch.failed) for batch in rolled.batches]


def managed(nodes: dict[str, FakeNode]) -> list[str]:
    return [name for name, node in nodes.items()
            if blocks.block_lines(node.texts.get("/etc/motd", ""), "motd") == ["managed"]]


def test_batch_sizes_then_the_last_one_repeats_and_every_node_converges(tmp_path: Path) -> None:
    rolled, nodes = roll(tmp_path, '  serial: [1, "40%"]')
    assert batches(rolled) == [(("node1",), ()), (("node2", "node3"), ()),
                               (("node4", "node5"), ())]
    assert rolled.stopped is None and managed(nodes) == NAMES
    assert [result.status for result in rolled.run.results] == ["changed"] * 5
    # each node is connected once and read again only in its own batch
    assert all(node.connections == 1 for node in nodes.values())
    assert nodes["node5"].calls == ["gather", "gather", "execute"]


def test_a_failure_beyond_max_fail_percentage_stops_the_later_batches(tmp_path: Path) -> None:
    rolled, nodes = roll(tmp_path, "  serial: 2\n  max_fail_percentage: 0", broken=["node2"])
    assert batches(rolled) == [(("node1", "node2"), ("node2",))]
    assert rolled.stopped == ("play 'notice', batch 1: 1 of 2 hosts failed, more than "
                              "max_fail_percentage 0%")
    assert managed(nodes) == ["node1"]
    assert all(nodes[name].calls.count("execute") == 0 for name in NAMES[2:])
    assert [r.name for r in rolled.run.results] == ["node1", "node2"]


def test_an_unreachable_node_is_tried_once_not_in_every_batch(tmp_path: Path) -> None:
    rolled, nodes = roll(tmp_path, "  serial: 2", down=["node1"])
    assert batches(rolled) == [(("node1", "node2"), ("node1",)), (("node3", "node4"), ()),
                               (("node5",), ())]
    assert nodes["node1"].connections == 1 and managed(nodes) == NAMES[1:]
    assert {r.name: r.status for r in rolled.run.results}["node1"] == "unreachable"


def test_the_percentage_must_be_exceeded_not_reached(tmp_path: Path) -> None:
    rolled, nodes = roll(tmp_path, "  serial: 2\n  max_fail_percentage: 50",
                         broken=["node1", "node4"])
    assert batches(rolled) == [(("node1", "node2"), ("node1",)), (("node3", "node4"), ("node4",)),
                               (("node5",), ())]
    assert rolled.stopped is None and managed(nodes) == ["node2", "node3", "node5"]


def test_a_wholly_failed_batch_stops_even_without_max_fail_percentage(tmp_path: Path) -> None:
    rolled, nodes = roll(tmp_path, "  serial: 1", broken=["node1"])
    assert batches(rolled) == [(("node1",), ("node1",))]
    assert rolled.stopped is not None and "every host of the batch (1) failed" in rolled.stopped
    assert managed(nodes) == []


def test_without_serial_every_host_runs_in_one_pass(tmp_path: Path) -> None:
    rolled, nodes = roll(tmp_path, "", broken=["node3"])
    assert batches(rolled) == [(tuple(NAMES), ("node3",))] and rolled.stopped is None
    assert managed(nodes) == ["node1", "node2", "node4", "node5"]
    assert all(node.calls == ["gather", "execute"] for n, node in nodes.items() if n != "node3")


def test_a_host_failed_in_one_play_is_left_out_of_the_next(tmp_path: Path) -> None:
    two_plays = PLAY + """\
- name: issue
  hosts: all
  serial: 10
  tasks:
    - {{name: issue, block: {{path: /etc/issue, name: issue, lines: [managed]}}}}
"""
    rolled, nodes = roll(tmp_path, "  serial: 5", broken=["node1"], playbook=two_plays)
    assert batches(rolled) == [(tuple(NAMES), ("node1",)), (tuple(NAMES[1:]), ())]
    assert "/etc/issue" not in nodes["node1"].texts
    assert all("/etc/issue" in nodes[name].texts for name in NAMES[1:])
    node2 = {r.name: r for r in rolled.run.results}["node2"]
    assert [task.name for task in node2.tasks] == ["motd", "issue"]


def test_the_recap_lists_the_batches_and_why_it_stopped() -> None:
    out = io.StringIO()
    print_batches(Console(file=out, width=200), [
        Batch("notice", 1, ("node1",), ()), Batch("notice", 2, ("node2", "node3"), ("node3",))],
        "play 'notice', batch 2: 1 of 2 hosts failed, more than max_fail_percentage 0%",
        ["node4", "node5"])
    assert out.getvalue().splitlines() == [
        "batch 1 of play 'notice': node1",
        "batch 2 of play 'notice': node2, node3; failed: node3",
        "stopped: play 'notice', batch 2: 1 of 2 hosts failed, more than max_fail_percentage 0%;"
        " later batches did not run", "not run: node4, node5"]


def test_one_batch_per_play_prints_nothing() -> None:
    out = io.StringIO()
    print_batches(Console(file=out), [Batch("notice", 1, ("node1", "node2"), ("node2",))], None)
    assert out.getvalue() == ""


@pytest.mark.parametrize(("rolling", "message"), [
    ("  serial: -1", "playbook.yaml:3: play 'notice' serial: -1 is not a batch size"),
    ('  serial: [1, "x%"]', "playbook.yaml:3: play 'notice' serial: 'x%' is not a batch size"),
    ("  serial: []", "serial: an empty list"),
    ("  max_fail_percentage: 101", "playbook.yaml:3: play 'notice' max_fail_percentage: 101 is "
                                   "not a percentage from 0 to 100"),
    ("  max_fail_percentage: yes", "max_fail_percentage: True is not a percentage"),
])
def test_bad_rolling_values_name_the_line(tmp_path: Path, rolling: str, message: str) -> None:
    with pytest.raises(InputError) as raised:
        roll(tmp_path, rolling)
    assert message in str(raised.value)
