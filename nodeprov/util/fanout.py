"""Work on every host at once, the one way nodeprov does it.

    results = on_every(open_and_read, sessions.values(), forks=32)
    # one entry per item, in order: what ``work`` returned, or the Exception it raised

At most ``forks`` items run at once (default: all of them). One node's failure never hides
another's result. Ctrl-C (which Python delivers to the main thread, waiting here) lets the work
in flight finish its round trip; a second Ctrl-C calls ``drop`` (e.g. drop the connections
under the work) and waits for it to end. A caller whose work watches ``stop`` passes it: Ctrl-C
sets it, the work decides what an interrupted item reports, and ``on_every`` returns (the
runner reports the interruption itself). Without ``stop``, work not yet started is skipped
(``NotStarted``) and KeyboardInterrupt is raised once the work in flight has ended.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from typing import TypeVar

from nodeprov.errors import NodeprovError

DEFAULT_FORKS = 32  # hosts handled at once unless --forks says otherwise

T = TypeVar("T")
R = TypeVar("R")


class NotStarted(NodeprovError):
    """The item's work never started: Ctrl-C came first."""


def on_every(work: Callable[[T], R], items: Iterable[T], *, forks: int | None = None,
             stop: threading.Event | None = None, drop: Callable[[], None] | None = None
             ) -> list[R | Exception]:
    """``work(item)`` for every item in parallel threads, at most ``forks`` at once; each
    item's result or exception, in the items' order."""
    chosen = list(items)
    halt = stop or threading.Event()

    def guarded(item: T) -> R | Exception:
        if stop is None and halt.is_set():
            return NotStarted("interrupted before it started")
        try:
            return work(item)
        except Exception as error:  # one item's failure must not hide the others' results
            return error

    pool = ThreadPoolExecutor(max_workers=max(1, min(forks or len(chosen), len(chosen))),
                              thread_name_prefix="nodeprov")
    futures = [pool.submit(guarded, item) for item in chosen]
    try:
        wait(futures)
    except KeyboardInterrupt:
        halt.set()
        try:
            wait(futures)
        except KeyboardInterrupt:
            if drop is not None:
                drop()
            wait(futures)
    finally:
        pool.shutdown(wait=False)
    if halt.is_set() and stop is None:
        raise KeyboardInterrupt
    return [future.result() for future in futures]


def on_every_name(names: Sequence[str], work: Callable[[str], R]) -> dict[str, R | Exception]:
    """``on_every`` over node names, keyed by name: ``{"node1": result, "node2": error}``."""
    return dict(zip(names, on_every(work, names), strict=True))


def raise_first(results: Iterable[R | Exception]) -> list[R]:
    """The results, or the first exception among them raised (for work that never fails on
    purpose: an exception there is a bug, not a host's state)."""
    chosen = list(results)
    for result in chosen:
        if isinstance(result, Exception):
            raise result
    return [result for result in chosen if not isinstance(result, Exception)]
