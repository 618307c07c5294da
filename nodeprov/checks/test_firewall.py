"""Nothing wider than SSH is let in from outside the node subnet. The firewall task keeps
nodeprov's own rules (its plan is their check) and leaves a person's rules alone, so a rule of
theirs opening NCCL's ports to the world is invisible to the plan: this check reads ufw's saved
rules with the firewall task's own probe and parser and looks at all of them."""

from __future__ import annotations

import ipaddress
import shlex
from collections.abc import Sequence

import pytest

from nodeprov.checks import Drift
from nodeprov.tasks import firewall
from nodeprov.tasks.base import Context
from nodeprov.tasks.firewall import ufw
from nodeprov.tasks.firewall.ufw import Rule

AREA = "firewall"


def admits(rule: Rule) -> bool:
    """Whether a rule lets incoming traffic to this node in (not routed, not outgoing)."""
    return (not rule.action.startswith("route:") and rule.direction.startswith("in")
            and rule.action.partition("_")[0] in ("allow", "limit"))


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


def test_nothing_wider_from_outside(observed: str, context: Context,
                                    params: firewall.FirewallParams, drift: Drift) -> None:
    if not params.manage:
        pytest.skip("firewall left to the node's own tool (firewall_manage: false)")
    state = firewall.read_state(observed, context.facts).state
    extra = wider(state.rules, firewall.wanted_rules(context, params, state.ipv6), params.subnet)
    # apply leaves the user's own rules alone: removing one is a command on the node
    repair = None if not extra or extra[0].comment.startswith("nodeprov:") else (
        f"on {drift.node}: {shlex.join(ufw.delete_argv(extra[0]))}")
    assert not extra, drift.line(
        f"ufw admits more than SSH from outside {params.subnet}: "
        + "; ".join(map(str, extra)), f"only SSH from outside {params.subnet}", repair)
