"""The sysctl task: exact plans on recorded files, then the four steps and verify's drift on the
local test cluster."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from nodeprov.tasks import sysctl
from nodeprov.tasks.base import ParamError, Plan, Run, TaskFailed, Write, parse_params
from nodeprov.testbed.cluster import Testbed
from tests.conftest import MakeTestbed
from tests.tasks.kit import plan_task

DATA = Path(__file__).parent / "data"
DEBIAN_SYSCTL = (DATA / "ipv6-sysctl-debian12.conf").read_text()
OURS = "/etc/sysctl.d/90-nodeprov.conf"
RMEM, SOMAXCONN = "net.ipv4.tcp_rmem", "net.core.somaxconn"
# Both are per network namespace (Linux >= 4.15), so a testbed node changes only its own.
SETTINGS = {RMEM: "4096 131072 7000000", SOMAXCONN: 8192}
# /proc/sys prints a vector's numbers with tabs between (kernel/sysctl.c, proc_put_char '\t');
# this is /proc/sys/net/ipv4/tcp_rmem as read on a Linux 6.18 node with the kernel's defaults.
PROC_RMEM_DEFAULT = "4096\t131072\t6291456\n"
WANTED_FILE = ("# Written by nodeprov (sysctl task); edits are overwritten.\n"
               "net.core.somaxconn = 8192\nnet.ipv4.tcp_rmem = 4096 131072 7000000\n")


def found(rmem: str = PROC_RMEM_DEFAULT, somaxconn: str | None = "4096\n",
          **changed: str | None) -> dict[str, str | None]:
    """What the probe reads on a stock Debian 12 node (its sysctl.conf, also as 99-sysctl.conf),
    with files ``changed`` (by path)."""
    return {"/proc/sys/net/core/somaxconn": somaxconn, "/proc/sys/net/ipv4/tcp_rmem": rmem,
            OURS: None, "/etc/sysctl.conf": DEBIAN_SYSCTL,
            "/etc/sysctl.d/99-sysctl.conf": DEBIAN_SYSCTL, **changed}


def run(observed: dict[str, str | None], **params: Any) -> Plan:
    return plan_task(sysctl.TASK, {"settings": SETTINGS, **params}, observed)


def actions(result: Plan) -> list[Any]:
    return [action for change in result.changes for action in change.actions]


def test_probe_reads_live_values_our_file_and_every_boot_file() -> None:
    argv = sysctl.probe(parse_params(sysctl.SysctlParams, {"settings": SETTINGS})).argv
    # after the reader's name and its fresh root marker: the paths
    assert argv[argv.index("nodeprov-read") + 2:] == (
        "/proc/sys/net/core/somaxconn", "/proc/sys/net/ipv4/tcp_rmem", OURS, "/etc/sysctl.conf",
        "/etc/sysctl.d/*.conf", "/run/sysctl.d/*.conf", "/usr/local/lib/sysctl.d/*.conf",
        "/usr/lib/sysctl.d/*.conf", "/lib/sysctl.d/*.conf")


def test_a_fresh_node_gets_the_file_and_the_live_values() -> None:
    result = run(found())
    assert [change.summary for change in result.changes] == [
        f"persist 2 sysctl setting(s) in {OURS}",
        "set now: net.core.somaxconn=8192, net.ipv4.tcp_rmem=4096 131072 7000000"]
    assert actions(result) == [
        Write(OURS, WANTED_FILE),
        Run(("sysctl", "-w", "net.core.somaxconn=8192", "net.ipv4.tcp_rmem=4096 131072 7000000"))]
    assert result.changes[0].diff.startswith(f"--- /dev/null\n+++ {OURS}\n")


def test_in_sync_when_the_kernel_prints_the_values_with_tabs() -> None:
    result = run(found("4096\t131072\t7000000\n", "8192\n", **{OURS: WANTED_FILE}))
    assert result.in_sync
    assert result.notes == (f"2 sysctl setting(s) already live and in {OURS}",)


def test_only_the_stale_key_is_set_live() -> None:
    result = run(found("4096\t131072\t7000000\n", "1024\n", **{OURS: WANTED_FILE}))
    assert actions(result) == [Run(("sysctl", "-w", "net.core.somaxconn=8192"))]


def test_a_conflicting_sysctl_conf_line_is_commented_out_and_a_later_file_a_conflict() -> None:
    conf = DEBIAN_SYSCTL + "net.core.somaxconn = 128\nnet.ipv4.tcp_rmem=4096 131072 7000000\n"
    result = run(found("4096\t131072\t7000000\n", "8192\n", **{
        OURS: WANTED_FILE, "/etc/sysctl.conf": conf,
        "/etc/sysctl.d/10-early.conf": "net.core.somaxconn = 1\n",  # before ours: ours wins
        "/etc/sysctl.d/95-late.conf": "net.core.somaxconn=512\n"}))
    assert actions(result) == [Write("/etc/sysctl.conf", DEBIAN_SYSCTL + (
        "# nodeprov: net.core.somaxconn = 128\nnet.ipv4.tcp_rmem=4096 131072 7000000\n"))]
    assert result.conflicts == (
        f"/etc/sysctl.d/95-late.conf:1 'net.core.somaxconn=512' is applied after {OURS} at "
        "boot, so the setting would not stay as asked: comment it out: sed -i "
        "'/^net\\.core\\.somaxconn=512$/s/^/# /' /etc/sysctl.d/95-late.conf",)


def test_a_key_the_kernel_lacks_fails_naming_it() -> None:
    with pytest.raises(TaskFailed, match=r"no such sysctl on this kernel: net\.core\.somaxconn "
                                         r"\(nothing at /proc/sys/net/core/somaxconn\)"):
        run(found(somaxconn=None))


@pytest.mark.parametrize(("raw", "field"), [
    ({"settings": {}}, "settings"),
    ({"settings": {"rmem_max": 1}}, "settings"),
    ({"settings": {"net.core.rmem_max; reboot": 1}}, "settings"),
    ({"settings": {"-w net.core.rmem_max": 1}}, "settings"),
    ({"settings": {"net.core.rmem_max": "1\nnet.ipv4.ip_forward = 1"}}, "settings"),
    ({"settings": {"net.core.rmem_max": "   "}}, "settings"),
    ({"settings": {"net.core.rmem_max": "1\t2"}}, "settings"),
    ({"settings": {"net.core.rmem_max": 1}, "file": "/etc/sysctl.conf"}, "file"),
    ({"settings": {"net.core.rmem_max": 1}, "file": "/etc/sysctl.d/nodeprov"}, "file"),
    ({"settings": {"net.core.rmem_max": 1}, "file": "/etc/sysctl.d/../x.conf"}, "file"),
])
def test_bad_params_name_their_field(raw: dict[str, Any], field: str) -> None:
    with pytest.raises(ParamError) as error:
        parse_params(sysctl.SysctlParams, raw)
    assert error.value.field == field


# --- on a testbed --------------------------------------------------------------------------------

PLAYBOOK = """\
- name: Kernel settings
  hosts: all
  tasks:
    - name: Socket buffers
      sysctl:
        settings: {net.ipv4.tcp_rmem: "4096 131072 7000000", net.core.somaxconn: 8192}
      tags: [sysctl]
