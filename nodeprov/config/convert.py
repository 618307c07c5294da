"""Ansible's conversions of a setting's text to its type, quirks included (the oracle is
``ansible-config dump``): booleans are lenient, integers go through Decimal, paths expand
``$VARS`` and ``~`` and are relative to the ansible.cfg that set them, list items are unquoted,
and a whole value read from an INI file loses one pair of matching quotes *after* conversion.

    >>> convert("Yes", "bool", Path("/"), {}, from_ini=True)
    True
    >>> convert("1e1", "int", Path("/"), {}, from_ini=True)
    10
    >>> convert("a, 'b'", "list", Path("/"), {}, from_ini=True)
    ['a', 'b']
    >>> convert("~/id", "path", Path("/repo"), {"HOME": "/home/me"}, from_ini=True)
    '/home/me/id'
    >>> convert("'ubuntu'", None, Path("/"), {}, from_ini=True)
    'ubuntu'
"""

from __future__ import annotations

import decimal
import os
import pwd
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from nodeprov.errors import EXIT_BAD_INPUT, NodeprovError

_VARIABLE = re.compile(r"\$(\w+|\{[^}]*\})", re.ASCII)  # as os.path.expandvars reads them

TRUE_WORDS = frozenset({"y", "yes", "on", "1", "true", "t"})


class BadValue(NodeprovError, ValueError):
    """A setting's text that its type cannot take (settings turns it into an InputError)."""

    exit_code = EXIT_BAD_INPUT


def unquote(text: str) -> str:
    """``text`` without one pair of matching quotes around it (not when the closing one is
    escaped), as Ansible's ``unquote``."""
    quoted = len(text) > 1 and text[0] == text[-1] and text[0] in "\"'" and text[-2] != "\\"
    return text[1:-1] if quoted else text


def boolean(text: str) -> bool:
    """Ansible's non-strict boolean: true words are true, anything else is false."""
    return text.lower().strip() in TRUE_WORDS


def integer(text: str) -> int:
    try:
        number = decimal.Decimal(text)
        whole = int(number)
    except (decimal.DecimalException, ValueError, OverflowError):
        raise BadValue(f"{text!r} is not a whole number") from None
    if number != whole:
        raise BadValue(f"{text!r} is not a whole number")
    return whole


def expand(text: str, environ: Mapping[str, str]) -> str:
    """``$VARS`` of ``environ`` and a leading ``~`` expanded, as os.path.expandvars and
    expanduser do with the process's environment.

    >>> expand("~/k/$U/${U}/$NONE", {"HOME": "/h", "U": "u"})
    '/h/k/u/u/$NONE'
    """
    def variable(match: re.Match[str]) -> str:
        name = match[1].strip("{}")
        return environ.get(name, match[0])

    text = _VARIABLE.sub(variable, text)
    if not text.startswith("~"):
        return text
    user, slash, rest = text[1:].partition("/")
    try:
        home = environ["HOME"] if not user and "HOME" in environ else (
            pwd.getpwnam(user).pw_dir if user else pwd.getpwuid(os.getuid()).pw_dir)
    except KeyError:
        return text
    return home.rstrip("/") + slash + rest if home != "/" else "/" + rest


def path(text: str, base: Path, environ: Mapping[str, str]) -> str:
    """``~`` and ``$VARS`` expanded, relative to ``base``, normalised; symbolic links are
    kept (Ansible's ``unfrackpath(follow=False)``)."""
    expanded = expand(text.replace("{{CWD}}", os.getcwd()), environ)
    return os.path.normpath(os.path.join(base, expanded))


def convert(text: str, kind: str | None, base: Path, environ: Mapping[str, str], *,
            from_ini: bool) -> Any:
    """``text`` as a value of ``kind`` (bool, int, path, pathlist, list; None: as written).
    ``base``: the folder of the ansible.cfg it came from (paths from the environment are
    relative to the current folder); ``environ`` expands ``$VARS`` and ``~``."""
    value: Any
    if kind == "bool":
        value = boolean(text)
    elif kind == "int":
        value = integer(text)
    elif kind == "path":
        value = path(text, base, environ)
    elif kind == "pathlist":
        value = [path(item.strip(), base, environ) for item in text.split(",")]
    elif kind == "list":
        value = [unquote(item.strip()) for item in text.split(",")]
    else:
        value = text
    return unquote(value) if from_ini and isinstance(value, str) else value
