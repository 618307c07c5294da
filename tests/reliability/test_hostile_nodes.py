"""Hostile nodes (issue #14, point 8): what a node says about itself is checked before this
machine uses it; a path built from it stays under its root; its YAML is read with limits; its
text reaches the terminal escaped, never as markup or control sequences."""

from __future__ import annotations

import io
import time
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from typer.testing import CliRunner

from nodeprov.cli import app
from nodeprov.commands import facts as facts_command
from nodeprov.commands.console import LiveReporter, print_recap
from nodeprov.engine.outcome import HostResult, TaskResult
from nodeprov.remote.facts import parse_facts
from nodeprov.tasks.hosts import manage_etc_hosts
from nodeprov.wheels import wheelhouse
from tests.conftest import MakeTestbed
from tests.reliability.helpers import apply, apply_args
from tests.test_bad_input import GOOD_INVENTORY

GOOD = {
    "hostname": "node1", "fqdn": "node1.cluster", "kernel": "6.1.0-18-amd64", "arch": "x86_64",
    "os_release": 'ID=debian\nVERSION_ID="12"\nPRETTY_NAME="Debian GNU/Linux 12 (bookworm)"',
    "python": "/usr/bin/python3\nPython 3.11.2", "ephemeral_ports": "32768\t60999",
    "interfaces": '[{"ifname": "eth0", "flags": ["UP"], "addr_info": [{"family": "inet", '
                  '"local": "10.0.0.11", "prefixlen": 24}]}]',
    "package_manager": "/usr/bin/apt-get",
}


def test_good_facts_pass() -> None:
    facts = parse_facts(GOOD)
    assert (facts.arch, facts.python_version, facts.os_name) == (
        "x86_64", "3.11.2", "Debian GNU/Linux 12 (bookworm)")


@pytest.mark.parametrize(("section", "value", "fact"), [
    ("arch", "x86_64/../../../../root/.ssh", "arch"),
    ("python", "/usr/bin/python3\nPython 3.11/../../../../root/.ssh", "python version"),
    ("python", "/usr/bin/python3; reboot\nPython 3.11.2", "python path"),
    ("hostname", "node1;reboot", "hostname"),
    ("hostname", "node1\x1b]0;owned\x07", "hostname"),
    ("hostname", "n\u043ede1", "hostname"),
    ("fqdn", "node1.0x7f", "fqdn"),
    ("fqdn", "$(reboot).example", "fqdn"),
    ("kernel", "6.1.0 $(id)", "kernel"),
    ("os_release", 'ID="debian;x"', "os id"),
    ("os_release", 'PRETTY_NAME="Debian\x1b[2J\x9b31m"', "os name"),
    ("os_release", 'PRETTY_NAME="Debian\u2028fake line"', "os name"),
    ("interfaces", '[{"ifname": "eth0;reboot", "addr_info": []}]', "interface"),
    ("interfaces", '[{"ifname": "eth0", "addr_info": [{"family": "inet6", "local": '
                   '"fd00::1%x\\n6.6.6.6 pypi.org", "prefixlen": 64}]}]', "interface"),
    ("ephemeral_ports", "\u0663\u0662\u0667\u0666\u0668 60999", "ephemeral port range"),
    ("package_manager", "/usr/bin/apt-get $(id)", "package manager"),
])
def test_a_fact_out_of_pattern_is_refused_naming_it(section: str, value: str,
                                                    fact: str) -> None:
    with pytest.raises(ValueError, match=f"the node's {fact}"):
        parse_facts({**GOOD, section: value})


def test_the_wheelhouse_path_stays_under_its_root(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    good = wheelhouse.local_dir("cpu", "torch-2.13.0-" + wheelhouse.target_name(
        "3.11", (2, 36), "x86_64"))
    assert Path(good).resolve().is_relative_to(wheelhouse.cache_root())
    with pytest.raises(ValueError, match="cannot name a wheelhouse folder"):
        wheelhouse.target_name("3.11", (2, 36), "x86_64/../../../../root/.ssh")
    with pytest.raises(ValueError, match="cannot name a wheelhouse folder"):
        wheelhouse.target_name("3.11/../..", (2, 36), "x86_64")
    for name in ("..", "a/../../b", ".", "", "x\ny"):
        with pytest.raises(ValueError, match="not a plain file name"):
            wheelhouse.local_dir("cpu", name)


def test_a_nodes_cloud_init_alias_bomb_is_not_expanded() -> None:
    bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join([f'*{chr(97 + i)}'] * 10)}]\n"
        for i in range(8)) + "manage_etc_hosts: true\n"
    started = time.monotonic()
    setting, warnings = manage_etc_hosts({"/etc/cloud/cloud.cfg": bomb})
    assert time.monotonic() - started < 5
    assert setting is None  # read as cloud-init would not: refused, said so
    assert len(warnings) == 1 and "expands to more than" in warnings[0]


