"""One line on a terminal saying how a transfer to each node goes, once it has lasted 2 s; a
summary when it ends (on any stream)::

    line = ProgressLine(sys.stderr, "sync")
    line.advance("node1", 4 << 20, 20 << 20)      # from any sender's thread
    line.close("sync: 2001 files (20.0 MB) to 8 nodes in 3.1 s")

    sync: node1 20%  node2 35%  node3 40%  (19.0 of 60.0 MB, 2.4 s)
"""

from __future__ import annotations

import shutil
import threading
import time
from collections.abc import Callable
from typing import TextIO

MB = 1 << 20


class ProgressLine:
    """Drawn on a terminal only, after ``after`` s, at most every ``every`` s; writes that fail
    (a closed terminal) are dropped: the transfer goes on."""

    def __init__(self, stream: TextIO, what: str, *, after: float = 2.0, every: float = 0.25,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.stream, self.what, self.after, self.every, self.clock = (
            stream, what, after, every, clock)
        self.terminal = stream.isatty()
        self.started = self.drawn_at = clock()
        self.drawn = False
        self.nodes: dict[str, tuple[int, int]] = {}
        self.lock = threading.Lock()

    def advance(self, node: str, done: int, total: int) -> None:
        with self.lock:
            self.nodes[node] = (done, total)
            now = self.clock()
            if self.terminal and now - self.started >= self.after and (
                    not self.drawn or now - self.drawn_at >= self.every):
                self.drawn_at = now
                self._write("\r" + self.text(now)[:shutil.get_terminal_size().columns - 1]
                            + "\x1b[K")
                self.drawn = True

    def text(self, now: float) -> str:
        """The line: each node's share sent, then the bytes and seconds of all of them."""
        done = sum(sent for sent, _ in self.nodes.values())
        total = sum(size for _, size in self.nodes.values())
        shares = "  ".join(f"{node} {sent * 100 // max(size, 1)}%"
                           for node, (sent, size) in sorted(self.nodes.items()))
        return (f"{self.what}: {shares}  ({done / MB:.1f} of {total / MB:.1f} MB, "
                f"{now - self.started:.1f} s)")

    def close(self, summary: str) -> None:
        """Clear the line and say how it went."""
        with self.lock:
            self._write(("\r\x1b[K" if self.drawn else "") + summary + "\n")

    def _write(self, text: str) -> None:
        try:
            self.stream.write(text)
            self.stream.flush()
        except OSError:  # the terminal went away (SIGHUP): the transfer goes on
            pass
