"""The Ctrl-C helpers work when the test command itself runs with SIGINT ignored (nohup, a CI
runner's background step), which this test sets up for itself."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator

import pytest

from tests.ctrl_c import ctrl_c_raises, terminal_signals

# exits 130 on KeyboardInterrupt, as nodeprov apply does
SLEEPER = ("import sys, time\ntry:\n    print('ready', flush=True)\n    time.sleep(30)\n"
           "except KeyboardInterrupt:\n    sys.exit(130)")


@pytest.fixture
def sigint_ignored() -> Iterator[None]:
    """As under ``nohup pytest ... &``: SIGINT ignored here and in every child."""
    before = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, before)


def interrupted(preexec: Callable[[], None] | None) -> int | None:
    """Exit code of a Python child sent SIGINT once it runs; None if it ignored it."""
    with subprocess.Popen([sys.executable, "-c", SLEEPER], stdout=subprocess.PIPE,
                          stderr=subprocess.DEVNULL, text=True, preexec_fn=preexec) as child:
        assert child.stdout is not None and child.stdout.readline() == "ready\n"
        child.send_signal(signal.SIGINT)
        try:
            return child.wait(timeout=5)
        except subprocess.TimeoutExpired:
            child.kill()
            return None


@pytest.mark.usefixtures("sigint_ignored")
def test_a_child_started_with_terminal_signals_stops_on_ctrl_c() -> None:
    assert interrupted(None) is None  # what the Ctrl-C tests hit without the helper
    assert interrupted(terminal_signals) == 130  # KeyboardInterrupt, as in a terminal


@pytest.mark.usefixtures("sigint_ignored")
def test_ctrl_c_raises_in_the_test_process_while_inside() -> None:
    with ctrl_c_raises(), pytest.raises(KeyboardInterrupt):
        os.kill(os.getpid(), signal.SIGINT)
        signal.sigtimedwait([], 1)  # give the handler its turn
    assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
