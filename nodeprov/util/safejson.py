"""JSON from outside this process (a node's output, a report file) read within limits on its
size, nesting and numbers, so a hostile one is one ValueError, never a RecursionError, an
OverflowError further on, or memory gone.

    >>> loads('{"ok": true, "took": 1.5}', what="job result")
    {'ok': True, 'took': 1.5}
    >>> loads("[" * 100 + "]" * 100, what="job result")
    Traceback (most recent call last):
    ...
    ValueError: job result: nested more than 64 deep
    >>> loads('{"took": 1e308}', what="job result")
    Traceback (most recent call last):
    ...
    ValueError: job result: the number 1e308 is beyond 2**53, more than any value nodeprov reads
"""

from __future__ import annotations

import json
import re
from typing import Any

MAX_DEPTH = 64  # a report nests 8 deep, a job result 4
MAX_CHARS = 16 << 20
# Past 2**53 a double is no longer exact and a sum of a few overflows; no count, size, time or
# rate nodeprov reads comes near it
MAX_MAGNITUDE = 2.0 ** 53
_MAX_DIGITS = 16  # of an integer: 2**53 has 16
# A JSON string (skipped whole: its brackets are text) or a bracket
_TOKENS = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]')


def loads(text: str, *, what: str, max_chars: int = MAX_CHARS) -> Any:
    """``text`` as JSON, or ValueError starting with ``what``: over ``max_chars``, nested more
    than MAX_DEPTH, NaN or Infinity, a number beyond MAX_MAGNITUDE, or no JSON at all
    (json.JSONDecodeError, which keeps the line and column)."""
    if len(text) > max_chars:
        raise ValueError(f"{what}: {len(text)} characters, more than the {max_chars} nodeprov "
                         "reads")
    _check_depth(text, what)

    def number(literal: str) -> float:
        value = float(literal)
        if not abs(value) <= MAX_MAGNITUDE:  # NaN fails it too
            raise ValueError(f"{what}: the number {literal[:24]} is beyond 2**53, more than "
                             "any value nodeprov reads")
        return value

    def integer(literal: str) -> int:
        if len(literal.lstrip("-")) > _MAX_DIGITS:
            raise ValueError(f"{what}: a number of {len(literal.lstrip('-'))} digits, more "
                             "than any value nodeprov reads")
        value = int(literal)
        number(literal)
        return value

    def constant(name: str) -> None:
        raise ValueError(f"{what}: {name} is no JSON number")

    return json.loads(text, parse_float=number, parse_int=integer, parse_constant=constant)


def _check_depth(text: str, what: str) -> None:
    """ValueError when brackets outside strings nest more than MAX_DEPTH (Python's json reads
    them recursively, and so does much that handles the value after)."""
    level = 0
    for token in _TOKENS.finditer(text):
        bracket = token.group()
        if bracket in "[{":
            level += 1
            if level > MAX_DEPTH:
                raise ValueError(f"{what}: nested more than {MAX_DEPTH} deep")
        elif bracket in "]}":
            level -= 1



def loads_object(text: str, *, what: str, max_chars: int = MAX_CHARS) -> dict[str, Any]:
    """``loads`` of a text that must hold a JSON object.

    >>> loads_object("[1]", what="the launcher's answer")
    Traceback (most recent call last):
    ...
    ValueError: the launcher's answer: a JSON list, not an object
    """
    value = loads(text, what=what, max_chars=max_chars)
    if not isinstance(value, dict):
        raise ValueError(f"{what}: a JSON {type(value).__name__}, not an object")
    return value
