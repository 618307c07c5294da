"""Nodes ufw cannot serve: the refusal names the cause, and its commands run as written in a
shell (checked with stand-ins for firewall-cmd, dnf, systemctl and ufw that record their
arguments)."""

from __future__ import annotations

import dataclasses
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from nodeprov.remote.facts import Interface
from nodeprov.tasks.firewall import ufw
from nodeprov.tasks.firewall.foreign import refusal
from nodeprov.tasks.firewall.ufw import Rule
from tests.tasks.firewall.ufw_cases import FACTS

SUBNET = "10.0.0.0/24"
DATA_RULES = [ufw.add_argv(Rule("allow", "tcp", port, SUBNET, dst=ufw.ANY_V4, comment=comment))
              for port, comment in (("32768:60999", "nodeprov: nccl ephemeral"),
                                    ("29500", "nodeprov: rdzv"))]
ETH1 = Interface(name="eth1", up=True, ipv4=("10.0.0.11/24",), ipv6=())


def commands_in(message: str) -> str:
    """The shell commands in a refusal: what its parentheses hold."""
    match = re.search(r"(?:the ports|in firewalld|with it) \((.*)\) and set firewall_manage: false",
                      message)
    assert match, message
    return match.group(1)


def run_with_stand_ins(command: str, tmp_path: Path) -> list[list[str]]:
    """Run ``command`` with sh, every tool a stand-in logging its argv; the calls made."""
    log = tmp_path / "calls"
    for tool in ("firewall-cmd", "dnf", "systemctl", "ufw"):
        stand_in = tmp_path / tool
        reply = "internal" if tool == "firewall-cmd" else ""
        stand_in.write_text(f"#!/bin/sh\nprintf '%s\\0' {tool} \"$@\" >> {log}\n"
                            f"printf '\\n' >> {log}\necho {reply}\n")
        stand_in.chmod(0o755)
    subprocess.run(["sh", "-c", command], env={"PATH": f"{tmp_path}:/usr/bin:/bin"},
                   check=True, timeout=10)
    return [line.split("\0")[:-1] for line in log.read_text().splitlines() if line]


def test_firewalld_gets_the_data_ports_in_the_zone_of_the_subnets_interface(
        tmp_path: Path) -> None:
    facts = dataclasses.replace(FACTS, firewalld_active=True, interfaces=(ETH1,))
    message = refusal(facts, SUBNET, 29500, DATA_RULES)
    assert message is not None and message.startswith(
        "firewalld is running: its zones would still drop the NCCL, gloo and rendezvous "
        "traffic ufw allows. Open the ports in firewalld (")
    assert message.endswith("; or stop firewalld (systemctl disable --now firewalld) and "
                            "re-run, for ufw")
    rule = "rule family=ipv4 source address=10.0.0.0/24 port port={} protocol=tcp accept"
    assert run_with_stand_ins(commands_in(message), tmp_path) == [
        ["firewall-cmd", "--get-zone-of-interface=eth1"],
        ["firewall-cmd", "--permanent", "--zone=internal", "--add-rich-rule=" + rule.format(
            "32768-60999")],
        ["firewall-cmd", "--permanent", "--zone=internal", "--add-rich-rule=" + rule.format(
            "29500")],
        ["firewall-cmd", "--reload"]]


def test_an_ipv6_subnet_gets_ipv6_rich_rules() -> None:
    facts = dataclasses.replace(FACTS, firewalld_active=True)
    message = refusal(facts, "fd00:1::/64", 29500, [])
    assert message and "rule family=ipv6 source address=fd00:1::/64 port port=29500" in message


@pytest.mark.parametrize(("facts", "first_calls"), [
    # Rocky or Alma cloud images: neither ufw nor firewalld; ufw would come from EPEL
    ({"ufw_installed": False, "ufw_active": False, "package_manager": "dnf"},
     [["dnf", "install", "-y", "firewalld"], ["systemctl", "enable", "--now", "firewalld"],
      ["firewall-cmd", "--get-default-zone"]]),
    # ufw from EPEL already there: its own command line adds the same rules
    ({"ufw_rules_in_var_lib": True},
     [["ufw", *DATA_RULES[0][1:]], ["ufw", *DATA_RULES[1][1:]]]),
])
def test_rhel_family_nodes_get_commands_that_run(facts: dict[str, Any],
                                                 first_calls: list[list[str]],
                                                 tmp_path: Path) -> None:
    message = refusal(dataclasses.replace(FACTS, **facts), SUBNET, 29500, DATA_RULES)
    assert message and ("nodeprov does not manage that layout" in message
                        or "no firewall runs here" in message)
    calls = run_with_stand_ins(commands_in(message), tmp_path)
    assert calls[:len(first_calls)] == first_calls


def test_a_node_ufw_serves_is_not_refused() -> None:
    assert refusal(FACTS, SUBNET, 29500, DATA_RULES) is None
    # ufw installed from pip or source on a RHEL-family node keeps /etc/ufw: managed
    assert refusal(dataclasses.replace(FACTS, package_manager="dnf"), SUBNET, 29500,
                   DATA_RULES) is None
