"""The drift corpus's steps for the hosts and nccl_env items (#32): one testbed shared by a
module, verify's drift lines, and each printed repair run as printed.

    lines = drift_lines(bed, playbook, "node2")        # verify exits 1, node2's lines
    run_repairs(bed, lines)                            # apply as printed, or the sed on the node
    assert verify_exit(bed, playbook) == 0
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from nodeprov.checks import REPAIR_SEPARATOR
from nodeprov.cli import app
from nodeprov.testbed.cluster import Testbed
from nodeprov.testbed.lifecycle import temporary
from tests.conftest import _sigterm_runs_cleanup, _skip_without_testbed
from tests.mirrors import LOCAL_MIRRORS

PLAYBOOK = """\
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
# the command a by-hand line prints for a file's line: "(sed -i '5d' /etc/environment)"
_SED = re.compile(r"\((sed -i '\d+d' [^)\s]+)\)")


def shared_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Testbed, Path]]:
    """Three nodes for a whole module, applied once, and the playbook's path."""
    _skip_without_testbed()
    playbook = tmp_path_factory.mktemp("drift") / "names-env.yaml"
    playbook.write_text(PLAYBOOK)
    with _sigterm_runs_cleanup(), temporary(nodes=3, outsider=False,
                                            shared=LOCAL_MIRRORS) as bed:
        assert apply(bed, playbook) == 0
        yield bed, playbook


def apply(bed: Testbed, playbook: Path, *options: str) -> int:
    result = CliRunner().invoke(app, ["apply", str(bed.inventory_path), "-p", str(playbook),
                                      *options])
    return result.exit_code


def verify(bed: Testbed, playbook: Path, *options: str) -> tuple[int, list[str]]:
    """verify's exit code and lines (the job's too: the playbook has no venv, so no job)."""
    result = CliRunner().invoke(app, ["verify", str(bed.inventory_path), "-p", str(playbook),
                                      *options])
    assert result.exit_code in (0, 1), result.output
    return result.exit_code, result.stdout.splitlines()


def drift_lines(bed: Testbed, playbook: Path, *options: str) -> list[str]:
    """The drift lines of a verify that must fail, one per line, the summary left off."""
    code, lines = verify(bed, playbook, *options)
    assert code == 1, lines
    return [line for line in lines[:-1] if re.match(r"node\d [a-z_]+: ", line)]


def run_repairs(bed: Testbed, lines: list[str]) -> list[str]:
    """Run each line's repair as printed, once each: an apply command through the CLI, a
    by-hand sed on the line's node (as root, the node's login user here); the commands run."""
    done: list[str] = []
    for line in lines:
        node = line.split(" ", 1)[0]
        commands = [f"{node}: {command}" for command in _SED.findall(line)]
        if REPAIR_SEPARATOR in line:
            commands.append(line.split(REPAIR_SEPARATOR, 1)[1])
        for command in commands:
            if command in done:
                continue
            done.append(command)
            if command.startswith("nodeprov "):
                result = CliRunner().invoke(app, shlex.split(command)[1:])
                assert result.exit_code == 0, result.output
            else:
                ran = bed.exec(node, "sh", "-c", command.split(": ", 1)[1])
                assert ran.returncode == 0, ran.stderr
    return done


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
