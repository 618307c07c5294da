"""The rule order ufw applies, on what real ufw recorded: a user's deny above ours is named as
``ufw status numbered`` shows it, with the ``ufw delete`` that removes it."""

from __future__ import annotations

import dataclasses

from nodeprov.tasks.firewall import order, read_state
from nodeprov.tasks.firewall.ufw import Rule
from tests.tasks.firewall.test_firewall import plan_for
from tests.tasks.firewall.ufw_cases import DATA, FACTS, recorded

SUBNET_DENY = ("ufw rule '[ 2] Anywhere DENY IN 10.0.0.0/24' comes before ours and stops "
               "'allow from any to any port 22 proto tcp', 'allow from 10.0.0.0/24 to any port "
               "32768:60999 proto tcp', 'allow from 10.0.0.0/24 to any port 29500 proto tcp': "
               "remove it: ufw delete deny from 10.0.0.0/24 to 0.0.0.0/0")


def test_each_rule_reads_as_ufw_status_numbered_shows_it() -> None:
    rules = read_state(recorded("deny-above"), FACTS).state.rules
    shown = [" ".join(line.split()) for line in
             (DATA / "deny-above.status").read_text().splitlines() if line.startswith("[")]
    assert [order.numbered(number, rule) for number, rule in enumerate(rules, start=1)] == shown


def test_a_deny_of_the_subnet_above_ours_is_a_conflict_another_deny_is_not() -> None:
    result = plan_for("deny-above")
    assert result.changes == ()  # nothing of ours to change: the user's rule is the drift
    assert result.conflicts == (SUBNET_DENY,)
    assert plan_for("in-sync").conflicts == ()
    assert plan_for("mixed").conflicts == ()  # its deny of 10.2.0.5 to port 25 stops none


def test_only_a_rule_above_ours_that_refuses_what_ours_lets_in_stops_it() -> None:
    ours = Rule("allow", "tcp", "32768:60999", "10.0.0.0/24", comment="nodeprov: nccl ephemeral")
    deny = Rule("deny", "any", "any", "10.0.0.0/24")
    stopping = [deny, dataclasses.replace(deny, action="reject_log", proto="tcp", port="40000"),
                dataclasses.replace(deny, src="10.0.0.7", port="80,60000:61000")]
    passing = [dataclasses.replace(deny, action="allow"), dataclasses.replace(deny, proto="udp"),
               dataclasses.replace(deny, src="10.0.1.0/24"), dataclasses.replace(deny, port="22"),
               dataclasses.replace(deny, direction="out"),
               dataclasses.replace(deny, action="route:deny", direction="in_eth0!out_eth1"),
               dataclasses.replace(deny, action="limit")]
    for rule in stopping:
        assert order.blocking([rule, ours], [ours]) == [(1, rule, [ours])], rule
        assert order.blocking([ours, rule], [ours]) == [], rule  # below ours: ours decides
        assert order.blocking([rule], [ours]) == [(1, rule, [ours])], rule  # ours appended
    for rule in passing:
        assert order.blocking([rule, ours], [ours]) == [], rule
