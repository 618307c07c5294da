"""Ansible host patterns, for ``--limit`` and a play's ``hosts:``.

    gpu:cpu   gpu,cpu      union              gpu:&rack1   in both
    gpu:!node3             gpu without node3  !node3       every host but node3
    ~node[0-9]+            a regex            gpu[0]  gpu[0:2]  gpu[-1]   by position
    node*                  a glob             @hosts.txt   (--limit only) one pattern a line

    >>> split_patterns("gpu:&rack1:!node3")
    ['gpu', '&rack1', '!node3']
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Sequence
from pathlib import Path

from nodeprov.errors import InputError
from nodeprov.inventory.data import InventoryData
from nodeprov.inventory.ranges import split_port
from nodeprov.util.validate import printable
from nodeprov.util.yamlfile import read_text

_SUBSCRIPT = re.compile(r"^(.+)\[(?:(-?[0-9]+)|([0-9]+)([:-])([0-9]+)?)\]$")
_TERMS = re.compile(r"(?:[^\s:\[\]]|\[[^\]]*\])+")


def split_patterns(pattern: str | Sequence[str]) -> list[str]:
    if not isinstance(pattern, str):
        return [term for part in pattern for term in split_patterns(part)]
    pattern = pattern.strip()
    if "," in pattern:
        terms = pattern.split(",")
    elif split_port(pattern)[1] is not None:
        terms = [pattern]  # host:port names one host
    else:
        terms = _TERMS.findall(pattern)
    return [term.strip() for term in terms if term.strip()]


def select(data: InventoryData, pattern: str | Sequence[str], *,
           limit_files: bool = False) -> list[str]:
    """Host names matching ``pattern`` in Ansible's order: plain terms first (union), then
    ``&`` (intersection), then ``!`` (exclusion); a pattern of only exclusions starts from
    ``all``. InputError names a term that matches nothing; excluding a group that has no
    hosts (``all:!ungrouped``) excludes nothing, as in Ansible."""
    given = pattern if isinstance(pattern, str) else ",".join(pattern)
    where = "--limit" if limit_files else ""
    terms = split_patterns(pattern)
    if limit_files:
        terms = [line for term in terms for line in _from_file(term)]
    plain = [t for t in terms if t[0] not in "&!"]
    ordered = (plain or ["all"]) + [t for t in terms if t[0] == "&"] + [
        t for t in terms if t[0] == "!"]
    chosen: list[str] = []
    for term in ordered:
        try:
            matched, groups = ([term], []) if term in data.hosts else _match_one(
                data, term.lstrip("&!"))
        except InputError as error:
            raise InputError(_within(given, term) + error.message, field=where) from None
        if not matched and not (groups and term[0] == "!"):
            named = (f"its part '{printable(term)}'" if _within(given, term) else
                     f"pattern '{printable(term)}'")
            if groups:
                raise InputError(f"{_within(given, term)}{named} matches only groups without "
                                 f"hosts ({', '.join(map(printable, groups))}); add hosts to "
                                 "them or name another group", field=where)
            raise InputError(f"{_within(given, term)}{named} matches no host or group; groups: "
                             f"{', '.join(data.groups)}; hosts: {', '.join(list(data.hosts)[:20])}"
                             f"{' ...' if len(data.hosts) > 20 else ''}", field=where)
        if term[0] == "!":
            chosen = [name for name in chosen if name not in set(matched)]
        elif term[0] == "&":
            chosen = [name for name in chosen if name in set(matched)]
        else:
            chosen += [name for name in matched if name not in set(chosen)]
    return chosen


def _within(given: str, term: str) -> str:
    """``pattern 'GIVEN': `` where ``term`` is only a part of what the user gave, so a message
    names the whole of it (escaped: it may hold terminal escapes), not only the part split off.

    >>> _within("gpu:\\x1b[31m", "\\x1b")
    "pattern 'gpu:\\\\x1b[31m': "
    """
    return "" if term == given.strip() else f"pattern '{printable(given)}': "


def _from_file(term: str) -> list[str]:
    if not term.startswith("@"):
        return [term]
    try:  # bounded and decoded: /dev/zero or a binary file is one line, not a hang or a traceback
        lines = read_text(Path(term[1:]), "limit").splitlines()
    except InputError as error:
        raise InputError(error.message, source=error.source, line=error.line,
                         field="--limit") from None
    return [line.strip() for line in lines if line.strip()]


def _match_one(data: InventoryData, term: str) -> tuple[list[str], list[str]]:
    """The hosts ``term`` names, and the groups it matched (which may have none)."""
    expression, subscript = term, None
    if not term.startswith("~"):
        found = _SUBSCRIPT.match(term)
        if found:
            expression = found[1]
            start = int(found[2] if found[2] is not None else found[3])
            end = None if found[2] is not None else int(found[5]) if found[5] else -1
            subscript = (start, end)
    try:
        regex = re.compile(expression[1:] if expression.startswith("~")
                           else fnmatch.translate(expression))
    except re.error as error:
        raise InputError(f"invalid host pattern '{printable(term)}': {error}") from None
    groups = [name for name in data.groups if regex.match(name)]
    hosts: dict[str, None] = {}
    for group in groups:
        hosts.update(dict.fromkeys(data.group_hosts(group)))
    if not groups or expression.startswith("~") or any(c in expression for c in ".?*["):
        hosts.update(dict.fromkeys(name for name in data.hosts if regex.match(name)))
    matched = list(hosts)
    if subscript is None:
        return matched, groups
    start, end = subscript
    if end is None:
        if not -len(matched) <= start < len(matched):
            raise InputError(f"'{printable(term)}': position {start} is outside "
                             f"'{printable(expression)}', which has {len(matched)} hosts "
                             f"(0 to {len(matched) - 1})")
        return [matched[start]], groups
    return matched[start:(len(matched) if end == -1 else end + 1)], groups
