"""What the CLI commands do, outside Typer: load, validate, run, report, pick the exit code."""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence
from contextlib import ExitStack
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console
from rich.table import Table

from nodeprov.errors import EXIT_HOST_FAILED, EXIT_INTERRUPTED, EXIT_OK
from nodeprov.inventory import Host, Inventory, load_inventory
from nodeprov.playbook import JobSpec, load_playbook
from nodeprov.report import LiveReporter, PlainReporter, json_report, print_recap
from nodeprov.runner import Interrupted, RunOptions, RunOutcome, run_playbook
from nodeprov.session import Session, SshOptions, connect_all

if TYPE_CHECKING:
    from nodeprov.prove import Proof


def default_playbook() -> Path:
    return Path(str(resources.files("nodeprov").joinpath("playbooks", "site.yaml")))


def select_hosts(inventory: Inventory, limit: str | None) -> list[Host]:
    return inventory.select(limit, limit=True) if limit else list(inventory.hosts)


def run_apply(inventory_path: Path, playbook_path: Path | None, *, check: bool, diff: bool,
              limit: str | None, tags: str | None, forks: int, accept_new_host_keys: bool,
              json_path: str | None, verbose: bool) -> int:
    from nodeprov.hostkeys import SshFiles  # lazy: Fabric is slow to import

    inventory = load_inventory(inventory_path, playbook_path.parent if playbook_path else None)
    playbook = load_playbook(playbook_path or default_playbook(), inventory)
    targets = select_hosts(inventory, limit)
    options = RunOptions(
        check=check, forks=forks,
        tags=frozenset(t.strip() for t in tags.split(",") if t.strip()) if tags else frozenset(),
        ssh=SshOptions(accept_new_host_keys=accept_new_host_keys),
    )
    console = Console(stderr=json_path == "-", highlight=False, soft_wrap=True)
    files = SshFiles(inventory.ssh_configs)
    sessions = {host.name: Session(host, options.ssh, files) for host in inventory.hosts}
    proofs: list[Proof] = []
    interrupted = False
    with ExitStack() as stack:
        for session in sessions.values():
            stack.callback(session.close)
        with ExitStack() as live:
            if console.is_terminal:
                reporter: PlainReporter = live.enter_context(
                    LiveReporter(console, [h.name for h in targets], diff=diff, verbose=verbose))
            else:
                reporter = PlainReporter(console, diff=diff, verbose=verbose)
            try:
                run = run_playbook(playbook, inventory, targets, options, reporter, sessions)
            except Interrupted as stopped:
                run = stopped.outcome
                interrupted = True
        rerun = [str(inventory_path), *(["-p", str(playbook_path)] if playbook_path else []),
                 *(["--tags", tags] if tags else [])]
        print_recap(console, run.results, check=check, rerun=rerun)
        if interrupted:
            console.print("interrupted: each node finished the command in flight; re-run to "
                          "converge", style="bold red", markup=False, highlight=False)
            return EXIT_INTERRUPTED
        for play in playbook.plays:
            if play.job is not None and not (options.tags and not options.tags & set(
                    play.job.tags)):
                proofs += _prove(console, play.hosts, play.job, run, sessions, inventory, check)
    ok = all(r.status in ("ok", "changed") for r in run.results) and all(p.ok for p in proofs)
    if json_path:
        extra = {"ok": ok, "proofs": [proof.to_json() for proof in proofs]}
        text = json_report(run.results, check=check, extra=extra)
        if json_path == "-":
            sys.stdout.write(text + "\n")
        else:
            Path(json_path).write_text(text + "\n")
    return EXIT_OK if ok else EXIT_HOST_FAILED


def _prove(console: Console, hosts: Sequence[Host], job: JobSpec, run: RunOutcome,
           sessions: Mapping[str, Session], inventory: Inventory, check: bool) -> list[Proof]:
    """The play's verification job, when every one of its hosts came through the tasks."""
    # lazy: the job's modules load only for a playbook with a job: play
    from nodeprov.job.baseline import baseline_path
    from nodeprov.prove import print_proof, prove_cluster

    if check:
        console.print("job: not run in check mode", markup=False, highlight=False)
        return []
    facts = {host.name: run.facts.get(host.name) for host in hosts}
    blocked = [name for name, found in facts.items() if found is None] + [
        result.name for result in run.results
        if result.status == "failed" and result.name in facts]
    if blocked:
        console.print(f"job: not run: {', '.join(dict.fromkeys(blocked))} did not come through "
                      "the tasks", style="bold red", markup=False, highlight=False)
        return []
    console.print(f"job: connectivity matrix, then torchrun on {len(hosts)} nodes ...",
                  markup=False, highlight=False)
    proof = prove_cluster(hosts, sessions, {k: v for k, v in facts.items() if v is not None},
                          job.params_for(hosts[0]), baseline=baseline_path(inventory.path),
                          record=True)
    print_proof(console, proof)
    return [proof]


def run_facts(inventory_path: Path, *, limit: str | None, forks: int,
              accept_new_host_keys: bool, as_json: bool) -> int:
    from nodeprov.hostkeys import SshFiles  # lazy: Fabric is slow to import

    inventory = load_inventory(inventory_path)
    hosts = select_hosts(inventory, limit)
    sessions, facts, errors = connect_all(
        hosts, SshOptions(accept_new_host_keys=accept_new_host_keys), forks,
        SshFiles(inventory.ssh_configs))
    for session in sessions.values():
        session.close()
    gathered: dict[str, dict[str, str] | str] = {
        host.name: facts[host.name].summary() if host.name in facts else errors[host.name]
        for host in hosts}
    if as_json:
        sys.stdout.write(json.dumps(gathered, indent=2) + "\n")
    else:
        console = Console(highlight=False)
        table = Table("host", "fact", "value")
        for name, summary in gathered.items():
            rows = list(summary.items()) if isinstance(summary, dict) else [("error", summary)]
            for index, (key, value) in enumerate(rows):
                table.add_row(name if index == 0 else "", key, value,
                              end_section=index == len(rows) - 1)
        console.print(table)
    return EXIT_HOST_FAILED if errors else EXIT_OK
