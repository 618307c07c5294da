"""The drift corpus's kit: verify names the drift, what it printed is run exactly as printed
(each by-hand command on its line's node, in a shell, then the repair command here), verify is
clean again. One testbed per session for the network items (conftest.py), one per module for
the names and environment items (``shared_cluster``).

    code, lines = verify(bed, playbook)
    line = named(lines, "node1", "firewall", "by hand: ufw rule '[ 1] Anywhere DENY IN ")
    run_printed(bed, line)                  # ufw delete ... on node1
    clean(bed, playbook)

    lines = drift_lines(bed, playbook)      # verify exits 1: its drift lines
    run_printed(bed, *lines)                # every command each line prints, once each
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from nodeprov.checks import REPAIR_SEPARATOR
from nodeprov.cli import app
from nodeprov.tasks.textfiles import byhand
from nodeprov.testbed.cluster import Testbed
from nodeprov.testbed.lifecycle import temporary
from tests.conftest import _sigterm_runs_cleanup, _skip_without_testbed
from tests.mirrors import LOCAL_MIRRORS
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
# The names and environment items, under hosts_domain too.
NAMES_ENV_PLAYBOOK = """\
- name: Names and environment
  hosts: all
  tasks:
    - name: Cluster names
      hosts: {fix_conflicts: "{{ hosts_fix_conflicts }}", domain: "{{ hosts_domain }}"}
      tags: [hosts]
    - name: NCCL environment
      nccl_env: {subnet: "{{ node_subnet }}", ifname: "{{ nccl_socket_ifname }}",
                 extra: "{{ nccl_env }}"}
      tags: [nccl_env]
"""
# What a boot does to the network items: systemd-sysctl's files, then ufw's boot service on its
# files. A test node may not set the machine's own kernel keys (kernel.pid_max: permission
# denied), so sysctl's exit status says nothing there: the tests read the keys they want.
BOOT = ("sysctl --system >/dev/null 2>&1; "
        "[ ! -x /lib/ufw/ufw-init ] || { /lib/ufw/ufw-init stop >/dev/null && "
        "/lib/ufw/ufw-init start quiet; }")
# where a by-hand item's command starts: after its verb
_COMMAND_STARTS = re.compile("|".join(re.escape(f": {verb}: ") for verb in byhand.VERBS))
# where it ends: the first "; " outside quotes (the next item, or the repair)
_QUOTED_OR_END = re.compile(r"'[^']*'|\"(?:[^\"\\]|\\.)*\"|\\.|; ")


def shared_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Testbed, Path]]:
    """Three nodes for a whole module, NAMES_ENV_PLAYBOOK applied once, and its path."""
    _skip_without_testbed()
    playbook = tmp_path_factory.mktemp("drift") / "names-env.yaml"
    playbook.write_text(NAMES_ENV_PLAYBOOK)
    with _sigterm_runs_cleanup(), temporary(nodes=3, outsider=False,
                                            shared=LOCAL_MIRRORS) as bed:
        applied(bed, playbook)
        yield bed, playbook


def verify(bed: Testbed, playbook: Path | None, *options: str, inventory: Path | None = None
           ) -> tuple[int, list[str]]:
    """``nodeprov verify`` (on the cluster's inventory unless given another; the default
    playbook, the job included, where ``playbook`` is None): its exit code and lines."""
    result = CliRunner().invoke(app, ["verify", str(inventory or bed.inventory_path),
                                      *(["-p", str(playbook)] if playbook else []), *options])
    assert result.exit_code in (0, 1), result.output
    return result.exit_code, result.stdout.splitlines()


def clean(bed: Testbed, playbook: Path | None, inventory: Path | None = None) -> None:
    """verify exits 0, every node in step."""
    code, lines = verify(bed, playbook, inventory=inventory)
    assert code == 0 and lines[-1].startswith("PASS: "), lines
    assert any(" 0 drifted, 0 could not run" in line for line in lines), lines


def drift_lines(bed: Testbed, playbook: Path, *options: str) -> list[str]:
    """The drift lines of a verify that must fail, one per line, the summary left off."""
    code, lines = verify(bed, playbook, *options)
    assert code == 1, lines
    return [line for line in lines[:-1] if re.match(r"node\d [a-z_]+: ", line)]


def named(lines: list[str], node: str, area: str, start: str) -> str:
    """The first line verify printed about ``node``'s ``area`` (the plan's), which must start
    with ``start``; the lines of its checks after it must print the same repair."""
    mine = [line for line in lines if line.startswith(f"{node} {area}: ")]
    assert mine and mine[0].startswith(f"{node} {area}: {start}"), lines
    assert len({line.partition(REPAIR_SEPARATOR)[2] for line in mine}) == 1, mine
    return mine[0]


def printed_commands(line: str) -> list[str]:
    """The commands a drift line prints, as printed: each by-hand item's (after its verb, up
    to the next item), then the repair (tested in tests/tasks/textfiles/test_byhand.py)."""
    body, _, repair = line.partition(REPAIR_SEPARATOR)
    commands = []
    for start in _COMMAND_STARTS.finditer(body):
        rest = body[start.end():]
        end = next((found.start() for found in _QUOTED_OR_END.finditer(rest)
                    if found.group() == "; "), len(rest))
        commands.append(rest[:end])
    return [*commands, *([repair] if repair else [])]


def run_printed(bed: Testbed, *lines: str) -> list[str]:
    """Run what each drift line prints, exactly as printed and once each: a by-hand command on
    the line's node (in sh, as the login user: root on a test node), the repair command here
    through the CLI (it must succeed). Returns the commands run, each as ``NODE: COMMAND``."""
    done: list[str] = []
    for line in lines:
        node = line.split(" ", 1)[0]
        for command in printed_commands(line):
            if f"{node}: {command}" in done:
                continue
            done.append(f"{node}: {command}")
            if command.startswith("nodeprov "):
                result = CliRunner().invoke(app, shlex.split(command)[1:])
                assert result.exit_code == 0, result.output
            else:
                ran = bed.exec(node, "sh", "-c", command)
                assert ran.returncode == 0, (command, ran.stdout, ran.stderr)
    return done


def boot(bed: Testbed, *nodes: str) -> None:
    """What a reboot does to the network items, on each node (BOOT)."""
    for node in nodes or bed.nodes:
        bed.exec(node, "sh", "-c", BOOT, check=True)


def applied(bed: Testbed, playbook: Path | None, *options: str, inventory: Path | None = None
            ) -> dict[str, Any]:
    """``nodeprov apply``'s JSON report (the default playbook where ``playbook`` is None); it
    must succeed."""
    result = CliRunner().invoke(app, ["apply", str(inventory or bed.inventory_path),
                                      *(["-p", str(playbook)] if playbook else []), *options,
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


def first_address(bed: Testbed, node: str, name: str) -> str:
    """What glibc answers first for ``name`` on ``node``, asked both ways a process may ask:
    getaddrinfo (getent ahostsv4, sorted by RFC 6724) and gethostbyname (getent hosts, the
    first match in /etc/hosts); "" for nothing, both named where they differ."""
    answers = [bed.exec(node, "getent", database, name).stdout.split()[:1]
               for database in ("ahostsv4", "hosts")]
    first = {answer[0] if answer else "" for answer in answers}
    return first.pop() if len(first) == 1 else " or ".join(sorted(first))


def subnet_address(bed: Testbed, node: str) -> str:
    """``node``'s address as its inventory names it (ansible_host, in the node subnet)."""
    inventory = yaml.safe_load(bed.inventory_path.read_text())
    return str(inventory["all"]["hosts"][node]["ansible_host"])
