"""The drift corpus's steps for the network items (firewall, IPv6, the ephemeral range, the
subnet interface, a reboot): verify names the drift, what it printed is run as printed (the
by-hand command on the node, the repair here), verify passes again.

    code, lines = verify(bed, playbook)
    line = named(lines, "node1", "firewall", "by hand: ufw rule '[ 1] Anywhere DENY IN ")
    run_as_printed(bed, playbook, "node1", line)
"""

from __future__ import annotations

import json
import shlex
import subprocess
import time
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from nodeprov.checks import REPAIR_SEPARATOR
from nodeprov.cli import app
from nodeprov.testbed.cluster import Testbed
from tests.tasks.firewall.test_firewall import CONNECT, LISTENER

# The network items of the default playbook (venv and torch take minutes offline: elsewhere).
PLAYBOOK = """\
- name: Cluster network
  hosts: all
  tasks:
    - name: IPv6
      ipv6: {state: "{{ ipv6 }}"}
      tags: [ipv6]
    - name: Firewall
      firewall: {subnet: "{{ node_subnet }}", rdzv_port: "{{ rdzv_port }}",
                 ssh_allow_from: "{{ ssh_allow_from }}"}
      tags: [firewall]
    - name: Cluster names
      hosts: {fix_conflicts: "{{ hosts_fix_conflicts }}"}
      tags: [hosts]
    - name: NCCL environment
      nccl_env: {subnet: "{{ node_subnet }}", ifname: "{{ nccl_socket_ifname }}",
                 extra: "{{ nccl_env }}"}
      tags: [nccl_env]
"""
BY_HAND = "by hand: "
# What a boot does to the network items: systemd-sysctl's files, then ufw's boot service on its
# files. A test node may not set the machine's own kernel keys (kernel.pid_max: permission
# denied), so sysctl's exit status says nothing there: the tests read the keys they want.
BOOT = ("sysctl --system >/dev/null 2>&1; "
        "[ ! -x /lib/ufw/ufw-init ] || { /lib/ufw/ufw-init stop >/dev/null && "
        "/lib/ufw/ufw-init start quiet; }")


def verify(bed: Testbed, playbook: Path | None, inventory: Path | None = None
           ) -> tuple[int, list[str]]:
    """``nodeprov verify`` (on the cluster's inventory unless given another; the default
    playbook, the job included, where ``playbook`` is None): its exit code and lines."""
    result = CliRunner().invoke(app, ["verify", str(inventory or bed.inventory_path),
                                      *(["-p", str(playbook)] if playbook else [])])
    assert result.exit_code in (0, 1), result.output
    return result.exit_code, result.stdout.splitlines()


def clean(bed: Testbed, playbook: Path, inventory: Path | None = None) -> None:
    """verify exits 0, every node in step."""
    code, lines = verify(bed, playbook, inventory)
    assert code == 0 and lines[-1].startswith("PASS: "), lines
    assert any(" 0 drifted, 0 could not run" in line for line in lines), lines


def named(lines: list[str], node: str, area: str, start: str) -> str:
    """The first line verify printed about ``node``'s ``area`` (the plan's), which must start
    with ``start``; the lines of its checks after it must print the same repair."""
    mine = [line for line in lines if line.startswith(f"{node} {area}: ")]
    assert mine and mine[0].startswith(f"{node} {area}: {start}"), lines
    assert len({line.partition(REPAIR_SEPARATOR)[2] for line in mine}) == 1, mine
    return mine[0]


def run_as_printed(bed: Testbed, node: str, line: str) -> None:
    """Run what a drift line says, as printed: each by-hand command on the node (after the last
    ': ' of each conflict), then the repair command here."""
    body, _, repair = line.partition(REPAIR_SEPARATOR)
    _, found, removals = body.partition(BY_HAND)
    for removal in removals.split("; ") if found else ():
        command = removal.rpartition(": ")[2]
        done = bed.exec(node, "sh", "-c", command)
        assert done.returncode == 0, (command, done.stdout, done.stderr)
    if repair:
        argv = shlex.split(repair)
        assert argv[0] == "nodeprov", repair
        result = CliRunner().invoke(app, argv[1:])
        assert result.exit_code == 0, result.output


def boot(bed: Testbed, *nodes: str) -> None:
    """What a reboot does to the network items, on each node (BOOT)."""
    for node in nodes or bed.nodes:
        bed.exec(node, "sh", "-c", BOOT, check=True)


def applied(bed: Testbed, playbook: Path | None, inventory: Path | None = None
            ) -> dict[str, Any]:
    """``nodeprov apply``'s JSON report (the default playbook where ``playbook`` is None); it
    must succeed."""
    result = CliRunner().invoke(app, ["apply", str(inventory or bed.inventory_path),
                                      *(["-p", str(playbook)] if playbook else []),
                                      "--json", "-"])
    assert result.exit_code == 0, result.output
    report: dict[str, Any] = json.loads(result.stdout)
    return report


def reaches(bed: Testbed, source: str, node: str, port: int) -> bool:
    """Whether a connection from ``source`` gets to a listener on ``node``'s ``port`` (which
    may stay bound for up to 30 s after: ask again on another port)."""
    with subprocess.Popen(bed.exec_argv(node, ["python3", "-c", LISTENER, str(port)]),
                          stdout=subprocess.PIPE, text=True) as listener:
        try:
            assert listener.stdout is not None and listener.stdout.readline() == "ready\n"
            return bed.exec(source, "python3", "-c", CONNECT, bed.address(node), str(port),
                            timeout=20).returncode == 0
        finally:
            listener.kill()


def kernel(bed: Testbed, node: str, key: str) -> str:
    """A sysctl's value on the node, as the kernel has it now."""
    return " ".join(bed.exec(node, "sysctl", "-n", key, check=True).stdout.split())


def subnet_interface(bed: Testbed, node: str) -> str:
    """The name of the interface holding the node's subnet address."""
    shown = bed.exec(node, "ip", "-o", "-4", "addr", "show", "to", bed.address(node),
                     check=True).stdout.split()
    return shown[1]


def login_env(bed: Testbed, node: str, name: str) -> str:
    """A variable as a new SSH login on the node has it ("" where unset)."""
    return bed.ssh(node, "printenv", name).stdout.strip()


def rename_link(bed: Testbed, node: str, old: str, new: str) -> None:
    """Rename a link of the node (down, renamed, up), then wait until SSH gets through again."""
    bed.exec(node, "sh", "-c", 'ip link set dev "$1" down && ip link set dev "$1" name "$2" && '
             'ip link set dev "$2" up', "rename", old, new, check=True)
    deadline = time.monotonic() + 30
    while bed.ssh(node, "true").returncode != 0:
        assert time.monotonic() < deadline, f"{node}: no SSH after renaming {old} to {new}"
        time.sleep(0.5)
