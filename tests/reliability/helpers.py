"""Helpers of the reliability tests (issue #8): run ``nodeprov apply`` as a real process on a
testbed, with inventory vars added, and read what it left on the nodes.

    args = apply_args(bed, tmp_path, NETWORK_PLAYBOOK, rdzv_port=29501)
    done = apply(*args)                     # exit code, stdout, stderr, JSON report
    files = managed_files(bed, "node1")     # {path: text or None}
"""

from __future__ import annotations

import json
import secrets
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from nodeprov.remote.nodelock import LOCK_PATH
from nodeprov.testbed.cluster import Testbed
from tests.report_schema import assert_valid

# The network tasks of site.yaml (fast: no torch), and a block in a file no other task writes.
NETWORK_PLAYBOOK = """\
- name: network
  hosts: all
  tasks:
    - name: IPv6
      ipv6: {state: "{{ ipv6 }}"}
    - name: Firewall
      firewall:
        subnet: "{{ node_subnet }}"
        rdzv_port: "{{ rdzv_port }}"
        ssh_port: "{{ ansible_port }}"
        ssh_allow_from: "{{ ssh_allow_from }}"
    - name: hosts
      hosts: {fix_conflicts: "{{ hosts_fix_conflicts }}"}
    - name: NCCL env
      nccl_env: {subnet: "{{ node_subnet }}", ifname: "{{ nccl_socket_ifname }}",
                 extra: "{{ nccl_env }}"}
    - name: notice
      block: {path: /etc/motd, name: notice, lines: ["{{ motd_line }}"]}
"""
# Every file the playbook above writes with nodeprov's atomic write.
MANAGED_FILES = ("/etc/hosts", "/etc/environment", "/etc/nccl.conf",
                 "/etc/sysctl.d/99-zz-nodeprov-ipv6.conf", "/etc/default/ufw", "/etc/motd")


@dataclass(frozen=True)
class Applied:
    code: int
    stdout: str
    stderr: str
    report: dict[str, Any]

    @property
    def output(self) -> str:
        """stdout and stderr with rich's line wrapping undone."""
        return " ".join((self.stdout + self.stderr).split())

    def statuses(self) -> dict[str, str]:
        return {name: host["status"] for name, host in self.report.get("hosts", {}).items()}


def apply_args(bed: Testbed, folder: Path, playbook: str, **variables: Any) -> list[str]:
    """``INVENTORY -p PLAYBOOK`` in ``folder``: the testbed's inventory with ``variables``."""
    inventory = yaml.safe_load(bed.inventory_path.read_text())
    inventory["all"]["vars"].update({"motd_line": "hello", **variables})
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "inventory.yaml").write_text(yaml.safe_dump(inventory))
    (folder / "playbook.yaml").write_text(playbook)
    return [str(folder / "inventory.yaml"), "-p", str(folder / "playbook.yaml")]


def apply_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "nodeprov", "apply", *args]


def apply(*args: str, timeout: float = 120) -> Applied:
    """``nodeprov apply ARGS --json FILE`` as a process of its own; its outcome."""
    report = Path(args[0]).with_name(f"report-{secrets.token_hex(4)}.json")
    done = subprocess.run(apply_command(*args, "--json", str(report)), capture_output=True,
                          text=True, timeout=timeout, check=False)
    document = json.loads(report.read_text()) if report.exists() else {}
    if document:
        assert_valid(document)
    return Applied(done.returncode, done.stdout, done.stderr, document)


def managed_files(bed: Testbed, node: str, paths: tuple[str, ...] = MANAGED_FILES
                  ) -> dict[str, str | None]:
    """Each file's text on the node, None when absent."""
    found: dict[str, str | None] = {}
    for path in paths:
        shown = bed.exec(node, "cat", "--", path)
        found[path] = shown.stdout if shown.returncode == 0 else None
    return found


def ufw_status(bed: Testbed, node: str) -> list[str]:
    """``ufw status verbose``, runs of spaces squeezed."""
    shown = bed.exec(node, "ufw", "status", "verbose", check=True).stdout
    return [" ".join(line.split()) for line in shown.splitlines() if line.strip()]


def nodeprov_processes(bed: Testbed, node: str) -> str:
    """What nodeprov left running on the node: a batch, the firewall's guard, a lock holder."""
    shown = bed.exec(node, "pgrep", "-af", "nodeprov|ufw-helper").stdout
    return "\n".join(line for line in shown.splitlines()
                     if "pgrep" not in line and "sshd:" not in line)


def wait_for_batches(bed: Testbed, node: str) -> None:
    """Until no batch of actions runs on the node (one a killed run left goes on to its end)."""
    bed.exec(node, "flock", "-w", "60", LOCK_PATH, "true", timeout=90)
