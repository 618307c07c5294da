"""``nodeprov run``: the user's own torchrun job on every node, on the verification job's
machinery (``nodejob``: job lock, marker, deadline, stopped everywhere together; ``failures``
and ``diagnose``: one line per failing node)::

    outcome = run_user_job(hosts, sessions, facts, request, venv_path="/opt/nodeprov/venv",
                           rdzv_port=29500, log_root=Path("cluster.nodeprov-runs"), show=print)
    outcome.exit_code        # 0 every rank exited 0, 1 otherwise, 130 after Ctrl-C
    outcome.diagnosis        # ("node2: job: rank 1 raised ValueError: boom (...)",)

The connectivity matrix runs first (``request.preflight``) and a broken one refuses the run; then
``--sync`` sends what changed, and torchrun starts on every node at once with c10d rendezvous on
the first node's subnet address, in the venv nodeprov built, with the node's persisted NCCL/GLOO
environment (PAM reads /etc/environment for the SSH session).
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from nodeprov.job.connectivity import check_connectivity
from nodeprov.job.diagnose import diagnose
from nodeprov.job.failures import NodeFailure, network_may_explain, node_failures, tail
from nodeprov.job.launch import endpoint, procs_per_node, rendezvous_argv
from nodeprov.job.nodejob import Launch, launch_all, run_dir, wrap
from nodeprov.job.ranklog import (
    PREFIX_TEMPLATE,
    NodeLogs,
    first_traceback_rank,
    raised,
    rank_lines,
    rank_tail,
    root_cause_rank,
)
from nodeprov.job.runreport import FirstFailure, NodeRun, UserJobOutcome
from nodeprov.job.sync import local_manifest, sync_node
from nodeprov.remote.actions import Run
from nodeprov.remote.session import Result

if TYPE_CHECKING:
    from nodeprov.inventory import Host
    from nodeprov.job.runargs import RunRequest
    from nodeprov.remote.facts import Facts
    from nodeprov.remote.session import Session

DEADLINE_HINT = "raise --timeout if the training needs longer"


def nprocs(hosts: Sequence[Host], facts: Mapping[str, Facts], request: RunRequest
           ) -> dict[str, int]:
    """Processes per node: the request's count, or one per GPU (one on a CPU node)."""
    return {host.name: request.nproc or procs_per_node(facts[host.name]) for host in hosts}


def plan_run(hosts: Sequence[Host], nproc: Mapping[str, int], request: RunRequest, *,
             venv_path: str, rdzv_port: int, run_id: str) -> dict[str, tuple[str, ...]]:
    """Each node's command: the venv's torchrun under the job wrapper, workers unbuffered and
    their lines prefixed with the global rank, the request's env after nodeprov's (so the user
    may override PYTHONUNBUFFERED), the script and its arguments as argv."""
    meet = endpoint(hosts[0], rdzv_port)
    environment = ["PYTHONUNBUFFERED=1", f"TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE={PREFIX_TEMPLATE}",
                   *(f"{name}={value}" for name, value in request.env)]
    return {
        host.name: wrap(run_id, request.timeout, [
            "env", "--", *environment,
            *rendezvous_argv(venv_path=venv_path, nnodes=len(hosts), nproc=nproc[host.name],
                             endpoint=meet, run_id=run_id),
            # torchrun's own log directory would be left in /tmp; the stop step removes this one
            "--log-dir", f"{run_dir(run_id)}/logs", "--tee", "3", *request.command],
            workdir=request.workdir)
        for host in hosts
    }


