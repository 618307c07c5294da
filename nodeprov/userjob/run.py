"""``nodeprov run``: the user's own torchrun job on every node, on the verification job's
machinery (``nodejob``: one job per node, stopped everywhere together and by each node when
nodeprov is gone; ``runfailures`` and ``diagnose``: one line per failing node)::

    site = Site("/opt/nodeprov/venv", 29500, as_login={"node1": True, "node2": True})
    outcome = run_user_job(hosts, sessions, facts, request, site,
                           Output(Path("cluster.nodeprov-runs"), show=print))
    outcome.exit_code        # 0 every rank exited 0, 1 otherwise, 130 after Ctrl-C
    outcome.diagnosis        # ("node2: job: rank 1 raised ValueError: boom (...)",)

The connectivity matrix runs first (``request.preflight``) and a broken one refuses the run; then
``--sync`` sends what changed, and torchrun starts on every node at once with c10d rendezvous on
the first node's subnet address, in the venv nodeprov built, with the node's persisted NCCL/GLOO
environment (PAM reads /etc/environment for the SSH session), as the login user unless the
inventory says ``run_as_root``.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from nodeprov.errors import EnvironmentProblem
from nodeprov.job.failures import error_line, network_may_explain
from nodeprov.job.nodejob import Job, launch_all
from nodeprov.proof.connectivity import check_connectivity
from nodeprov.proof.launch import Rendezvous, endpoint, procs_per_node
from nodeprov.remote.transfer import describe
from nodeprov.userjob.ranklog import PREFIX_TEMPLATE, NodeLogs
from nodeprov.userjob.runfailures import (
    cause_order,
    failure_lines,
    first_failure,
    node_run,
    run_failures,
)
from nodeprov.userjob.runreport import NodeRun, UserJobOutcome
from nodeprov.userjob.sync import Progress, Synced, summary, sync_nodes

if TYPE_CHECKING:
    from nodeprov.inventory import Host
    from nodeprov.remote.facts import Facts
    from nodeprov.remote.session import Session
    from nodeprov.userjob.runargs import RunRequest


@dataclass(frozen=True)
class Site:
    """Where and as whom the job runs, as the inventory says: in the venv at ``venv_path``,
    meeting on the first node's ``rdzv_port``, on each node as the login user or as root
    (``as_login``)."""

    venv_path: str
    rdzv_port: int
    as_login: Mapping[str, bool]


@dataclass(frozen=True)
class Output:
    """Where a run's output goes on this machine: each node's log under ``log_root``, rank 0's
    lines to ``show``, ``--sync``'s progress to ``progress``."""

    log_root: Path
    show: Callable[[str], None]
    progress: Progress | None = None


def nprocs(hosts: Sequence[Host], facts: Mapping[str, Facts], request: RunRequest
           ) -> dict[str, int]:
    """Processes per node: the request's count, or one per GPU (one on a CPU node)."""
    return {host.name: request.nproc or procs_per_node(facts[host.name]) for host in hosts}


def plan_run(hosts: Sequence[Host], nproc: Mapping[str, int], request: RunRequest, site: Site,
             run_id: str) -> dict[str, tuple[str, ...]]:
    """Each node's torchrun command, the script and its arguments last (as argv), its ranks'
    output prefixed with their global rank."""
    meet = endpoint(hosts[0], site.rdzv_port)
    return {host.name: (*Rendezvous(site.venv_path, len(hosts), nproc[host.name], meet,
                                    run_id).argv(), "--tee", "3", *request.command)
            for host in hosts}


def run_env(request: RunRequest) -> dict[str, str]:
    """The job's environment: ranks unbuffered, their lines prefixed, then the request's
    ``--env`` (which may override PYTHONUNBUFFERED); it reaches the nodes in a private file."""
    return {"PYTHONUNBUFFERED": "1", "TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE": PREFIX_TEMPLATE,
            **dict(request.env)}


