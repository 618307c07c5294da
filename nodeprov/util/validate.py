"""Validators for values that reach a node: each returns the clean value or raises ValueError
saying what would be valid. Anything that can never be valid for its field (shell metacharacters
in a host name, a port of 0) stops here, before any connection.

    >>> port("29500")
    29500
    >>> interface_name("eth0; reboot")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: 'eth0; reboot' is not an interface name (1-15 of A-Z a-z 0-9 _ . - : @, ...
"""

from __future__ import annotations

import ipaddress
import re
import socket
from collections.abc import Callable
from typing import Any

_HOSTNAME = re.compile(r"^(?=.{1,253}$)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
                       r"(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$")
_INVENTORY_NAME = re.compile(r"[A-Za-z0-9_.:@][A-Za-z0-9_.:@-]*")
_INTERFACE = re.compile(r"^[A-Za-z0-9_.:@][A-Za-z0-9_.:@-]{0,14}$")
_USER = re.compile(r"^[a-z_][a-z0-9_.-]{0,31}$")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_VERSION = re.compile(r"^[0-9]+(\.[0-9]+){1,2}$")  # [0-9]: "\d" and isdigit take "٢" too
# Control characters (C0 but tab, DEL, C1: terminal escapes) and everything str.splitlines
# breaks a line at: in a file line, a terminal or an argv they would end or rewrite it.
_UNSAFE_TEXT = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029]")


def matching(pattern: re.Pattern[str], what: str) -> Callable[[Any], str]:
    """A validator accepting text that matches ``pattern``; the error says what would be valid."""
    def check(value: Any) -> str:
        text = str(value)
        if not pattern.fullmatch(text):  # fullmatch: "$" alone would let "eth0\n" through
            raise ValueError(f"{text!r} is not {what}")
        return text
    return check


_hostname_shape = matching(_HOSTNAME, "a valid host name (ASCII letters, digits, '-' and '.', "
                           "labels not starting or ending with '-')")
# a label inet_aton (and so getaddrinfo) reads as a number: "012" is octal 10, "0x0a" hex 10
_NUMBER = re.compile(r"[0-9]+|0[xX][0-9a-fA-F]*")


def hostname(value: Any) -> str:
    """A host name as RFC 1123 has it, ASCII letters, digits and '-' in dot-separated labels,
    and never one a resolver reads as an IPv4 address (its last label a number).

    >>> hostname("node1.cluster.local")
    'node1.cluster.local'
    >>> hostname("012.99.0.011")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: '012.99.0.011' is no host name, and resolvers read it as the address 10.99.0.9 ...
    """
    text = _hostname_shape(value)
    if _NUMBER.fullmatch(text.rsplit(".", 1)[-1]):
        raise ValueError(numeric_name(text))
    return text


def numeric_name(text: str) -> str:
    """Why ``text``, a name whose last label is a number, is neither a name nor an address."""
    try:
        read = socket.inet_ntoa(socket.inet_aton(text))
    except OSError:
        return (f"{text!r} is no host name: its last label is a number, which resolvers may "
                "read as an address")
    return (f"{text!r} is no host name, and resolvers read it as the address {read} (a leading "
            "0 is octal, 0x hex): write an IPv4 address as four decimal numbers without leading "
            "zeros")


def inventory_name(value: Any) -> str:
    """A host's name in the inventory: ASCII letters, digits and ``_ . : @ -``, not starting
    with '-' (it reaches /etc/hosts, logs and terminals), and if it is an address, a canonical
    one.

    >>> inventory_name("gpu_01")
    'gpu_01'
    """
    text = str(value)
    if not _INVENTORY_NAME.fullmatch(text):
        raise ValueError(f"{text!r} is not a valid host name for nodeprov (it reaches /etc/hosts "
                         "and logs); use ASCII letters, digits and _ . : @ - (not starting with "
                         "-)")
    if _NUMBER.fullmatch(text.rsplit(".", 1)[-1]):
        try:
            _parsed_ip(text)  # leading zeros refused: "012.99.0.011" is not read as octal here
        except ValueError:
            raise ValueError(numeric_name(text)) from None
    return text
def group_name(value: Any) -> str:
    """A group's name: any text Ansible takes (it only warns at ``-`` or a space), but no
    control, line-breaking or bidirectional-override character, which a terminal would act on
    or show reordered (``--graph``, ``--list``, errors).

    >>> group_name("gpu-rack1")
    'gpu-rack1'
    >>> group_name("gr\u202eoup")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: 'gr\\u202eoup' has a control or bidirectional character; ...
    """
    text = str(value)
    if _NOT_SHOWN.search(text) or _UNSAFE_TEXT.search(text):
        raise ValueError(f"'{printable(text)}' has a control or bidirectional character; use "
                         "printable text (Ansible advises ASCII letters, digits and _)")
    return text


interface_name = matching(_INTERFACE, "an interface name (1-15 of A-Z a-z 0-9 _ . - : @, not "
                           "starting with -)")
user_name = matching(_USER, "a user name (lowercase letters, digits, _ . -)")
env_name = matching(_ENV_NAME, "an environment variable name ([A-Za-z_][A-Za-z0-9_]*)")


def _parsed_ip(text: str) -> str:
    """``text`` as a canonical IP address; an IPv6 zone id only as ``%`` and an interface
    name (Python's ipaddress takes any text after ``%``, newlines and ``$()`` too)."""
    if not text.isascii():
        raise ValueError(text)
    parsed = ipaddress.ip_address(text)
    if isinstance(parsed, ipaddress.IPv6Address) and parsed.scope_id is not None:
        interface_name(parsed.scope_id)
    return str(parsed)


