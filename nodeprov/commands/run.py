"""``nodeprov run`` outside Typer: connect, run the job, report, pick the exit code."""

from __future__ import annotations

import sys
from pathlib import Path

from rich.console import Console

from nodeprov.commands.opening import open_for
from nodeprov.commands.report import write_reports
from nodeprov.config.defaults import AnsibleOptions
from nodeprov.engine.node_address import with_node_addresses
from nodeprov.errors import EXIT_HOST_FAILED, EXIT_INTERRUPTED
from nodeprov.job.runargs import RunRequest
from nodeprov.remote.connect import connect_all
from nodeprov.remote.options import SshOptions
from nodeprov.util.redact import Redactor
from nodeprov.util.validate import printable

RUNS_SUFFIX = ".nodeprov-runs"  # beside the inventory, as its baseline is


def run_command(inventory_path: Path | None, request: RunRequest, ansible: AnsibleOptions,
                redactor: Redactor, *, limit: str | None, forks: int | None,
                accept_new_host_keys: bool, json_path: str | None,
                html_path: str | None = None) -> int:
    from nodeprov.job.run import run_user_job
    from nodeprov.remote.hostkeys import SshFiles  # lazy: Fabric is slow to import

    opened = open_for(inventory_path, ansible, redactor)
    inventory = opened.inventory
    forks = opened.forks(forks)
    hosts = inventory.limited(limit)
    shown = sys.stderr if json_path == "-" else sys.stdout  # --json -: stdout is the report's
    err = Console(stderr=True, highlight=False, soft_wrap=True, markup=False, emoji=False)
    sessions, facts, errors = connect_all(
        hosts, SshOptions(accept_new_host_keys=accept_new_host_keys), forks,
        SshFiles(inventory.ssh_configs))
    hosts, problems = with_node_addresses(hosts, facts)
    errors.update(problems)
    try:
        if errors:
            for line in errors.values():
                err.print(f"FAILED {line}", style="bold red")
            err.print(f"FAIL: not started: {len(errors)} of {len(hosts)} nodes unreachable",
                      style="bold red")
            return EXIT_HOST_FAILED
        err.print(f"run: torchrun on {len(hosts)} nodes"
                  + (" after the connectivity matrix" if request.preflight else "") + " ...")
        try:
            outcome = run_user_job(
                hosts, sessions, facts, request, venv_path=hosts[0].vars["venv_path"],
                rdzv_port=hosts[0].vars["rdzv_port"],
                log_root=inventory.path.with_name(inventory.path.stem + RUNS_SUFFIX),
                show=lambda line: print(line, file=shown, flush=True))
        except KeyboardInterrupt:  # before the launch (matrix, sync): nothing was started
            err.print("INTERRUPTED: before the job started", style="bold red")
            return EXIT_INTERRUPTED
    finally:
        for session in sessions.values():
            session.close()
    if outcome.matrix is not None and not outcome.matrix.ok:
        err.print(outcome.matrix.table())
    failure = outcome.first_failure
    if failure is not None:
        who = f"rank {failure.rank}" if failure.rank is not None else "torchrun"
        err.print(f"--- {failure.node}, {who}: last lines ---")
        err.print(failure.tail)
    for line in outcome.diagnosis:
        err.print(printable(f"FAILED {line}"), style="bold red")  # node text
    err.print(outcome.verdict(), style="green" if outcome.ok else "bold red")
    if json_path or html_path:
        write_reports(redactor.walk(outcome.to_json()), json_path, html_path)
    return outcome.exit_code