def run_user_job(hosts: Sequence[Host], sessions: Mapping[str, Session],
                 facts: Mapping[str, Facts], request: RunRequest, *, venv_path: str,
                 rdzv_port: int, log_root: Path, show: Callable[[str], None]) -> UserJobOutcome:
    """Preflight, sync, run on ``hosts`` (the first hosts the rendezvous), say how it went."""
    started = time.monotonic()
    run_id = f"nodeprov-run-{secrets.token_hex(6)}"
    names = [host.name for host in hosts]
    nproc = nprocs(hosts, facts, request)
    matrix = check_connectivity(hosts, sessions, facts, rdzv_port) if request.preflight else None
    if matrix is not None and not matrix.ok:
        return UserJobOutcome(run_id, {}, tuple(matrix.problems()), time.monotonic() - started,
                          matrix=matrix, refused=True)
    argv = plan_run(hosts, nproc, request, venv_path=venv_path, rdzv_port=rdzv_port,
                    run_id=run_id)
    local = local_manifest(request.sync) if request.sync else {}
    synced: dict[str, int] = {}

    def prepare(name: str) -> None:
        if request.sync:
            synced[name] = len(sync_node(sessions[name], request.sync, local))
        sessions[name].execute("job", (Run(("mkdir", "-p", run_dir(run_id))),))

    directory = log_root / run_id
    with NodeLogs(directory, names, show) as logs:
        try:
            launch = launch_all(names, sessions, run_id=run_id, argv=argv,
                                seconds=request.timeout, prepare=prepare, streams=logs.streams)
        except KeyboardInterrupt:  # launch_all has stopped the job on every node
            took = time.monotonic() - started
            stopped = {name: NodeRun(None, took, True, str(logs.paths[name]), synced.get(name),
                                     nproc=nproc[name]) for name in names}
            return UserJobOutcome(run_id, stopped, (), took, matrix=matrix, interrupted=True,
                              log_dir=str(directory), ranks=sum(nproc.values()))
    failed = _failed(launch, logs.paths)
    diagnosis = _lines(launch, failed, logs.paths, request)
    unexplained = {name: f.failure for name, f in failed.items() if f.exception is None}
    if diagnosis and not request.preflight and network_may_explain(unexplained):
        # The job's messages rarely name the blocked peer; the matrix does.
        diagnosis += check_connectivity(hosts, sessions, facts, rdzv_port).problems()
    nodes = {name: _node_run(name, launch, logs.paths[name], synced.get(name), nproc[name])
             for name in names}
    # The node whose rank raised by itself, else the first to fail: its tail is the one to read.
    first = next((n for n, f in failed.items() if f.exception), next(iter(failed), None))
    return UserJobOutcome(run_id, nodes, tuple(diagnosis), time.monotonic() - started,
                      matrix=matrix, log_dir=str(directory), ranks=sum(nproc.values()),
                      first_failure=FirstFailure(first, failed[first].rank, failed[first].tail)
                      if first else None)


@dataclass(frozen=True)
class _Failed:
    """A node that failed by itself: its failing rank (from torchrun's summary), that rank's
    last lines (torchrun's own when it names none), the exception the rank raised."""

    failure: NodeFailure
    rank: int | None
    tail: str
    exception: str | None


def _failed(launch: Launch, paths: Mapping[str, Path]) -> dict[str, _Failed]:
    """The nodes that failed by themselves, in the order they ended, diagnosed from the failing
    rank's lines (torchrun's summary and traceback push them out of the node's tail). A node
    stopped while its rank's exception was on its way out counts too: a peer that only lost its
    connection to that rank may have ended first. After the deadline, every node that ended by
    itself timed out."""
    failed = {}
    for name in dict.fromkeys([*launch.ended, *launch.launched]):
        result = launch.launched.get(name)
        stopped = name in launch.stopped
        if not isinstance(result, Result) or (result.exit_code == 0 and not stopped):
            continue
        rank = root_cause_rank(tail(result, 10_000))
        if rank is None:
            rank = first_traceback_rank(paths[name])
        said = rank_tail(paths[name], rank) if rank is not None else ""
        if launch.deadline_passed:  # what the ranks said then is the kill's echo, not a cause
            if not stopped:
                failed[name] = _Failed(NodeFailure(result, None, at_deadline=True), rank,
                                       said or tail(result), None)
            continue
        # The failing rank's own words first: a rule on them, else its exception; torchrun's
        # tail (other ranks, the rendezvous) only when the rank says nothing a rule knows.
        found = diagnose(said, name) if said else None
        exception = raised(rank_lines(paths[name], rank)) if rank is not None and not found \
            else None
        if stopped and (exception is None or found is not None):
            continue  # stopped while it ran well, or failing only because a peer did
        if found is None and exception is None:
            found = diagnose(tail(result), name)
        failed[name] = _Failed(NodeFailure(result, found), rank, said or tail(result), exception)
    return failed


def _lines(launch: Launch, failed: Mapping[str, _Failed], paths: Mapping[str, Path],
           request: RunRequest) -> list[str]:
    """One line per failing node: a rule's diagnosis, else the exception its rank raised,
    else what torchrun last said."""
    lines = [f"{name}: {'sync' if request.sync else 'job'}: cannot prepare the node: {error}"
             for name, error in launch.prepare_errors.items()]
    lines += [f"{name}: job: rank {each.rank} raised {each.exception} (an error in the script; "
              f"its traceback is in {paths[name]})"
              for name, each in failed.items() if each.exception is not None]
    others = {name: each.failure for name, each in failed.items() if each.exception is None}
    lines += node_failures({n: r for n, r in launch.launched.items()
                            if isinstance(r, Exception) or n in others},
                           others, seconds=request.timeout, deadline_hint=DEADLINE_HINT)
    return lines + [f"{name}: job: could not stop the job: {error}"
                    for name, error in launch.results.items() if isinstance(error, Exception)]


def _node_run(name: str, launch: Launch, log: Path, synced: int | None,
              nproc: int) -> NodeRun:
    result = launch.launched.get(name)
    return NodeRun(result.exit_code if isinstance(result, Result) else None,
                   launch.durations.get(name, 0.0), name in launch.stopped, str(log), synced,
                   str(result) if isinstance(result, Exception) else "", nproc)
