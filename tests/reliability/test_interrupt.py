"""An apply killed at random points (SIGKILL, Ctrl-C) leaves every managed file whole, SSH open,
and a re-run converges to what an uninterrupted run makes (issue #8)."""

from __future__ import annotations

import random
import signal
import subprocess
import time
from pathlib import Path

import pytest

from nodeprov.tasks.textfiles import blocks
from nodeprov.testbed.cluster import Testbed
from tests.conftest import MakeTestbed
from tests.ctrl_c import terminal_signals
from tests.reliability.helpers import (
    NETWORK_PLAYBOOK,
    apply,
    apply_args,
    apply_command,
    managed_files,
    nodeprov_processes,
    ufw_status,
    wait_for_batches,
)

pytestmark = pytest.mark.integration

SEED = 8  # the number: the same kill points on every run
# Each streak starts from fresh nodes, kills several applies in a row (each from what the last
# one left), then re-runs to the end.
STREAKS = [[signal.SIGKILL, signal.SIGINT, signal.SIGKILL, signal.SIGINT]] * 3
SSH_RULE = "22/tcp ALLOW IN Anywhere # nodeprov: ssh"


def reset(bed: Testbed, pristine: dict[str, dict[str, str | None]]) -> None:
    """Put every node back as the testbed made it: files, ufw, IPv6, nodeprov's state."""
    for node, texts in pristine.items():
        for path, text in texts.items():
            if text is None:
                bed.exec(node, "rm", "-f", "--", path, check=True)
            else:
                bed.exec(node, "sh", "-c", 'cat > "$1"', "restore", path, input=text, check=True)
        bed.exec(node, "sh", "-c", "ufw --force reset >/dev/null; rm -f /etc/ufw/*.[0-9]* "
                 "/var/lib/nodeprov/ufw-*; sysctl -q -w net.ipv6.conf.all.disable_ipv6=0 "
                 "net.ipv6.conf.default.disable_ipv6=0", check=True)


def state(bed: Testbed) -> dict[str, tuple[dict[str, str | None], list[str]]]:
    return {node: (managed_files(bed, node), ufw_status(bed, node)) for node in bed.nodes}


def interrupt(process: subprocess.Popen[str], how: signal.Signals) -> float:
    """Send ``how``; Ctrl-C twice if the first one is not enough. Seconds until it ended."""
    sent = time.monotonic()
    process.send_signal(how)
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        process.send_signal(how)  # the second Ctrl-C drops the connections
        process.wait(timeout=30)
    return time.monotonic() - sent


def test_killed_applies_leave_whole_files_open_ssh_and_converge(make_testbed: MakeTestbed,
                                                               tmp_path: Path) -> None:
    bed = make_testbed(nodes=2)
    args = apply_args(bed, tmp_path, NETWORK_PLAYBOOK, motd_line="managed notice",
                      nccl_env={"NCCL_DEBUG": "INFO"})
    pristine = {node: managed_files(bed, node) for node in bed.nodes}
    started = time.monotonic()
    assert apply(*args).code == 0
    full_run = time.monotonic() - started
    reference = state(bed)
    assert all(reference[node][0] != pristine[node] for node in bed.nodes)

    chooser = random.Random(SEED)
    for streak_number, streak in enumerate(STREAKS):
        reset(bed, pristine)
        for kill_number, how in enumerate(streak):
            delay = chooser.uniform(0.3, full_run)
            with subprocess.Popen(apply_command(*args), stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, text=True,
                                  preexec_fn=terminal_signals) as process:
                time.sleep(delay)
                took = interrupt(process, how)
                output = " ".join(process.communicate()[0].split())
            where = (f"streak {streak_number}, kill {kill_number}: {how.name} after {delay:.1f} s "
                     f"(ended {took:.1f} s later, exit {process.returncode})")
            print(where)
            if how == signal.SIGINT and process.returncode != 0:
                assert took < 20, where  # it ends the round trips in flight, then stops
                assert "Traceback" not in output, output
            check_whole_and_open(bed, where, pristine, reference)

        again = apply(*args)
        assert again.code == 0, f"{where}: the re-run failed: {again.output}"
        assert state(bed) == reference, f"{where}: the re-run did not converge"
        for node in bed.nodes:
            # e.g. the firewall's lockout guard of a killed run, still armed: it would disable
            # ufw behind the re-run's back
            assert nodeprov_processes(bed, node) == "", f"{where}: {node}: left running"


