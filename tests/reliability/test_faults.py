"""Faults on some nodes never stop the others: an unreachable node, a task failing on a node,
a node that stops answering mid-task (reported within seconds, never waited for forever); the
recap names each and the re-run it suggests finishes the job (issue #8)."""

from __future__ import annotations

import re
import subprocess
import time
from pathlib import Path

import pytest

from nodeprov.tasks.textfiles import blocks
from tests.conftest import MakeTestbed
from tests.reliability.helpers import apply, apply_args, apply_command, managed_files

pytestmark = pytest.mark.integration

NAMES_AND_ENV = """\
- name: names and NCCL env
  hosts: all
  tasks:
    - name: hosts
      hosts: {fix_conflicts: "{{ hosts_fix_conflicts }}"}
    - name: NCCL env
      nccl_env: {subnet: "{{ node_subnet }}", ifname: "{{ nccl_socket_ifname }}",
                 extra: "{{ nccl_env }}"}
"""
REFUSE_SSH = ("INPUT", "-p", "tcp", "--dport", "22", "-j", "REJECT", "--reject-with", "tcp-reset")
READ_ONLY = ("touch /etc/nccl.conf && mount --bind /etc/nccl.conf /etc/nccl.conf "
             "&& mount -o remount,bind,ro /etc/nccl.conf")


def test_an_unreachable_and_a_failing_node_stop_no_other_and_the_suggested_rerun_works(
        make_testbed: MakeTestbed, tmp_path: Path) -> None:
    bed = make_testbed(nodes=3)
    args = apply_args(bed, tmp_path, NAMES_AND_ENV)
    bed.exec("node2", "iptables", "-I", *REFUSE_SSH, check=True)
    bed.exec("node3", "sh", "-c", READ_ONLY, check=True)

    failed = apply(*args)
    assert failed.code == 1
    assert failed.statuses() == {"node1": "changed", "node2": "unreachable", "node3": "failed"}
    done = managed_files(bed, "node1")
    assert len(blocks.block_lines(done["/etc/hosts"] or "", "hosts") or []) == 3
    assert blocks.block_lines(done["/etc/nccl.conf"] or "", "nccl") == ["NCCL_SOCKET_IFNAME==eth0"]
    assert "FAILED node2: cannot connect to " in failed.output
    assert re.search(r"FAILED node3: nccl_env: 'write /etc/nccl.conf' exited \d+: .*Read-only "
                     "file system", failed.output), failed.output
    node3 = [task["status"] for task in failed.report["hosts"]["node3"]["tasks"]]
    assert node3 == ["changed", "failed"]  # the task before the failing one was done
    suggested = re.search(r"re-run only those: nodeprov apply \S+ (?:-p \S+ )?(--limit \S+)",
                          failed.output)
    assert suggested is not None and suggested[1] == "--limit node2,node3"

    bed.exec("node2", "iptables", "-D", *REFUSE_SSH, check=True)
    bed.exec("node3", "umount", "/etc/nccl.conf", check=True)
    rerun = apply(*args, *suggested[1].split())
    assert rerun.code == 0, rerun.output
    assert rerun.statuses() == {"node2": "changed", "node3": "changed"}
    everything = apply(*args)
    assert everything.code == 0 and set(everything.statuses().values()) == {"ok"}, (
        everything.output)


SLOW_SYNC = "#!/bin/sh\ntouch /tmp/nodeprov-test-slow\nexec sleep 20\n"
NOTICE = """\
- name: notice
  hosts: all
  tasks:
    - name: notice
      block: {path: /etc/motd, name: notice, lines: ["{{ motd_line }}"]}
"""
FREEZE = {  # a node cut off the network, and a node whose sshd no longer runs
    "node1": ("iptables", "-I", "INPUT", "-j", "DROP"),
    "node2": ("pkill", "-STOP", "-f", "^sshd: root"),
}
THAW = {"node1": ("iptables", "-D", "INPUT", "-j", "DROP"),
        "node2": ("pkill", "-CONT", "-f", "^sshd: root")}


def test_nodes_that_stop_answering_mid_task_are_reported_within_seconds(
        make_testbed: MakeTestbed, tmp_path: Path) -> None:
    bed = make_testbed(nodes=3)
    args = apply_args(bed, tmp_path, NOTICE)
    for node in FREEZE:  # their write hangs in `sync` (20 s) until they are frozen
        bed.exec(node, "sh", "-c", 'cat > "$1" && chmod 755 "$1"', "fake", "/usr/local/bin/sync",
                 input=SLOW_SYNC, check=True)
    with subprocess.Popen(apply_command(*args), stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True) as process:
        for node in FREEZE:
            for _ in range(300):
                if bed.exec(node, "test", "-e", "/tmp/nodeprov-test-slow").returncode == 0:
                    break
                time.sleep(0.1)
            bed.exec(node, *FREEZE[node], check=True)
        frozen = time.monotonic()
        try:
            output = " ".join(process.communicate(timeout=90)[0].split())
        finally:
            process.kill()
        took = time.monotonic() - frozen
    for node in FREEZE:
        bed.exec(node, *THAW[node], check=True)
    print(f"\nfrozen nodes reported {took:.1f} s after freezing them")
    assert process.returncode == 1, output
    assert took < 40, output  # keepalive every 5 s, 3 missed: about 20 s
    for node in FREEZE:
        assert (f"FAILED {node}: block: connection lost during write /etc/motd: the node "
                "answered no SSH keepalive for 15 s") in output, output
    assert blocks.block_lines(bed.exec("node3", "cat", "/etc/motd").stdout, "notice") == ["hello"]

    # thawed, the nodes finish what they were doing; a re-run waits for it, then converges
    for node in FREEZE:
        bed.exec(node, "rm", "/usr/local/bin/sync", check=True)
    rerun = apply(*args)
    assert rerun.code == 0, rerun.output
    for node in bed.nodes:
        assert blocks.block_lines(bed.exec(node, "cat", "/etc/motd").stdout, "notice") == [
            "hello"]


