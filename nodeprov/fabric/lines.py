"""NCCL's debug lines, found wherever a launcher put them::

    line = parse_line("[rank3]:node2:4811:4902 [3] NCCL INFO Using network IB", "train.log:7")
    line.host, line.rank, line.text   # ('node2', 3, 'Using network IB')
    line.evidence   # 'train.log:7: [rank3]:node2:4811:4902 [3] NCCL INFO Using network IB'
    for number, line in read_log(Path("train.log")): ...

NCCL writes ``host:pid:tid [cudaDev] NCCL INFO|WARN text``; torchrun (``[rankN]:``), mpirun
(``[1,26]<stdout>:``), pdsh (``host: ``) and log shippers put their own words before it, so the
line is searched, not matched from its start. A host name starts where a word starts (not inside
``00ip-10-0-0-1``), except after an ISO time a log shipper glued to it
(``2025-05-16T16:39:51.208-07:00ip-10-0-0-1:79:79``) or a colour code, which the text loses
too. ``NCCL version X`` is printed by rank 0 without the prefix in NCCL before 2.28: such a
line has no host.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from nodeprov.errors import InputError

MAX_LINE = 64 * 1024  # a longer line is cut: node output is untrusted, a log can be endless

# A host is tried only where a word starts (the look-behind), so a line without a host is
# searched in linear time: a 64 KiB line of one word took 18 s when every offset was tried.
_HOST_CHARS = r"[\w.<>-]"  # DNS names, and placeholders such as <cluster_name>
_GLUED_TIME = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?"
_COLOUR = r"\x1b\[[0-9;]*m"  # a terminal colour code a launcher put right before the host
_LINE = re.compile(
    rf"(?<!{_HOST_CHARS})(?:\[rank(?P<rank>\d+)\]:)?(?:{_GLUED_TIME}|{_COLOUR})*"
    rf"(?P<host>{_HOST_CHARS}{{1,253}}):(?P<pid>\d+):(?P<tid>\d+) "
    r"\[(?P<dev>\d+)\] (?:\S+:\d+ )?NCCL (?P<level>INFO|WARN|TRACE) ?(?P<text>.*)")
_COLOURS = re.compile(_COLOUR)
_VERSION = re.compile(r"NCCL version (?P<version>\d+\.\d+\.\d+)")


@dataclass(frozen=True)
class NcclLine:
    """One NCCL debug line: who printed it (``host`` and ``pid``, the CUDA device ``dev``,
    the global ``rank`` where torchrun's prefix says it) and what it says."""

    host: str
    pid: int
    dev: int
    level: str
    text: str
    rank: int | None = None
    raw: str = ""     # the whole line as the log has it
    where: str = ""   # FILE:LINE

    @property
    def evidence(self) -> str:
        """The line as the log has it, with the file and line number it is at."""
        return f"{self.where}: {self.raw}" if self.where else self.raw

    @property
    def process(self) -> tuple[str, int, int]:
        """A rank's identity in a log: its host, process and device."""
        return (self.host, self.pid, self.dev)


def parse_line(raw: str, where: str = "") -> NcclLine | None:
    """The NCCL line in ``raw`` (at ``where``, FILE:LINE), or None where there is none."""
    found = _LINE.search(raw) if "NCCL " in raw else None
    if found is None:
        return None
    rank = found.group("rank")
    return NcclLine(found.group("host"), int(found.group("pid")), int(found.group("dev")),
                    found.group("level"), _COLOURS.sub("", found.group("text")).rstrip(),
                    int(rank) if rank is not None else None, raw.strip(), where)


def bare_version(raw: str) -> str | None:
    """``2.19.3`` from a ``NCCL version 2.19.3+cuda12.3`` line without NCCL's prefix."""
    found = _VERSION.search(raw)
    return found.group("version") if found else None


def read_log(path: Path) -> Iterator[tuple[int, str]]:
    """Each line of ``path`` with its number (from 1), cut at ``MAX_LINE`` characters; a file
    that cannot be read or is not text is an InputError naming the file and the line."""
    try:
        handle = path.open("rb")
    except OSError as error:
        raise InputError(f"cannot read it: {error.strerror or error}", source=str(path)
                         ) from None
    with handle:
        for number, raw in enumerate(handle, start=1):
            if b"\0" in raw:
                raise InputError("a NUL byte: this is not a text log (give NCCL's output as "
                                 "written, not compressed)", source=str(path), line=number)
            yield number, raw[:MAX_LINE].decode("utf-8", errors="replace").rstrip("\r\n")
