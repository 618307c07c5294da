"""``nodeprov apply``: load and check the inventory and playbook, run the plays (batch by batch
where ``serial:`` says), prove the cluster with the job, report, pick the exit code::

    code = run_apply(ApplyRequest(check=True, diff=True), Redactor())
    # no inventory given: ansible.cfg's, as ansible-playbook takes it
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from contextlib import ExitStack
from typing import TYPE_CHECKING, Any

from rich.console import Console

from nodeprov import jsonreport
from nodeprov.commands.console import LiveReporter, PlainReporter, print_batches, print_recap
from nodeprov.commands.header import Header
from nodeprov.commands.opening import open_for
from nodeprov.commands.report import write_reports
from nodeprov.commands.requests import ApplyRequest
from nodeprov.commands.verdict import (
    Part,
    passed,
    print_verdict,
    proof_parts,
    verdict,
    warned,
)
from nodeprov.engine.outcome import HostResult, Interrupted, PlaybookOutcome
from nodeprov.engine.rolling import Rolled, run_rolling
from nodeprov.engine.runner import RunOptions
from nodeprov.errors import EXIT_HOST_FAILED, EXIT_INTERRUPTED, EXIT_OK, EXIT_SLOWER_PATH
from nodeprov.inventory import Host, Inventory
from nodeprov.inventory.extravars import parse_extra_vars, repeatable
from nodeprov.playbook import JobSpec, default_playbook, load_playbook
from nodeprov.playbook.listing import print_listing
from nodeprov.playbook.tags import selected, tag_set
from nodeprov.remote.options import SshOptions
from nodeprov.remote.session import Session
from nodeprov.util.redact import Redactor

if TYPE_CHECKING:
    from nodeprov.proof.prove import Proof


def run_apply(request: ApplyRequest, redactor: Redactor) -> int:
    from nodeprov.remote.hostkeys import SshFiles  # lazy: Fabric is slow to import
    from nodeprov.util.progress import Transfers  # lazy: rich's live display with it

    check, playbook_path = request.check, request.playbook
    extra = parse_extra_vars(request.extra_vars)
    opened = open_for(request.inventory, request.ansible, redactor, extra=extra,
                      playbook_dir=playbook_path.parent if playbook_path else None)
    inventory = opened.inventory
    playbook = load_playbook(playbook_path or default_playbook(), inventory, extra)
    targets = inventory.limited(request.limit)
    options = RunOptions(check=check, forks=opened.forks(request.forks),
                         tags=tag_set(request.tags), skip_tags=tag_set(request.skip_tags),
                         ssh=SshOptions(accept_new_host_keys=request.accept_new_host_keys))
    # a report on stdout (--json - or --html -): everything else goes to stderr
    console = Console(stderr="-" in (request.json_path, request.html_path), highlight=False,
                      soft_wrap=True)
    if request.list_hosts or request.list_tasks:
        print_listing(console, playbook, targets, hosts=request.list_hosts,
                      tasks=request.list_tasks, only=options.tags, skip=options.skip_tags)
        return EXIT_OK
    header = Header.now("apply", inventory.path)
    console.print(header.line(), markup=False, highlight=False)
    files = SshFiles(inventory.ssh_configs)
    # torch's wheels sent to the nodes: bars on a terminal, a line per node at start and end
    transfers = Transfers(console, live=console.is_terminal)
    sessions = {host.name: Session(host, options.ssh, files, transfers)
                for host in inventory.hosts}
    proofs: list[Proof] = []
    interrupted = False
    with ExitStack() as stack:
        for session in sessions.values():
            stack.callback(session.close)
        with ExitStack() as live:
            if console.is_terminal:
                reporter: PlainReporter = live.enter_context(
                    LiveReporter(console, [h.name for h in targets], diff=request.diff,
                                 verbose=request.verbose, transfers=transfers))
            else:
                reporter = PlainReporter(console, diff=request.diff, verbose=request.verbose)
            try:
                rolled = run_rolling(playbook, inventory, targets, options, reporter, sessions)
            except Interrupted as stopped:
                rolled = Rolled(stopped.outcome, ())
                interrupted = True
        rerun = [str(inventory.path), *(["-p", str(playbook_path)] if playbook_path else []),
                 *(["--tags", request.tags] if request.tags else []),
                 *(["--skip-tags", request.skip_tags] if request.skip_tags else []),
                 *repeatable(request.extra_vars)]
        run = rolled.run
        print_recap(console, run.results, check=check, rerun=rerun)
        print_batches(console, rolled.batches, rolled.stopped,
                      [h.name for h in targets if h.name not in {r.name for r in run.results}])
        if interrupted:
            console.print("interrupted: each node finished the command in flight; re-run to "
                          "converge", style="bold red", markup=False, highlight=False)
            return EXIT_INTERRUPTED
        for play in playbook.plays if rolled.stopped is None else ():
            if play.job is not None and selected(play.job.tags, options.tags,
                                                 options.skip_tags):
                proofs += _prove(console, play.hosts, play.job, run, sessions, inventory,
                                 request)
    line = verdict(_parts(run.results, check, rolled.stopped, proofs))
    print_verdict(console, line)
    if request.json_path or request.html_path:
        write_reports(redactor.walk(apply_report(
            run.results, check=check, proofs=proofs, ok=passed(line), verdict=line,
            **header.fields(),
            batches=[dataclasses.asdict(b) for b in rolled.batches], stopped=rolled.stopped)),
            request.json_path, request.html_path)
    return EXIT_OK if passed(line) else EXIT_SLOWER_PATH if warned(line) else EXIT_HOST_FAILED


def _parts(results: Sequence[HostResult], check: bool, stopped: str | None,
           proofs: Sequence[Proof]) -> list[Part]:
    """The verdict's parts: the hosts, a stopped run, each proof."""
    failed = [result.name for result in results if result.status not in ("ok", "changed")]
    changed = sum(task.status == "changed" for result in results for task in result.tasks)
    hosts = (Part(f"{len(failed)} of {len(results)} hosts failed: {', '.join(failed)}", False)
             if failed else Part(f"{len(results)} hosts ok, {changed} tasks "
                                 f"{'would change' if check else 'changed'}"))
    return [hosts, *([Part(f"stopped: {stopped}", False)] if stopped else []),
            *proof_parts(proofs)]


