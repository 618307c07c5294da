"""ufw's saved rules and settings as values, and the ufw commands rendered from those values.

ufw keeps every rule in /etc/ufw/user.rules (user6.rules for IPv6) as a ``### tuple ###`` line,
its comment hex-encoded; reading those files costs nothing, unlike ``ufw status`` (Python)::

    >>> rule = parse_rules("### tuple ### allow tcp 22 0.0.0.0/0 any 0.0.0.0/0 in "
    ...                    "comment=6e6f646570726f763a20737368", v6=False)[0]
    >>> str(rule)
    'allow tcp 22 from any (nodeprov: ssh)'
    >>> " ".join(add_argv(rule))
    'ufw allow proto tcp from any to any port 22 comment nodeprov: ssh'
    >>> " ".join(delete_argv(rule))
    'ufw delete allow proto tcp from 0.0.0.0/0 to 0.0.0.0/0 port 22'
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from dataclasses import dataclass, replace

ANY_V4 = "0.0.0.0/0"
ANY_V6 = "::/0"
ANYWHERE = (ANY_V4, ANY_V6)
CONF = "/etc/ufw/ufw.conf"
DEFAULTS = "/etc/default/ufw"
RULES = "/etc/ufw/user.rules"
RULES6 = "/etc/ufw/user6.rules"
DISABLE_IPV6 = "/proc/sys/net/ipv6/conf/all/disable_ipv6"  # absent: no IPv6 in the kernel
FILES = (CONF, DEFAULTS, RULES, RULES6, DISABLE_IPV6)
POLICY_WORDS = {"DROP": "deny", "ACCEPT": "allow", "REJECT": "reject"}
TUPLE = "### tuple ###"  # starts the line of each rule in user.rules


@dataclass(frozen=True)
class Rule:
    """One rule as ufw saves it; ``port`` is the destination port, range or list."""

    action: str            # allow, deny, reject or limit, as saved: "route:" and "_log" kept
    proto: str             # tcp, udp or any
    port: str              # "22", "32768:60999", "80,443" or "any"
    src: str               # a network: "10.0.0.0/24", 0.0.0.0/0 or ::/0 for anywhere
    dst: str = ANY_V4
    direction: str = "in"  # in or out, "in_eth0" when bound to an interface
    comment: str = ""
    v6: bool = False
    sport: str = "any"
    apps: tuple[str, str] = ("-", "-")  # (destination, source) application profiles

    @property
    def match(self) -> tuple[str, ...]:
        """What the rule matches, without its action and comment (ufw's own notion of same:
        a route rule is never the same as an incoming one)."""
        return (self.proto, self.port, self.src, self.dst, self.direction, str(self.v6),
                self.sport, *self.apps, str(self.action.startswith("route:")))

    @property
    def brief(self) -> str:
        """``allow 10.0.0.0/24 -> 32768:60999/tcp``: what a no-op note says."""
        return f"{self.action} {_where(self.src)} -> {self.port}/{self.proto}{self._twin}"

    @property
    def _twin(self) -> str:
        return " (v6)" if self.v6 and self.src in ANYWHERE else ""

    def __str__(self) -> str:
        text = f"{self.action} {self.proto} {self.port} from {_where(self.src)}"
        text += f" port {self.sport}" if self.sport != "any" else ""
        text += f" to {self.dst}" if self.dst not in ANYWHERE else ""
        text += f" {self.direction}" if self.direction != "in" else ""
        return text + self._twin + (f" ({self.comment})" if self.comment else "")


@dataclass(frozen=True)
class State:
    """ufw on one node: its files (``parse_state``) and the facts' installed/active."""

    installed: bool
    active: bool           # enabled with its chains loaded (facts.ufw_active)
    enabled_at_boot: bool  # ENABLED=yes in ufw.conf
    incoming: str          # default policy: DROP, ACCEPT or REJECT
    outgoing: str
    ipv6: bool             # ufw handles IPv6: IPV6=yes and the kernel has IPv6
    rules: tuple[Rule, ...]


def parse_state(files: Mapping[str, str | None], *, installed: bool, active: bool) -> State:
    """State from the texts of ``FILES`` (None when absent); a missing ufw reads as a fresh
    install would be.

        >>> parse_state({}, installed=False, active=False).incoming
        'DROP'
    """
    defaults = parse_settings(files.get(DEFAULTS) or "") if installed else {}
    ipv6 = defaults.get("IPV6", "yes") == "yes" and files.get(DISABLE_IPV6) is not None
    rules = parse_rules(files.get(RULES) or "", v6=False)
    if ipv6:  # with IPV6=no ufw ignores user6.rules, and empties it on its next change
        rules += parse_rules(files.get(RULES6) or "", v6=True)
    return State(installed=installed, active=active,
                 enabled_at_boot=parse_settings(files.get(CONF) or "").get("ENABLED") == "yes",
                 incoming=defaults.get("DEFAULT_INPUT_POLICY", "DROP" if not installed else "-"),
                 outgoing=defaults.get("DEFAULT_OUTPUT_POLICY", "ACCEPT" if not installed else "-"),
                 ipv6=ipv6, rules=tuple(rules))


