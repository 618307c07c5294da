"""Ctrl-C in tests, also when the test command itself runs with SIGINT ignored.

A shell starts a background command (``nohup pytest ... &``, a CI runner's step) with SIGINT
ignored, and Python then installs no KeyboardInterrupt handler; children inherit the ignored
signal. Tests that press Ctrl-C give it its default meaning back::

    subprocess.Popen(argv, preexec_fn=default_sigint)   # a process the test will interrupt
    with ctrl_c_raises():                                # the test's own process
        os.kill(os.getpid(), signal.SIGINT)              # -> KeyboardInterrupt
"""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager


def default_sigint() -> None:
    """For ``preexec_fn``: the child starts with SIGINT's default, so Python maps it to
    KeyboardInterrupt as in a terminal."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@contextmanager
def ctrl_c_raises() -> Iterator[None]:
    """SIGINT raises KeyboardInterrupt in this (main) thread while inside, as in a terminal."""
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, before)
