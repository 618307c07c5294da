"""What a person sees: progress lines or a live table, the recap and its batches.

The JSON report is ``nodeprov.jsonreport``'s.
"""

from __future__ import annotations

import shlex
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from rich.console import Console, Group
from rich.table import Table
from rich.text import Text

from nodeprov.engine.outcome import HostResult, TaskResult
from nodeprov.util.validate import printable

if TYPE_CHECKING:
    from nodeprov.engine.rolling import Batch
    from nodeprov.util.progress import Transfers

_STYLE = {"ok": "green", "changed": "yellow", "failed": "bold red", "skipped": "dim",
          "unreachable": "bold red"}
_COUNTED = ("ok", "changed", "failed", "skipped")  # task statuses the recap counts per host
_RECAP_COLUMNS = ("host", "status", *_COUNTED, "time")


class PlainReporter:
    """One line per finished task: for CI logs and pipes."""

    def __init__(self, console: Console, *, diff: bool = False, verbose: bool = False) -> None:
        self.console = console
        self.diff = diff
        self.verbose = verbose
        self._lock = threading.Lock()

    def task_done(self, host: str, result: TaskResult) -> None:
        with self._lock:
            _print_task(self.console, host, result, self.diff, self.verbose)

    def host_done(self, result: HostResult) -> None:
        if result.status == "unreachable":
            with self._lock:
                self.console.print(printable(f"{result.name} | unreachable | {result.error}"),
                                   style=_STYLE["unreachable"], markup=False, highlight=False)


class LiveReporter(PlainReporter):
    """A live per-host table on a terminal, with task lines printed above it."""

    def __init__(self, console: Console, hosts: Sequence[str], *, diff: bool = False,
                 verbose: bool = False, transfers: Transfers | None = None) -> None:
        from rich.live import Live  # lazy: only a terminal gets the live table

        super().__init__(console, diff=diff, verbose=verbose)
        self._rows = {host: {"ok": 0, "changed": 0, "failed": 0, "last": "connecting"}
                      for host in hosts}
        self._transfers = transfers
        # drawn at each refresh, so the transfers' bars move between two finished tasks
        self._live = Live(console=console, transient=True, refresh_per_second=8,
                          get_renderable=self._view)

    def _view(self) -> Group:
        return Group(self._table(), *(self._transfers.renderable if self._transfers else ()))

    def __enter__(self) -> LiveReporter:
        self._live.__enter__()
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self._live.__exit__(*exc_info)

    def _table(self) -> Table:
        table = Table(box=None, pad_edge=False)
        for column in ("host", "ok", "changed", "failed", "now"):
            table.add_column(column)
        for host, row in self._rows.items():
            table.add_row(host, str(row["ok"]), str(row["changed"]), str(row["failed"]),
                          Text(printable(str(row["last"]))))  # text, not markup
        return table

    def task_done(self, host: str, result: TaskResult) -> None:
        with self._lock:
            row = self._rows[host]
            if result.status in ("ok", "changed", "failed"):
                row[result.status] = int(str(row[result.status])) + 1
            row["last"] = f"{result.name}: {result.status}"
            _print_task(self.console, host, result, self.diff, self.verbose)

    def host_done(self, result: HostResult) -> None:
        super().host_done(result)
        with self._lock:
            self._rows[result.name]["last"] = f"done ({result.status})"


def _print_task(console: Console, host: str, result: TaskResult, diff: bool,
                verbose: bool) -> None:
    detail = "; ".join(result.changes) or (result.error or "") or (
        "; ".join(result.notes) if verbose else "")
    line = f"{host} | {result.name} | {result.status}" + (f" | {detail}" if detail else "")
    console.print(printable(line), style=_STYLE.get(result.status), markup=False,
                  highlight=False)
    for warning in result.warnings:
        console.print(printable(f"{host} | {result.name} | warning: {warning}"), style="yellow",
                      markup=False, highlight=False)
    if diff:
        for text in result.diffs:  # a node's file: its escapes spelled out, not acted on
            console.print(printable(text), markup=False, highlight=False, end="")


def print_recap(console: Console, results: Sequence[HostResult], *, check: bool,
                rerun: Sequence[str] = ()) -> None:
    """The per-host counts (a table on a terminal, one line per host elsewhere), then each
    failure's one-line cause and the re-run command."""
    title = "recap (check mode: nothing was changed)" if check else "recap"
    rows = [(result.name, result.status,
             *(str(sum(t.status == status for t in result.tasks)) for status in _COUNTED),
             f"{result.duration:.1f}s") for result in results]
    if console.is_terminal:
        table = Table(title=title, title_justify="left")
        for column in _RECAP_COLUMNS:
            table.add_column(column)
        for name, status, *rest in rows:
            table.add_row(name, f"[{_STYLE[status]}]{status}[/]", *rest)
        console.print(table)
    else:
        console.print(title, markup=False, highlight=False)
        for name, status, *counts, duration in rows:
            numbers = " ".join(f"{column}={count}"
                               for column, count in zip(_COUNTED, counts, strict=True))
            console.print(f"{name} | {status} | {numbers} | {duration}",
                          style=_STYLE[status], markup=False, highlight=False)
    failed = [r for r in results if r.status in ("failed", "unreachable")]
    for result in failed:
        console.print(printable(f"FAILED {result.error}"), style="bold red", markup=False,
                      highlight=False)
    if failed:
        names = ",".join(r.name for r in failed)
        command = shlex.join(["nodeprov", "apply", *rerun, "--limit", names])
        console.print(f"fix the cause, then re-run only those: {command}",
                      markup=False, highlight=False)
    changed = sum(t.status == "changed" for r in results for t in r.tasks)
    verb = "would change" if check else "changed"
    console.print(f"{len(results)} hosts, {changed} tasks {verb}, {len(failed)} hosts failed",
                  markup=False, highlight=False)


def print_batches(console: Console, batches: Sequence[Batch], stopped: str | None,
                  not_run: Sequence[str] = ()) -> None:
    """Which batches ran (only when a play ran in more than one, or the run stopped), why the
    run stopped, and the hosts it did not reach."""
    if stopped is None and all(batch.number == 1 for batch in batches):
        return
    for batch in batches:
        failed = f"; failed: {', '.join(batch.failed)}" if batch.failed else ""
        console.print(f"batch {batch.number} of play {batch.play!r}: {', '.join(batch.hosts)}"
                      f"{failed}", style=_STYLE["failed"] if batch.failed else None,
                      markup=False, highlight=False)
    if stopped is not None:
        console.print(f"stopped: {stopped}; later batches did not run", style="bold red",
                      markup=False, highlight=False)
        if not_run:
            console.print(f"not run: {', '.join(not_run)}", markup=False, highlight=False)