"""


def nodeprov(bed: Testbed, playbook: Path, command: str, *options: str
             ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "nodeprov", command, str(bed.inventory_path),
                           "-p", str(playbook), *options],
                          capture_output=True, text=True, timeout=180, check=False)


def statuses(bed: Testbed, playbook: Path, *options: str) -> list[str]:
    done = nodeprov(bed, playbook, "apply", "--json", "-", *options)
    assert done.returncode == 0, done.stderr
    return [host["tasks"][0]["status"] for host in json.loads(done.stdout)["hosts"].values()]


def live(bed: Testbed, node: str) -> str:
    return bed.exec(node, "cat", "/proc/sys/net/ipv4/tcp_rmem", "/proc/sys/net/core/somaxconn",
                    check=True).stdout


@pytest.mark.integration
def test_four_steps_then_verify_names_a_hand_made_change(make_testbed: MakeTestbed,
                                                         tmp_path: Path) -> None:
    bed = make_testbed(nodes=2, outsider=False)
    playbook = tmp_path / "sysctl.yaml"
    playbook.write_text(PLAYBOOK)
    before = live(bed, "node1")
    assert statuses(bed, playbook, "--check") == ["changed", "changed"]
    assert live(bed, "node1") == before  # check mode changed nothing
    assert statuses(bed, playbook) == ["changed", "changed"]
    assert statuses(bed, playbook) == ["ok", "ok"]
    assert statuses(bed, playbook, "--check") == ["ok", "ok"]
    assert live(bed, "node1") == "4096\t131072\t7000000\n8192\n"
    assert bed.exec("node1", "cat", OURS, check=True).stdout == WANTED_FILE

    clean = nodeprov(bed, playbook, "verify", "--no-job")
    assert clean.returncode == 0, clean.stdout + clean.stderr
    bed.exec("node2", "sysctl", "-w", "net.core.somaxconn=1024", check=True)
    drifted = nodeprov(bed, playbook, "verify", "--no-job")
    assert drifted.returncode == 1
    # the first line says what ran, the last two are the summary and the verdict
    assert drifted.stdout.splitlines()[1:-2] == [
        "node2 sysctl: plan: set now: net.core.somaxconn=8192; repair: nodeprov apply "
        f"{bed.inventory_path} --playbook {playbook} --limit node2 --tags sysctl"]
    assert statuses(bed, playbook, "--limit", "node2", "--tags", "sysctl") == ["changed"]
    assert nodeprov(bed, playbook, "verify", "--no-job").returncode == 0
