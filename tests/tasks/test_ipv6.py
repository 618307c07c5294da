"""The ipv6 task on recorded sysctl and ufw files: exact plans and no-op notes."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from nodeprov.inventory import Host
from nodeprov.remote import reader
from nodeprov.tasks.base import (
    Context,
    ParamError,
    Plan,
    Run,
    TaskFailed,
    Write,
    parse_params,
)
from nodeprov.tasks.ipv6 import UFW_DEFAULTS, Ipv6Params, plan, sysctl_text
from nodeprov.tasks.textfiles.sysctl_conf import proc_path
from nodeprov.testbed.cluster import Testbed
from tests.tasks.kit import make_facts, one_node

DATA = Path(__file__).parent / "data"
OURS = "/etc/sysctl.d/99-zz-nodeprov-ipv6.conf"
ALL = "net.ipv6.conf.all.disable_ipv6"
DEFAULT = "net.ipv6.conf.default.disable_ipv6"
DEBIAN_SYSCTL = (DATA / "ipv6-sysctl-debian12.conf").read_text()
DEBIAN_UFW = (DATA / "ipv6-ufw-default-debian12.txt").read_text()


def node(ufw_active: bool = False) -> Context:
    return one_node(make_facts(ufw_active=ufw_active), Host("node1", "10.0.0.11", "10.0.0.11"))


def debian(live: tuple[str | None, str | None] = ("0\n", "0\n"),
           changed: dict[str, str | None] | None = None) -> dict[str, str | None]:
    """What the probe reads on a stock Debian 12 node, with ``changed`` files replaced."""
    return {proc_path(ALL): live[0], proc_path(DEFAULT): live[1], OURS: None,
            "/etc/sysctl.conf": DEBIAN_SYSCTL, UFW_DEFAULTS: DEBIAN_UFW,
            "/etc/sysctl.d/99-sysctl.conf": DEBIAN_SYSCTL,
            "/usr/lib/sysctl.d/50-pid-max.conf": "kernel.pid_max = 4194304\n", **(changed or {})}


def run(found: dict[str, str | None], state: str = "disabled", ufw_active: bool = False) -> Plan:
    return plan(node(ufw_active), parse_params(Ipv6Params, {"state": state}),
                reader.files_output(found))


def actions(result: Plan) -> list[Run | Write]:
    return [action for change in result.changes for action in change.actions
            if isinstance(action, (Run, Write))]


UFW_NO = DEBIAN_UFW.replace("\nIPV6=yes\n", "\nIPV6=no\n")


def test_disable_on_stock_debian() -> None:
    result = run(debian())
    assert [change.summary for change in result.changes] == [
        f"persist IPv6 disabled in {OURS}",
        f"disable IPv6 now: {ALL}=1, {DEFAULT}=1",
        f"set IPV6=no in {UFW_DEFAULTS}"]
    assert actions(result) == [
        Write(OURS, "# Written by nodeprov (ipv6: disabled); edits are overwritten.\n"
                    f"{ALL} = 1\n{DEFAULT} = 1\n"),
        Run(("sysctl", "-w", f"{ALL}=1", f"{DEFAULT}=1")),
        Write(UFW_DEFAULTS, UFW_NO)]
    assert "-IPV6=yes\n+IPV6=no\n" in result.changes[2].diff
    done = run(debian(("1\n", "1\n"), {OURS: sysctl_text("disabled", "1"),
                                         UFW_DEFAULTS: UFW_NO}))
    assert done.in_sync and done.notes == (
        f"IPv6 already disabled: disable_ipv6=1 live and in {OURS}",
        "ufw's IPV6= already says no")


def test_active_ufw_is_reloaded_after_its_ipv6_line_changes() -> None:
    result = run(debian(("1\n", "1\n"), {OURS: sysctl_text("disabled", "1")}), ufw_active=True)
    assert [change.summary for change in result.changes] == [
        f"set IPV6=no in {UFW_DEFAULTS} and reload ufw"]
    assert actions(result) == [Write(UFW_DEFAULTS, UFW_NO), Run(("ufw", "reload"))]


def test_enable_reverses_everything() -> None:
    result = run(debian(("1\n", "1\n"), {OURS: sysctl_text("disabled", "1"),
                                           UFW_DEFAULTS: UFW_NO}), state="enabled")
    assert actions(result) == [
        Write(OURS, "# Written by nodeprov (ipv6: enabled); edits are overwritten.\n"
                    f"{ALL} = 0\n{DEFAULT} = 0\n"),
        Run(("sysctl", "-w", f"{ALL}=0", f"{DEFAULT}=0")),
        Write(UFW_DEFAULTS, DEBIAN_UFW)]
    assert run(debian(changed={OURS: sysctl_text("enabled", "0")}), state="enabled").in_sync


def test_only_the_drifted_key_is_set_live() -> None:
    result = run(debian(("1\n", "0\n"), {OURS: sysctl_text("disabled", "1"),
                                           UFW_DEFAULTS: UFW_NO}))
    assert actions(result) == [Run(("sysctl", "-w", f"{DEFAULT}=1"))]


def test_conflicting_lines_of_sysctl_conf_are_commented_out() -> None:
    admin = DEBIAN_SYSCTL + (DATA / "ipv6-sysctl-admin-tail.conf").read_text()
    result = run(debian(("1\n", "1\n"), {OURS: sysctl_text("disabled", "1"),
                                           UFW_DEFAULTS: UFW_NO, "/etc/sysctl.conf": admin}))
    assert [change.summary for change in result.changes] == [
        "comment out the conflicting disable_ipv6 lines of /etc/sysctl.conf (read last at boot, "
        "it would win)"]
    assert actions(result) == [Write("/etc/sysctl.conf", DEBIAN_SYSCTL + (
        "# Tuning for the training network (added by an admin)\n"
        "net.core.rmem_max = 16777216\n"
        "# nodeprov: net.ipv6.conf.all.disable_ipv6 = 0\n"
        "# nodeprov:   net/ipv6/conf/default/disable_ipv6=0   \n"
        "-net.ipv6.conf.lo.disable_ipv6 = 0\n"))]


def test_files_applied_after_ours_are_conflicts_named_with_their_line() -> None:
    found = debian(("1\n", "1\n"), {
        OURS: sysctl_text("disabled", "1"), UFW_DEFAULTS: UFW_NO,
        "/etc/sysctl.d/10-ipv6.conf": f"{ALL} = 0\n",  # before ours: ours wins
        "/etc/sysctl.d/zz-ipv6.conf": f"# a cloud image's\n{ALL}=0\n",
        "/etc/sysctl.d/zz-shadow.conf": "# empty, shadows the one in /usr/lib\n",
        "/usr/lib/sysctl.d/zz-shadow.conf": f"{DEFAULT}=0\n"})
    result = run(found)
    assert not result.in_sync and not result.changes and result.conflicts == (
        f"/etc/sysctl.d/zz-ipv6.conf:2 '{ALL}=0' is applied after {OURS} at boot, so IPv6 "
        "would not stay as asked: comment it out: sed -i "
        "'/^net\\.ipv6\\.conf\\.all\\.disable_ipv6=0$/s/^/# /' /etc/sysctl.d/zz-ipv6.conf",)


def test_kernel_without_ipv6() -> None:
    off = run(debian((None, None), {UFW_DEFAULTS: UFW_NO,
                                     "/etc/sysctl.d/zz-ipv6.conf": f"{ALL} = 0\n"}))
    assert off.in_sync and off.notes == (
        "this kernel has no IPv6 (booted with ipv6.disable=1): already off",
        "ufw's IPV6= already says no")
    ufw_only = run(debian((None, None)))
    assert actions(ufw_only) == [Write(UFW_DEFAULTS, UFW_NO)]
    with pytest.raises(TaskFailed, match="booted with ipv6.disable=1"):
        run(debian((None, None)), state="enabled")


def test_without_ufw_and_with_ufw_lacking_the_line() -> None:
    done = run(debian(("1", "1"), {OURS: sysctl_text("disabled", "1"), UFW_DEFAULTS: None}))
    assert done.in_sync and done.notes == (
        f"IPv6 already disabled: disable_ipv6=1 live and in {OURS}",)
    result = run(debian(("1", "1"), {OURS: sysctl_text("disabled", "1"),
                                       UFW_DEFAULTS: "MANAGE_BUILTINS=no"}))
    assert actions(result) == [Write(UFW_DEFAULTS, "MANAGE_BUILTINS=no\nIPV6=no\n")]
    quoted = run(debian(("1", "1"), {OURS: sysctl_text("disabled", "1"),
                                       UFW_DEFAULTS: 'IPV6="NO"\n'}))
    assert quoted.in_sync


@pytest.mark.parametrize(("raw", "field"), [
    ({"state": "off"}, "state"),
    ({"sysctl_file": "/etc/nodeprov-ipv6.conf"}, "sysctl_file"),
    ({"sysctl_file": "/etc/sysctl.d/99-zz-nodeprov-ipv6"}, "sysctl_file"),
    ({"sysctl_file": "/etc/sysctl.d/../x.conf"}, "sysctl_file"),
])
def test_bad_params(raw: dict[str, str], field: str) -> None:
    with pytest.raises(ParamError) as error:
        parse_params(Ipv6Params, raw)
    assert error.value.field == field


# --- on a testbed --------------------------------------------------------------------------------

def apply(bed: Testbed, state: str, tmp_path: Path, *options: str) -> list[str]:
    """Run a playbook with the ipv6 task on the testbed; the task's status on each node."""
    playbook = tmp_path / f"ipv6-{state}.yaml"
    playbook.write_text(f"- name: IPv6\n  hosts: all\n  tasks:\n    - ipv6: {{state: {state}}}\n")
    done = subprocess.run([sys.executable, "-m", "nodeprov", "apply", str(bed.inventory_path),
                           "-p", str(playbook), "--json", "-", *options],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    return [host["tasks"][0]["status"] for host in json.loads(done.stdout)["hosts"].values()]


def live_values(bed: Testbed) -> str:
    return bed.exec("node1", "cat", proc_path(ALL), proc_path(DEFAULT), check=True).stdout


@pytest.mark.integration
def test_disable_then_enable_on_a_testbed(make_testbed: Callable[..., Testbed],
                                          tmp_path: Path) -> None:
    bed = make_testbed(nodes=1)
    bed.exec("node1", "sh", "-c", f'echo "{ALL} = 0" >> /etc/sysctl.conf && ufw allow 22/tcp '
             "&& ufw --force enable", check=True)
    assert apply(bed, "disabled", tmp_path, "--check") == ["changed"]
    assert apply(bed, "disabled", tmp_path) == ["changed"]
    assert apply(bed, "disabled", tmp_path) == ["ok"]
    assert apply(bed, "disabled", tmp_path, "--check") == ["ok"]
    assert live_values(bed) == "1\n1\n"
    bed.exec("node1", "sysctl", "--system")  # what a reboot applies (kernel.* keys fail here)
    assert live_values(bed) == "1\n1\n"
    sysctl_conf = bed.exec("node1", "cat", "/etc/sysctl.conf").stdout
    assert sysctl_conf.endswith(f"\n# nodeprov: {ALL} = 0\n")
    assert "\nIPV6=no\n" in bed.exec("node1", "cat", UFW_DEFAULTS).stdout

    assert apply(bed, "enabled", tmp_path) == ["changed"]
    assert apply(bed, "enabled", tmp_path) == ["ok"]
    assert live_values(bed) == "0\n0\n"
    bed.exec("node1", "sysctl", "--system")
    assert live_values(bed) == "0\n0\n"
    assert "\nIPV6=yes\n" in bed.exec("node1", "cat", UFW_DEFAULTS).stdout
    assert bed.exec("node1", "ufw", "status").stdout.startswith("Status: active")
