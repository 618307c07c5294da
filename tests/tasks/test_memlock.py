"""The memlock task: plans on recorded facts (tests/data/rdma's ports, the recorded Debian 12
VM) and unit files, then on the test cluster through a fresh SSH login's ``ulimit -l``."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path

import pytest

from nodeprov.inventory import Host
from nodeprov.remote.rdma import read_rdma
from nodeprov.tasks.base import ConfirmNewConnection, Plan, Run, TaskFailed, Write
from nodeprov.tasks.memlock import LIMITS_FILE, TASK
from tests.remote.rdma_trees import DATA, port_lines
from tests.tasks.kit import HOST, make_facts, one_node, plan_task

IB = port_lines(ibstat=DATA / "ibstat-gpud-752-ib.txt")
HEADER = "# Written by nodeprov (memlock task): RDMA needs locked memory; edits are overwritten.\n"
LIMITS = HEADER + "trainer soft memlock unlimited\ntrainer hard memlock unlimited\n"
UNIT = "/usr/lib/systemd/system/ssh.service"
DROP_IN = "/etc/systemd/system/ssh.service.d/90-nodeprov-memlock.conf"
# Debian 12's ssh.service as openssh-server 1:9.2p1-2+deb12u10 installs it (copied verbatim
# from /lib/systemd/system/ssh.service of the Debian 12 machine these tests were written on)
SSH_SERVICE = (Path(__file__).parent / "data" / "memlock-ssh-service-debian12.txt").read_text()


def run(files: Mapping[str, str | None], *, memlock: str = "64", systemd: bool = True,
        ports: str = IB, **params: str) -> Plan:
    facts = make_facts(systemd=systemd,
                       rdma=read_rdma({"rdma_ports": ports, "rdma_memlock": memlock}))
    host = dataclasses.replace(HOST, user="trainer")
    return plan_task(TASK, params, files, context=one_node(facts, host))


def test_a_systemd_node_gets_limits_d_and_an_sshd_drop_in_then_a_restart() -> None:
    result = run({UNIT: SSH_SERVICE})
    assert [change.summary for change in result.changes] == [
        f"write {LIMITS_FILE}", "restart ssh.service with LimitMEMLOCK=infinity"]
    assert [action for change in result.changes for action in change.actions] == [
        Write(LIMITS_FILE, LIMITS),
        Write(DROP_IN, HEADER + "[Service]\nLimitMEMLOCK=infinity\n"),
        Run(("systemctl", "daemon-reload")), Run(("systemctl", "try-restart", "ssh.service")),
        ConfirmNewConnection("ssh.service restarted")]


def test_in_sync_once_the_files_are_there_and_the_login_is_unlimited() -> None:
    files = {UNIT: SSH_SERVICE, LIMITS_FILE: LIMITS,
             DROP_IN: HEADER + "[Service]\nLimitMEMLOCK=infinity\n"}
    assert run(files, memlock="unlimited") == Plan.noop(
        f"{LIMITS_FILE} gives trainer memlock unlimited")


def test_files_in_place_and_a_limited_login_names_the_lines_that_may_win() -> None:
    files = {LIMITS_FILE: LIMITS, "/etc/security/limits.d/99-site.conf":
             "# site\ntrainer  hard  memlock  65536\n*  soft nofile 4096\n"}
    result = run(files, systemd=False)
    assert result.conflicts == (
        "a fresh SSH login gets ulimit -l 64 (KiB), not unlimited, with "
        f"{LIMITS_FILE} in place: /etc/security/limits.d/99-site.conf:2 "
        "'trainer  hard  memlock  65536' may take over ours: remove them",)
    assert not result.in_sync
    assert "pam_limits (UsePAM no?)" in run({LIMITS_FILE: LIMITS}, systemd=False).conflicts[0]


def test_a_limit_in_kib_and_no_systemd() -> None:
    result = run({UNIT: SSH_SERVICE}, systemd=False, limit="1048576")
    assert [action for change in result.changes for action in change.actions] == [
        Write(LIMITS_FILE, HEADER + "trainer soft memlock 1048576\n"
                                    "trainer hard memlock 1048576\n")]
    assert result.notes == ("no systemd sshd unit here: sshd's own limit is its parent's; "
                            "pam_limits sets the login's",)


def test_nothing_without_rdma_and_an_unknown_user_fails() -> None:
    assert run({}, ports="") == Plan.noop(
        "no RDMA ports on this node: its jobs lock no memory for a NIC")
    facts = make_facts(rdma=read_rdma({"rdma_ports": IB, "rdma_memlock": "64"}))
    with pytest.raises(TaskFailed, match="set ansible_user"):
        plan_task(TASK, {}, {}, context=one_node(facts, Host("node1", "192.0.2.2", "192.0.2.2")))
