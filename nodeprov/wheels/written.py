"""Progress of what a node downloads and installs by itself (from its own index no byte passes
this machine, so no upload can count it): beside the install, on a channel of the same SSH
connection, ``nodeside/written.py`` prints the bytes written so far under the folders the
install writes to (the venv, uv's cache, pip's temporary folder), about every second, and
``session.transfers`` (util.progress) shows them: a bar with bytes and rate on a terminal, a
line at start and at end in a log.

    with counting_writes(session, "torch", "install torch==2.13.0+cpu", python, folders):
        session.execute("torch", actions)

The count is a courtesy: where it cannot run (the python is not there yet, sudo refuses a second
command, the channel is refused) the install goes on without it, and it never fails the task.
What the node prints is read as digits only; the figure shown only grows (pip removes the
downloaded wheel once it is installed).
"""

from __future__ import annotations

import secrets
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from importlib import resources
from typing import TYPE_CHECKING

from nodeprov.errors import HostError
from nodeprov.remote.channel import Terms
from nodeprov.util.lines import LineWriter

if TYPE_CHECKING:
    from nodeprov.remote.session import Session
    from nodeprov.util.progress import Advance, Transfers

SCRIPT = resources.files("nodeprov.nodeside").joinpath("written.py").read_text()
FIRST_COUNT_WAIT = 5.0  # seconds the install waits at most for the count to start
LAST_COUNT_WAIT = 10.0  # seconds the install's end waits at most for the node's last count
MAX_DIGITS = 18  # a count longer than this is not a size (the node's output is not trusted)


class _Count:
    """The node's counts, as one transfer of ``transfers``: started at the first count (then
    ``counting`` is set), ended once, whichever thread gets there first."""

    def __init__(self, transfers: Transfers, node: str, what: str) -> None:
        self.transfers, self.node, self.what = transfers, node, what
        self.lines = LineWriter(self._line)
        self.counting = threading.Event()
        self._lock = threading.Lock()
        self._advance: Advance | None = None
        self._most = 0
        self._over = False

    def _line(self, text: str) -> None:
        text = text.strip()
        if not (text.isascii() and text.isdigit() and len(text) <= MAX_DIGITS):
            return
        with self._lock:
            if self._over:
                return
            if self._advance is None:
                self._advance = self.transfers.start(self.node, self.what, None, verb="wrote")
            self._most = max(self._most, int(text))
            self._advance(self._most, None)
        self.counting.set()

    def end(self, failed: bool) -> None:
        with self._lock:
            if self._advance is not None and not self._over:
                self.transfers.end(self.node, failed=failed)
            self._over = True


@contextmanager
def counting_writes(session: Session, task: str, what: str, python: str,
                    folders: Sequence[str]) -> Iterator[None]:
    """While the block runs, ``session.transfers`` hears how many bytes were written under
    ``folders`` on the node (counted with ``python``), as ``task: what``."""
    if session.transfers is None:
        yield
        return
    count = _Count(session.transfers, session.host.name, f"{task}: {what}")
    ended = threading.Event()
    lifetime = session.options.command_timeout
    token = f"nodeprov-written-{secrets.token_hex(6)}"

    def until_ended(_write: Callable[[bytes], None]) -> None:
        ended.wait()  # then the channel's EOF ends the count

    def run() -> None:
        try:
            session.converse([python, "-I", "-c", SCRIPT, token, f"{lifetime:g}", *folders],
                             token, Terms(send=until_ended, out=count.lines,
                                          timeout=lifetime + LAST_COUNT_WAIT),
                             task=task, what="count the bytes the install writes")
        except HostError:  # a courtesy: the install says what went wrong, if anything
            pass
        finally:
            count.counting.set()  # it ended before it counted: the install need not wait

    counter = threading.Thread(target=run, daemon=True, name=f"written {session.host.name}")
    counter.start()
    # the count starts first (a channel and sudo, a fraction of a second): it counts what was
    # written since it started, and the install's first bytes are the install's
    count.counting.wait(FIRST_COUNT_WAIT)
    failed = True
    try:
        yield
        failed = False
    finally:
        ended.set()  # EOF on the node's stdin: it prints its last count and ends
        counter.join(LAST_COUNT_WAIT)
        count.end(failed)
