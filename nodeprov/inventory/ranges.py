"""Host names as Ansible reads them: ``host:port`` and ranges ``[01:20]``, ``[a:f]``, ``[1:9:2]``.

    >>> expand_host_pattern("gpu[01:03]:2222")
    (['gpu01', 'gpu02', 'gpu03'], 2222)
    >>> expand_host_pattern("db-[a:c]")[0]
    ['db-a', 'db-b', 'db-c']
"""

from __future__ import annotations

import re
import string

MAX_EXPANDED = 100_000  # hosts one pattern may expand to: more is a typo, not a cluster

_BRACKETED_PORT = re.compile(r"^\[(.+)\]:(\d+)$")  # [2001:db8::1]:2222
_HOST_PORT = re.compile(r"^((?:[\w.-]|\[[\w:]+\])+):(\d+)$")  # name, IPv4 or range, then :port


def split_port(pattern: str) -> tuple[str, int | None]:
    """``name:port`` -> (name, port); names without one (and bare IPv6) come back whole."""
    for regex in (_BRACKETED_PORT, _HOST_PORT):
        match = regex.match(pattern)
        if match:
            return match[1], int(match[2])
    return pattern, None


def expand_host_pattern(pattern: str) -> tuple[list[str], int | None]:
    """The host names and the port a hosts: entry or INI host line names; ValueError says what
    is wrong with a range."""
    if pattern.strip().endswith(":"):
        raise ValueError(f"invalid host pattern {pattern!r}: it ends in ':' (write name:port)")
    name, port = split_port(pattern)
    names = expand_ranges(name) if "[" in name else [name]
    return names, port


def expand_ranges(name: str) -> list[str]:
    """Every name a range pattern stands for, in order (ranges may repeat: ``r[1:2]n[1:2]``)."""
    pending, done = [name], []
    while pending:
        current = pending.pop(0)
        if "[" not in current:
            done.append(current)
        else:
            pending[:0] = _expand_first(current)
        if len(done) + len(pending) > MAX_EXPANDED:
            raise ValueError(f"host range {name!r} expands to more than {MAX_EXPANDED} hosts")
    return done


def _expand_first(name: str) -> list[str]:
    head, _, rest = name.partition("[")
    body, closed, tail = rest.partition("]")
    if not closed:
        raise ValueError(f"host range in {name!r} has no closing ']'")
    bounds = body.split(":")
    if len(bounds) not in (2, 3):
        raise ValueError(f"host range [{body}] must be [begin:end] or [begin:end:step]")
    begin, end = bounds[0] or "0", bounds[1]
    step_text = bounds[2] if len(bounds) == 3 else "1"
    if not end:
        raise ValueError(f"host range [{body}] must give an end value")
    if not step_text.isdigit() or int(step_text) < 1:
        raise ValueError(f"host range [{body}]: the step must be a positive integer")
    step = int(step_text)
    if begin in string.ascii_letters and end in string.ascii_letters:
        first, last = string.ascii_letters.index(begin), string.ascii_letters.index(end)
        if first > last:
            raise ValueError(f"host range [{body}] must have begin <= end")
        return [f"{head}{letter}{tail}" for letter in string.ascii_letters[first:last + 1:step]]
    if not (begin.isdigit() and end.isdigit()):
        raise ValueError(f"host range [{body}] must be numbers (01:20) or letters (a:f)")
    width = len(begin) if begin.startswith("0") and len(begin) > 1 else 0
    if width and len(end) != width:
        raise ValueError(f"host range [{body}] must give begin and end with the same digits")
    count = (int(end) - int(begin)) // step + 1
    if count > MAX_EXPANDED:
        raise ValueError(f"host range [{body}] expands to more than {MAX_EXPANDED} hosts")
    return [f"{head}{str(number).zfill(width)}{tail}"
            for number in range(int(begin), int(end) + 1, step)]
