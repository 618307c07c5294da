"""A node's facts are the node's word, not ours: each is checked against a strict pattern
before this machine uses it (a wheelhouse path is built from the arch and Python version, a
table shows the OS name). A fact out of pattern fails the node's facts with its name.

    >>> checked_text("arch", "x86_64/../../root", ARCH)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: the node's arch 'x86_64/../../root' is not valid here (expected up to 16 of ...)
"""

from __future__ import annotations

import ipaddress
import re
from typing import NamedTuple

from nodeprov.util import validate


class Pattern(NamedTuple):
    regex: re.Pattern[str]
    expected: str


ARCH = Pattern(re.compile(r"[a-z0-9_]{0,16}"), "up to 16 of a-z 0-9 _")
PYTHON_VERSION = Pattern(re.compile(r"[0-9]{1,2}\.[0-9]{1,3}\.[0-9]{1,3}(?:(?:a|b|rc)[0-9]{1,3})?"
                                    r"\+?"), "a Python version such as 3.11.2")
PYTHON_PATH = Pattern(re.compile(r"/[A-Za-z0-9_.+/-]{1,255}"),
                      "an absolute path of A-Z a-z 0-9 _ . + / -")
VERSIONED_PYTHON = Pattern(re.compile(r"/[A-Za-z0-9_./-]{0,200}/python3\.[0-9]{1,2}"),
                           "an absolute path ending in python3.X")
OS_WORD = Pattern(re.compile(r"[A-Za-z0-9._~+-]{0,64}"), "up to 64 of A-Z a-z 0-9 . _ ~ + -")
KERNEL = Pattern(re.compile(r"[A-Za-z0-9._~+-]{0,128}"), "up to 128 of A-Z a-z 0-9 . _ ~ + -")
TOOL = Pattern(re.compile(r"[a-z0-9-]{1,32}"), "a program name")
PORT = Pattern(re.compile(r"[0-9]{1,5}"), "a port number")
# free text (PRETTY_NAME): any printable characters, but the bidirectional controls, which
# reorder what a terminal, the HTML report or a table cell shows after them
OS_NAME = Pattern(re.compile(f"[^\t\n{validate.NOT_SHOWN_CHARS}]{{0,128}}"),
                  "up to 128 printable characters, no bidirectional controls")


def checked_text(fact: str, value: str, pattern: Pattern) -> str:
    if not pattern.regex.fullmatch(value):
        raise ValueError(f"the node's {fact} {value[:80]!r} is not valid here (expected "
                         f"{pattern.expected})")
    return value


def checked_name(fact: str, value: str) -> str:
    """A host name from the node (hostname, fqdn); empty when the node gave none."""
    if len(value) > 253:  # the error would quote all of it
        raise ValueError(f"the node's {fact} {value[:80]!r}... is {len(value)} characters; a "
                         "host name has at most 253")
    try:
        return validate.hostname(value) if value else value
    except ValueError as error:
        raise ValueError(f"the node's {fact}: {error}") from None


def checked_interface(name: str, addresses: tuple[str, ...]) -> None:
    try:
        validate.interface_name(name)
        for address in addresses:
            if not address.isascii() or "%" in address:
                raise ValueError(f"{address!r} is not an interface address")
            ipaddress.ip_interface(address)
    except ValueError as error:
        raise ValueError(f"the node's interface {name[:40]!r}: {error}") from None


def checked_answers(text: str, name: str) -> tuple[str, ...]:
    """The addresses of ``NAME ADDRESS`` lines (what DNS answered for ``name``), each once;
    a line for another name, or of anything else, is left out (the node's words).

    >>> checked_answers("gpu2 10.9.9.9\\ngpu2 10.9.9.9\\nx 1.2.3.4\\ngpu2 oops\\n", "gpu2")
    ('10.9.9.9',)
    """
    found = []
    for line in text.splitlines():
        said, _, address = line.partition(" ")
        try:
            if said == name:
                found.append(str(ipaddress.ip_address(address)))
        except ValueError:
            continue
    return tuple(dict.fromkeys(found))
