"""The one fan-out: results in order, an exception per item, the forks bound, Ctrl-C."""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest

from nodeprov.util.fanout import on_every, on_every_name, raise_first
from tests.ctrl_c import ctrl_c_raises


def test_results_come_in_the_items_order_with_each_items_exception() -> None:
    def work(n: int) -> int:
        if n == 2:
            raise ValueError("two")
        time.sleep(0.01 * (5 - n))  # later items finish first
        return n * 10

    results = on_every(work, range(5))
    assert [r if isinstance(r, int) else repr(r) for r in results] == [
        0, 10, "ValueError('two')", 30, 40]


def test_keyed_by_name() -> None:
    found = on_every_name(["a", "bb"], len)
    assert found == {"a": 1, "bb": 2}


def most_at_once(items: int, forks: int | None, expect: int) -> int:
    """The most items running at once. Every item blocks until ``expect`` run (or 5 s), plus
    a moment in which an item beyond the bound would start, so the figure does not depend on
    how fast threads start on a busy machine."""
    running, most = 0, 0
    changed, release = threading.Condition(), threading.Event()

    def work(_: int) -> None:
        nonlocal running, most
        with changed:
            running += 1
            most = max(most, running)
            changed.notify_all()
        release.wait(5)
        with changed:
            running -= 1

    def release_once_full() -> None:
        with changed:
            changed.wait_for(lambda: running >= expect, timeout=5)
        time.sleep(0.05)
        release.set()

    threading.Thread(target=release_once_full, daemon=True).start()
    on_every(work, range(items), forks=forks)
    return most


def test_at_most_forks_items_run_at_once() -> None:
    assert most_at_once(12, forks=3, expect=3) == 3
    assert most_at_once(12, forks=None, expect=12) == 12  # default: every item at once


def test_raise_first_raises_the_first_exception() -> None:
    assert raise_first([1, 2]) == [1, 2]
    with pytest.raises(KeyError):
        raise_first([1, KeyError("k"), ValueError("v")])


def press_ctrl_c(times: int, started: threading.Event) -> None:
    """SIGINT to this process once the work has started, ``times`` times."""
    def press() -> None:
        started.wait(5)
        for _ in range(times):
            time.sleep(0.1)
            os.kill(os.getpid(), signal.SIGINT)
    threading.Thread(target=press, daemon=True).start()


def test_ctrl_c_lets_the_work_in_flight_finish_and_skips_the_rest() -> None:
    started, finished = threading.Event(), []

    def work(n: int) -> int:
        started.set()
        time.sleep(0.4)
        finished.append(n)
        return n

    with ctrl_c_raises(), pytest.raises(KeyboardInterrupt):
        press_ctrl_c(1, started)
        on_every(work, range(4), forks=2)
    assert sorted(finished) == [0, 1]  # in flight: finished; not started: never run


def test_with_stop_ctrl_c_sets_it_and_returns_the_results() -> None:
    stop, started = threading.Event(), threading.Event()

    def work(n: int) -> str:
        started.set()
        time.sleep(0.4)
        return "stopped" if stop.is_set() else "done"

    with ctrl_c_raises():
        press_ctrl_c(1, started)
        results = on_every(work, range(2), stop=stop)
    assert stop.is_set() and results == ["stopped", "stopped"]


def test_a_second_ctrl_c_drops_what_the_work_waits_on() -> None:
    started, dropped = threading.Event(), threading.Event()

    def work(_: int) -> str:
        started.set()
        return "dropped" if dropped.wait(5) else "waited out"

    with ctrl_c_raises(), pytest.raises(KeyboardInterrupt):
        press_ctrl_c(2, started)
        on_every(work, range(2), drop=dropped.set)
    assert dropped.is_set()