BIG_BLOCK = """\
- name: big
  hosts: all
  tasks:
    - name: big file
      block: {path: /opt/full/managed, name: big, lines: "{{ big_lines }}"}
"""
BIG_LINES = [f"{index:06d} " + "x" * 57 for index in range(17_000)]  # 1.06 MiB with newlines


def test_a_1_mib_managed_file_reaches_the_node_and_stays_in_sync(
        make_testbed: MakeTestbed, tmp_path: Path) -> None:
    """issue #14: the content went into the batch's command line (one argument of the remote
    shell: 128 KiB at most on Linux)."""
    bed = make_testbed(nodes=1)
    args = apply_args(bed, tmp_path, BIG_BLOCK, big_lines=BIG_LINES)
    first = apply(*args)
    assert first.code == 0, first.output[-2000:]
    text = bed.exec("node1", "cat", "/opt/full/managed", check=True).stdout
    assert len(text.encode()) > 1024 * 1024 and blocks.block_lines(text, "big") == BIG_LINES
    again = apply(*args)
    assert again.code == 0 and again.statuses() == {"node1": "ok"}, again.output[-2000:]
    assert bed.exec("node1", "sh", "-c", "ls -a /tmp /opt/full | grep -c nodeprov").stdout == (
        "0\n"), "a staged or temporary file was left"


@pytest.mark.parametrize("lines", [600, 2000], ids=["38KB-inline", "128KB-staged"])
def test_a_full_disk_keeps_the_previous_file_and_is_reported(
        make_testbed: MakeTestbed, tmp_path: Path, lines: int) -> None:
    """The node's disk fills during the write: its previous file stays whole, no temporary
    file is left, the recap names node, item and cause; with space again, a re-run converges."""
    bed = make_testbed(nodes=2)
    previous = "previous text\n" + "kept line\n" * 100
    for node in bed.nodes:
        bed.exec(node, "sh", "-c", "mkdir -p /opt/full && mount -t tmpfs -o size=512k tmpfs "
                 '/opt/full && printf %s "$1" > /opt/full/managed', "fill", previous, check=True)
    # node1's disk: nearly full (what is left is far less than the new file)
    bed.exec("node1", "sh", "-c", "head -c 480k /dev/zero > /opt/full/filler", check=True)
    args = apply_args(bed, tmp_path, BIG_BLOCK, big_lines=BIG_LINES[:lines])

    failed = apply(*args)
    assert failed.code == 1, failed.output
    assert failed.statuses() == {"node1": "failed", "node2": "changed"}
    assert re.search(r"FAILED node1: block: 'write /opt/full/managed' exited \d+: .*No space "
                     r"left on device", failed.output), failed.output
    assert bed.exec("node1", "cat", "/opt/full/managed", check=True).stdout == previous
    assert bed.exec("node1", "ls", "-a", "/opt/full", check=True).stdout.split() == [
        ".", "..", "filler", "managed"], "a temporary file was left"

    bed.exec("node1", "rm", "/opt/full/filler", check=True)
    rerun = apply(*args)
    assert rerun.code == 0 and rerun.statuses() == {"node1": "changed", "node2": "ok"}, (
        rerun.output)
    for node in bed.nodes:
        text = bed.exec(node, "cat", "/opt/full/managed", check=True).stdout
        assert text.startswith(previous) and blocks.block_lines(text, "big") == BIG_LINES[:lines]


# what a restart does to a node's sessions: every process of theirs killed, sshd back at once
RESTART = ("sh", "-c", "pkill -KILL -f '^sshd: root'; pkill -KILL -f '[n]odeprov'; "
           "pkill -KILL -x sleep; true")


def test_a_node_restarted_mid_apply_is_reported_and_the_rerun_converges(
        make_testbed: MakeTestbed, tmp_path: Path) -> None:
    bed = make_testbed(nodes=2)
    args = apply_args(bed, tmp_path, NOTICE)
    before = bed.exec("node1", "cat", "/etc/motd").stdout
    bed.exec("node1", "sh", "-c", 'cat > "$1" && chmod 755 "$1"', "fake", "/usr/local/bin/sync",
             input=SLOW_SYNC, check=True)
    with subprocess.Popen(apply_command(*args), stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True) as process:
        for _ in range(300):  # node1 is in its write, between the temporary file and rename
            if bed.exec("node1", "test", "-e", "/tmp/nodeprov-test-slow").returncode == 0:
                break
            time.sleep(0.1)
        bed.exec("node1", *RESTART, check=True)
        try:
            output = " ".join(process.communicate(timeout=90)[0].split())
        finally:
            process.kill()
    assert process.returncode == 1, output
    assert re.search(r"FAILED node1: block: connection (?:lost|failed) during write /etc/motd",
                     output), output
    assert "node2 | changed" in output, output
    assert bed.exec("node1", "cat", "/etc/motd").stdout == before  # the old file, whole

    bed.exec("node1", "rm", "/usr/local/bin/sync", check=True)
    rerun = apply(*args)
    assert rerun.code == 0 and rerun.statuses() == {"node1": "changed", "node2": "ok"}, (
        rerun.output)
    assert blocks.block_lines(bed.exec("node1", "cat", "/etc/motd").stdout, "notice") == ["hello"]
    again = apply(*args)
    assert again.code == 0 and set(again.statuses().values()) == {"ok"}, again.output
