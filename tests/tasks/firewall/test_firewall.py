"""The firewall task: ufw parsing and rendering on recorded files, plans from recorded states,
the lockout guard script on this machine, and (integration) real ufw in testbed nodes."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from nodeprov.inventory import Host
from nodeprov.tasks.base import (
    Change,
    ConfirmNewConnection,
    Context,
    ParamError,
    Plan,
    Run,
    TaskFailed,
    Write,
    parse_params,
)
from nodeprov.tasks.firewall import GUARD_PID, FirewallParams, plan, probe, read_state, ufw
from nodeprov.tasks.firewall.guard import HELPER, HELPER_SCRIPT
from nodeprov.testbed.cluster import Testbed
from tests.tasks.firewall.ufw_cases import FACTS, recorded, section, texts

SSH_ANY = ("ufw", "allow", "proto", "tcp", "from", "any", "to", "any", "port", "22", "comment",
           "nodeprov: ssh")
NCCL = ("ufw", "allow", "proto", "tcp", "from", "10.0.0.0/24", "to", "any", "port",
        "32768:60999", "comment", "nodeprov: nccl ephemeral")
RDZV = ("ufw", "allow", "proto", "tcp", "from", "10.0.0.0/24", "to", "any", "port", "29500",
        "comment", "nodeprov: rdzv")
WRITE_HELPER = Write(HELPER, HELPER_SCRIPT)
ARM, ENABLE, DISARM = (("arm", "30"), ("ufw", "--force", "enable"), ("disarm", "tcp/22 from any"))
START, NEED_IP6TABLES = ("start",), ("need-ip6tables",)
# The files ufw's command line writes, and the fast path with them
RULE_FILES = (ufw.CONF, ufw.RULES, ufw.RULES6)
# What a drift line says is added, in ufw's words
ADDED = ("allow from any to any port 22 proto tcp, allow from 10.0.0.0/24 to any port "
         "32768:60999 proto tcp, allow from 10.0.0.0/24 to any port 29500 proto tcp")


def plan_for(case: str, *, port: int = 22, **params: Any) -> Plan:
    facts = dataclasses.replace(FACTS, **{k: params.pop(k) for k in list(params)
                                          if k in ("ufw_installed", "ufw_active",
                                                   "package_manager", "firewalld_active",
                                                   "ufw_rules_in_var_lib")})
    context = Context(Host("node1", "10.0.0.11", "10.0.0.11", port=port), facts, {})
    return plan(context, parse_params(FirewallParams, {"subnet": "10.0.0.0/24", **params}),
                recorded(case))


def steps(change: Change) -> list[Any]:
    """What the change runs through the helper script, after writing it; writes as "write
    PATH", the confirmation reduced to its type."""
    assert change.actions[0] == WRITE_HELPER
    found: list[Any] = []
    for action in change.actions[1:]:
        if isinstance(action, Run):
            assert action.argv[:2] == ("sh", HELPER)
            found.append(action.argv[2:])
        else:
            found.append(str(action) if isinstance(action, Write) else type(action))
    return found


def written(change: Change) -> dict[str, str]:
    return {a.path: a.content for a in change.actions if isinstance(a, Write) and a.path != HELPER}


# --- plans from recorded states ------------------------------------------------------------------

def test_fresh_node_gets_ufws_files_then_loads_them_under_the_guard() -> None:
    (enable,) = plan_for("fresh", ufw_active=False).changes
    assert enable.summary == (f"add ufw rule(s): {ADDED}; enable ufw (reverted in 30s unless a "
                              "new SSH connection works)")
    # the rule files change nothing live while ufw is inactive; ENABLED=yes and loading them do
    assert steps(enable) == [NEED_IP6TABLES, f"write {ufw.RULES}", f"write {ufw.RULES6}", ARM,
                             f"write {ufw.CONF}", START, ConfirmNewConnection, DISARM]
    assert enable.diff == ("+ allow tcp 22 from any (nodeprov: ssh)\n"
                           "+ allow tcp 22 from any (v6) (nodeprov: ssh)\n"
                           "+ allow tcp 32768:60999 from 10.0.0.0/24 (nodeprov: nccl ephemeral)\n"
                           "+ allow tcp 29500 from 10.0.0.0/24 (nodeprov: rdzv)\n"
                           "~ ufw: inactive -> active\n")
    confirm = enable.actions[-2]
    assert isinstance(confirm, ConfirmNewConnection)
    assert confirm.why == f"add ufw rule(s): {ADDED}; enable ufw, SSH allowed on tcp/22 from any"


