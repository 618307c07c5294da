"""The nccl_env task and its file formats on recorded files: exact plans and no-op notes."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from nodeprov.remote.facts import Interface
from nodeprov.tasks.base import ParamError, Plan, TaskFailed, Write, parse_params
from nodeprov.tasks.nccl_env import ENVIRONMENT, NCCL_CONF, TASK, NcclEnvParams
from nodeprov.tasks.textfiles import blocks, envfile
from tests.tasks.kit import RECORDED, make_facts, one_node, plan_task

DATA = Path(__file__).parent / "data"
SUBNET = "192.0.2.0/24"  # eth0 of the recorded node holds 192.0.2.2/24
EXTRA = {"NCCL_DEBUG": "INFO", "NCCL_IB_DISABLE": "1", "TORCH_NCCL_ASYNC_ERROR_HANDLING": "1"}
BEGIN, END = blocks.begin_marker("nccl"), blocks.end_marker("nccl")
ENVIRONMENT_BLOCK = (f'{BEGIN}\nNCCL_SOCKET_IFNAME="=eth0"\nGLOO_SOCKET_IFNAME="eth0"\n'
                     'NCCL_DEBUG="INFO"\nNCCL_IB_DISABLE="1"\n'
                     f'TORCH_NCCL_ASYNC_ERROR_HANDLING="1"\n{END}\n')
NCCL_CONF_BLOCK = f"{BEGIN}\nNCCL_SOCKET_IFNAME==eth0\nNCCL_DEBUG=INFO\nNCCL_IB_DISABLE=1\n{END}\n"


def run(environment: str | None, nccl_conf: str | None, *, extra: dict[str, str] = EXTRA,
        interfaces: tuple[Interface, ...] = RECORDED.interfaces, **params: Any) -> Plan:
    return plan_task(TASK, {"subnet": SUBNET, "extra": extra, **params},
                     {ENVIRONMENT: environment, NCCL_CONF: nccl_conf},
                     context=one_node(make_facts(interfaces=interfaces)))


def writes(result: Plan) -> dict[str, str]:
    return {action.path: action.content for change in result.changes
            for action in change.actions if isinstance(action, Write)}


def test_fresh_node_gets_both_files() -> None:
    result = run(None, None)
    assert [change.summary for change in result.changes] == [
        f"{ENVIRONMENT}: set NCCL_SOCKET_IFNAME, GLOO_SOCKET_IFNAME, NCCL_DEBUG, NCCL_IB_DISABLE,"
        " TORCH_NCCL_ASYNC_ERROR_HANDLING",
        f"{NCCL_CONF}: set NCCL_SOCKET_IFNAME, NCCL_DEBUG, NCCL_IB_DISABLE"]
    assert writes(result) == {ENVIRONMENT: ENVIRONMENT_BLOCK, NCCL_CONF: NCCL_CONF_BLOCK}
    # what pam_env and NCCL will read back
    assert [entry[1:] for entry in envfile.parse_pam_env(ENVIRONMENT_BLOCK)] == [
        ("NCCL_SOCKET_IFNAME", "=eth0"), ("GLOO_SOCKET_IFNAME", "eth0"), ("NCCL_DEBUG", "INFO"),
        ("NCCL_IB_DISABLE", "1"), ("TORCH_NCCL_ASYNC_ERROR_HANDLING", "1")]
    again = run(ENVIRONMENT_BLOCK, NCCL_CONF_BLOCK)
    assert again.in_sync and again.notes == (
        f"{ENVIRONMENT} and {NCCL_CONF} already set NCCL_SOCKET_IFNAME==eth0, "
        "GLOO_SOCKET_IFNAME=eth0, NCCL_DEBUG, NCCL_IB_DISABLE, TORCH_NCCL_ASYNC_ERROR_HANDLING",)


def test_user_lines_kept_and_those_their_reader_takes_over_ours_are_conflicts() -> None:
    environment = (DATA / "nccl_env-environment-user.txt").read_text()
    nccl_conf = (DATA / "nccl_env-nccl-conf-user.txt").read_text()
    result = run(environment, nccl_conf)
    assert writes(result) == {ENVIRONMENT: environment + ENVIRONMENT_BLOCK,
                              NCCL_CONF: nccl_conf + "\n" + NCCL_CONF_BLOCK}
    # /etc/environment:3 NCCL_DEBUG=WARN comes before the block: pam_env keeps the block's
    assert result.warnings == () and result.conflicts == (
        f"{NCCL_CONF}:2 'NCCL_DEBUG=VERSION' overrides nodeprov's NCCL_DEBUG='INFO' (NCCL keeps "
        f"the first assignment): comment it out: sed -i '/^NCCL_DEBUG=VERSION$/s/^/# /' "
        f"{NCCL_CONF}",)
    written = run(environment + ENVIRONMENT_BLOCK, nccl_conf + "\n" + NCCL_CONF_BLOCK)
    assert not written.changes and written.conflicts == result.conflicts
    assert run(environment + ENVIRONMENT_BLOCK,
               sed(result.conflicts[0].split("'")[-2], nccl_conf + "\n" + NCCL_CONF_BLOCK)
               ).in_sync


def sed(script: str, text: str) -> str:
    """``text`` after GNU sed runs ``script`` on it, as the printed repair does."""
    return subprocess.run(["sed", script], input=text, capture_output=True, text=True,
                          check=True).stdout


# #32: appended after a clean apply; NCCL reads nccl.conf's first assignment, pam_env the last
@pytest.mark.parametrize(("environment", "nccl_conf", "conflict"), [
    (ENVIRONMENT_BLOCK + "GLOO_SOCKET_IFNAME=lo\n", NCCL_CONF_BLOCK,
     f"{ENVIRONMENT}:8 'GLOO_SOCKET_IFNAME=lo' overrides nodeprov's GLOO_SOCKET_IFNAME='eth0' "
     f"(pam_env keeps the last assignment): comment it out: sed -i "
     f"'/^GLOO_SOCKET_IFNAME=lo$/s/^/# /' {ENVIRONMENT}"),
    (ENVIRONMENT_BLOCK, "NCCL_SOCKET_IFNAME=lo\n" + NCCL_CONF_BLOCK,
     f"{NCCL_CONF}:1 'NCCL_SOCKET_IFNAME=lo' overrides nodeprov's NCCL_SOCKET_IFNAME='=eth0' "
     f"(NCCL keeps the first assignment): comment it out: sed -i "
     f"'/^NCCL_SOCKET_IFNAME=lo$/s/^/# /' {NCCL_CONF}")])
def test_a_variable_set_again_where_its_reader_prefers_it_is_named_by_line(
        environment: str, nccl_conf: str, conflict: str) -> None:
    result = run(environment, nccl_conf)
    assert not result.changes and result.conflicts == (conflict,)
    line = conflict.split("'")[-2]  # the sed script, as printed
    fixed = {ENVIRONMENT: sed(line, environment) if ENVIRONMENT in conflict else environment,
             NCCL_CONF: sed(line, nccl_conf) if NCCL_CONF in conflict else nccl_conf}
    assert run(fixed[ENVIRONMENT], fixed[NCCL_CONF]).in_sync
    # the other way round each reader keeps the block's value: nothing to say
    assert run("GLOO_SOCKET_IFNAME=lo\n" + ENVIRONMENT_BLOCK,
               NCCL_CONF_BLOCK + "NCCL_SOCKET_IFNAME=lo\n").in_sync


def test_profile_d_lines_a_login_shell_takes_over_ours_are_named_by_line() -> None:
    profile = ("# proxy and NCCL for interactive jobs\nexport NCCL_SOCKET_IFNAME=lo\n"
               'GLOO_SOCKET_IFNAME="eth0"\nexport NCCL_DEBUG=$LEVEL\nNCCL_IB_DISABLE=1\n')
    result = plan_task(TASK, {"subnet": SUBNET, "extra": EXTRA},
                       {ENVIRONMENT: ENVIRONMENT_BLOCK, NCCL_CONF: NCCL_CONF_BLOCK,
                        "/etc/profile.d/zz-nccl.sh": profile},
                       context=one_node(make_facts(interfaces=RECORDED.interfaces)))
    assert not result.changes and result.conflicts == (
        "/etc/profile.d/zz-nccl.sh:2 'export NCCL_SOCKET_IFNAME=lo' overrides nodeprov's "
        "NCCL_SOCKET_IFNAME='=eth0' (a login shell runs it after pam_env): comment it out: "
        "sed -i '/^export NCCL_SOCKET_IFNAME=lo$/s/^/: # /' /etc/profile.d/zz-nccl.sh",)
    assert result.warnings == (
        "/etc/profile.d/zz-nccl.sh:4 sets NCCL_DEBUG in a way only running it can tell; a login "
        "shell may not have the block's 'INFO'",)


def test_changed_interface_rewrites_only_the_block() -> None:
    eth1 = Interface("eth1", True, ("192.0.2.9/24",), ())
    old = "LANG=C.UTF-8\n" + ENVIRONMENT_BLOCK
    result = run(old, NCCL_CONF_BLOCK, ifname="eth1", interfaces=(*RECORDED.interfaces, eth1))
    assert result.warnings == ()
    assert writes(result) == {
        ENVIRONMENT: "LANG=C.UTF-8\n" + ENVIRONMENT_BLOCK.replace("eth0", "eth1"),
        NCCL_CONF: NCCL_CONF_BLOCK.replace("eth0", "eth1")}


def test_two_blocks_in_a_file_are_refused_naming_the_file_and_lines() -> None:
    # the second (a copy pasted from another node) stayed as it was, with its stale interface
    stale = ENVIRONMENT_BLOCK.replace("eth0", "ib0")
    with pytest.raises(TaskFailed, match=re.escape(
            f"{ENVIRONMENT}: lines 2, 8, 9, 15: more than one '# BEGIN nodeprov nccl' or "
            "'# END nodeprov nccl' line; keep one block")):
        run("LANG=C.UTF-8\n" + ENVIRONMENT_BLOCK + stale, NCCL_CONF_BLOCK)


def test_auto_needs_exactly_one_interface_in_the_subnet() -> None:
    with pytest.raises(TaskFailed) as none:
        run(None, None, subnet="10.9.0.0/24")
    assert str(none.value) == (
        "no interface with an address in 10.9.0.0/24 (interfaces: lo 127.0.0.1/8 ::1/128; ifb0 "
        "(no address); ifb1 (no address); eth0 192.0.2.2/24 fd00::2/64 fe80::fc:ff:fe00:1/64); "
        "set nccl_socket_ifname to the one NCCL should use")
    bond = Interface("bond0", True, ("192.0.2.7/24",), ())
    with pytest.raises(TaskFailed, match=r"^2 interfaces with an address in 192\.0\.2\.0/24"):
        run(None, None, interfaces=(*RECORDED.interfaces, bond))


def test_explicit_interface_must_exist() -> None:
    assert run(None, None, ifname="lo").warnings == (
        "lo has no address in 192.0.2.0/24: NCCL and gloo will not use the node subnet",)
    with pytest.raises(TaskFailed, match=r"^no interface 'ib0' on this node; it has: lo "):
        run(None, None, ifname="ib0")


@pytest.mark.parametrize(("raw", "field", "message"), [
    ({"ifname": "eth0; reboot"}, "ifname", "is not an interface name"),
    ({"extra": {"NCCL DEBUG": "INFO"}}, "extra", "is not an environment variable name"),
    ({"extra": {"NCCL_DEBUG": "INFO\nEVIL=1"}}, "extra", "contains a newline"),
    ({"extra": {"NCCL_DEBUG": "INFO # really"}}, "extra", "reads as a comment"),
    ({"extra": {"NCCL_SOCKET_IFNAME": "eth1"}}, "extra", "is set from ifname"),
    ({"extra": {"NCCL_DEBUG": "x" * 1100}}, "extra", "too long"),
    ({"extra": ["NCCL_DEBUG=INFO"]}, "extra", "expected a mapping"),
    ({"subnet": "10.0.0.1/24"}, "subnet", "not a valid CIDR"),
])
def test_bad_params(raw: dict[str, Any], field: str, message: str) -> None:
    with pytest.raises(ParamError, match=message) as error:
        parse_params(NcclEnvParams, {"subnet": SUBNET, **raw})
    assert error.value.field == field


@pytest.mark.parametrize("value", ['say "hi"', "ends with a quote'", '"', " padded ", "a=b",
                                   "$HOME is not expanded", "back\\slash\\"])
def test_pam_env_reads_back_what_we_write(value: str) -> None:
    line = envfile.pam_env_line("X", value)
    assert envfile.parse_pam_env(line + "\n") == [(1, "X", value)]


def test_pam_env_and_nccl_conf_parsing() -> None:
    text = ("  export A='one'\n# B=2\nC=three # comment\nbad-name=1\nD\n=E\nF=\"\"\nG=\n")
    assert envfile.parse_pam_env(text) == [(1, "A", "one"), (3, "C", "three "), (7, "F", ""),
                                           (8, "G", "")]
    assert envfile.parse_nccl_conf("# x=1\nNCCL_A==eth0\nNCCL_B = 2\nNCCL_C=a#b\n") == [
        (2, "NCCL_A", "=eth0"), (4, "NCCL_C", "a#b")]


def test_a_recorded_site_script_in_profile_d_is_read_as_a_login_shell_reads_it() -> None:
    """OLCF Frontier's NCCL variables (tests/data/shell-env), put in /etc/profile.d: its
    NCCL_SOCKET_IFNAME=hsn0 wins in a login shell; its NCCL_DEBUG=INFO agrees with ours."""
    script = (Path(__file__).parents[1] / "data" / "shell-env" / "export_frontier_vars.sh"
              ).read_text()
    assert [entry[1:] for entry in envfile.parse_profile_sh(script)][5:8] == [
        ("NCCL_DEBUG", "INFO"), ("NCCL_SOCKET_IFNAME", "hsn0"), ("NCCL_SOCKET_FAMILY", "ipv4")]
    result = plan_task(TASK, {"subnet": SUBNET, "extra": EXTRA},
                       {ENVIRONMENT: ENVIRONMENT_BLOCK, NCCL_CONF: NCCL_CONF_BLOCK,
                        "/etc/profile.d/frontier.sh": script},
                       context=one_node(make_facts(interfaces=RECORDED.interfaces)))
    assert result.conflicts == (
        "/etc/profile.d/frontier.sh:8 'export NCCL_SOCKET_IFNAME=hsn0' overrides nodeprov's "
        "NCCL_SOCKET_IFNAME='=eth0' (a login shell runs it after pam_env): comment it out: "
        "sed -i '/^export NCCL_SOCKET_IFNAME=hsn0$/s/^/: # /' /etc/profile.d/frontier.sh",)