def _prove(console: Console, hosts: Sequence[Host], job: JobSpec, run: PlaybookOutcome,
           sessions: Mapping[str, Session], inventory: Inventory,
           request: ApplyRequest) -> list[Proof]:
    """The play's verification job, when every one of its hosts came through the tasks."""
    # lazy: the job's modules load only for a playbook with a job: play
    from nodeprov.proof.baseline import baseline_path
    from nodeprov.proof.prove import Against, print_proof, prove_cluster

    if request.check:
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
                          job.params_for(hosts[0]),
                          Against(baseline_path(inventory.path), record=True,
                                  rebaseline=request.rebaseline))
    print_proof(console, proof)
    return [proof]


def host_json(result: HostResult) -> dict[str, Any]:
    # field by field: dataclasses.asdict would deep-copy the full Facts only to drop them
    return {"status": result.status, "tasks": [dataclasses.asdict(t) for t in result.tasks],
            "error": result.error, "duration": result.duration,
            "connections": result.connections, "round_trips": result.round_trips,
            "facts": result.facts.summary() if result.facts else None}


def apply_report(results: Sequence[HostResult], *, check: bool, proofs: Iterable[Proof],
                 ok: bool, **fields: Any) -> dict[str, Any]:
    """``nodeprov apply``'s JSON report (``nodeprov.jsonreport``'s schema)."""
    return jsonreport.document("apply", ok, check=check,
                               hosts={result.name: host_json(result) for result in results},
                               proofs=[proof.to_json() for proof in proofs], **fields)
