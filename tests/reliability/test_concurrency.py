"""Two applies on the same nodes never interleave their edits: the node's run lock makes one
wait for the other, or fail saying who holds it; a re-run waits for a command a killed run left
running (issue #8)."""

from __future__ import annotations

import re
import subprocess
import time
from pathlib import Path

import pytest

from nodeprov.errors import HostError
from nodeprov.inventory import load_inventory
from nodeprov.remote.nodelock import LOCK_PATH, RUN_LOCK
from nodeprov.remote.options import SshOptions
from nodeprov.remote.session import Session
from nodeprov.tasks.textfiles import blocks
from tests.conftest import MakeTestbed
from tests.reliability.helpers import apply, apply_args, apply_command

pytestmark = pytest.mark.integration

BLOCKS = 4


def blocks_playbook(run: str) -> str:
    """BLOCKS tasks, each adding its own block to /etc/motd: each reads the file and writes it."""
    tasks = "".join(f"    - name: {run}{index}\n      block: {{path: /etc/motd, "
                    f"name: {run}{index}, lines: ['written by run {run}']}}\n"
                    for index in range(BLOCKS))
    return f"- name: run {run}\n  hosts: all\n  tasks:\n{tasks}"


def test_two_applies_at_once_take_turns_on_each_node(make_testbed: MakeTestbed,
                                                     tmp_path: Path) -> None:
    bed = make_testbed(nodes=2)
    pristine = {node: bed.exec(node, "cat", "/etc/motd", check=True).stdout for node in bed.nodes}
    for attempt in range(2):  # the two runs overlap differently each time
        runs = {run: apply_args(bed, tmp_path / f"{attempt}{run}", blocks_playbook(run))
                for run in "ab"}
        processes = {run: subprocess.Popen(apply_command(*args), stdout=subprocess.PIPE,
                                           stderr=subprocess.STDOUT, text=True)
                     for run, args in runs.items()}
        for run, process in processes.items():
            with process:
                output = process.communicate(timeout=120)[0]
            assert process.returncode == 0, f"run {run}: {output}"
        for node in bed.nodes:
            motd = bed.exec(node, "cat", "/etc/motd", check=True).stdout
            found = re.findall(r"^# BEGIN nodeprov ([ab])\d ", motd, re.MULTILINE)
            # no edit lost, and each run's blocks together: one run's edits, then the other's
            assert found in (["a"] * BLOCKS + ["b"] * BLOCKS, ["b"] * BLOCKS + ["a"] * BLOCKS), (
                f"attempt {attempt}: {node}: {found}")
            bed.exec(node, "sh", "-c", 'printf %s "$1" > /etc/motd', "reset", pristine[node],
                     check=True)


def test_a_held_lock_fails_clearly_naming_its_holder(make_testbed: MakeTestbed) -> None:
    bed = make_testbed(nodes=1)
    owner = "pid 4242 since 2026-01-01T00:00:00Z from 10.9.9.9"
    holder = subprocess.Popen(bed.exec_argv("node1", [
        "sh", "-c", 'mkdir -p /run/lock && echo "$1" > "$2" && exec flock "$2" sleep 30',
        "hold", owner, RUN_LOCK]))
    host = load_inventory(bed.inventory_path).hosts[0]
    try:
        time.sleep(1)
        with Session(host, SshOptions(lock_timeout=2)) as session:
            started = time.monotonic()
            with pytest.raises(HostError) as raised:
                session.gather([], lock_wait=2)
            assert 2 <= time.monotonic() - started < 10
            assert not session.locked
            session.gather([], lock_wait=0)  # a busy lock is no error when only tried
            assert not session.locked
    finally:
        holder.kill()
        holder.wait()
    assert str(raised.value) == (
        f"node1: lock: another nodeprov run holds this node ({owner}), after 2 s (wait for it "
        "to end, or stop it, and run again)")


def test_a_rerun_waits_for_a_command_a_killed_run_left_running(make_testbed: MakeTestbed,
                                                               tmp_path: Path) -> None:
    bed = make_testbed(nodes=1)
    bed.exec("node1", "mkdir", "-p", "/var/lib/nodeprov", check=True)
    # What a killed run's batch looks like on the node: it holds the batch lock while it runs.
    # This one writes the file the apply edits, 2 s after the apply has read it.
    orphan = subprocess.Popen(bed.exec_argv("node1", [
        "flock", "-o", LOCK_PATH, "sh", "-c", "for i in $(seq 600); do pgrep -f 'nodeprov-fact[s]' "
        "&& break; sleep 0.1; done; sleep 2; echo 'written by the killed run' > /etc/motd"]),
        stdout=subprocess.DEVNULL)
    try:
        applied = apply(*apply_args(bed, tmp_path, blocks_playbook("a")))
    finally:
        orphan.wait(timeout=90)
    assert applied.code == 0, applied.output
    motd = bed.exec("node1", "cat", "/etc/motd", check=True).stdout
    assert motd.startswith("written by the killed run\n")
    assert [blocks.block_lines(motd, f"a{index}") for index in range(BLOCKS)] == [
        ["written by run a"]] * BLOCKS
