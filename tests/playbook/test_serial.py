"""serial: and max_fail_percentage: rules, as ansible-core's PlaybookExecutor and linear
strategy apply them (sizes from the play's whole host list, percentages rounded down but at
least 1, the last size repeating, 0 = the rest; a failure share must exceed the maximum)."""

from __future__ import annotations

import pytest

from nodeprov.playbook.serial import (
    batch_size,
    parse_max_fail_percentage,
    parse_serial,
    split_batches,
    stop_reason,
)


def sizes(serial: object, count: int) -> list[int]:
    return [len(batch) for batch in split_batches(parse_serial(serial), list(range(count)))]


@pytest.mark.parametrize(("serial", "count", "expected"), [
    (1, 3, [1, 1, 1]),
    (2, 5, [2, 2, 1]),
    ("30%", 10, [3, 3, 3, 1]),
    ("50%", 5, [2, 2, 1]),          # of the play's 5 hosts every time, not of those left
    ("10%", 5, [1, 1, 1, 1, 1]),    # 0.5 rounds down to 0, then at least 1
    ("100%", 4, [4]),
    ("150%", 4, [4]),
    (0, 4, [4]),
    ([1, 5, 10], 20, [1, 5, 10, 4]),
    ([1, "25%"], 8, [1, 2, 2, 2, 1]),  # the last size repeats
    ([1, 0], 6, [1, 5]),            # 0: the rest at once
    (10, 3, [3]),
])
def test_batches_as_ansible_cuts_them(serial: object, count: int, expected: list[int]) -> None:
    assert sizes(serial, count) == expected


def test_no_serial_is_one_batch_and_hosts_keep_their_order() -> None:
    assert split_batches((), ["a", "b", "c"]) == [["a", "b", "c"]]
    assert split_batches((2,), ["a", "b", "c"]) == [["a", "b"], ["c"]]
    assert split_batches((2,), []) == []
    assert batch_size("33%", 10) == 3


@pytest.mark.parametrize("bad", [-1, "x", "1.5", "%", "-5%", True, [], [1, None], "3 hosts"])
def test_a_bad_serial_says_what_is_valid(bad: object) -> None:
    with pytest.raises(ValueError, match="batch size|empty list"):
        parse_serial(bad)


def test_max_fail_percentage_reads_numbers_and_percent_strings() -> None:
    assert parse_max_fail_percentage(0) == 0.0
    assert parse_max_fail_percentage("25%") == 25.0
    assert parse_max_fail_percentage(49.5) == 49.5
    for bad in (-1, 101, "lots", True):
        with pytest.raises(ValueError, match="not a percentage from 0 to 100"):
            parse_max_fail_percentage(bad)


@pytest.mark.parametrize(("size", "failed", "unreachable", "maximum", "stops"), [
    (4, 2, 0, 50, False),    # 50% is not more than 50%
    (4, 2, 0, 49, True),     # Ansible's own example: 49 to stop at 2 of 4
    (4, 1, 0, 0, True),
    (4, 0, 0, 0, False),
    (4, 0, 3, 0, False),     # unreachable hosts count only towards a wholly failed batch
    (4, 1, 3, None, True),   # every host failed or unreachable
    (4, 3, 0, None, False),
    (1, 1, 0, 100, True),
])
def test_when_a_batch_stops_the_run(size: int, failed: int, unreachable: int,
                                    maximum: float | None, stops: bool) -> None:
    reason = stop_reason(batch_size=size, failed=failed, unreachable=unreachable,
                         max_fail_percentage=maximum)
    assert (reason is not None) == stops
