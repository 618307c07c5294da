"""``nodeprov run`` outside Typer: connect, run the job, report, pick the exit code.

SIGTERM and SIGHUP (a CI job cancelled, a terminal closed, ``timeout``) end the run as Ctrl-C
does: every rank on every node is stopped, the report says which signal, the exit code is
128+N. What a node prints is shown with its control characters spelled out.
"""

from __future__ import annotations

import contextlib
import signal
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any, TextIO

from rich.console import Console

from nodeprov.commands.header import Header
from nodeprov.commands.opening import open_for
from nodeprov.commands.report import write_reports
from nodeprov.commands.requests import RunCommandRequest
from nodeprov.engine.node_address import with_node_addresses
from nodeprov.errors import EnvironmentProblem, InputError
from nodeprov.remote.connect import connect_all
from nodeprov.remote.options import SshOptions
from nodeprov.userjob.runreport import UserJobOutcome
from nodeprov.util.redact import Redactor
from nodeprov.util.validate import printable

if TYPE_CHECKING:
    from nodeprov.inventory import Host

RUNS_SUFFIX = ".nodeprov-runs"  # beside the inventory, as its baseline is
STOPPING = (signal.SIGTERM, signal.SIGHUP)


def run_command(asked: RunCommandRequest, redactor: Redactor) -> int:
    """Connect, run ``asked.job`` on every node, report; the exit code."""
    from nodeprov.remote.hostkeys import SshFiles  # lazy: Fabric is slow to import
    from nodeprov.userjob.run import Output, Site, run_user_job

    request, json_path, html_path = asked.job, asked.json_path, asked.html_path
    opened = open_for(asked.inventory, asked.ansible, redactor)
    inventory = opened.inventory
    forks = opened.forks(asked.forks)
    hosts = inventory.limited(asked.limit)
    as_login = {host.name: job_as_login(host) for host in hosts}
    log_root = writable(inventory.path.with_name(inventory.path.stem + RUNS_SUFFIX))
    shown = sys.stderr if "-" in (json_path, html_path) else sys.stdout  # "-": the report's
    err = Console(stderr=True, highlight=False, soft_wrap=True, markup=False, emoji=False)
    say = quietly(err.print)
    header = Header.now("run", inventory.path, request.command)
    say(printable(header.line()))
    with signals_interrupt() as received:
        sessions, facts, errors = connect_all(
            hosts, SshOptions(accept_new_host_keys=asked.accept_new_host_keys), forks,
            SshFiles(inventory.ssh_configs))
        hosts, problems = with_node_addresses(hosts, facts)
        errors.update(problems)
        try:
            if errors:  # nothing starts; the report names the nodes, as every run's does
                outcome = UserJobOutcome.not_reached(errors, [host.name for host in hosts])
            else:
                say(f"run: torchrun on {len(hosts)} nodes"
                    + (" after the connectivity matrix" if request.preflight else "") + " ...")
                try:
                    with SyncBars(err) as bars:
                        outcome = run_user_job(
                            hosts, sessions, facts, request,
                            Site(hosts[0].vars["venv_path"], hosts[0].vars["rdzv_port"],
                                 as_login),
                            Output(log_root, lines_to(shown), bars))
                except KeyboardInterrupt:  # before the launch (matrix, sync): none started
                    name = received[-1] if received else "SIGINT"
                    say(f"INTERRUPTED ({name}): before the job started", style="bold red")
                    return 128 + signal.Signals[name].value
                if outcome.interrupted and received:
                    outcome = replace(outcome, interrupted=received[-1])
        finally:
            for session in sessions.values():
                session.close()
    report(outcome, say)
    if json_path or html_path:
        write_reports(redactor.walk({**outcome.to_json(), **header.fields()}), json_path,
                      html_path)
    return outcome.exit_code


