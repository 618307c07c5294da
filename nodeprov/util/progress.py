"""Progress of transfers to many nodes at once (torch's wheels, ``run --sync``'s files): on a
terminal a bar per node with bytes or files done and the rate, and one for all of them; in a
log (not a terminal, or ``--json -``) one line per node when it starts and one when it ends::

    transfers = Transfers(console, live=console.is_terminal)
    advance = transfers.start("node1", "torch wheels", total=2_300_000_000)
    advance(1_000_000, 2_300_000_000)    # from any thread: done so far, total (not a delta)
    transfers.end("node1")               # or transfers.end("node1", failed=True)

``advance(done, total)`` has the shape of paramiko's ``SFTPClient.put(..., callback=...)``, so an
SFTP upload feeds it directly; a sync that counts files passes ``unit="files"`` to ``start``.
Where the total is not known before the end (a node installing from its own index: no byte of
it passes here), ``total`` is None: the bar shows what is done and the rate, and ``verb`` says
what was done (``"wrote"``) in the line at the end::

    advance = transfers.start("node2", "torch: install torch", total=None, verb="wrote")
    advance(52_428_800, None)
Live, ``transfers.renderable`` goes into the caller's ``rich.live.Live`` (rich allows one live
display at a time: the per-host table's, ``report.LiveReporter``).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Literal

from rich.console import Console
from rich.filesize import decimal
from rich.progress import (
    BarColumn,
    DownloadColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeRemainingColumn,
    TransferSpeedColumn,
)

from nodeprov.util.validate import printable

Unit = Literal["bytes", "files"]
Advance = Callable[[int, int | None], None]
ALL = "all nodes"


class Transfers:
    def __init__(self, console: Console, *, live: bool) -> None:
        self.console = console
        self.live = live
        self._lock = threading.Lock()
        self._started: dict[str, tuple[str, Unit, float, str]] = {}  # what, unit, since, verb
        self._done: dict[str, tuple[int, int | None]] = {}  # node: done, total (None: unknown)
        self._ended: set[str] = set()
        self._bars: dict[Unit, Progress] = {}
        self._ids: dict[str, TaskID] = {}
        self._overall: dict[Unit, TaskID] = {}

    @property
    def renderable(self) -> list[Progress]:
        """The bars, for a live display (none until a transfer starts)."""
        return list(self._bars.values())

    def start(self, node: str, what: str, total: int | None, unit: Unit = "bytes",
              verb: str = "sent") -> Advance:
        """Count a transfer to ``node``; the callback its sender calls as it goes."""
        with self._lock:
            self._started[node] = (what, unit, time.monotonic(), verb)
            self._done[node] = (0, total)
            self._ended.discard(node)
            if self.live:
                bars = self._bars.get(unit) or self._new_bars(unit)
                self._ids[node] = bars.add_task(printable(f"{node}: {what}"), total=total)
                bars.update(self._overall[unit], visible=True)
                self._sum(unit)
            else:
                size = "size not known beforehand" if total is None else \
                    f"{_amount(total, unit)} to send"
                self.console.print(printable(f"{node} | {what} | {size}"), markup=False,
                                   highlight=False)
        return lambda done, total: self._advance(node, done, total)

    def end(self, node: str, *, failed: bool = False) -> None:
        with self._lock:
            what, unit, since, verb = self._started[node]
            done, _ = self._done[node]
            self._ended.add(node)
            if self.live:
                bars = self._bars[unit]
                bars.update(self._ids[node], visible=False)
                # the bar for all: while a transfer goes on (the run goes on after them)
                bars.update(self._overall[unit], visible=any(
                    started[1] == unit and name not in self._ended
                    for name, started in self._started.items()))
                return
            seconds = time.monotonic() - since
            rate = f", {decimal(int(done / seconds))}/s" if unit == "bytes" and seconds else ""
            said = "failed after" if failed else verb
            self.console.print(printable(f"{node} | {what} | {said} {_amount(done, unit)} in "
                                         f"{seconds:.1f} s{rate}"), markup=False,
                               highlight=False, style="bold red" if failed else None)

    def _advance(self, node: str, done: int, total: int | None) -> None:
        with self._lock:
            self._done[node] = (done, total)
            if self.live:
                unit = self._started[node][1]
                self._bars[unit].update(self._ids[node], completed=done, total=total)
                self._sum(unit)

    def _new_bars(self, unit: Unit) -> Progress:
        amount = DownloadColumn() if unit == "bytes" else MofNCompleteColumn()
        rate = [TransferSpeedColumn()] if unit == "bytes" else []
        bars = Progress(TextColumn("{task.description}", markup=False), BarColumn(), amount, *rate,
                        TimeRemainingColumn(), console=self.console)
        self._bars[unit] = bars
        self._overall[unit] = bars.add_task(ALL, total=0)
        return bars

    def _sum(self, unit: Unit) -> None:
        nodes = [node for node, started in self._started.items() if started[1] == unit]
        totals = [self._done[node][1] for node in nodes]
        bars, overall = self._bars[unit], self._overall[unit]
        bars.update(overall, completed=sum(self._done[node][0] for node in nodes))
        if None in totals:  # rich's update reads total=None as "unchanged"
            next(task for task in bars.tasks if task.id == overall).total = None
        else:
            bars.update(overall, total=sum(filter(None, totals)))


def _amount(count: int, unit: Unit) -> str:
    """
    >>> _amount(2_300_000_000, "bytes"), _amount(12, "files")
    ('2.3 GB', '12 files')
    """
    return decimal(count) if unit == "bytes" else f"{count} files"
