"""ufw's rule files and ufw.conf as ufw itself writes them, so ufw can be enabled by loading its
files (``ufw-init start``: shell and iptables-restore, what the boot service runs) instead of
through its command line, a Python program (~0.3 CPU-s for ``ufw enable``, ~0.07 per ``ufw
allow``). The format is ufw 0.36's, as its ``backend_iptables.py`` (``_write_rules``,
``_get_logging_rules``), ``backend.py`` (``set_default``) and ``common.py`` (``format_rule``)
write it; the tests compare our files with files the real ufw CLI left::

    >>> rule = Rule("allow", "tcp", "29500", "10.0.0.0/24", comment="nodeprov: rdzv")
    >>> print(to_saved(rule).text, end="")
    ### tuple ### allow tcp 29500 0.0.0.0/0 any 10.0.0.0/24 in comment=6e6f646570726f763a2072647a76
    -A ufw-user-input -p tcp --dport 29500 -s 10.0.0.0/24 -j ACCEPT

The user's own rules are kept as their files have them, byte for byte.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from nodeprov.tasks.firewall.ufw import (
    ANYWHERE,
    CONF,
    DEFAULTS,
    POLICY_WORDS,
    RULES,
    RULES6,
    TUPLE,
    Rule,
    parse_rules,
    parse_settings,
)

LOGLEVELS = {"off": 0, "low": 100, "medium": 200, "high": 300, "full": 400}
DIRECTIONS = ("input", "output", "forward")
_LIMIT = ("-m", "limit", "--limit", "3/min", "--limit-burst", "10")


@dataclass(frozen=True)
class Saved:
    """A rule in user.rules or user6.rules: the rule, and its text there (the tuple line and
    the iptables lines that follow it)."""

    rule: Rule
    text: str


def enabled(texts: Mapping[str, str | None], *, ipv6: bool, add: Sequence[Rule],
            remove: Sequence[Rule], incoming: str, outgoing: str) -> dict[str, str] | None:
    """The files ``ufw allow`` for each of ``add``, ``ufw delete`` for each of ``remove``, ``ufw
    default`` (``incoming``, ``outgoing``: DROP, ACCEPT or REJECT) and ``ufw enable`` would
    leave, {path: text} for those whose text changes; None when ufw would rewrite a rule in
    a newer format, or a file is missing: ufw's command line must do it then.

    /etc/default/ufw stays as it is: ``ufw default`` also edits after.rules, so it runs itself.
    """
    conf, defaults, rules = texts.get(CONF), texts.get(DEFAULTS), texts.get(RULES)
    rules6 = texts.get(RULES6) if ipv6 else ""  # with IPV6=no ufw neither reads nor keeps it
    if conf is None or defaults is None or rules is None or rules6 is None:
        return None
    kept, kept6 = read_rules(rules, v6=False), read_rules(rules6, v6=True)
    if kept is None or kept6 is None:
        return None
    settings = parse_settings(conf)
    new_conf = conf
    if settings.get("ENABLED", "").lower() != "yes":
        new_conf = set_setting(new_conf, "ENABLED", "yes")
    level = settings.get("LOGLEVEL", "").lower()
    if level not in LOGLEVELS:  # `ufw enable` sets it, as `ufw logging low` would
        level = "low"
        new_conf = set_setting(new_conf, "LOGLEVEL", level)
    forward = parse_settings(defaults).get("DEFAULT_FORWARD_POLICY", "DROP")
    # ufw's word for each policy, as its logging rules read it
    policies = {direction: POLICY_WORDS.get(policy.upper(), "deny") for direction, policy in
                zip(DIRECTIONS, (incoming, outgoing, forward), strict=True)}
    new = {RULES: render_rules(_edited(kept, add, remove, v6=False), v6=False, level=level,
                               policies=policies),
           RULES6: render_rules(_edited(kept6, add, remove, v6=True), v6=True,
                                level=level if ipv6 else None, policies=policies),
           CONF: new_conf}
    return {path: text for path, text in new.items() if text != texts.get(path)}


def read_rules(text: str, *, v6: bool) -> list[Saved] | None:
    """The rules of a user.rules (``v6=False``) or user6.rules text, in file order; None when
    a tuple line is one ufw would skip or rewrite (an older format)."""
    found: list[tuple[Rule, list[str]]] = []
    inside = False  # in a rule's lines: from its tuple line to the next blank or ### line
    for line in text.splitlines(keepends=True):
        if line.startswith(TUPLE):
            parsed = parse_rules(line, v6=v6)
            if not parsed:
                return None
            found.append((parsed[0], [line]))
            inside = True
        elif inside and line.strip() and not line.startswith(("#", "COMMIT")):
            found[-1][1].append(line)
        else:
            inside = False
    return [Saved(rule, "".join(lines)) for rule, lines in found]


def to_saved(rule: Rule) -> Saved:
    """``rule`` as ufw saves it, for the rules the firewall task makes: allow, TCP or UDP,
    incoming, to a destination port or range, from a network."""
    chain = f"{'ufw6' if rule.v6 else 'ufw'}-user-input"
    tuple_line = (f"{TUPLE} {rule.action} {rule.proto} {rule.port} {_spelled(rule.dst)} "
                  f"{rule.sport} {_spelled(rule.src)} {rule.direction}")
    if rule.comment:
        tuple_line += f" comment={rule.comment.encode().hex()}"
    multi = "," in rule.port or ":" in rule.port
    spec = ["-A", chain, "-p", rule.proto, *(["-m", "multiport", "--dports", rule.port]
                                            if multi else [])]
    spec += ["-d", _spelled(rule.dst)] if rule.dst not in ANYWHERE else []
    spec += ["--dport", rule.port] if not multi else []
    spec += ["-s", _spelled(rule.src)] if rule.src not in ANYWHERE else []
    return Saved(rule, f"{tuple_line}\n{' '.join(spec)} -j ACCEPT\n")


def render_rules(rules: Sequence[Saved], *, v6: bool, level: str | None,
                 policies: Mapping[str, str]) -> str:
    """A user.rules or user6.rules text with ``rules``, logging at ``level`` with the default
    ``policies`` (allow, deny or reject, by direction); ``level`` None for the IPv6 file when
    ufw's IPv6 is off: no logging, no rate limiting."""
    prefix = "ufw6" if v6 else "ufw"
    chains = [f"{prefix}-user-{d}" for d in DIRECTIONS]
    chains += [f"{prefix}-{kind}-logging-{d}" for kind in ("before", "user", "after")
               for d in DIRECTIONS]
    chains += [f"{prefix}-logging-deny", f"{prefix}-logging-allow"]
    # ufw checks that iptables can rate-limit; every kernel of the last decade can
    chains += [f"{prefix}-user-limit", f"{prefix}-user-limit-accept"] if level else []
    text = "*filter\n" + "".join(f":{chain} - [0:0]\n" for chain in chains) + "### RULES ###\n"
    text += "".join(f"\n{rule.text}" for rule in rules) + "\n### END RULES ###\n"
    logging = logging_rules(prefix, level, policies) if level else []
    text += "\n### LOGGING ###\n" + "".join(f"{line}\n" for line in logging)
    text += "### END LOGGING ###\n"
    if level:
        text += "\n### RATE LIMITING ###\n"
        if level != "off":
            text += f'-A {prefix}-user-limit -m limit --limit 3/minute -j LOG --log-prefix ' \
                    '"[UFW LIMIT BLOCK] "\n'
        text += (f"-A {prefix}-user-limit -j REJECT\n-A {prefix}-user-limit-accept -j ACCEPT\n"
                 "### END RATE LIMITING ###\n")
    return text + "COMMIT\n"