class SyncBars:
    """``--sync``'s progress (job.sync.Progress) through util.progress.Transfers, as torch's
    wheels show theirs: a bar per node and one for all on a terminal, drawn only while the sync
    runs (rank 0's lines come after it), a line per node at its start and end in a log; then
    the summary. What a closed terminal refuses is dropped: the sync goes on."""

    def __init__(self, console: Console) -> None:
        from nodeprov.util.progress import Transfers  # lazy: rich's live display with it

        self.console, self.transfers = console, Transfers(console, live=console.is_terminal)
        self.advances: dict[str, Callable[[int, int], None]] = {}
        self.lock = threading.Lock()
        self.live: Any = None

    def advance(self, node: str, done: int, total: int) -> None:
        with self.lock, contextlib.suppress(OSError):
            if node not in self.advances:
                self.advances[node] = self.transfers.start(node, "sync", total)
                if self.transfers.live and self.live is None:
                    from rich.console import Group
                    from rich.live import Live

                    self.live = Live(console=self.console, transient=True, refresh_per_second=8,
                                     get_renderable=lambda: Group(*self.transfers.renderable))
                    self.live.start()
            self.advances[node](done, total)

    def end(self, node: str, failed: bool) -> None:
        with self.lock, contextlib.suppress(OSError):
            if node in self.advances:
                self.transfers.end(node, failed=failed)

    def close(self, summary: str) -> None:
        self.__exit__()
        with contextlib.suppress(OSError):
            self.console.print(summary, markup=False, highlight=False)

    def __enter__(self) -> SyncBars:
        return self

    def __exit__(self, *exc_info: object) -> None:
        with self.lock, contextlib.suppress(OSError):
            if self.live is not None:
                self.live.stop()
                self.live = None


def report(outcome: UserJobOutcome, say: Callable[..., None]) -> None:
    """What the run says at its end: notes, the matrix, the first failing rank's tail, one line
    per failing node, the verdict, which does not repeat them (node text with its control
    characters spelled out)."""
    for note in outcome.notes:
        say(printable(f"note: {note}"), style="yellow")
    if outcome.matrix is not None and not outcome.matrix.ok:
        say(outcome.matrix.table())
    failure = outcome.first_failure
    if failure is not None:
        who = f"rank {failure.rank}" if failure.rank is not None else "torchrun"
        say(f"--- {failure.node}, {who}: last lines ---")
        say(printable(failure.tail))
    for line in outcome.diagnosis:
        say(printable(f"FAILED {line}"), style="bold red")
    say(printable(outcome.closing_line()), style="green" if outcome.ok else "bold red")


def job_as_login(host: Host) -> bool:
    """Whether the job runs as the login user: yes, unless the inventory says run_as_root,
    which needs become (or a root login)."""
    if not host.vars.get("run_as_root"):
        return True
    if not host.become and host.user not in (None, "root"):
        raise InputError(f"{host.name}: run_as_root needs ansible_become: true (the login "
                         f"user is {host.user})", field="run_as_root")
    return False


def writable(folder: Path) -> Path:
    """The folder of run logs, made if missing; EnvironmentProblem (one line) if it cannot be
    written, before any node is touched."""
    try:
        folder.mkdir(mode=0o700, exist_ok=True)  # only its owner reads the jobs' output
        tempfile.TemporaryFile(dir=folder).close()
    except OSError as error:
        raise EnvironmentProblem(
            f"cannot keep the run's logs in {folder}: {error.strerror or error} (nodeprov run "
            "writes them beside the inventory: make that folder writable, or run from a copy "
            "of the inventory in one)") from None
    return folder


@contextmanager
def signals_interrupt() -> Iterator[list[str]]:
    """Inside, SIGTERM and SIGHUP raise KeyboardInterrupt in the main thread, as Ctrl-C does,
    and their names go to the list given (a KeyboardInterrupt may be raised anew on its way
    up); one that was ignored (nohup) stays ignored."""
    received: list[str] = []

    def interrupt(number: int, frame: FrameType | None) -> None:
        received.append(signal.Signals(number).name)
        raise KeyboardInterrupt(received[-1])

    before = {number: signal.getsignal(number) for number in STOPPING}
    for number, handler in before.items():
        if handler is not signal.SIG_IGN:
            signal.signal(number, interrupt)
    try:
        yield received
    finally:
        for number, handler in before.items():
            signal.signal(number, handler)


def lines_to(stream: TextIO) -> Callable[[str], None]:
    """Where rank 0's lines go as they come: node text, its control characters spelled out."""
    return quietly(lambda line: print(printable(line), file=stream, flush=True))


def quietly(write: Callable[..., object]) -> Callable[..., None]:
    """``write``, dropping what a closed terminal or pipe refuses (after SIGHUP the job must
    still be stopped and the report written)."""

    def written(*args: object, **kwargs: object) -> None:
        with contextlib.suppress(OSError):
            write(*args, **kwargs)

    return written
