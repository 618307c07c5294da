"""Processes known by PID *and* start time, so a recycled PID is never mistaken for a node.

    >>> parse_stat("4242 (sshd: /usr/sbin/sshd -D) S 1 4242 4242 0 -1 4194560 " + "0 " * 12
    ...            + "817263 rest")
    ('S', 817263)
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Iterable
from dataclasses import dataclass

START_TIME_FIELD = 22  # field 22 of /proc/PID/stat: start time in clock ticks since boot


def parse_stat(text: str) -> tuple[str, int]:
    """(state, start time) from /proc/PID/stat; the command name may hold spaces and ')'."""
    fields = text[text.rindex(")") + 2:].split()
    return fields[0], int(fields[START_TIME_FIELD - 3])


def _read_stat(pid: int) -> tuple[str, int] | None:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return parse_stat(stat.read())
    except (FileNotFoundError, ProcessLookupError):
        return None


@dataclass(frozen=True)
class ProcessId:
    pid: int
    start_time: int

    @classmethod
    def of(cls, pid: int) -> ProcessId | None:
        """The running process ``pid`` as it is now, or None if there is none."""
        stat = _read_stat(pid)
        return None if stat is None else cls(pid, stat[1])

    def alive(self) -> bool:
        """True while this very process runs (a zombie or a new process with its PID is not)."""
        stat = _read_stat(self.pid)
        return stat is not None and stat[1] == self.start_time and stat[0] not in ("Z", "X")

    def parent(self) -> int | None:
        """The parent's PID, None when the process is gone."""
        try:
            with open(f"/proc/{self.pid}/stat") as stat:
                text = stat.read()
        except (FileNotFoundError, ProcessLookupError):
            return None
        return int(text[text.rindex(")") + 2:].split()[1])

    def carries(self, marker: str) -> bool:
        """True when the process was started with ``marker`` (``NAME=value``) in its
        environment: one of the testbed's own, not any process a PID might name."""
        try:
            with open(f"/proc/{self.pid}/environ", "rb") as environ:
                return marker.encode() in environ.read().split(b"\0")
        except (FileNotFoundError, ProcessLookupError, PermissionError):
            return False

    def kill(self) -> None:
        """SIGKILL this process if it still runs; killing a namespace's PID 1 ends all in it."""
        if self.alive():
            with contextlib.suppress(ProcessLookupError):  # it ended just now
                os.kill(self.pid, signal.SIGKILL)


def kill_and_wait(processes: Iterable[ProcessId], timeout: float = 10.0) -> list[ProcessId]:
    """SIGKILL every process, then wait for all to end; returns those still alive at timeout."""
    pending = [process for process in processes if process.alive()]
    for process in pending:
        process.kill()
    deadline = time.monotonic() + timeout
    while pending and time.monotonic() < deadline:
        time.sleep(0.01)
        pending = [process for process in pending if process.alive()]
    return pending


def node_processes(init: ProcessId | None, launcher: ProcessId | None,
                   marker: str) -> list[ProcessId]:
    """A node's PID 1 and its launcher as they run now, when they are a testbed's: the launcher
    carries ``marker`` and the PID 1 is its child (sshd's process title overwrites its own
    environment). Anything else a state file names is left alone."""
    if launcher is None or not launcher.alive() or not launcher.carries(marker):
        return []
    return [launcher, *([init] if init is not None and init.alive()
                        and init.parent() == launcher.pid else [])]