@pytest.mark.parametrize(("before", "after", "commands"), [
    # after: recorded after `ufw allow` x 3 and `ufw --force enable` (record.sh)
    ("fresh", "in-sync", [f"write {ufw.RULES}", f"write {ufw.RULES6}", ARM]),
    # IPV6=no: ufw's enable empties user6.rules, and the fast path does as it does
    ("fresh-ipv6-off", "ipv6-off", [f"write {ufw.RULES}", f"write {ufw.RULES6}", ARM]),
    # the user's rules of every shape kept, a stale rule of ours gone, the policy set by ufw
    # (user6.rules is as ufw would write it already: no write)
    ("mixed", "mixed-enabled", [NEED_IP6TABLES, f"write {ufw.RULES}", ARM,
                                ("ufw", "default", "deny", "incoming")]),
])
def test_the_files_written_are_those_ufws_command_line_leaves(before: str, after: str,
                                                              commands: list[Any]) -> None:
    (enable,) = plan_for(before, ufw_active=False).changes
    assert steps(enable)[-len(commands) - 4:-4] == commands
    assert steps(enable)[-4:] == [f"write {ufw.CONF}", START, ConfirmNewConnection, DISARM]
    now, then = texts(before), texts(after)
    assert {path: written(enable).get(path, now[path]) for path in RULE_FILES} == {
        path: then[path] for path in RULE_FILES}


def test_rules_ufw_would_rewrite_leave_it_to_ufws_command_line() -> None:
    # ufw 0.2x wrote tuples of 6 fields; ufw rewrites them, so it must do the change
    old = recorded("fresh").replace("### RULES ###\n",
                                    "### RULES ###\n### tuple ### allow tcp 22 0.0.0.0/0 any "
                                    "0.0.0.0/0\n-A ufw-user-input -p tcp --dport 22 -j ACCEPT\n")
    context = Context(Host("node1", "10.0.0.11", "10.0.0.11"),
                      dataclasses.replace(FACTS, ufw_active=False), {})
    add, enable = plan(context, parse_params(FirewallParams, {"subnet": "10.0.0.0/24"}),
                       old).changes
    assert steps(add) == [SSH_ANY, NCCL, RDZV]
    assert steps(enable) == [ARM, ENABLE, ConfirmNewConnection, DISARM]


def test_enabled_at_boot_but_not_loaded_is_loaded_without_rewriting_ufw_conf() -> None:
    (enable,) = plan_for("in-sync", ufw_active=False).changes
    assert enable.summary.startswith("enable ufw (reverted in 30s")
    assert steps(enable) == [NEED_IP6TABLES, ARM, START, ConfirmNewConnection, DISARM]
    assert enable.diff == "~ ufw: enabled but not loaded -> active\n"


def test_a_missing_log_level_is_set_to_low_as_ufw_enable_sets_it() -> None:
    observed = recorded("in-sync").replace("LOGLEVEL=low\n", "")
    context = Context(Host("node1", "10.0.0.11", "10.0.0.11"),
                      dataclasses.replace(FACTS, ufw_active=False), {})
    (enable,) = plan(context, parse_params(FirewallParams, {"subnet": "10.0.0.0/24"}),
                     observed).changes
    assert written(enable) == {ufw.CONF: section("in-sync", ufw.CONF).replace(
        "LOGLEVEL=low\n", "") + "LOGLEVEL=low\n"}


def test_in_sync_node_is_a_noop_that_says_why() -> None:
    result = plan_for("in-sync")
    assert result.in_sync and not result.warnings
    assert result.notes == (
        "ufw rule already present: allow any -> 22/tcp",
        "ufw rule already present: allow any -> 22/tcp (v6)",
        "ufw rule already present: allow 10.0.0.0/24 -> 32768:60999/tcp",
        "ufw rule already present: allow 10.0.0.0/24 -> 29500/tcp",
        "ufw active: default deny incoming, allow outgoing",
    )


def test_stale_subnet_rules_of_ours_go_and_the_users_rules_stay() -> None:
    result = plan_for("stale-subnet")
    add, remove = result.changes  # ssh is unchanged and ufw active: no guard
    assert steps(add) == [NCCL, RDZV]
    assert remove.summary == ("remove stale nodeprov ufw rule(s): allow from 10.9.0.0/24 to any "
                              "port 32768:60999 proto tcp, allow from 10.9.0.0/24 to any port "
                              "29500 proto tcp")
    assert steps(remove) == [
        ("ufw", "delete", "allow", "proto", "tcp", "from", "10.9.0.0/24", "to", "0.0.0.0/0",
         "port", "32768:60999"),
        ("ufw", "delete", "allow", "proto", "tcp", "from", "10.9.0.0/24", "to", "0.0.0.0/0",
         "port", "29500")]
    assert remove.diff == ("- allow tcp 32768:60999 from 10.9.0.0/24 (nodeprov: nccl ephemeral)\n"
                           "- allow tcp 29500 from 10.9.0.0/24 (nodeprov: rdzv)\n")
    assert "8080" not in str(result) and "10.1.0.0/16" not in str(result)


def test_ssh_moving_from_a_cidr_to_any_removes_the_old_rule_under_the_guard() -> None:
    add, guarded = plan_for("ssh-cidr").changes
    assert steps(add) == [SSH_ANY]
    delete = ("ufw", "delete", "allow", "proto", "tcp", "from", "192.168.7.0/24", "to",
              "0.0.0.0/0", "port", "22")
    assert steps(guarded) == [ARM, delete, ConfirmNewConnection, DISARM]
    assert guarded.summary.startswith("remove SSH rule allow 192.168.7.0/24 -> 22/tcp (reverted")