def _facts_of(os_name: str) -> Any:
    return parse_facts({**GOOD, "os_release": f'ID=debian\nPRETTY_NAME="{os_name}"'})


def test_node_text_in_the_facts_table_is_shown_as_written(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "inventory.yaml").write_text(GOOD_INVENTORY)
    facts = _facts_of("Debian [/] [bold red]12[/bold red]")
    monkeypatch.setattr(facts_command, "connect_all", lambda hosts, *args: (
        {}, {host.name: facts for host in hosts}, {}))
    result = CliRunner().invoke(app, ["facts", str(tmp_path / "inventory.yaml")])
    assert result.exit_code == 0, result.output
    assert "Debian [/] [bold red]12[/bold red]" in result.output


def test_node_text_reaches_the_terminal_with_its_escapes_spelled_out() -> None:
    out = io.StringIO()
    console = Console(file=out, force_terminal=False, width=200)
    error = "node1: hosts: 'cat' exited 1: \x1b]0;owned\x07\x1b[2J\x9b31m\u202eevil"
    print_recap(console, [HostResult("node1", status="failed", error=error)], check=False)
    shown = out.getvalue()
    for raw in ("\x1b", "\x07", "\x9b", "\u202e"):
        assert raw not in shown
    assert "\\x1b]0;owned\\x07" in shown


def test_the_live_table_shows_a_task_name_as_written() -> None:
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, width=200)
    name = "notice [/] [bold]x\x1b[2J"
    with LiveReporter(console, ["node1"]) as reporter:
        reporter.task_done("node1", TaskResult(name=name, type="block", status="ok"))
    shown = out.getvalue()
    assert "notice [/] [bold]x\\x1b[2J" in shown and "\x1b[2J" not in shown.replace(
        "\\x1b[2J", "")


HOSTS_PLAYBOOK = """\
- name: names
  hosts: all
  tasks:
    - name: hosts
      hosts: {fix_conflicts: true}
"""


@pytest.mark.integration
def test_a_node_printing_without_end_fails_alone_in_one_line(make_testbed: MakeTestbed,
                                                             tmp_path: Path) -> None:
    """Issue #23 point 7: what a node prints is read with a limit (a 20 MB /etc/hosts of one
    line was read whole into memory, as anything a node printed)."""
    bed = make_testbed(nodes=2)
    bed.exec("node2", "sh", "-c", "head -c 20000000 /dev/zero | tr '\\0' '#' >> /etc/hosts",
             check=True)
    args = apply_args(bed, tmp_path, HOSTS_PLAYBOOK)
    for mode in (["--check"], []):  # the facts read as they are (check), under the run lock
        done = apply(*args, *mode)
        assert done.code == 1 and done.statuses() == {"node1": "changed", "node2": "failed"}
        error = done.report["hosts"]["node2"]["error"]
        assert "printed over 16777216 characters, more than nodeprov reads" in error
        assert "\n" not in error and "Traceback" not in done.stderr


@pytest.mark.integration
def test_a_node_naming_itself_after_others_redirects_no_one(make_testbed: MakeTestbed,
                                                            tmp_path: Path) -> None:
    """Issue #23 point 2: a node's hostname went into every node's /etc/hosts: one naming
    itself download.pytorch.org, or node1, drew that name's traffic on every node."""
    bed = make_testbed(nodes=3)
    bed.exec("node2", "hostname", "download.pytorch.org", check=True)
    bed.exec("node3", "hostname", "node1", check=True)
    done = apply(*apply_args(bed, tmp_path, HOSTS_PLAYBOOK))
    assert done.code == 1
    assert done.statuses() == {"node1": "changed", "node2": "changed", "node3": "failed"}
    assert "node3 reports the hostname 'node1', which names the inventory host node1: listed " \
           "for node1 only" in done.report["hosts"]["node3"]["error"]
    for node in ("node1", "node2"):
        for name, owner in (("node1", "node1"), ("node3", "node3"), ("download", "node2")):
            assert bed.exec(node, "getent", "hosts", name).stdout.split()[0] == (
                bed.address(owner))
        assert bed.exec(node, "getent", "hosts", "download.pytorch.org").returncode == 2
