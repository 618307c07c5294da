"""ufw.py: ufw's rules and settings parsed from files ufw wrote, and its commands rendered."""

from __future__ import annotations

from nodeprov.tasks.firewall import ufw
from nodeprov.tasks.firewall.ufw import Rule
from tests.tasks.firewall.ufw_cases import section, texts


def test_parses_real_user_rules_with_hex_comments_and_every_rule_shape() -> None:
    rules = ufw.parse_rules(section("mixed", ufw.RULES), v6=False)
    assert [str(r) for r in rules] == [
        "limit tcp 22 from any",  # `ufw limit ssh/tcp` took over our ssh rule: no comment left
        "allow any 53 from any",
        "deny tcp 25 from 10.2.0.5/32",
        "allow_log udp 5353 from 10.0.0.0/8 port 53 in_eth0 (nodeprov: odd)",
        "route:allow tcp 80 from any in_eth0!out_eth1",
        "allow tcp 22 from any",
        "allow tcp 443 from any out (out web)",
        "allow tcp 2222 from 10.0.0.5/32",
    ]
    assert rules[5].apps == ("OpenSSH", "-")
    six = ufw.parse_rules(section("mixed", ufw.RULES6), v6=True)
    assert six[-1] == Rule("allow", "udp", "4000:4010", "fd00::/64", dst="::/0",
                           comment="v6 only", v6=True)


def test_parses_settings_of_ufw_conf_and_default_ufw() -> None:
    assert ufw.parse_settings(section("in-sync", ufw.CONF))["ENABLED"] == "yes"
    assert ufw.parse_settings(section("fresh", ufw.CONF))["ENABLED"] == "no"
    defaults = ufw.parse_settings(section("mixed", ufw.DEFAULTS))
    assert (defaults["IPV6"], defaults["DEFAULT_INPUT_POLICY"],
            defaults["DEFAULT_OUTPUT_POLICY"]) == ("yes", "REJECT", "ACCEPT")


def test_renders_delete_commands_from_parsed_rules() -> None:
    rules = ufw.parse_rules(section("mixed", ufw.RULES), v6=False)
    assert ufw.delete_argv(rules[3]) == (
        "ufw", "delete", "allow", "in", "on", "eth0", "log", "proto", "udp", "from",
        "10.0.0.0/8", "port", "53", "to", "0.0.0.0/0", "port", "5353")
    assert ufw.delete_argv(rules[4]) == (
        "ufw", "route", "delete", "allow", "in", "on", "eth0", "out", "on", "eth1", "proto",
        "tcp", "from", "0.0.0.0/0", "to", "0.0.0.0/0", "port", "80")
    assert ufw.delete_argv(rules[5])[-4:] == ("to", "0.0.0.0/0", "app", "OpenSSH")
    assert ufw.delete_argv(rules[6]) == ("ufw", "delete", "allow", "out", "proto", "tcp", "from",
                                         "0.0.0.0/0", "to", "0.0.0.0/0", "port", "443")


def test_state_of_a_node_without_ufw_is_a_fresh_install() -> None:
    state = ufw.parse_state({ufw.DISABLE_IPV6: "0\n"}, installed=False, active=False)
    assert (state.incoming, state.outgoing, state.ipv6, state.rules) == (
        "DROP", "ACCEPT", True, ())


def test_ipv6_off_ignores_the_dormant_user6_rules() -> None:
    found = texts("in-sync")
    assert ufw.parse_state(found, installed=True, active=True).ipv6
    found[ufw.DEFAULTS] = section("in-sync", ufw.DEFAULTS).replace("IPV6=yes", "IPV6=no")
    state = ufw.parse_state(found, installed=True, active=True)
    assert not state.ipv6 and not any(r.v6 for r in state.rules)