def test_ssh_from_a_cidr_replaces_the_rules_from_anywhere() -> None:
    add, guarded = plan_for("in-sync", ssh_allow_from="192.168.7.0/24").changes
    assert steps(add) == [("ufw", "allow", "proto", "tcp", "from", "192.168.7.0/24", "to", "any",
                           "port", "22", "comment", "nodeprov: ssh")]
    assert steps(guarded) == [
        ARM,
        ("ufw", "delete", "allow", "proto", "tcp", "from", "0.0.0.0/0", "to", "0.0.0.0/0",
         "port", "22"),
        ("ufw", "delete", "allow", "proto", "tcp", "from", "::/0", "to", "::/0", "port", "22"),
        ConfirmNewConnection, ("disarm", "tcp/22 from 192.168.7.0/24")]
    confirm = guarded.actions[-2]
    assert isinstance(confirm, ConfirmNewConnection) and "from 192.168.7.0/24" in confirm.why


def test_ipv6_off_needs_no_v6_rules_and_is_in_sync() -> None:
    result = plan_for("ipv6-off")
    assert result.in_sync
    assert not any("(v6)" in note for note in result.notes)


def test_ipv6_subnet_with_ufw_ipv6_off_fails_with_the_reason() -> None:
    with pytest.raises(TaskFailed, match="IPv6 network but ufw's IPv6 is off"):
        plan_for("ipv6-off", subnet="fd00::/64")


def test_an_ephemeral_range_into_the_privileged_ports_opens_nothing() -> None:
    # the node's word decides the widest rule nodeprov adds: "1 65535" would open SSH (and
    # every other service) to the subnet, past ssh_allow_from
    facts = dataclasses.replace(FACTS, ephemeral_port_range=(1, 65535))
    context = Context(Host("node1", "10.0.0.11", "10.0.0.11"), facts, {})
    with pytest.raises(TaskFailed, match=r"range 1-65535 reaches below 1024, the privileged "
                       r"ports .* set net.ipv4.ip_local_port_range to e.g. '32768 60999'"):
        plan(context, parse_params(FirewallParams, {"subnet": "10.0.0.0/24"}), recorded("fresh"))


def test_an_ephemeral_range_holding_the_ssh_port_opens_it_to_ssh_allow_from_alone() -> None:
    # a range tuned to 1024-65535 and sshd on 2222: the subnet's rules go around SSH's port
    facts = dataclasses.replace(FACTS, ephemeral_port_range=(1024, 65535))
    context = Context(Host("node1", "10.0.0.11", "10.0.0.11"), facts, {})
    params = parse_params(FirewallParams, {"subnet": "10.0.0.0/24", "ssh_port": 2222,
                                           "ssh_allow_from": "192.168.5.0/24"})
    (change,) = plan(context, params, recorded("fresh")).changes
    assert [line for line in change.diff.splitlines() if "10.0.0.0/24" in line] == [
        "+ allow tcp 1024:2221 from 10.0.0.0/24 (nodeprov: nccl ephemeral)",
        "+ allow tcp 2223:65535 from 10.0.0.0/24 (nodeprov: nccl ephemeral)",
        "+ allow tcp 29500 from 10.0.0.0/24 (nodeprov: rdzv)"]
    assert "+ allow tcp 2222 from 192.168.5.0/24 (nodeprov: ssh)" in change.diff


def test_users_limit_rule_counts_and_a_reject_policy_is_fixed_under_the_guard() -> None:
    result = plan_for("mixed")
    assert "ufw rule present as the user's own: limit any -> 22/tcp" in result.notes
    summaries = [c.summary for c in result.changes]
    # nccl and rdzv only: ssh is the user's limit
    assert summaries[0] == f"add ufw rule(s): {ADDED.partition(', ')[2]}"
    assert summaries[1] == ("remove stale nodeprov ufw rule(s): allow from 10.0.0.0/8 to any port "
                            "5353 proto udp")  # the "nodeprov: odd" one
    guarded = result.changes[2]
    assert steps(guarded)[:2] == [ARM, ("ufw", "default", "deny", "incoming")]
    assert "~ default incoming: reject -> deny\n" in guarded.diff


def test_missing_ufw_is_installed_first_with_the_helper() -> None:
    result = plan_for("fresh", ufw_installed=False, ufw_active=False)
    install = result.changes[0]
    assert steps(install) == [("install", "env", "DEBIAN_FRONTEND=noninteractive", "apt-get",
                               "install", "-y", "-q", "ufw")]
    assert [c.summary.split(" (")[0] for c in result.changes[1:]] == [
        f"add ufw rule(s): {ADDED}", "enable ufw"]
    with pytest.raises(TaskFailed, match="no apt-get, dnf"):
        plan_for("fresh", ufw_installed=False, ufw_active=False, package_manager=None)


def test_a_node_ufw_cannot_serve_is_refused_before_any_change() -> None:
    # the message itself: tests/tasks/firewall/test_foreign.py
    for facts in ({"firewalld_active": True}, {"ufw_rules_in_var_lib": True},
                  {"ufw_installed": False, "ufw_active": False, "package_manager": "dnf"}):
        with pytest.raises(TaskFailed, match="set firewall_manage: false for this node"):
            plan_for("fresh", **facts)


