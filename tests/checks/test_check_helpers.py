"""The pure helpers of the check modules, on hand-made and recorded values."""

from __future__ import annotations

from pathlib import Path

import pytest

from nodeprov.checks.fresh import Fresh, parse_env, parse_fresh
from nodeprov.checks.test_firewall import admits, wider
from nodeprov.checks.test_nccl_env import socket_interfaces, wanted_variables
from nodeprov.checks.test_torch import wanted_build
from nodeprov.inventory import Host
from nodeprov.remote.facts import parse_facts, split_sections
from nodeprov.tasks import nccl_env
from nodeprov.tasks.base import Context, TaskFailed
from nodeprov.tasks.firewall.ufw import ANY_V4, ANY_V6, Rule
from nodeprov.tasks.torch.params import TorchParams

SUBNET = "10.0.0.0/24"
SSH = Rule("allow", "tcp", "22", ANY_V4, comment="nodeprov: ssh")
NCCL = Rule("allow", "tcp", "32768:60999", SUBNET, comment="nodeprov: nccl ephemeral")
WANTED = [SSH, NCCL]


def test_admits_only_incoming_allow_and_limit() -> None:
    assert admits(SSH) and admits(Rule("limit", "tcp", "22", ANY_V4))
    assert admits(Rule("allow_log", "tcp", "80", ANY_V4, direction="in_eth0"))
    assert not admits(Rule("deny", "tcp", "80", ANY_V4))
    assert not admits(Rule("allow", "tcp", "80", ANY_V4, direction="out"))
    assert not admits(Rule("route:allow", "tcp", "80", ANY_V4))


def test_wider_finds_rules_admitting_more_than_ssh_from_outside_the_subnet() -> None:
    web = Rule("allow", "tcp", "80", ANY_V4)
    web_v6 = Rule("allow", "tcp", "80", ANY_V6, dst=ANY_V6, v6=True)
    other_lan = Rule("allow", "tcp", "29500", "10.0.1.0/24")
    host_inside = Rule("allow", "tcp", "29500", "10.0.0.7/32")
    denied = Rule("deny", "tcp", "23", ANY_V4)
    rules = [SSH, NCCL, web, web_v6, other_lan, host_inside, denied]
    assert wider(rules, WANTED, SUBNET) == [web, web_v6, other_lan]




def test_parse_env_keeps_values_with_equals_signs() -> None:
    assert parse_env("PATH=/bin\nNCCL_SOCKET_IFNAME==eth0\nnoise\n") == {
        "PATH": "/bin", "NCCL_SOCKET_IFNAME": "=eth0"}


@pytest.mark.parametrize(("value", "chosen"), [
    ("=eth0", ["eth0"]),
    ("eth", ["eth0", "eth01"]),
    ("eth0", ["eth0", "eth01"]),
    ("^lo,docker", ["eth0", "eth01", "ib0"]),
    ("^=eth0", ["lo", "eth01", "docker0", "ib0"]),
    ("=eth0,ib0", ["eth0", "ib0"]),
    ("=wlan0", []),
])
def test_socket_interfaces_follow_ncclfindinterfaces(value: str, chosen: list[str]) -> None:
    assert socket_interfaces(value, ["lo", "eth0", "eth01", "docker0", "ib0"]) == chosen


def test_wanted_variables_are_what_each_reader_takes_from_the_task_lines() -> None:
    extra = {"NCCL_IB_DISABLE": "1", "GLOO_DEVICE_TRANSPORT": "TCP"}
    assert wanted_variables("eth0", extra, nccl_env.ENVIRONMENT) == {
        "NCCL_SOCKET_IFNAME": "=eth0", "GLOO_SOCKET_IFNAME": "eth0", "NCCL_IB_DISABLE": "1",
        "GLOO_DEVICE_TRANSPORT": "TCP"}
    assert wanted_variables("eth0", extra, nccl_env.NCCL_CONF) == {
        "NCCL_SOCKET_IFNAME": "=eth0", "NCCL_IB_DISABLE": "1"}


def recorded_context() -> Context:
    data = Path(__file__).parents[1] / "data" / "facts" / "debian12-vm.txt"
    facts = parse_facts(split_sections(data.read_text(), "TOKEN123"))
    host = Host("vm", "192.0.2.2", "192.0.2.2")
    return Context(host, facts, {"vm": (host, facts)})


def test_wanted_build_on_a_cpu_node_is_the_cpu_wheel() -> None:
    assert wanted_build(recorded_context(), TorchParams(version="2.9.1")) == ("cpu",
                                                                             "2.9.1+cpu")


def test_wanted_build_refuses_a_cuda_variant_the_release_lacks() -> None:
    with pytest.raises(TaskFailed, match="no torch 2.9.1 build"):
        wanted_build(recorded_context(), TorchParams(version="2.9.1", cuda="cu118"))


def test_a_new_sessions_output_splits_into_environment_and_resolved_addresses() -> None:
    # getent ahostsv4's lines as glibc prints them (read on a testbed node): one per socket type
    output = ("PATH=/usr/bin\nNCCL_SOCKET_IFNAME==eth0\n\n@@T0K name node2\n"
              "10.0.0.12       STREAM node2\n10.0.0.12       DGRAM  \n10.0.0.12       RAW    \n")
    assert parse_fresh(output, "T0K") == Fresh(
        {"PATH": "/usr/bin", "NCCL_SOCKET_IFNAME": "=eth0"}, resolved={"node2": ["10.0.0.12"]})
    assert parse_fresh("PATH=/usr/bin\n\n@@T0K name node2\n", "T0K") == Fresh(
        {"PATH": "/usr/bin"}, resolved={"node2": []})


def test_a_new_sessions_output_gives_each_reader_and_each_names_two_answers() -> None:
    # getent's lines as glibc 2.36 prints them (ahostsv4: one per socket type; hosts: the
    # first match with its names); a name nothing answers prints nothing
    output = ("NCCL_SOCKET_IFNAME==eth0\n"
              "\n@@T0K login\nNCCL_SOCKET_IFNAME=lo\nSHLVL=1\n"
              "\n@@T0K nccl_conf_user\nNCCL_DEBUG=INFO\n\n@@T0K nccl_conf\n"
              "\n@@T0K name node1\n10.0.0.11       STREAM node1\n10.1.2.77       STREAM \n"
              "\n@@T0K first node1\n10.1.2.77       node1\n\n@@T0K name gpu9\n"
              "\n@@T0K first gpu9\n")
    seen = parse_fresh(output, "T0K")
    assert seen.login == {"NCCL_SOCKET_IFNAME": "lo", "SHLVL": "1"}
    assert seen.resolved == {"node1": ["10.0.0.11", "10.1.2.77"], "gpu9": []}
    assert seen.first_match == {"node1": ["10.1.2.77"], "gpu9": []}
    assert seen.nccl_files == (("~/.nccl.conf", "NCCL_DEBUG=INFO\n"),)  # /etc/nccl.conf: none
    elsewhere = parse_fresh(output.replace("==eth0\n", "==eth0\nNCCL_CONF_FILE=/srv/n.conf\n"),
                            "T0K")
    assert elsewhere.nccl_files == (("/srv/n.conf", "NCCL_DEBUG=INFO\n"),)
