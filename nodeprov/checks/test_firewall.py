"""ufw is active, denies incoming by default, keeps nodeprov's rules, and lets nothing wider in
from outside the node subnet than SSH.

Rules are read from ufw's saved rules with the firewall task's own probe and parser; "active"
is the facts' live test (ufw's chains are loaded), not just ENABLED=yes.
"""

from __future__ import annotations

import ipaddress
import shlex
from collections.abc import Sequence

import pytest

from nodeprov import ufw
from nodeprov.checks import Drift
from nodeprov.tasks import firewall
from nodeprov.tasks.base import Context
from nodeprov.ufw import Rule

AREA = "firewall"


def admits(rule: Rule) -> bool:
    """Whether a rule lets incoming traffic to this node in (not routed, not outgoing)."""
    return (not rule.action.startswith("route:") and rule.direction.startswith("in")
            and rule.action.partition("_")[0] in ("allow", "limit"))


def missing(rules: Sequence[Rule], wanted: Sequence[Rule]) -> list[Rule]:
    """Wanted rules that no admitting rule matches (the user's own rule for the same traffic
    counts: the firewall task keeps it instead of adding ours)."""
    matched = {rule.match for rule in rules if admits(rule)}
    return [rule for rule in wanted if rule.match not in matched]


def wider(rules: Sequence[Rule], wanted: Sequence[Rule], subnet: str) -> list[Rule]:
    """Rules admitting traffic from outside ``subnet`` other than the wanted ones (SSH)."""
    allowed = {rule.match for rule in wanted}
    network = ipaddress.ip_network(subnet)
    return [rule for rule in rules
            if admits(rule) and rule.match not in allowed and not _inside(rule.src, network)]


def _inside(source: str, network: ipaddress.IPv4Network | ipaddress.IPv6Network) -> bool:
    try:
        candidate = ipaddress.ip_network(source, strict=False)
    except ValueError:
        return False
    return candidate.network_address in network and candidate.prefixlen >= network.prefixlen


@pytest.fixture()
def state(observed: str, context: Context) -> ufw.State:
    return firewall.read_state(observed, context.facts).state


def test_no_lockout_guard_left_armed(observed: str, context: Context, drift: Drift) -> None:
    guard = firewall.read_state(observed, context.facts).armed_guard
    assert guard is None, drift.line(
        f"a lockout guard (pid {guard}) an interrupted apply left armed will disable ufw",
        "no guard waiting")


@pytest.fixture()
def wanted(state: ufw.State, params: firewall.FirewallParams, context: Context) -> list[Rule]:
    return firewall.wanted_rules(context, params, state.ipv6)


def test_ufw_active(state: ufw.State, wanted: list[Rule], drift: Drift) -> None:
    found = ("ufw is not installed" if not state.installed else
             "ufw is enabled at boot but its rules are not loaded" if state.enabled_at_boot else
             "ufw is inactive")
    assert state.active, drift.line(found, f"active with {len(wanted)} nodeprov rules")


def test_incoming_denied_by_default(state: ufw.State, drift: Drift) -> None:
    policy = ufw.POLICY_WORDS.get(state.incoming, state.incoming)
    assert state.incoming in ("DROP", "REJECT"), drift.line(
        f"ufw's default incoming policy is {policy}", "deny")


def test_data_port_rules_present(state: ufw.State, wanted: list[Rule], drift: Drift) -> None:
    data = [rule for rule in wanted if rule.comment != firewall.SSH]
    absent = missing(state.rules, data)
    assert not absent, drift.line(
        "missing ufw rules: " + "; ".join(map(str, absent)),
        f"{len(data)} nodeprov rules for NCCL and rendezvous")


def test_ssh_allowed(state: ufw.State, wanted: list[Rule], drift: Drift) -> None:
    ssh = [rule for rule in wanted if rule.comment == firewall.SSH]
    absent = missing(state.rules, ssh)
    assert not absent, drift.line(f"missing SSH rules: {'; '.join(map(str, absent))}",
                                  "SSH allowed, so the next connection is not locked out")


def test_nothing_wider_from_outside(state: ufw.State, wanted: list[Rule],
                                    params: firewall.FirewallParams, drift: Drift) -> None:
    extra = wider(state.rules, wanted, params.subnet)
    # apply leaves the user's own rules alone: removing one is a command on the node
    repair = None if not extra or extra[0].comment.startswith("nodeprov:") else (
        f"on {drift.node}: {shlex.join(ufw.delete_argv(extra[0]))}")
    assert not extra, drift.line(
        f"ufw admits more than SSH from outside {params.subnet}: "
        + "; ".join(map(str, extra)), f"only SSH from outside {params.subnet}", repair)


def test_no_stale_nodeprov_rules(state: ufw.State, wanted: list[Rule], drift: Drift) -> None:
    stale = [rule for rule in state.rules
             if rule.comment.startswith("nodeprov:") and rule not in wanted]
    assert not stale, drift.line(f"stale nodeprov ufw rules: {'; '.join(map(str, stale))}",
                                 f"only the {len(wanted)} current nodeprov rules")