def address(value: Any) -> str:
    """An IP address or a host name (where SSH connects).

    >>> address("fe80::1%eth0")
    'fe80::1%eth0'
    >>> address("fd00::11%x\\n6.6.6.6 pypi.org")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: 'fd00::11%x\\n6.6.6.6 pypi.org' is not an IP address or host name ...
    """
    text = str(value)
    try:
        return _parsed_ip(text)
    except ValueError:
        pass
    if _NUMBER.fullmatch(text.rsplit(".", 1)[-1]):
        raise ValueError(numeric_name(text))
    try:
        return hostname(text)
    except ValueError:
        raise ValueError(f"{text!r} is not an IP address or host name (an IPv6 zone id is "
                         "'%' and an interface name)") from None


def ip_address(value: Any) -> str:
    try:
        return _parsed_ip(str(value))
    except ValueError:
        raise ValueError(f"{value!r} is not an IP address (e.g. 10.0.0.11; an IPv6 zone id is "
                         "'%' and an interface name)") from None


def cidr(value: Any) -> str:
    text = str(value)
    if not text.isascii() or "%" in text:
        raise ValueError(f"{text!r} is not a CIDR; e.g. 10.0.0.0/24")
    if "/" not in text:
        raise ValueError(f"{text!r} is not a CIDR; write a network with its prefix, e.g. "
                         "10.0.0.0/24")
    try:
        return str(ipaddress.ip_network(text, strict=True))
    except ValueError as error:
        raise ValueError(f"{text!r} is not a valid CIDR ({error}); e.g. 10.0.0.0/24") from None


def port(value: Any) -> int:
    if isinstance(value, bool) or not re.fullmatch(r"[0-9]{1,5}", str(value)):
        raise ValueError(f"{value!r} is not a port; expected an integer from 1 to 65535")
    number = int(str(value))
    if not 1 <= number <= 65535:
        raise ValueError(f"{number} is not a port; expected an integer from 1 to 65535")
    return number


version = matching(_VERSION, "a version; expected e.g. 2.9.1 or 3.10")


def positive_int(value: Any) -> int:
    """An integer of ASCII digits, at least 1 (``"١٠"`` is no number here, though int() reads
    it)."""
    if isinstance(value, bool) or not re.fullmatch(r"[0-9]{1,18}", str(value)) or (
            int(str(value)) < 1):
        raise ValueError(f"{value!r} is not a positive integer")
    return int(str(value))


def absolute_path(value: Any) -> str:
    """An absolute path in canonical form: no ``.``, ``..`` or empty parts (``/.`` is ``/``
    in disguise), no control characters or line separators.

    >>> absolute_path("/opt/venv/")
    '/opt/venv'
    """
    text = str(value)
    parts = text.rstrip("/").split("/")[1:]
    if (not text.startswith("/") or _UNSAFE_TEXT.search(text)
            or any(part in ("", ".", "..") for part in parts)):
        raise ValueError(f"{text!r} is not an absolute path without '.', '..', '//' or control "
                         "characters")
    return text.rstrip("/") or "/"


def under(root: str, *parts: str) -> str:
    """``root/parts...``, each part one plain name: proven to stay under ``root``.

    >>> under("/cache", "x86_64", "cp311")
    '/cache/x86_64/cp311'
    >>> under("/cache", "x86_64/../../root")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: 'x86_64/../../root' is not a plain file name ...
    """
    for part in parts:
        if part in ("", ".", "..") or "/" in part or _UNSAFE_TEXT.search(part):
            raise ValueError(f"{part!r} is not a plain file name (no '/', '.', '..' or control "
                             "characters)")
    return "/".join((root.rstrip("/"), *parts))


# what a terminal would act on or a reader misread: controls but tab and newline, C1 (CSI
# \x9b), line separators, bidirectional marks, embeddings, overrides and isolates (a regular
# expression's character class, for every check of text that is shown)
NOT_SHOWN_CHARS = ("\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e"
                   "\u2066-\u2069")
_NOT_SHOWN = re.compile(f"[{NOT_SHOWN_CHARS}]")


def printable(text: str) -> str:
    """``text`` for a terminal: each control character spelled as its escape, so a node's
    text cannot move the cursor, retitle the window or hide what follows.

    >>> printable("Debian\\x1b]0;owned\\x07 12")
    'Debian\\\\x1b]0;owned\\\\x07 12'
    """
    return _NOT_SHOWN.sub(lambda found: repr(found[0])[1:-1], text)


def text_value(value: Any) -> str:
    """Free-form text that becomes data on a node (quoted there): one line, no option-like start."""
    text = str(value)
    if _UNSAFE_TEXT.search(text):
        raise ValueError(f"{text!r} contains a newline or control character; use one line")
    return text


def option_safe(value: Any) -> str:
    """Text handed to a program as an argument: may not start with '-' (it would be an option)."""
    text = text_value(value)
    if not text or text.startswith("-"):
        raise ValueError(f"{text!r} may not be empty or start with '-'")
    return text


def boolean(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    lowered = str(value).lower()
    if lowered in ("true", "yes", "on", "1"):
        return True
    if lowered in ("false", "no", "off", "0"):
        return False
    raise ValueError(f"{value!r} is not a boolean; use true or false")
