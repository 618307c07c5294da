"""SSH under load (issue #22 point 6): sshd past MaxStartups closes new connections before its
banner; nodeprov tries them again within the connect timeout, and no library's traceback
reaches the terminal."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import MakeTestbed
from tests.reliability.helpers import apply, apply_args

MOTD = """\
- name: under load
  hosts: all
  tasks:
    - name: notice
      block: {path: /etc/motd, name: notice, lines: ["{{ motd_line }}"]}
"""


@pytest.mark.integration
def test_sixteen_nodes_through_one_throttled_sshd_all_complete(make_testbed: MakeTestbed,
                                                               tmp_path: Path) -> None:
    """Every node's sshd has ``MaxStartups 2:100:2`` (past 2 connections not yet logged in, it
    drops every new one), and all 16 are reached through node1's, as behind one jump host: at
    --forks 16, 16 connections reach node1's sshd at once. Before, 13 of 16 were unreachable,
    each with two paramiko tracebacks on the terminal."""
    bed = make_testbed(nodes=16, sshd_settings={"MaxStartups": "2:100:2"})
    args = apply_args(bed, tmp_path, MOTD, ansible_ssh_common_args=(
        f"-o ProxyJump=root@{bed.address('node1')}"))
    done = apply(*args, "--forks", "16", timeout=300)
    assert done.code == 0, done.output
    assert set(done.statuses().values()) == {"changed"} and len(done.statuses()) == 16
    assert "Traceback" not in done.stderr and "Exception (client)" not in done.stderr