def logging_rules(prefix: str, level: str, policies: Mapping[str, str]) -> list[str]:
    """The logging lines of one rules file, in ufw's order and spelling.

        >>> logging_rules("ufw", "off", {})[0]
        '-I ufw-user-logging-input -j RETURN'
    """
    rank = LOGLEVELS[level]
    if not rank:  # a RETURN first in the user logging chains keeps the rules, logs nothing
        return [f"-I {prefix}-user-logging-{d} -j RETURN" for d in DIRECTIONS]
    medium, high = LOGLEVELS["medium"], LOGLEVELS["high"]
    limit = list(_LIMIT) if rank < high else []
    rules = []
    for direction in DIRECTIONS:
        if policies[direction] != "allow":
            rules.append(["-A", f"{prefix}-after-logging-{direction}", "-j", "LOG",
                          "--log-prefix", "[UFW BLOCK] ", *limit])
        elif rank >= medium:
            rules.append(["-A", f"{prefix}-after-logging-{direction}", "-j", "LOG",
                          "--log-prefix", "[UFW ALLOW] ", *limit])
    deny = f"{prefix}-logging-deny"
    rules.append(["-I", deny, "-m", "conntrack", "--ctstate", "INVALID", "-j", "RETURN", *limit]
                 if rank < medium else
                 ["-A", deny, "-m", "conntrack", "--ctstate", "INVALID", "-j", "LOG",
                  "--log-prefix", "[UFW AUDIT INVALID] ", *limit])
    rules.append(["-A", deny, "-j", "LOG", "--log-prefix", "[UFW BLOCK] ", *limit])
    rules.append(["-A", f"{prefix}-logging-allow", "-j", "LOG", "--log-prefix", "[UFW ALLOW] ",
                  *limit])
    if rank >= medium:
        # the audit logs every packet at full, with a limit at high, new ones only at medium
        audit = [] if rank >= LOGLEVELS["full"] else list(_LIMIT) if rank >= high else [
            "-m", "conntrack", "--ctstate", "NEW", *_LIMIT]
        rules += [["-I", f"{prefix}-before-logging-{d}", "-j", "LOG", "--log-prefix",
                   "[UFW AUDIT] ", *audit] for d in DIRECTIONS]
    # ufw joins the arguments with spaces, then quotes the log prefixes in the text
    return [" ".join(rule).replace("[", '"[').replace("] ", '] "') for rule in rules]