def run_user_job(hosts: Sequence[Host], sessions: Mapping[str, Session],
                 facts: Mapping[str, Facts], request: RunRequest, site: Site, output: Output
                 ) -> UserJobOutcome:
    """Preflight, sync, run on ``hosts`` (the first hosts the rendezvous), say how it went."""
    started = time.monotonic()
    run_id = f"nodeprov-run-{secrets.token_hex(6)}"
    names = [host.name for host in hosts]
    nproc = nprocs(hosts, facts, request)
    matrix = (check_connectivity(hosts, sessions, facts, site.rdzv_port) if request.preflight
              else None)
    if matrix is not None and not matrix.ok:
        return UserJobOutcome(run_id, {}, tuple(matrix.problems()), time.monotonic() - started,
                              matrix=matrix, refused=True)
    synced: dict[str, Synced | Exception] = {}
    if request.sync:  # KeyboardInterrupt: nothing started
        synced = sync_nodes(sessions, request.sync,
                            as_login={n: site.as_login[n] for n in names},
                            stop=threading.Event(), progress=output.progress)
        if output.progress is not None:
            output.progress.close(summary(synced))
        problems = {n: e for n, e in synced.items() if isinstance(e, Exception)}
        if problems:
            return UserJobOutcome(run_id, {n: NodeRun(None, time.monotonic() - started, False,
                                                      "", error=error_line(n, "sync", e))
                                           for n, e in problems.items()},
                                  tuple(error_line(n, "sync", e) for n, e in problems.items()),
                                  time.monotonic() - started, matrix=matrix, refused=True)
    commands = plan_run(hosts, nproc, request, site, run_id)
    job = Job(run_id, commands, request.timeout, run_env(request), request.workdir,
              script_at=len(commands[names[0]]) - len(request.command), as_login=site.as_login)
    directory = output.log_root / run_id
    try:
        logs = NodeLogs(directory, names, output.show)
    except OSError as error:
        raise EnvironmentProblem(f"cannot keep the run's logs in {directory}: "
                                 f"{describe(error)}") from None
    with logs:
        try:
            launch = launch_all(names, sessions, job, streams=logs.streams)
        except KeyboardInterrupt:  # launch_all has stopped the job on every node
            took = time.monotonic() - started
            return UserJobOutcome(
                run_id, {name: _with_sync(NodeRun(None, took, True, str(logs.paths[name]),
                                                  nproc=nproc[name]), synced.get(name))
                         for name in names},
                (), took, matrix=matrix, interrupted="SIGINT",  # the caller knows better
                log_dir=str(directory), ranks=sum(nproc.values()))
    failed = run_failures(launch, logs.paths, nproc,
                          {name: facts[name].gpu_count for name in names})
    diagnosis = failure_lines(launch, failed, logs.paths, seconds=request.timeout)
    unexplained = {name: f.failure for name, f in failed.items() if f.exception is None}
    if diagnosis and not request.preflight and network_may_explain(unexplained):
        # The job's messages rarely name the blocked peer; the matrix does.
        diagnosis += check_connectivity(hosts, sessions, facts, site.rdzv_port).problems()
    nodes = {name: _with_sync(node_run(name, launch, logs.paths[name], nproc[name]),
                              synced.get(name)) for name in names}
    return UserJobOutcome(run_id, nodes, tuple(diagnosis), time.monotonic() - started,
                          matrix=matrix, log_dir=str(directory), ranks=sum(nproc.values()),
                          first_failure=first_failure(launch, failed),
                          notes=tuple(f"{name}: {note}" for name, note in launch.notes.items()),
                          failed=cause_order(launch, failed),
                          lost_peer=tuple(name for name, f in failed.items() if f.lost_peer))


def _with_sync(node: NodeRun, synced: Synced | Exception | None) -> NodeRun:
    if not isinstance(synced, Synced):
        return node
    return replace(node, synced=synced.files, sync_s=synced.seconds)
