"""Ansible's INI inventory format, parsed as Ansible's ``ini`` plugin does.

    gpu[01:04] ansible_user=ubuntu      # a host line: a name or range, then key=value vars
    [gpu:vars]
    rdzv_port=29600                      # a group var line: key=value (the rest of the line)
    [cluster:children]
    gpu

Values go through Python's ``ast.literal_eval`` as Ansible's do: ``1`` is an int, ``True`` a
bool, ``[1, 2]`` a list, anything else the text (on host lines, after shell-like unquoting);
what no variable can hold becomes what Ansible makes of it (a tuple or set a list, ``1j`` and
``...`` text, ``b'x'`` text never templated).
"""

from __future__ import annotations

import ast
import re
import shlex
import warnings
from typing import Any

from nodeprov.errors import InputError
from nodeprov.inventory.data import InventoryData, Origin
from nodeprov.inventory.ranges import expand_host_pattern
from nodeprov.util.tagged import Unsafe

_SECTION = re.compile(r"^\[([^:\]\s]+)(?::(\w+))?\]\s*(?:#.*)?$")
_GROUP_NAME = re.compile(r"^([^:\]\s]+)\s*(?:#.*)?$")
STATES = ("hosts", "children", "vars")
_WORD = re.compile(r"[A-Za-z_][\w.-]*")  # literal_eval would refuse it: it stays text
_NEEDS_SHLEX = re.compile(r"['\"\\#]")
_ASCII_SPACE = re.compile(r"[ \t\r\n]+")


def parse_value(text: str) -> Any:
    """A value as Ansible's INI reader types it; ValueError for a mapping key no variable can
    hold (a tuple or bytes: Ansible stops with a traceback there).

        >>> parse_value("29600"), parse_value("True"), parse_value("3.10"), parse_value("x y")
        (29600, True, 3.1, 'x y')
    """
    if text.isascii() and text.isdigit() and (text[0] != "0" or text == "0"):
        return int(text)  # the common cases answered without compiling (a 1,000-host file)
    if _WORD.fullmatch(text) and text not in ("True", "False", "None"):
        return text
    if len(text) > 10_000:  # literal_eval of huge nested text can exhaust the parser
        return text
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "invalid escape sequence" and the like
            literal = ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return text
    return _coerced(literal)


def _coerced(value: Any) -> Any:
    """A literal as a variable value, as Ansible's INI reader converts it.

        >>> _coerced((1, {2}, b"{{x}}", ..., 1j))
        [1, [2], Unsafe('{{x}}'), '...', '1j']
    """
    if isinstance(value, bytes):  # Ansible decodes it, and leaves it untrusted as a template
        return Unsafe(value.decode("utf-8", "surrogateescape"))
    if value is ...:
        return "..."
    if isinstance(value, complex):
        return str(value)
    if isinstance(value, (list, tuple, set, frozenset)):
        return [_coerced(item) for item in value]
    if isinstance(value, dict):
        for key in value:
            if not isinstance(key, (str, int, float, bool)) and key is not None:
                raise ValueError(f"a mapping key must be text, a number, True, False or None, "
                                 f"not {key!r}; write the key as text")
        return {key: _coerced(item) for key, item in value.items()}
    return value


def _typed(text: str, origin: Origin, field: str) -> Any:
    try:
        return parse_value(text)
    except ValueError as error:
        raise InputError(str(error), source=origin.source, line=origin.line,
                         field=field) from None


def parse_ini(text: str, source: str, data: InventoryData) -> None:
    """Fill ``data`` from INI ``text``; InputError names the line and what would be valid."""
    if text.startswith("\ufeff"):  # Ansible reads it into the first name, unseen
        raise InputError("the file starts with a byte-order mark (U+FEFF, as Windows editors "
                         "write); save it as UTF-8 without BOM", source=source, line=1)
    group, state = "ungrouped", "hosts"
    # groups named in [x:children] or [x:vars] before their own section, checked at the end
    pending: dict[str, tuple[str, int, list[str]]] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        origin = Origin(source, number)
        section = _SECTION.match(line)
        if section:
            group, state = section[1], section[2] or "hosts"
            if state not in STATES:
                raise InputError(f"section [{group}:{state}] has an unknown kind {state!r}; "
                                 "valid: [group], [group:vars], [group:children]",
                                 source=source, line=number)
            if group not in data.groups and state == "vars" and group not in pending:
                pending[group] = ("vars", number, [])
            data.add_group(group, origin)
            if group in pending and state != "vars":
                _declare(group, pending, data, origin)
            continue
        if line.startswith("[") and line.endswith("]"):
            raise InputError(f"invalid section {line!r}: write [group], [group:vars] or "
                             "[group:children], without spaces", source=source, line=number)
        if state == "hosts":
            _host_line(line, group, origin, data)
        elif state == "vars":
            key, equals, value = line.partition("=")
            if not equals:
                raise InputError(f"expected key=value in [{group}:vars], got {line!r}",
                                 source=source, line=number)
            data.set_group_var(group, key.strip(), _typed(value.strip(), origin, key.strip()),
                               origin)
        else:
            found = _GROUP_NAME.match(line)
            if found is None:
                raise InputError(f"{line!r} is not a group name (no spaces, ':' or ']')",
                                 source=source, line=number)
            child = found[1]
            if child in data.groups:
                data.add_child(group, child, origin)
            elif child in pending:
                pending[child][2].append(group)
            else:
                pending[child] = ("children", number, [group])
    for name, (kind, number, parents) in pending.items():
        if kind == "vars":
            raise InputError(f"section [{name}:vars] is for a group that is never defined; "
                             f"add a [{name}] or [{name}:children] section",
                             source=source, line=number, field=name)
        raise InputError(f"section [{parents[-1]}:children] names group {name!r}, which is "
                         f"never defined; add a [{name}] section", source=source, line=number,
                         field=name)


def _declare(group: str, pending: dict[str, tuple[str, int, list[str]]], data: InventoryData,
             origin: Origin) -> None:
    """``group`` got its own section: hang it under the parents that named it earlier."""
    kind, _number, parents = pending.pop(group)
    for parent in parents if kind == "children" else ():
        data.add_child(parent, group, origin)
        if parent in pending and pending[parent][0] == "children":
            _declare(parent, pending, data, origin)


def _host_line(line: str, group: str, origin: Origin, data: InventoryData) -> None:
    try:
        # the fast path splits where shlex would, at ASCII whitespace: a pasted no-break space
        # stays inside a word, as in Ansible
        tokens = (shlex.split(line, comments=True) if _NEEDS_SHLEX.search(line)
                  else _ASCII_SPACE.split(line))
    except ValueError as error:
        raise InputError(f"cannot split the host line ({error}): close the quote, and keep a "
                         "host on one line (INI has no line continuation)",
                         source=origin.source, line=origin.line) from None
    try:
        names, port = expand_host_pattern(tokens[0])
    except ValueError as error:
        raise InputError(str(error), source=origin.source, line=origin.line) from None
    variables: dict[str, Any] = {}
    for token in tokens[1:]:
        key, equals, value = token.partition("=")
        if not equals:
            raise InputError(f"expected key=value after the host name, got {token!r}",
                             source=origin.source, line=origin.line, field=tokens[0])
        variables[key] = _typed(value, origin, f"{tokens[0]}: {key}")
    for name in names:
        data.add_host(name, group, origin, port)
        for key, value in variables.items():
            data.set_host_var(name, key, value, origin)
