"""What the ranks said: every node's output in a log file on this machine, rank 0's shown live.

torchrun (``--tee 3`` with ``PREFIX_TEMPLATE``) starts each line of a worker's output with its
global rank, ``[rank1]:``; its own messages have no prefix::

    with NodeLogs(Path("runs/nodeprov-run-1a2b"), ["node1", "node2"], print) as logs:
        launch_all(names, sessions, job, streams=logs.streams)  # print("node1 [rank0]:...")
    rank_tail(logs.paths["node2"], 1)                    # rank 1's last 40 lines, prefixed
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from types import TracebackType

from nodeprov.util.lines import LineWriter

PREFIX_TEMPLATE = "[rank${rank}]:"  # torchrun's TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE
RANK_LINE = re.compile(r"\[rank(\d+)\]:(.*)")
# torch's own error logging adds a "[rank1]: " of its own inside torchrun's prefix
RANK_PREFIXES = re.compile(r"^(?:\[rank\d+\]: ?)+")
# a traceback's last line: ``ValueError: boom``, ``torch.distributed.DistBackendError: ...``,
# ``KeyboardInterrupt``
EXCEPTION_LINE = re.compile(r"[A-Za-z_][\w.]*(?::|\s*$)")
# What a rank says when the rank at the other end of its connection is gone (gloo, NCCL, Python)
LOST_PEER = re.compile(r"Connection (?:closed|reset) by peer|Broken pipe|remote process exited")
ROOT_CAUSE = re.compile(r"Root Cause \(first observed failure\):.*?\brank\s*:\s*(\d+)", re.S)
TAIL_LINES = 40


def rank_of(line: str) -> int | None:
    """The global rank a line of torchrun's output comes from; None for torchrun's own.

    >>> rank_of("[rank3]:Traceback (most recent call last):"), rank_of("W1123 torchrun")
    (3, None)
    """
    found = RANK_LINE.match(line)
    return int(found.group(1)) if found else None


def root_cause_rank(output: str) -> int | None:
    """The rank torchrun's failure summary names as the first observed failure."""
    found = ROOT_CAUSE.search(output)
    return int(found.group(1)) if found else None


def raised(lines: Sequence[str]) -> str | None:
    """The exception a rank's last traceback ends in (``ValueError: boom``), prefixes removed.
    The script's own prints may land between the traceback's lines (stdout and stderr share
    the log): only a line under the traceback's own prefixes, shaped like an exception, counts.

    >>> raised(["[rank1]:[rank1]: Traceback (most recent call last):",
    ...         "[rank1]:[rank1]:   File 'train.py', line 9", "[rank1]:*** Demo",
    ...         "[rank1]:[rank1]: KeyError: 'x'"])
    "KeyError: 'x'"
    """
    starts = [i for i, line in enumerate(lines)
              if RANK_PREFIXES.sub("", line).startswith("Traceback (most recent")]
    if not starts:
        return None
    prefix = _prefixes(lines[starts[-1]])
    for line in lines[starts[-1] + 1:]:
        text = line[len(prefix):]
        if _prefixes(line) == prefix and EXCEPTION_LINE.match(text):
            return text.strip()
    return None


def _prefixes(line: str) -> str:
    found = RANK_PREFIXES.match(line)
    return found.group(0) if found else ""


def rank_lines(path: Path, rank: int) -> list[str]:
    """Every line of ``rank`` in a node's log."""
    with path.open(errors="replace") as log:
        return [line.rstrip("\n") for line in log if rank_of(line) == rank]


class _NodeLog:
    def __init__(self, node: str, path: Path, show: Callable[[str], None],
                 lock: threading.Lock) -> None:
        self.node, self.path, self._show, self._lock = node, path, show, lock
        # 0600 from its creation, as the reports: the job's whole output, secrets it printed too
        handle = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW, 0o600)
        self._file = open(handle, "a", encoding="utf-8")  # noqa: SIM115 - closed by close()
        self.streams = (LineWriter(self.line), LineWriter(self.line))

    def line(self, text: str) -> None:
        with self._lock:  # stdout and stderr of every node arrive on threads of their own
            self._file.write(text + "\n")
            self._file.flush()
            if rank_of(text) == 0:
                self._show(f"{self.node} {text}")

    def close(self) -> None:
        for stream in self.streams:
            stream.close()
        self._file.close()


class NodeLogs:
    """One log file per node under ``directory``; ``show`` gets rank 0's lines, node first."""

    def __init__(self, directory: Path, nodes: Sequence[str], show: Callable[[str], None]) -> None:
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        lock = threading.Lock()
        self._logs = {node: _NodeLog(node, directory / f"{node}.log", show, lock)
                      for node in nodes}
        self.paths = {node: log.path for node, log in self._logs.items()}
        self.streams = {node: log.streams for node, log in self._logs.items()}

    def __enter__(self) -> NodeLogs:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        for log in self._logs.values():
            log.close()


def first_traceback_rank(path: Path) -> int | None:
    """The first rank in a node's log that printed a traceback (torchrun, stopped, printed no
    summary naming one)."""
    with path.open(errors="replace") as log:
        return next((rank_of(line) for line in log
                     if rank_of(line) is not None and "Traceback (most recent" in line), None)


def first_rank(path: Path) -> int | None:
    """The first rank that wrote a line in a node's log: whose last words to show when
    torchrun, stopped at the deadline, names none and no rank raised."""
    with path.open(errors="replace") as log:
        return next((rank_of(line) for line in log if rank_of(line) is not None), None)


def rank_tail(path: Path, rank: int, lines: int = TAIL_LINES) -> str:
    """The last ``lines`` a rank wrote, as they are in the log."""
    return "\n".join(rank_lines(path, rank)[-lines:])
