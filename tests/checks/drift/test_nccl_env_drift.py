"""Drift corpus, NCCL/GLOO variables (#32 items 1-3): a user's line outside nodeprov's block
where its reader prefers it over ours, on one shared 3-node testbed. Each: verify names it
(node, item, file:line) with no apply command, the printed sed run as printed, verify exits 0,
and the reader (a new session, a login shell, NCCL's files) has the block's value."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from nodeprov.testbed.cluster import Testbed
from tests.checks.drift.printed import drift_lines, run_printed, shared_cluster, verify

pytestmark = pytest.mark.integration

Cluster = tuple[Testbed, Path]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    yield from shared_cluster(tmp_path_factory)


# su -l: a login through PAM (pam_env reads /etc/environment), then a login shell's profile.d
LOGIN = "su -l root -c 'printenv {}'"
# (the wreck on node2, as sh; what the by-hand line names; the effect on node2 after the
# repair, as sh, and what it prints)
ENV_WRECKS = {
    "GLOO in /etc/environment after the block": (
        "echo GLOO_SOCKET_IFNAME=lo >> /etc/environment", "/etc/environment:",
        "'GLOO_SOCKET_IFNAME=lo' overrides", LOGIN.format("GLOO_SOCKET_IFNAME"), "eth0"),
    "NCCL in /etc/nccl.conf before the block": (  # NCCL keeps a name's first assignment
        "sed -i '1i NCCL_SOCKET_IFNAME=lo' /etc/nccl.conf", "/etc/nccl.conf:1 ",
        "'NCCL_SOCKET_IFNAME=lo' overrides", "grep -m1 ^NCCL_SOCKET_IFNAME= /etc/nccl.conf",
        "NCCL_SOCKET_IFNAME==eth0"),
    "NCCL in /etc/profile.d": (
        "echo 'export NCCL_SOCKET_IFNAME=lo' > /etc/profile.d/zz-site.sh",
        "/etc/profile.d/zz-site.sh:1 ", "'export NCCL_SOCKET_IFNAME=lo' overrides",
        LOGIN.format("NCCL_SOCKET_IFNAME"), "=eth0"),
    "NCCL in an if block of /etc/profile.d": (  # its sed must leave the block valid
        "printf 'if [ -d / ]; then\\n  export NCCL_SOCKET_IFNAME=lo\\nfi\\n' "
        "> /etc/profile.d/zz-site.sh", "/etc/profile.d/zz-site.sh:2 ",
        "'export NCCL_SOCKET_IFNAME=lo' overrides",
        "bash -n /etc/profile.d/zz-site.sh && " + LOGIN.format("NCCL_SOCKET_IFNAME"), "=eth0"),
}


@pytest.mark.parametrize("wreck", ENV_WRECKS)
def test_a_user_line_that_wins_is_said_by_hand_and_its_sed_repairs_it(
        cluster: Cluster, wreck: str) -> None:
    bed, playbook = cluster
    assert verify(bed, playbook)[0] == 0
    command, where, setting, effect, wanted = ENV_WRECKS[wreck]
    assert bed.exec("node2", "sh", "-c", command).returncode == 0
    lines = drift_lines(bed, playbook)
    assert any(line.startswith(f"node2 nccl_env: by hand: {where}") and setting in line
               and "; repair: " not in line for line in lines), lines
    assert all(line.startswith("node2 nccl_env: ") and "; repair: " not in line
               for line in lines), lines  # no apply command: none would change it
    run_printed(bed, *lines)
    assert verify(bed, playbook)[0] == 0
    assert bed.exec("node2", "sh", "-c", effect).stdout.strip() == wanted


def test_the_login_users_nccl_conf_is_read_by_effect(cluster: Cluster) -> None:
    """~/.nccl.conf is the job user's: NCCL reads it before /etc/nccl.conf, nodeprov never
    writes it; only the new session's check sees it."""
    bed, playbook = cluster
    assert verify(bed, playbook)[0] == 0
    assert bed.exec("node2", "sh", "-c", "echo NCCL_SOCKET_IFNAME=lo > /root/.nccl.conf"
                    ).returncode == 0
    lines = drift_lines(bed, playbook)
    assert lines == [
        "node2 nccl_env: NCCL reads NCCL_SOCKET_IFNAME=lo from its files (expected "
        "NCCL_SOCKET_IFNAME==eth0): by hand: ~/.nccl.conf:1 'NCCL_SOCKET_IFNAME=lo' is what "
        "NCCL takes for NCCL_SOCKET_IFNAME, not '=eth0': comment it out: sed -i "
        "'/^NCCL_SOCKET_IFNAME=lo$/s/^/# /' ~/.nccl.conf"], lines
    run_printed(bed, *lines)
    assert verify(bed, playbook)[0] == 0
    assert bed.exec("node2", "cat", "/root/.nccl.conf").stdout == "# NCCL_SOCKET_IFNAME=lo\n"


# (the line appended on node2; the file in root's home; the start of its by-hand line; what
# its sed puts before the line: a shell's is a command that does nothing)
SESSION_WRECKS = {
    "PAM's user file": (
        "GLOO_SOCKET_IFNAME DEFAULT=lo", ".pam_environment",
        "node2 nccl_env: a new SSH session has GLOO_SOCKET_IFNAME=lo (expected "
        "NCCL_SOCKET_IFNAME==eth0, GLOO_SOCKET_IFNAME=eth0): by hand: ~/.pam_environment:",
        "# "),
    "a login shell's profile": (
        "export GLOO_SOCKET_IFNAME=lo", ".profile",
        "node2 nccl_env: a login shell has GLOO_SOCKET_IFNAME=lo (expected "
        "NCCL_SOCKET_IFNAME==eth0, GLOO_SOCKET_IFNAME=eth0): by hand: ~/.profile:", ": # "),
}


@pytest.mark.parametrize("wreck", SESSION_WRECKS)
def test_a_line_of_a_file_nodeprov_does_not_manage_is_named_and_its_sed_repairs_it(
        cluster: Cluster, wreck: str) -> None:
    """pam_env's user file and a login shell's own file: no task reads them, the new
    session's checks do, and name the line with the sed that comments it out."""
    bed, playbook = cluster
    assert verify(bed, playbook)[0] == 0
    text, name, start, prefix = SESSION_WRECKS[wreck]
    path = f"/root/{name}"  # root is the test nodes' login user
    assert bed.exec("node2", "sh", "-c", 'echo "$1" >> "$2"', "wreck", text, path
                    ).returncode == 0
    lines = drift_lines(bed, playbook)
    assert [line for line in lines if line.startswith(start)], lines
    assert all("; repair: " not in line for line in lines), lines
    assert run_printed(bed, *lines) == [f"node2: sed -i '/^{text}$/s/^/{prefix}/' ~/{name}"]
    assert verify(bed, playbook)[0] == 0
    assert bed.exec("node2", "tail", "-n1", path).stdout == f"{prefix}{text}\n"
