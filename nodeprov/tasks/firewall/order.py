"""The rule order ufw applies: a rule of the user's above ours that stops what ours lets in.

ufw tries its user rules in the order ``ufw status numbered`` lists them (user.rules, then
user6.rules: the order ``state.rules`` keeps) and the first that matches decides. A user's
``ufw insert 1 deny from 10.0.0.0/24`` therefore blocks the node subnet whatever our rules say,
and it is the user's rule, not ours to remove: each one found is a Plan.conflict naming it as
``ufw status numbered`` shows it and the ``ufw delete`` that removes it::

    >>> ours = Rule("allow", "tcp", "29500", "10.0.0.0/24", comment="nodeprov: rdzv")
    >>> deny = Rule("deny", "any", "any", "10.0.0.0/24")
    >>> blocking([deny, ours], [ours])
    [(1, Rule(action='deny', ...), [Rule(action='allow', ...)])]
    >>> numbered(1, deny)
    '[ 1] Anywhere DENY IN 10.0.0.0/24'
"""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence

from nodeprov.tasks.firewall.ufw import ANYWHERE, Rule, delete_argv, spec
from nodeprov.tasks.textfiles import byhand

STOPPING = ("deny", "reject")  # limit lets a connection in (six a minute per address)


def blocking(rules: Sequence[Rule], wanted: Sequence[Rule]) -> list[tuple[int, Rule, list[Rule]]]:
    """(its number in ``ufw status numbered``, the rule, the wanted rules it stops) for every
    rule above a wanted one (or anywhere, where that one is missing: it would be appended)
    that stops some of its traffic; ``rules`` as ufw holds them, ours among them."""
    found = []
    for number, rule in enumerate(rules, start=1):
        stopped = [ours for ours in wanted
                   if number < _position(rules, ours) and _stops(rule, ours)]
        if stopped:
            found.append((number, rule, stopped))
    return found


def conflict(number: int, rule: Rule, stopped: Sequence[Rule]) -> str:
    """The conflict's words: the rule, what it stops, the command that removes it.

        >>> conflict(1, Rule("deny", "any", "any", "10.0.0.0/24"),
        ...          [Rule("allow", "tcp", "29500", "10.0.0.0/24")])
        ... # doctest: +NORMALIZE_WHITESPACE
        "ufw rule '[ 1] Anywhere DENY IN 10.0.0.0/24' comes before ours and stops 'allow from
        10.0.0.0/24 to any port 29500 proto tcp': remove it: ufw delete deny from 10.0.0.0/24
        to 0.0.0.0/0"
    """
    words = ", ".join(map(repr, dict.fromkeys(map(spec, stopped))))
    return byhand.by_hand(f"ufw rule {numbered(number, rule)!r}",
                          f"comes before ours and stops {words}", byhand.REMOVE,
                          delete_argv(rule))


def numbered(number: int, rule: Rule) -> str:
    """``rule`` as ``ufw status numbered`` shows it, its columns one space apart."""
    twin = " (v6)" if rule.v6 else ""
    port = rule.port if rule.proto == "any" else f"{rule.port}/{rule.proto}"
    to = " ".join(part for part in (
        "" if rule.dst in ANYWHERE else _shown(rule.dst), "" if rule.port == "any" else port)
        if part)
    source = "Anywhere" if rule.src in ANYWHERE else _shown(rule.src)
    if rule.sport != "any":
        source += f" {rule.sport}" + ("" if rule.proto == "any" else f"/{rule.proto}")
    direction, _, interface = rule.direction.partition("_")
    to = (to or "Anywhere") + twin + (f" on {interface}" if interface else "")
    action = f"{rule.action.partition('_')[0].upper()} {direction.upper()}"
    comment = f" # {rule.comment}" if rule.comment else ""
    return f"[{number:2d}] {to} {action} {source}{twin if rule.src in ANYWHERE else ''}{comment}"


def _shown(network: str) -> str:
    """A single host without its prefix, as ufw shows (and saves) it."""
    return network.removesuffix("/128" if ":" in network else "/32")


def _position(rules: Sequence[Rule], ours: Rule) -> int:
    """The number of the rule letting ``ours``'s traffic in (the user's own allow will do),
    or the one it would get, appended."""
    return next((number for number, rule in enumerate(rules, start=1)
                 if rule.match == ours.match and rule.action == ours.action), len(rules) + 1)


def _stops(rule: Rule, ours: Rule) -> bool:
    """Whether ``rule`` matches some connection ``ours`` is there to let in, and refuses it."""
    return (rule.action.partition("_")[0] in STOPPING and rule.direction.startswith("in")
            and rule.apps == ("-", "-") and rule.v6 == ours.v6
            and rule.proto in ("any", ours.proto) and rule.sport in ("any", ours.sport)
            and _overlap(rule.src, ours.src) and _overlap(rule.dst, ours.dst)
            and _ports_meet(rule.port, ours.port))


def _overlap(one: str, other: str) -> bool:
    try:
        return ipaddress.ip_network(one).overlaps(ipaddress.ip_network(other))
    except (ValueError, TypeError):  # a hand-edited file's word, or v4 against v6
        return False


def _ports_meet(one: str, other: str) -> bool:
    """Whether ufw port lists such as "80,443", "32768:60999" or "any" share a port."""
    if "any" in (one, other):
        return True
    return any(low <= other_high and other_low <= high
               for low, high in _ranges(one) for other_low, other_high in _ranges(other))


def _ranges(ports: str) -> list[tuple[int, int]]:
    found = []
    for part in ports.split(","):
        low, _, high = part.partition(":")
        if low.isdigit() and (high or low).isdigit():
            found.append((int(low), int(high or low)))
    return found