def check_whole_and_open(bed: Testbed, where: str, pristine: dict[str, dict[str, str | None]],
                         reference: dict[str, tuple[dict[str, str | None], list[str]]]) -> None:
    """Each managed file is the old or the new one, no temporary file is left, a new SSH
    connection gets through, and an active ufw lets SSH in."""
    for node in bed.nodes:
        wait_for_batches(bed, node)  # after SIGKILL, one may go on to its end
        for path, text in managed_files(bed, node).items():
            assert text in (pristine[node][path], reference[node][0][path]), (
                f"{where}: {node}:{path} is neither the old nor the new file:\n{text}")
        leftovers = bed.exec(node, "sh", "-c", "ls -a /etc /etc/sysctl.d /etc/default "
                             "| grep '^.nodeprov'").stdout
        assert leftovers == "", f"{where}: {node}: temporary files left: {leftovers}"
        assert bed.ssh(node, "true", timeout=30).returncode == 0, f"{where}: {node}: ssh"
        rules = ufw_status(bed, node)
        assert rules == ["Status: inactive"] or SSH_RULE in rules, f"{where}: {rules}"


FIREWALL = """\
- name: firewall
  hosts: all
  tasks:
    - name: Firewall
      firewall: {subnet: "{{ node_subnet }}"}
"""


def test_a_rerun_disarms_the_lockout_guard_a_killed_run_left_armed(make_testbed: MakeTestbed,
                                                                  tmp_path: Path) -> None:
    bed = make_testbed(nodes=1)
    args = apply_args(bed, tmp_path, FIREWALL)
    # every SSH login takes 3 s more: the new connection that confirms ufw's enabling leaves
    # time to kill the run between enabling and disarming
    bed.exec("node1", "sh", "-c", "echo 'session optional pam_exec.so quiet /bin/sleep 3' >> "
             "/etc/pam.d/sshd", check=True)
    with subprocess.Popen(apply_command(*args), stdout=subprocess.DEVNULL) as process:
        for _ in range(600):
            if "ENABLED=yes" in bed.exec("node1", "cat", "/etc/ufw/ufw.conf").stdout:
                break
            time.sleep(0.05)
        process.kill()
    wait_for_batches(bed, "node1")
    again = apply(*args)
    try:
        assert again.code == 0, again.output
        assert "disarm the lockout guard an interrupted run left armed" in again.output
        assert nodeprov_processes(bed, "node1") == "", "the guard is still armed"
        assert SSH_RULE in ufw_status(bed, "node1")
        assert "1 hosts, 0 tasks changed" in apply(*args).output
    finally:
        bed.exec("node1", "sh", "/var/lib/nodeprov/ufw-helper.sh", "disarm", "-")


SLOW_SYNC = "#!/bin/sh\ntouch /tmp/nodeprov-test-slow\nexec sleep 6\n"
TWO_NOTICES = """\
- name: two notices
  hosts: all
  tasks:
    - name: first
      block: {path: /etc/motd, name: first, lines: ["{{ motd_line }}"]}
    - name: second
      block: {path: /etc/issue, name: second, lines: ["{{ motd_line }}"]}
"""


def interrupted_during_first_write(bed: Testbed, args: list[str], presses: int) -> tuple[
        float, int, str]:
    """Ctrl-C ``presses`` times once the first write hangs in the slow sync; seconds from the
    first press to the end, exit code, output."""
    bed.exec("node1", "rm", "-f", "/tmp/nodeprov-test-slow", check=True)
    with subprocess.Popen(apply_command(*args), stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True,
                          preexec_fn=terminal_signals) as process:
        for _ in range(300):
            if bed.exec("node1", "test", "-e", "/tmp/nodeprov-test-slow").returncode == 0:
                break
            time.sleep(0.1)
        pressed = time.monotonic()
        for _ in range(presses):
            process.send_signal(signal.SIGINT)
            time.sleep(0.5)
        output = process.communicate(timeout=60)[0]
    return time.monotonic() - pressed, process.returncode, output


def test_ctrl_c_ends_the_write_in_flight_then_stops_and_twice_drops_it(
        make_testbed: MakeTestbed, tmp_path: Path) -> None:
    bed = make_testbed(nodes=1)
    bed.exec("node1", "sh", "-c", 'cat > "$1" && chmod 755 "$1"', "fake", "/usr/local/bin/sync",
             input=SLOW_SYNC, check=True)
    once = apply_args(bed, tmp_path / "once", TWO_NOTICES, motd_line="once")
    took, code, output = interrupted_during_first_write(bed, once, presses=1)
    assert code == 130 and "Traceback" not in output, output
    assert 4 <= took < 15  # the first write ends its sync (6 s), then nothing more runs
    assert blocks.block_lines(bed.exec("node1", "cat", "/etc/motd").stdout, "first") == ["once"]
    assert "once" not in bed.exec("node1", "cat", "/etc/issue").stdout

    twice = apply_args(bed, tmp_path / "twice", TWO_NOTICES, motd_line="twice")
    took, code, output = interrupted_during_first_write(bed, twice, presses=2)
    assert code == 130 and took < 4, output  # the connection dropped under the write
    wait_for_batches(bed, "node1")  # which goes on on the node, to its end
    assert blocks.block_lines(bed.exec("node1", "cat", "/etc/motd").stdout, "first") == ["twice"]
    assert "twice" not in bed.exec("node1", "cat", "/etc/issue").stdout