def test_firewall_manage_false_leaves_the_node_alone() -> None:
    result = plan_for("fresh", firewalld_active=True, manage=False)
    assert result.in_sync and result.notes == (
        "firewall left to the node's own tool (firewall_manage: false); the connectivity matrix "
        "checks the ports",)


def test_ssh_port_defaults_to_the_connection_port_and_revert_seconds_is_used() -> None:
    add, _ = plan_for("ssh-cidr", port=2222).changes
    assert steps(add)[0] == (*SSH_ANY[:9], "2222", *SSH_ANY[10:])
    (enable,) = plan_for("fresh", port=2222, revert_seconds=5, ufw_active=False).changes
    assert "+ allow tcp 2222 from any (nodeprov: ssh)\n" in enable.diff
    assert ("arm", "5") in steps(enable)


def test_a_revert_by_the_guard_is_reported_until_ufw_is_active_again() -> None:
    result = plan_for("reverted", ufw_active=False)
    assert result.warnings == ("the lockout guard disabled ufw at Sat Nov 22 13:30:00 UTC 2025 "
                               "after an unconfirmed change: check ssh_port and ssh_allow_from",)
    assert [c.summary.split(" (")[0] for c in result.changes] == ["enable ufw"]
    assert "enabled but not loaded" not in result.changes[0].diff



def with_armed_guard(case: str, pid: str = "4242") -> str:
    """The recorded probe output, as if the guard a killed run left (pid) still waited."""
    return f"{pid}\n{recorded(case).partition(chr(10))[2]}"


def test_a_guard_a_killed_run_left_armed_is_disarmed_after_a_new_connection() -> None:
    context = Context(Host("node1", "10.0.0.11", "10.0.0.11"), FACTS, {})
    params = parse_params(FirewallParams, {"subnet": "10.0.0.0/24"})
    (disarm,) = plan(context, params, with_armed_guard("in-sync")).changes
    assert disarm.summary == "disarm the lockout guard an interrupted run left armed (pid 4242)"
    assert steps(disarm) == [ConfirmNewConnection, DISARM]
    assert disarm.diff == "~ lockout guard (pid 4242): armed -> disarmed\n"
    # a guard that is gone (the probe prints no pid for a dead or foreign process) is no change
    assert plan(context, params, with_armed_guard("in-sync", pid="")).in_sync


def test_a_new_guarded_change_replaces_a_guard_left_armed() -> None:
    context = Context(Host("node1", "10.0.0.11", "10.0.0.11"),
                      dataclasses.replace(FACTS, ufw_active=False), {})
    params = parse_params(FirewallParams, {"subnet": "10.0.0.0/24"})
    (change,) = plan(context, params, with_armed_guard("fresh")).changes
    # the helper's `arm` stops the old guard before starting its own: one guard, one disarm
    assert steps(change).count(ARM) == 1 and steps(change).count(DISARM) == 1


def test_probe_reports_only_a_live_guard_of_ours(tmp_path: Path) -> None:
    argv = list(probe(parse_params(FirewallParams, {"subnet": "10.0.0.0/24"})).argv)
    pidfile = tmp_path / "ufw-guard.pid"
    argv[argv.index(GUARD_PID)] = str(pidfile)

    def guard_seen() -> str:
        output = subprocess.run(argv, capture_output=True, text=True, check=True).stdout
        return read_state(output, FACTS).armed_guard or ""

    assert guard_seen() == ""  # no pid file
    helper = tmp_path / "ufw-helper.sh"
    helper.write_text("sleep 30\n")
    with subprocess.Popen(["sh", str(helper), "revert", "30"]) as revert, \
            subprocess.Popen(["sleep", "30"]) as stranger:
        try:
            pidfile.write_text(f"{revert.pid}\n")
            assert guard_seen() == str(revert.pid)
            pidfile.write_text(f"{stranger.pid}\n")  # the pid was reused by another process
            assert guard_seen() == ""
        finally:
            revert.kill()
            stranger.kill()

@pytest.mark.parametrize(("field", "value"), [
    ("rdzv_port", 0), ("rdzv_port", "22; reboot"), ("ssh_port", 70000), ("subnet", "junk"),
    ("subnet", "10.0.0.1/24"), ("subnet", "10.0.0.0/24; reboot"), ("ssh_allow_from", "10.0.0.0"),
    ("ssh_allow_from", "any; reboot"), ("revert_seconds", 1),
])
def test_bad_params_raise_param_error_naming_the_field(field: str, value: Any) -> None:
    with pytest.raises(ParamError) as raised:
        parse_params(FirewallParams, {"subnet": "10.0.0.0/24", field: value})
    assert raised.value.field == field


def test_probe_reads_files_only() -> None:
    argv = probe(parse_params(FirewallParams, {"subnet": "10.0.0.0/24"})).argv
    assert argv[:2] == ("sh", "-c") and "ufw status" not in argv[2] and "python" not in argv[2]
    assert {ufw.CONF, ufw.DEFAULTS, ufw.RULES, ufw.RULES6, ufw.DISABLE_IPV6} <= set(argv)


# --- the guard script, run here with a stand-in ufw ----------------------------------------------

