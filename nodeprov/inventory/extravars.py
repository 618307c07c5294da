"""``-e/--extra-vars``: variables from the command line, above every inventory and play var, as
in Ansible::

    extra = parse_extra_vars(["rdzv_port=29600 ipv6=enabled", "@site-vars.yaml",
                              '{"pip_packages": ["numpy"]}'])

``KEY=VALUE`` words give strings (quote with shell rules: ``-e 'motd="a b"'``); ``@FILE`` (YAML
or JSON) and an inline ``{...}`` mapping give typed values (lists, mappings). Each value of
nodeprov's own variables is checked by its table (``inventory.variables``) before any connection;
a bad one is an InputError naming where it came from.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from nodeprov.errors import InputError
from nodeprov.inventory.variables import VARIABLES
from nodeprov.util.yamlfile import YamlMap, load_yaml_file, load_yaml_text

NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
OPTION = "-e/--extra-vars"
# passwords: never repeated in a command nodeprov prints (the sudo one is asked by -K instead)
BECOME_PASSWORDS = frozenset({"ansible_become_password", "ansible_become_pass",
                              "ansible_sudo_pass"})
PASSWORDS = BECOME_PASSWORDS | {"ansible_password", "ansible_ssh_pass", "ansible_ssh_password"}


def parse_extra_vars(values: Sequence[str], *, checked: bool = True) -> dict[str, Any]:
    """The extra vars, later values over earlier ones; InputError for a malformed one, or
    (``checked``) one whose value nodeprov's own variable of that name refuses."""
    found: dict[str, Any] = {}
    for value in values:
        if value.startswith("@"):
            found.update(_from_file(Path(value[1:]), checked))
        elif value.lstrip().startswith(("{", "[")):  # as Ansible: YAML, a mapping or not
            found.update(_from_inline(value, checked))
        else:
            found.update(_from_words(value, checked))
    return found


def repeatable(values: Sequence[str]) -> list[str]:
    """The -e options for a command nodeprov prints to be run again (a re-run hint, a
    repair): a password given as KEY=VALUE or in an inline mapping is left out, and ``-K``
    asks for a sudo password instead; ``@FILE`` stays as it is.

    >>> repeatable(["rdzv_port=29600 ansible_become_password=s3cret", "@vars.yaml"])
    ['-e', 'rdzv_port=29600', '-e', '@vars.yaml', '-K']
    """
    args: list[str] = []
    dropped: set[str] = set()
    for value in values:
        kept = value
        if not value.startswith("@") and value.lstrip().startswith("{"):
            data = _from_inline(value, checked=False)
            dropped |= PASSWORDS & set(data)
            kept = json.dumps({k: v for k, v in data.items() if k not in PASSWORDS}) if (
                PASSWORDS & set(data)) else value
        elif not value.startswith("@"):
            words = shlex.split(value)  # parse_extra_vars read it already: it splits
            names = {word.partition("=")[0] for word in words}
            dropped |= PASSWORDS & names
            kept = shlex.join(word for word in words
                              if word.partition("=")[0] not in PASSWORDS) if (
                PASSWORDS & names) else value
        if kept and kept != "{}":
            args += ["-e", kept]
    return args + (["-K"] if dropped & BECOME_PASSWORDS else [])


def _from_file(path: Path, checked: bool) -> dict[str, Any]:
    data = load_yaml_file(path)
    if not isinstance(data, YamlMap):
        raise InputError("extra vars file must be a mapping of variable: value", source=str(path),
                         line=1)
    for name, value in data.items():
        _check(name, value, checked, source=str(path), line=data.line_of(name))
    return dict(data)


def _from_inline(text: str, checked: bool) -> dict[str, Any]:
    data = load_yaml_text(text, OPTION)
    if not isinstance(data, YamlMap):
        raise InputError(f"{text!r} is not a mapping; give {{\"name\": value}}", field=OPTION)
    for name, value in data.items():
        _check(name, value, checked)
    return dict(data)


def _from_words(text: str, checked: bool) -> dict[str, str]:
    try:
        words = shlex.split(text)
    except ValueError as error:
        raise InputError(f"{text!r}: {error}", field=OPTION) from None
    found = {}
    for word in words:
        name, equals, value = word.partition("=")
        if not equals and word.startswith(("/", ".")):
            raise InputError(f"{word!r} is not KEY=VALUE; give a file as @{word}", field=OPTION)
        if not equals:
            raise InputError(f"{word!r} is not KEY=VALUE; give KEY=VALUE, @FILE (YAML or JSON) "
                             "or a {...} mapping", field=OPTION)
        _check(name, value, checked)
        found[name] = value
    return found


def _check(name: str, value: Any, checked: bool, *, source: str = "",
           line: int | None = None) -> None:
    field = name if source else f"{OPTION} {name}"
    if not NAME.fullmatch(name):
        raise InputError(f"{name!r} is not a variable name (letters, digits, _; not starting "
                         "with a digit)", source=source, line=line, field=field)
    spec = VARIABLES.get(name)
    if spec is None or not checked:
        return  # the user's own vars, for their templates
    try:
        spec.check(value)
    except ValueError as error:
        raise InputError(str(error), source=source, line=line, field=field) from None
