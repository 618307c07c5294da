"""``nodeprov verify``: the checks (checks.verify), their drift lines and summary, then the
cluster proven again with the job; changes nothing.

    code = run_verify(VerifyRequest(json_path="-"), Redactor())

The JSON report (``--json PATH``, ``nodeprov.jsonreport``'s schema) has ``"drift": [line, ...]``
and ``"checks": [{"check", "node", "area", "outcome", "message", "repair", "duration"}]``, and
the job's proofs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from rich.console import Console

from nodeprov.checks.verify import Verification, run_checks
from nodeprov.commands.header import Header
from nodeprov.commands.opening import open_for
from nodeprov.commands.report import write_reports
from nodeprov.commands.requests import VerifyRequest
from nodeprov.commands.verdict import Part, passed, print_verdict, proof_parts, verdict
from nodeprov.errors import EXIT_HOST_FAILED, EXIT_OK
from nodeprov.inventory import Inventory
from nodeprov.inventory.extravars import parse_extra_vars
from nodeprov.jsonreport import document
from nodeprov.playbook import default_playbook, load_playbook
from nodeprov.remote.connect import connect_all
from nodeprov.remote.options import SshOptions
from nodeprov.util.redact import Redactor
from nodeprov.util.units import counted
from nodeprov.util.validate import printable

if TYPE_CHECKING:
    from nodeprov.proof.prove import Proof


def print_report(console: Console, verification: Verification) -> None:
    """Drift lines and a summary."""
    for line in verification.drift_lines():
        console.print(printable(line),  # node text
                      style="bold red", markup=False)
    for result in verification.results:
        if result.outcome == "passed" and result.message:
            console.print(printable(result.message), style="yellow", markup=False)
    nodes = len({result.node for result in verification.results if result.node})
    console.print(f"verify: {nodes} nodes, {len(verification.results)} checks: "
                  f"{verification.count('passed')} passed, {verification.count('failed')} "
                  f"drifted, {verification.count('error')} could not run, "
                  f"{verification.count('skipped')} skipped in "
                  f"{verification.duration:.1f}s", markup=False)


def report_json(verification: Verification, proofs: Sequence[Proof] = ()) -> dict[str, Any]:
    """The JSON report (``nodeprov.jsonreport``'s schema); ``ok`` and ``verdict`` cover the
    proofs too."""
    line = verdict([_checks_part(verification), *proof_parts(proofs, strict=True)])
    return document("verify", passed(line), verdict=line, duration=verification.duration,
                    drift=verification.drift_lines(),
                    checks=[asdict(result) for result in verification.results],
                    proofs=[proof.to_json() for proof in proofs])


def _checks_part(verification: Verification) -> Part:
    nodes = len({result.node for result in verification.results if result.node})
    checks = f"{counted(len(verification.results), 'check')} on {counted(nodes, 'node')}"
    if verification.ok:
        return Part(f"{checks}, no drift")
    could_not = verification.count("error")
    return Part(f"{checks}: {verification.count('failed')} drifted"
                + (f", {could_not} could not run" if could_not else ""), False)


def run_verify(request: VerifyRequest, redactor: Redactor) -> int:
    """The checks, then (``job``) the connectivity matrix and the job compared with the
    bandwidth baseline apply recorded (``pairwise``: and the job on every pair of nodes,
    ``slow_nodes``: only until the slow nodes are named);
    prints the report and returns the exit code."""
    playbook_path = request.playbook
    extra = parse_extra_vars(request.extra_vars)
    opened = open_for(request.inventory, request.ansible, redactor, extra=extra,
                      playbook_dir=playbook_path.parent if playbook_path else None)
    forks = opened.forks(request.forks)
    # a report on stdout (--json - or --html -): everything else goes to stderr
    console = Console(stderr="-" in (request.json_path, request.html_path), highlight=False,
                      soft_wrap=True)
    header = Header.now("verify", opened.inventory.path)
    console.print(header.line(), markup=False, highlight=False)
    verification = run_checks(opened.inventory, playbook_path, limit=request.limit,
                              accept_new_host_keys=request.accept_new_host_keys,
                              extra_vars=request.extra_vars, forks=forks)
    print_report(console, verification)
    proofs = _prove_again(console, opened.inventory, request, forks,
                          extra) if request.job else []
    report = {**report_json(verification, proofs), **header.fields()}
    print_verdict(console, report["verdict"])
    write_reports(redactor.walk(report), request.json_path, request.html_path)
    return EXIT_OK if report["ok"] else EXIT_HOST_FAILED


def _prove_again(console: Console, inventory: Inventory, request: VerifyRequest, forks: int,
                 extra: Mapping[str, Any]) -> list[Proof]:
    # lazy: the job's modules load only when the job runs (not for --no-job)
    from nodeprov.proof.baseline import baseline_path
    from nodeprov.proof.matrix import Matrix
    from nodeprov.proof.prove import Against, Proof, print_proof, prove_cluster
    from nodeprov.remote.hostkeys import SshFiles

    playbook = load_playbook(request.playbook or default_playbook(), inventory, extra)
    options = SshOptions(accept_new_host_keys=request.accept_new_host_keys)
    pairwise, slow_nodes = request.pairwise, request.slow_nodes
    files = SshFiles(inventory.ssh_configs)
    proofs = []
    for play in playbook.plays:
        if play.job is None:
            continue
        sessions, facts, errors = connect_all(play.hosts, options, forks, files)
        try:
            if errors:
                for line in errors.values():
                    console.print(f"job: not run: {line}", style="bold red", markup=False)
                proofs.append(Proof(Matrix(tuple(sessions), (), tuple(errors.values())), None))
                continue
            pairs = (" and on pairs of them until the slow nodes are named" if slow_nodes
                     else " and on every pair of them" if pairwise else "")
            console.print(f"job: connectivity matrix, then torchrun on {len(play.hosts)} "
                          f"nodes{pairs} ...", markup=False, highlight=False)
            proof = prove_cluster(play.hosts, sessions, facts, play.job.params_for(play.hosts[0]),
                                  Against(baseline_path(inventory.path)), pairwise=pairwise,
                                  slow_nodes=slow_nodes)
            print_proof(console, proof)
            proofs.append(proof)
        finally:
            for session in sessions.values():
                session.close()
    return proofs
