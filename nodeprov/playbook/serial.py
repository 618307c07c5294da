"""Rolling application: a play's ``serial:`` and ``max_fail_percentage:``, as Ansible defines
them (``PlaybookExecutor._get_serialized_batches``, the linear strategy's failure check)::

    split_batches([1, "50%"], ["n1", "n2", "n3", "n4", "n5"])  # [n1], [n2, n3], [n4, n5]
    stop_reason(batch_size=4, failed=2, unreachable=0, max_fail_percentage=49)  # "2 of 4 ..."

A batch size is a number of hosts or a percentage of the play's hosts (rounded down, at least
one); after the last size of a list, the last one repeats; 0 means all the hosts left.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

from nodeprov.errors import InputError
from nodeprov.util.yamlfile import YamlMap

Item = TypeVar("Item")
SerialValue = int | str  # 3, or "30%"
PERCENT = re.compile(r"(\d+)%")


def parse_serial(value: object) -> tuple[SerialValue, ...]:
    """``serial:`` as written: a number, "N%", or a list of them; ValueError says what is valid.

    >>> parse_serial("25%"), parse_serial([1, "2", "50%"])
    (('25%',), (1, 2, '50%'))
    """
    items = value if isinstance(value, list) else [value]
    parsed: list[SerialValue] = []
    for item in items:
        text = str(item).strip()
        if isinstance(item, bool) or not (text.isdigit() or PERCENT.fullmatch(text)):
            raise ValueError(f"{item!r} is not a batch size; give a number of hosts (2), a "
                             "percentage (\"30%\") or a list of them ([1, 5, \"50%\"])")
        parsed.append(text if text.endswith("%") else int(text))
    if not parsed:
        raise ValueError("an empty list; give a number of hosts, a percentage or a list of them")
    return tuple(parsed)


def parse_max_fail_percentage(value: object) -> float:
    """
    >>> parse_max_fail_percentage(30), parse_max_fail_percentage("49.5%")
    (30.0, 49.5)
    """
    text = str(value).strip().removesuffix("%")
    try:
        number = float(text)
    except ValueError:
        number = -1.0
    if isinstance(value, bool) or not 0 <= number <= 100:
        raise ValueError(f"{value!r} is not a percentage from 0 to 100")
    return number


def rolling(play: YamlMap, source: str, name: str) -> Mapping[str, Any]:
    """A play's serial: and max_fail_percentage:, parsed; InputError names the line."""
    found: dict[str, Any] = {}
    for key, parse in (("serial", parse_serial),
                       ("max_fail_percentage", parse_max_fail_percentage)):
        if play.get(key) is not None:
            try:
                found[key] = parse(play[key])
            except ValueError as error:
                raise InputError(str(error), source=source, line=play.line_of(key),
                                 field=f"play {name!r} {key}") from None
    return found


def batch_size(item: SerialValue, total: int) -> int:
    """Ansible's pct_to_int: a percentage of ``total`` rounded down, but at least 1.

    >>> batch_size("30%", 10), batch_size("10%", 5), batch_size(4, 10)
    (3, 1, 4)
    """
    if isinstance(item, str):
        return int(int(item[:-1]) / 100 * total) or 1
    return item


def split_batches(serial: Sequence[SerialValue], hosts: Sequence[Item]) -> list[list[Item]]:
    """The hosts in batches; no ``serial`` (or a size of 0) is one batch of the rest."""
    left, batches, index = list(hosts), [], 0
    while left:
        size = batch_size(serial[index], len(hosts)) if serial else 0
        if size <= 0:
            batches.append(left)
            break
        batches.append(left[:size])
        left = left[size:]
        index = min(index + 1, len(serial) - 1)
    return batches


def stop_reason(*, batch_size: int, failed: int, unreachable: int,
                max_fail_percentage: float | None) -> str | None:
    """Why no later batch runs, or None: every host of the batch failed or was unreachable,
    or more than ``max_fail_percentage`` of it failed (unreachable hosts count only towards the
    first, as in Ansible)."""
    if batch_size and failed + unreachable == batch_size:
        return f"every host of the batch ({batch_size}) failed or was unreachable"
    if max_fail_percentage is not None and failed / batch_size > max_fail_percentage / 100:
        return (f"{failed} of {batch_size} hosts failed, more than max_fail_percentage "
                f"{max_fail_percentage:g}%")
    return None