def anywhere_twin(rule: Rule) -> Rule:
    """The IPv6 twin ufw writes for an IPv4 rule from and to anywhere (``from any to any``)."""
    return replace(rule, src=ANY_V6, dst=ANY_V6, v6=True)


def parse_rules(text: str, *, v6: bool) -> list[Rule]:
    """The rules in a user.rules (``v6=False``) or user6.rules file, in file order."""
    rules = []
    for line in text.splitlines():
        if not line.startswith(TUPLE):
            continue
        body, _, comment_hex = line[len(TUPLE):].partition(" comment=")
        fields = body.split()
        if len(fields) not in (7, 9):  # older ufw wrote 6 or 8 fields; it rewrites them
            continue
        apps = (fields[6].replace("%20", " "), fields[7].replace("%20", " ")) if len(
            fields) == 9 else ("-", "-")
        rules.append(Rule(action=fields[0], proto=fields[1], port=fields[2],
                          dst=_network(fields[3]), sport=fields[4], src=_network(fields[5]),
                          direction=fields[-1], comment=_unhex(comment_hex.strip()), v6=v6,
                          apps=apps))
    return rules


def parse_settings(text: str) -> dict[str, str]:
    """KEY=value lines of /etc/ufw/ufw.conf or /etc/default/ufw, quotes removed."""
    settings = {}
    for line in text.splitlines():
        key, sep, value = line.strip().partition("=")
        if sep and not key.startswith("#"):
            settings[key.strip()] = value.strip().strip('"').strip("'")
    return settings


def add_argv(rule: Rule) -> tuple[str, ...]:
    """``ufw allow ...`` adding ``rule``; anywhere is ``any``, so ufw adds the IPv6 twin itself
    when its IPv6 is on."""
    argv = _rule_argv(rule, anywhere="any")
    return (*argv, "comment", rule.comment) if rule.comment else argv


def spec(rule: Rule) -> str:
    """The rule in ufw's own words, as a person would type it after ``ufw``: what drift says.

        >>> spec(Rule("allow", "tcp", "32768:60999", "10.0.0.0/24"))
        'allow from 10.0.0.0/24 to any port 32768:60999 proto tcp'
    """
    words = [rule.action.partition("_")[0], "from", _where(rule.src), "to", _where(rule.dst)]
    words += ["port", rule.port] if rule.port != "any" else []
    return " ".join(words + (["proto", rule.proto] if rule.proto != "any" else []))


def delete_argv(rule: Rule) -> tuple[str, ...]:
    """``ufw delete ...`` removing exactly ``rule`` (explicit addresses: not its twin)."""
    return _rule_argv(rule, anywhere=None, delete=True)


def _rule_argv(rule: Rule, *, anywhere: str | None, delete: bool = False) -> tuple[str, ...]:
    route, _, action = rule.action.rpartition(":")
    action, _, log = action.partition("_")
    argv = ["ufw", *(["route"] if route else []), *(["delete"] if delete else []), action]
    for binding in rule.direction.split("!"):
        direction, _, interface = binding.partition("_")
        if direction != "in" or interface:
            argv += [direction, *(["on", interface] if interface else [])]
    argv += [log] if log else []
    argv += ["proto", rule.proto] if rule.proto != "any" else []
    for word, network, port, app in (("from", rule.src, rule.sport, rule.apps[1]),
                                     ("to", rule.dst, rule.port, rule.apps[0])):
        argv += [word, anywhere if anywhere and network in ANYWHERE else network]
        if app != "-":
            argv += ["app", app]
        elif port != "any":
            argv += ["port", port]
    return tuple(argv)


def _where(network: str) -> str:
    return "any" if network in ANYWHERE else network


def _network(text: str) -> str:
    """ufw writes a single host without its prefix; compare networks in one spelling."""
    try:
        return str(ipaddress.ip_network(text, strict=False))
    except ValueError:
        return text


def _unhex(text: str) -> str:
    try:
        return bytes.fromhex(text).decode()
    except ValueError:  # not hex (hand-edited file): show it as written
        return text


def port_ranges(low: int, high: int, *, without: int) -> list[str]:
    """The ports ``low``-``high`` as ufw's port ranges, leaving out the port ``without`` (the
    firewall task keeps SSH's port out of the ephemeral range it opens to the subnet: sshd on
    2222, the range tuned to 1024-65535).

    >>> port_ranges(32768, 60999, without=22)
    ['32768:60999']
    >>> port_ranges(1024, 65535, without=2222)
    ['1024:2221', '2223:65535']
    >>> port_ranges(2222, 2223, without=2222)
    ['2223']
    """
    pieces = [(low, high)] if not low <= without <= high else [
        (low, without - 1), (without + 1, high)]
    return [f"{start}:{end}" if start < end else str(start)
            for start, end in pieces if start <= end]