def set_setting(text: str, key: str, value: str) -> str:
    """``text`` with the line of ``key`` replaced by ``KEY=value``, appended when missing, as
    ``ufw enable`` writes ``ENABLED=yes`` into ufw.conf.

        >>> set_setting("# on boot\\nENABLED=no\\n", "ENABLED", "yes")
        '# on boot\\nENABLED=yes\\n'
    """
    lines = text.splitlines(keepends=True)
    found = [index for index, line in enumerate(lines) if line.startswith(f"{key}=")]
    for index in found:
        lines[index] = f"{key}={value}\n"
    return "".join(lines) + ("" if found else f"{key}={value}\n")


def _edited(rules: list[Saved], add: Sequence[Rule], remove: Sequence[Rule], *,
            v6: bool) -> list[Saved]:
    """What ``ufw delete`` then ``ufw allow`` leave: a removal takes every rule with its match
    and action; an addition replaces the rules with its match in place, or comes last."""
    kept = [rule for rule in rules
            if not any(rule.rule.match == gone.match and rule.rule.action == gone.action
                       for gone in remove)]
    for rule in add:
        if rule.v6 != v6:
            continue
        if any(old.rule.match == rule.match for old in kept):
            kept = [to_saved(rule) if old.rule.match == rule.match else old for old in kept]
        else:
            kept.append(to_saved(rule))
    return kept


def _spelled(network: str) -> str:
    """A network as ufw writes it: a single host without its prefix."""
    parsed = ipaddress.ip_network(network, strict=False)
    return str(parsed.network_address) if parsed.prefixlen == parsed.max_prefixlen else network
