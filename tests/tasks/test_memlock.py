"""The memlock task: plans on recorded facts (tests/data/rdma's ports, the recorded Debian 12
VM) and unit files, then on the test cluster through a fresh SSH login's ``ulimit -l``."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from nodeprov.inventory import Host
from nodeprov.remote.rdma import read_rdma
from nodeprov.tasks.base import ConfirmNewConnection, Plan, Run, Write
from nodeprov.tasks.memlock import LIMITS_FILE, TASK, memlock_lines
from nodeprov.testbed.cluster import Testbed
from tests.checks.drift.printed import printed_commands, run_printed
from tests.conftest import MakeTestbed
from tests.remote.rdma_trees import DATA, MOUNT_IN_NODE, build_tree, port_lines, tree_files
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


def test_memlock_lines_pam_limits_may_take_over_ours_are_named_by_line() -> None:
    files = {LIMITS_FILE: LIMITS, "/etc/security/limits.d/99-site.conf":
             "# site\ntrainer  hard  memlock  65536\n*  soft nofile 4096\n@rdma - memlock 8\n"
             "* - memlock 64\n",
             "/etc/security/limits.conf": "# <domain> <type> <item> <value>\nother - memlock 1\n"}
    assert run(files, systemd=False).in_sync  # the effect is verify's: a new login's ulimit
    site = "/etc/security/limits.d/99-site.conf"
    assert memlock_lines(files, "trainer") == [
        f"{site}:2 'trainer  hard  memlock  65536' may take over {LIMITS_FILE}: comment it out: "
        f"sed -i '/^trainer  hard  memlock  65536$/s/^/# /' {site}"]  # a user's beats a group's
    # or everyone's (limits.conf(5)): those never take over ours, and are other users' limits
    fixed = files[site]
    for line in memlock_lines(files, "trainer"):
        fixed = subprocess.run(["sed", line.split("'")[-2]], input=fixed, capture_output=True,
                               text=True, check=True).stdout
    assert memlock_lines({**files, site: fixed}, "trainer") == []



def test_a_crlf_limits_line_is_commented_out_by_its_printed_sed(tmp_path: Path) -> None:
    """pam_limits reads a CRLF line as the same limit ("\\r" is blank to it); the sed must
    match it "\\r" and all (before: no match, GNU sed exiting 0, the limit still there)."""
    site = "/etc/security/limits.d/99-site.conf"
    text = "# site\r\ntrainer hard memlock 65536\r\n"
    path = tmp_path / "99-site.conf"
    path.write_bytes(text.encode())
    [item] = memlock_lines({site: text}, "trainer")
    assert item.startswith(f"{site}:2 'trainer hard memlock 65536' "), item
    [command] = printed_commands(item)
    subprocess.run(["sh", "-c", command.replace(site, str(path))], check=True)
    assert memlock_lines({site: path.read_bytes().decode()}, "trainer") == []

def test_a_limit_in_kib_and_no_systemd() -> None:
    result = run({UNIT: SSH_SERVICE}, systemd=False, limit="1048576")
    assert [action for change in result.changes for action in change.actions] == [
        Write(LIMITS_FILE, HEADER + "trainer soft memlock 1048576\n"
                                    "trainer hard memlock 1048576\n")]
    assert result.notes == ("no systemd sshd unit here: sshd's own limit is its parent's; "
                            "pam_limits sets the login's",)


def test_nothing_without_rdma_and_a_warning_when_the_user_is_unknown() -> None:
    assert run({}, ports="") == Plan.noop(
        "no RDMA ports on this node: its jobs lock no memory for a NIC")
    facts = make_facts(rdma=read_rdma({"rdma_ports": IB, "rdma_memlock": "64"}))
    unknown = plan_task(TASK, {}, {},
                        context=one_node(facts, Host("node1", "192.0.2.2", "192.0.2.2")))
    assert unknown == Plan.noop(warnings=[
        "the job's login user is unknown (ansible_user unset), so no limit is written: set "
        "ansible_user in the inventory, or the memlock task's user"])


PLAYBOOK = """\
- name: Fabric repairs
  hosts: all
  tasks:
    - name: NCCL on the RDMA ports
      nccl_fabric: {subnet: 10.152.0.0/16}
      tags: [nccl_fabric]
    - name: Locked memory
      memlock: {user: root, limit: LIMIT}
      tags: [memlock]
    - name: Peer memory
      peermem: {}
      tags: [peermem]