@pytest.fixture
def guard(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """The helper script in tmp_path, and an environment whose ``ufw`` only logs its args."""
    if not (shutil.which("setsid") and shutil.which("flock")):
        pytest.skip("needs util-linux setsid and flock")
    script = tmp_path / "ufw-helper.sh"
    script.write_text(HELPER_SCRIPT)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "ufw").write_text(f'#!/bin/sh\necho "$*" >> {tmp_path}/ufw.log\n')
    (bin_dir / "ufw").chmod(0o755)
    return script, {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"}


def test_guard_disables_ufw_by_itself_when_not_disarmed(guard: tuple[Path, dict[str, str]]
                                                        ) -> None:
    script, env = guard
    subprocess.run(["sh", str(script), "arm", "1"], env=env, check=True, timeout=10)
    assert (script.parent / "ufw-guard.pid").read_text().strip().isdigit()
    log = script.parent / "ufw.log"
    deadline = time.monotonic() + 10
    while not log.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    time.sleep(0.1)
    assert log.read_text() == "--force disable\n"
    assert (script.parent / "ufw-reverted").exists()
    assert not (script.parent / "ufw-guard.pid").exists()
    late = subprocess.run(["sh", str(script), "disarm", "tcp/22 from any"], env=env,
                          capture_output=True, text=True)
    assert late.returncode == 1 and "the lockout guard disabled ufw at" in late.stderr
    assert "does SSH on tcp/22 from any admit nodeprov?" in late.stderr


def test_guard_disarmed_in_time_never_fires_nor_holds_the_runners_lock(
        guard: tuple[Path, dict[str, str]]) -> None:
    script, env = guard
    lock = script.parent / "lock"
    # as the runner runs it: under flock, whose lock fd the detached guard must not keep
    subprocess.run(["flock", str(lock), "sh", str(script), "arm", "30"], env=env, check=True,
                   timeout=10)
    pid = int((script.parent / "ufw-guard.pid").read_text())
    subprocess.run(["flock", "-w", "2", str(lock), "true"], check=True, timeout=10)
    subprocess.run(["sh", str(script), "disarm"], env=env, check=True, timeout=10)
    deadline = time.monotonic() + 5
    while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not Path(f"/proc/{pid}").exists()
    assert not (script.parent / "ufw.log").exists()
    assert not (script.parent / "ufw-guard.pid").exists()


def test_guard_disarm_leaves_a_foreign_pid_alone(guard: tuple[Path, dict[str, str]]) -> None:
    script, env = guard
    other = subprocess.Popen(["sleep", "30"])
    try:
        (script.parent / "ufw-guard.pid").write_text(f"{other.pid}\n")
        subprocess.run(["sh", str(script), "disarm"], env=env, check=True, timeout=10)
        assert other.poll() is None
    finally:
        other.kill()
        other.wait()


def test_helper_names_ipv6_when_ufw_fails_on_ip6tables(guard: tuple[Path, dict[str, str]]
                                                       ) -> None:
    script, env = guard
    # what ufw prints where IPv6 is off in the kernel but IPV6=yes (recorded in a testbed node)
    (script.parent / "bin" / "ufw").write_text(
        "#!/bin/sh\necho 'ERROR: initcaps'\necho '[Errno 2] ip6tables v1.8.9 (nf_tables): cannot "
        "initialize ip6tables table filter: Address family not supported by protocol'\nexit 1\n")
    failed = subprocess.run(["sh", str(script), "ufw", "--force", "enable"], env=env,
                            capture_output=True, text=True, timeout=10)
    assert failed.returncode == 1
    assert failed.stderr.startswith("ERROR: initcaps\n[Errno 2] ip6tables")
    assert failed.stderr.splitlines()[-1].startswith("ufw's IPv6 rules failed: disable_ipv6=")
    assert failed.stderr.rstrip().endswith("with IPv6 off set IPV6=no (the ipv6 task does)")


def test_helper_loads_nothing_while_ip6tables_fails_as_ufw_refuses_to(
        guard: tuple[Path, dict[str, str]]) -> None:
    script, env = guard
    ip6tables = script.parent / "bin" / "ip6tables"
    ip6tables.write_text("#!/bin/sh\necho 'ip6tables v1.8.9 (nf_tables): cannot initialize "
                         "ip6tables table filter: Address family not supported by protocol'\n"
                         "exit 3\n")
    ip6tables.chmod(0o755)
    failed = subprocess.run(["sh", str(script), "need-ip6tables"], env=env, capture_output=True,
                            text=True, timeout=10)
    assert failed.returncode == 1
    assert failed.stderr.startswith("ip6tables v1.8.9 (nf_tables): cannot initialize")
    assert failed.stderr.rstrip().endswith("with IPv6 off set IPV6=no (the ipv6 task does)")
    ip6tables.write_text("#!/bin/sh\nexit 0\n")
    assert subprocess.run(["sh", str(script), "need-ip6tables"], env=env,
                          timeout=10).returncode == 0


def test_helper_says_what_to_check_when_the_install_fails(guard: tuple[Path, dict[str, str]]
                                                          ) -> None:
    script, env = guard
    failed = subprocess.run(["sh", str(script), "install", "false"], env=env, capture_output=True,
                            text=True, timeout=10)
    assert failed.returncode == 1
    assert failed.stderr.startswith("cannot install ufw: is the node offline")


# --- integration: real ufw in testbed nodes ------------------------------------------------------

PLAYBOOK = """\
- name: Firewall only
  hosts: all
  tasks:
    - name: Firewall
      firewall:
        subnet: "{{ node_subnet }}"
        ssh_port: "{{ ansible_port }}"
        ssh_allow_from: "%s"
        revert_seconds: %d
"""
# Listens on the given ports, accepting and closing, for at most 30 s.
LISTENER = """import socket, sys, time
servers = [socket.create_server(("", int(port))) for port in sys.argv[1:]]
for server in servers:
    server.settimeout(0.1)
print("ready", flush=True)
deadline = time.monotonic() + 30
while time.monotonic() < deadline:
    for server in servers:
        try:
            server.accept()[0].close()
        except OSError:
            pass
"""
CONNECT = "import socket, sys; socket.create_connection((sys.argv[1], int(sys.argv[2])), 2).close()"


def write_playbook(tmp_path: Path, ssh_allow_from: str = "{{ ssh_allow_from }}",
                   revert_seconds: int = 30) -> Path:
    path = tmp_path / f"firewall-{revert_seconds}.yaml"
    path.write_text(PLAYBOOK % (ssh_allow_from, revert_seconds))
    return path


def nodeprov(bed: Testbed, playbook: Path, *options: str, ok: bool = True) -> dict[str, Any]:
    """``nodeprov apply --json -`` on the testbed; the parsed report."""
    done = subprocess.run([sys.executable, "-m", "nodeprov", "apply", str(bed.inventory_path),
                           "-p", str(playbook), "--json", "-", *options],
                          capture_output=True, text=True, timeout=120, check=False)
    assert (done.returncode == 0) == ok, done.stdout + done.stderr
    report: dict[str, Any] = json.loads(done.stdout)
    return report


def statuses(report: dict[str, Any]) -> dict[str, str]:
    return {name: host["tasks"][0]["status"] for name, host in report["hosts"].items()}


def ufw_status(bed: Testbed, node: str) -> list[str]:
    """``ufw status verbose`` with runs of spaces squeezed."""
    return [" ".join(line.split()) for line in
            bed.exec(node, "ufw", "status", "verbose", check=True).stdout.splitlines()
            if line.strip()]


def reaches(bed: Testbed, source: str, node: str, port: int) -> bool:
    return bed.exec(source, "python3", "-c", CONNECT, bed.address(node), str(port),
                    timeout=20).returncode == 0


def reset_ufw(bed: Testbed) -> None:
    """Leave nodes as the testbed made them: ufw inactive, no rules, none of our files."""
    for node in bed.nodes:
        bed.exec(node, "ufw", "--force", "reset", check=True)
        bed.exec(node, "sh", "-c", "rm -f /etc/ufw/*.rules.[0-9]* /etc/ufw/*.conf.[0-9]* "
                 "/var/lib/nodeprov/ufw-*", check=True)


@pytest.mark.integration
def test_firewall_on_the_shared_testbed(testbed: Testbed, tmp_path: Path) -> None:
    playbook = write_playbook(tmp_path)
    nodes = dict.fromkeys(testbed.nodes, "changed")
    try:
        assert statuses(nodeprov(testbed, playbook, "--check")) == nodes
        first = nodeprov(testbed, playbook)
        assert statuses(first) == nodes
        again = nodeprov(testbed, playbook)
        assert statuses(again) == dict.fromkeys(testbed.nodes, "ok")
        check = nodeprov(testbed, playbook, "--check")
        assert statuses(check) == dict.fromkeys(testbed.nodes, "ok")
        assert {host["round_trips"] for host in check["hosts"].values()} == {1}
        for name, report in (("first apply", first), ("no-op re-apply", again)):
            print(name, {node: (f"task {host['tasks'][0]['duration']:.2f}s, host "
                                f"{host['duration']:.2f}s, {host['round_trips']} round trips")
                         for node, host in report["hosts"].items()})

        subnet = testbed.subnet
        low, high = (int(port) for port in testbed.exec(
            "node1", "cat", "/proc/sys/net/ipv4/ip_local_port_range").stdout.split())
        for node in testbed.nodes:
            assert ufw_status(testbed, node)[1:] == [
                "Logging: on (low)",
                "Default: deny (incoming), allow (outgoing), disabled (routed)",
                "New profiles: skip",
                "To Action From", "-- ------ ----",
                "22/tcp ALLOW IN Anywhere # nodeprov: ssh",
                f"{low}:{high}/tcp ALLOW IN {subnet} # nodeprov: nccl ephemeral",
                f"29500/tcp ALLOW IN {subnet} # nodeprov: rdzv",
                "22/tcp (v6) ALLOW IN Anywhere (v6) # nodeprov: ssh"]
            assert testbed.ssh(node, "true").returncode == 0  # a new SSH connection

        data_port = high - 7
        with subprocess.Popen(testbed.exec_argv("node1", ["python3", "-c", LISTENER,
                                                          str(data_port), "29500"]),
                              stdout=subprocess.PIPE, text=True) as listener:
            try:
                assert listener.stdout is not None and listener.stdout.readline() == "ready\n"
                assert reaches(testbed, "outsider", "node1", 22)  # the outsider is routed here
                for port in (data_port, 29500):
                    assert reaches(testbed, "node2", "node1", port)
                    assert not reaches(testbed, "outsider", "node1", port)
            finally:
                listener.kill()

        # the user's own rule stays; a stale rule with our comment goes
        testbed.exec("node1", "ufw", "allow", "8080/tcp", check=True)
        testbed.exec("node1", "ufw", "allow", "proto", "tcp", "from", subnet, "to", "any",
                     "port", "5555", "comment", "nodeprov: stale", check=True)
        report = nodeprov(testbed, playbook, "--diff")
        assert statuses(report) == {"node1": "changed", "node2": "ok", "node3": "ok"}
        task = report["hosts"]["node1"]["tasks"][0]
        assert task["changes"] == ["remove stale nodeprov ufw rule(s): allow from "
                                   f"{subnet} to any port 5555 proto tcp"]
        assert task["diffs"] == [f"- allow tcp 5555 from {subnet} (nodeprov: stale)\n"]
        rules = ufw_status(testbed, "node1")
        assert "8080/tcp ALLOW IN Anywhere" in rules and not any("5555" in r for r in rules)
        assert statuses(nodeprov(testbed, playbook)) == dict.fromkeys(testbed.nodes, "ok")
    finally:
        reset_ufw(testbed)
    assert ufw_status(testbed, "node1") == ["Status: inactive"]


def ufw_made(bed: Testbed, node: str) -> dict[str, Any]:
    """What ufw left on a node: its files, ``ufw status verbose``, the loaded rules (counters
    and the dump's dated comments left out)."""
    dumps = {tool: [re.sub(r"\[\d+:\d+\]", "[0:0]", line) for line in
                    bed.exec(node, tool, check=True).stdout.splitlines()
                    if not line.startswith("#")]
             for tool in ("iptables-save", "ip6tables-save")}
    texts = {path: bed.exec(node, "cat", path, check=True).stdout
             for path in (ufw.CONF, ufw.DEFAULTS, ufw.RULES, ufw.RULES6)}
    return {**texts, **dumps, "status": ufw_status(bed, node)}


@pytest.mark.integration
def test_loading_ufws_files_leaves_what_ufws_command_line_leaves(
        make_testbed: Callable[..., Testbed], tmp_path: Path) -> None:
    bed = make_testbed(nodes=2)
    # node1 the old way: the commands the task ran before it wrote ufw's files itself
    low, high = bed.exec("node1", "cat", "/proc/sys/net/ipv4/ip_local_port_range").stdout.split()
    for argv in (SSH_ANY, (*NCCL[:5], bed.subnet, *NCCL[6:9], f"{low}:{high}", *NCCL[10:]),
                 (*RDZV[:5], bed.subnet, *RDZV[6:]), ENABLE):
        bed.exec("node1", *argv, check=True)
    playbook = write_playbook(tmp_path, ssh_allow_from="any")
    task = nodeprov(bed, playbook, "--limit", "node2")["hosts"]["node2"]["tasks"][0]
    assert task["changes"] == [f"add ufw rule(s): {ADDED.replace('10.0.0.0/24', bed.subnet)}"
                               .replace("32768:60999", f"{low}:{high}") + "; enable ufw "
                               "(reverted in 30s unless a new SSH connection works)"]
    assert ufw_made(bed, "node2") == ufw_made(bed, "node1")
    assert statuses(nodeprov(bed, playbook)) == {"node1": "ok", "node2": "ok"}

    # ufw's command line goes on from what we wrote as from what it wrote itself
    for node in bed.nodes:
        bed.exec(node, "ufw", "allow", "8080/tcp", check=True)
        bed.exec(node, RDZV[0], "delete", *RDZV[1:5], bed.subnet, *RDZV[6:10], check=True)
    assert ufw_made(bed, "node2") == ufw_made(bed, "node1")
    assert "8080/tcp ALLOW IN Anywhere" in ufw_status(bed, "node2")
    assert statuses(nodeprov(bed, playbook)) == {"node1": "changed", "node2": "changed"}
    assert ufw_made(bed, "node2") == ufw_made(bed, "node1")


@pytest.mark.integration
def test_a_change_that_locks_ssh_out_reverts_by_itself(make_testbed: Callable[..., Testbed],
                                                       tmp_path: Path) -> None:
    bed = make_testbed(nodes=1)
    # SSH from TEST-NET-1 only: nodeprov, on the testbed's bridge, can no longer connect
    locking = write_playbook(tmp_path, ssh_allow_from="192.0.2.0/24", revert_seconds=5)
    run = subprocess.Popen([sys.executable, "-m", "nodeprov", "apply", str(bed.inventory_path),
                            "-p", str(locking), "--json", "-"], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
    enabled_at = disabled_at = None
    while run.poll() is None or disabled_at is None:
        conf = bed.exec("node1", "cat", "/etc/ufw/ufw.conf").stdout
        if enabled_at is None and "ENABLED=yes" in conf:
            enabled_at = time.monotonic()
        elif enabled_at is not None and "ENABLED=no" in conf:
            disabled_at = time.monotonic()
        if enabled_at and time.monotonic() - enabled_at > 30:
            break
        time.sleep(0.05)
    stdout, stderr = run.communicate(timeout=60)
    assert enabled_at is not None and disabled_at is not None, stderr
    # by itself, revert_seconds after arming (ufw itself takes a second or more on a busy node)
    print(f"ufw enabled for {disabled_at - enabled_at:.1f}s before the guard disabled it")
    assert 2 <= disabled_at - enabled_at <= 15
    report = json.loads(stdout)
    task = report["hosts"]["node1"]["tasks"][0]
    assert run.returncode == 1 and task["status"] == "failed"
    assert "tcp/22 from 192.0.2.0/24" in task["error"], task["error"]
    assert ufw_status(bed, "node1") == ["Status: inactive"]
    assert bed.ssh("node1", "true").returncode == 0

    # the next run says what happened and enables ufw again, under the guard
    fixed = write_playbook(tmp_path)
    task = nodeprov(bed, fixed, "--check")["hosts"]["node1"]["tasks"][0]
    assert task["warnings"][0].startswith("the lockout guard disabled ufw at ")
    assert statuses(nodeprov(bed, fixed)) == {"node1": "changed"}
    assert statuses(nodeprov(bed, fixed)) == {"node1": "ok"}
    # the guard's own files are gone (a node's other nodeprov folders, e.g. job/, are not its)
    left = bed.exec("node1", "ls", "/var/lib/nodeprov").stdout.split()
    assert [name for name in left if name.startswith("ufw")] == ["ufw-helper.sh"], left


@pytest.mark.integration
def test_ipv6_off_with_ipv6_yes_fails_with_the_cause_until_ipv6_no(
        make_testbed: Callable[..., Testbed], tmp_path: Path) -> None:
    bed = make_testbed(nodes=1)
    # what a node whose kernel cannot do ip6tables shows (a node's /usr is its own overlay)
    stub = ("#!/bin/sh\necho 'ip6tables v1.8.9 (nf_tables): cannot initialize ip6tables table "
            "filter: Address family not supported by protocol' >&2\nexit 3\n")
    for tool in ("/usr/sbin/ip6tables", "/usr/sbin/ip6tables-restore"):
        bed.exec("node1", "sh", "-c", 'rm -f "$1" && cat > "$1" && chmod 755 "$1"', "stub", tool,
                 input=stub, check=True)
    bed.exec("node1", "sysctl", "-q", "-w", "net.ipv6.conf.all.disable_ipv6=1", check=True)
    playbook = write_playbook(tmp_path)
    task = nodeprov(bed, playbook, ok=False)["hosts"]["node1"]["tasks"][0]
    assert task["status"] == "failed"
    assert ("ufw's IPv6 rules failed: disable_ipv6=1, IPV6=yes in /etc/default/ufw; with IPv6 "
            "off set IPV6=no (the ipv6 task does)") in " ".join(task["error"].split())

    # the ipv6 task's part, by hand: then ufw works without IPv6, and no v6 rule is wanted
    bed.exec("node1", "sed", "-i", "s/^IPV6=yes/IPV6=no/", "/etc/default/ufw", check=True)
    assert statuses(nodeprov(bed, playbook)) == {"node1": "changed"}
    assert statuses(nodeprov(bed, playbook)) == {"node1": "ok"}
    assert not any("(v6)" in rule for rule in ufw_status(bed, "node1"))


@pytest.mark.integration
def test_a_node_running_firewalld_is_refused_and_the_others_go_on(testbed: Testbed,
                                                                   tmp_path: Path) -> None:
    # A stand-in process named firewalld (as the real one, a script, is): the facts see it
    # through SSH; the node is refused with both ways out, unchanged, and the others proceed.
    playbook = write_playbook(tmp_path)
    script = "/root/firewalld"
    loop = "#!/bin/sh\nwhile :; do sleep 1; done\n"
    testbed.exec("node2", "sh", "-c", 'printf "$1" > "$2" && chmod +x "$2"', "sh", loop, script,
                 check=True)
    # the package's config, which facts look for before asking for the process
    testbed.exec("node2", "sh", "-c", "mkdir -p /etc/firewalld && : > "
                 "/etc/firewalld/firewalld.conf", check=True)
    before = testbed.exec("node2", "cat", ufw.RULES, check=True).stdout
    stand_in = subprocess.Popen(testbed.exec_argv("node2", [script]),
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(50):
            if testbed.exec("node2", "pgrep", "-x", "firewalld").returncode == 0:
                break
            time.sleep(0.1)
        report = nodeprov(testbed, playbook, ok=False)
        assert statuses(report) == {"node1": "changed", "node2": "failed", "node3": "changed"}
        error = " ".join(report["hosts"]["node2"]["tasks"][0]["error"].split())
        assert "firewalld is running: its zones would still drop" in error
        assert "set firewall_manage: false for this node" in error
        assert testbed.exec("node2", "cat", ufw.RULES, check=True).stdout == before
        assert "Status: inactive" in ufw_status(testbed, "node2")
    finally:
        stand_in.kill()
        stand_in.wait()
        testbed.exec("node2", "sh", "-c", f"pkill -x firewalld; rm -rf {script} /etc/firewalld")
        reset_ufw(testbed)
