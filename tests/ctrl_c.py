"""Ctrl-C and a closed terminal in tests, also when the test command itself runs with SIGINT
or SIGHUP ignored.

A shell starts a background command (``nohup pytest ... &``, a CI runner's step) with SIGINT
ignored, and Python then installs no KeyboardInterrupt handler; nohup ignores SIGHUP; children
inherit the ignored signals. Tests that send them give them their default meaning back::

    subprocess.Popen(argv, preexec_fn=terminal_signals)   # a process the test will interrupt
    with ctrl_c_raises():                                # the test's own process
        os.kill(os.getpid(), signal.SIGINT)              # -> KeyboardInterrupt
"""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager


def terminal_signals() -> None:
    """For ``preexec_fn``: the child starts with SIGINT's and SIGHUP's defaults, as from a
    terminal: Python maps SIGINT to KeyboardInterrupt, and nodeprov run takes SIGHUP as its
    terminal closing (it leaves an ignored one ignored, as under nohup)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGHUP, signal.SIG_DFL)


@contextmanager
def ctrl_c_raises() -> Iterator[None]:
    """SIGINT raises KeyboardInterrupt in this (main) thread while inside, as in a terminal."""
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, before)