"""


def applied(bed: Testbed, playbook: Path, node: str, *options: str) -> list[dict[str, Any]]:
    """``node``'s tasks in ``nodeprov apply --json``."""
    done = subprocess.run([sys.executable, "-m", "nodeprov", "apply", str(bed.inventory_path),
                           "-p", str(playbook), "--limit", node, "--json", "-", *options],
                          capture_output=True, text=True, timeout=180, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    return list(json.loads(done.stdout)["hosts"][node]["tasks"])


def statuses(bed: Testbed, playbook: Path, *options: str) -> list[tuple[str, str]]:
    """(task, status) of node1's tasks."""
    return [(task["type"], task["status"]) for task in applied(bed, playbook, "node1", *options)]


def login_memlock(bed: Testbed) -> str:
    """``ulimit -l`` in a new SSH login to node1: what a job started over SSH gets."""
    return bed.ssh("node1", "sh", "-c", "ulimit -l", check=True).stdout.strip()


@pytest.mark.integration
def test_four_steps_on_a_node_with_a_recorded_roce_tree(make_testbed: MakeTestbed,
                                                        tmp_path: Path) -> None:
    """A stand-in: NVIDIA/nccl#1573's RoCE ports as node1's /sys/class/infiniband (no RDMA in
    this kernel). The test cluster's sshd runs PAM with Debian's /etc/pam.d/sshd, whose session
    has pam_limits, and no systemd. This machine's processes lack CAP_SYS_RESOURCE (CapPrm
    000001fffeffffff: bit 24 clear), so no one here can raise a hard limit, sshd included: the
    test proves that pam_limits applies the task's file to a new SSH login with a limit half
    the login's own (a lower one needs no capability); ``unlimited`` and the systemd drop-in
    are tested by the plans above only. node2 keeps the test cluster's own /sys: there all three
tasks of the default playbook's fabric repairs do nothing, and say why."""
    bed = make_testbed(nodes=2, outsider=False)
    tree = build_tree(tmp_path / "ib", gids=DATA / "show-gids-nccl-1573-pod-macvlan.txt",
                      state={"state": "4: ACTIVE", "phys_state": "5: LinkUp",
                             "link_layer": "Ethernet"})
    bed.exec("node1", "python3", "-c", MOUNT_IN_NODE, input=json.dumps(tree_files(tree)),
             check=True)
    assert "pam_limits.so" in bed.exec("node1", "cat", "/etc/pam.d/sshd", check=True).stdout
    before = login_memlock(bed)
    limit = str(int(before) // 2)
    playbook = tmp_path / "fabric.yaml"
    playbook.write_text(PLAYBOOK.replace("LIMIT", limit))
    changed = [("nccl_fabric", "changed"), ("memlock", "changed"), ("peermem", "ok")]
    assert statuses(bed, playbook, "--check") == changed
    assert login_memlock(bed) == before  # check mode changed nothing
    assert statuses(bed, playbook) == changed
    in_sync = [("nccl_fabric", "ok"), ("memlock", "ok"), ("peermem", "ok")]
    assert statuses(bed, playbook) == in_sync
    assert statuses(bed, playbook, "--check") == in_sync
    assert login_memlock(bed) == limit
    # node2, a CPU node without RDMA as the test cluster's are: nothing, and the notes say why
    assert [(task["type"], task["status"], task["notes"]) for task in applied(
        bed, playbook, "node2")] == [
        ("nccl_fabric", "ok", ["no InfiniBand or RoCE port on this node: nothing to select"]),
        ("memlock", "ok", ["no RDMA ports on this node: its jobs lock no memory for a NIC"]),
        ("peermem", "ok", ["no GPU on this node: no GPUDirect RDMA to enable"])]
    login = bed.ssh("node1", "sh", "-c", 'echo "$NCCL_IB_HCA $NCCL_IB_GID_INDEX"', check=True)
    assert login.stdout == "=mlx5_0:1,mlx5_1:1 7\n"
    assert "NCCL_IB_HCA==mlx5_0:1,mlx5_1:1\nNCCL_IB_GID_INDEX=7\n" in bed.exec(
        "node1", "cat", "/etc/nccl.conf", check=True).stdout

    verify = subprocess.run([sys.executable, "-m", "nodeprov", "verify", str(bed.inventory_path),
                             "-p", str(playbook), "--no-job"],
                            capture_output=True, text=True, timeout=180, check=False)
    assert verify.returncode == 0, verify.stdout + verify.stderr
    bed.exec("node1", "sh", "-c", f"echo 'root hard memlock {int(limit) // 2}' > "
             "/etc/security/limits.d/99-site.conf; echo 'NCCL_IB_HCA DEFAULT=mlx5' > "
             "/root/.pam_environment", check=True)
    drifted = subprocess.run([sys.executable, "-m", "nodeprov", "verify",
                              str(bed.inventory_path), "-p", str(playbook), "--no-job"],
                             capture_output=True, text=True, timeout=180, check=False)
    assert drifted.returncode == 1
    lines = drifted.stdout.splitlines()[1:-2]
    half = int(limit) // 2
    assert lines == [
        f"node1 memlock: a new SSH login gets ulimit -l {half} (KiB) (expected {limit}): by "
        f"hand: /etc/security/limits.d/99-site.conf:1 'root hard memlock {half}' may take over "
        f"{LIMITS_FILE}: comment it out: sed -i '/^root hard memlock {half}$/s/^/# /' "
        "/etc/security/limits.d/99-site.conf",
        "node1 nccl_fabric: a new SSH session has NCCL_IB_HCA=mlx5 (expected "
        "NCCL_IB_HCA==mlx5_0:1,mlx5_1:1, NCCL_IB_GID_INDEX=7): by hand: ~/.pam_environment:1 "
        "'NCCL_IB_HCA DEFAULT=mlx5' sets NCCL_IB_HCA for a new SSH session too: comment it "
        "out: sed -i '/^NCCL_IB_HCA DEFAULT=mlx5$/s/^/# /' ~/.pam_environment"]
    # what the lines say to do, run on the node as printed (root is the login user here);
    # then a new login has ours again and verify is clean
    assert len(run_printed(bed, *lines)) == 2
    again = subprocess.run([sys.executable, "-m", "nodeprov", "verify", str(bed.inventory_path),
                            "-p", str(playbook), "--no-job"],
                           capture_output=True, text=True, timeout=180, check=False)
    assert again.returncode == 0, again.stdout + again.stderr
    login = bed.ssh("node1", "sh", "-c", 'echo "$(ulimit -l) $NCCL_IB_HCA"', check=True)
    assert login.stdout == f"{limit} =mlx5_0:1,mlx5_1:1\n", login.stdout
