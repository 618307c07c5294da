"""Run the verification job (``nodeprov.proof.allreduce``) on a set of nodes with torchrun.

    outcome = run_job(hosts, sessions, facts, JobLaunch(
        backend="auto", venv_path="/opt/nodeprov/venv", rdzv_port=29500, timeout=120,
        max_bytes=64 << 20))
    print(outcome.verdict)           # PASS: 3 nodes, 3 ranks (gloo): ... peak busbw ...
    for line in outcome.failures:    # node3: firewall: gloo peers could not connect: ... (fix)
        print(line)
    outcome.cause                    # FAIL: node1 -> node3: ... (what a pair's line says)

The verdict is the job's own line (``FAIL: the gloo job failed on 3 nodes``), never one of its
failures: those are listed once, in ``failures``.

One round trip per node copies the job's package, then ``nodejob.launch_all`` starts the venv's
torchrun on every node at once and stops it everywhere at the first failure, the deadline or
Ctrl-C. The result is the job's JSON file read back from the nodes, never scraped from logs.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from typing import TYPE_CHECKING, Any

from nodeprov.errors import EXIT_BAD_INPUT, NodeprovError
from nodeprov.job.failures import failed_nodes, network_may_explain, node_failures, tail
from nodeprov.job.nodejob import JOB_DIR, Job, Stopped, launch_all, run_dir
from nodeprov.proof.connectivity import check_connectivity
from nodeprov.proof.jobfabric import NCCL_ENV
from nodeprov.proof.results import JobResult, parse_result, verdict, versions
from nodeprov.remote.actions import Write
from nodeprov.remote.session import Result
from nodeprov.util.units import counted

if TYPE_CHECKING:
    from nodeprov.inventory import Host
    from nodeprov.remote.facts import Facts
    from nodeprov.remote.session import Session

PACKAGE = "nodeprov_allreduce"  # nodeprov.proof.allreduce on a node, run as a module from JOB_DIR
DEADLINE_HINT = "a hung collective? raise job_timeout if the sweep is just slow"


@dataclass(frozen=True)
class JobPlan:
    """What runs where: the backend, processes per node and each node's torchrun command."""

    run_id: str
    backend: str
    nproc: Mapping[str, int]
    argv: Mapping[str, tuple[str, ...]]

    def job(self, seconds: int) -> Job:
        """The job as nodejob runs it: as root, from JOB_DIR (the package's folder); with
        NCCL's INFO lines on GPU nodes, for the transport it took (``jobfabric``)."""
        return Job(self.run_id, self.argv, seconds, workdir=JOB_DIR, state=JOB_DIR,
                   env=NCCL_ENV if self.backend == "nccl" else {})


@dataclass(frozen=True)
class JobOutcome:
    """How the job went: ``verdict`` is its PASS or FAIL line, ``failures`` each problem with
    its fix, ``cause`` the one problem a pair's line names (``proof.pairwise``)."""

    ok: bool
    result: JobResult | None
    verdict: str
    failures: list[str]
    duration_s: float
    tails: Mapping[str, str] = field(default_factory=dict)
    backend: str = ""
    versions: Mapping[str, Mapping[str, str | None]] = field(default_factory=dict)  # by node
    outputs: Mapping[str, str] = field(default_factory=dict)  # each node's, NCCL's lines in it
    cause: str = ""  # FAIL: the failure that explains the rest; "" when the job passed

    def to_json(self) -> dict[str, Any]:
        return {"ok": self.ok, "verdict": self.verdict, "failures": self.failures,
                "duration_s": round(self.duration_s, 3), "backend": self.backend,
                "tails": dict(self.tails)}


class JobPlanError(NodeprovError, ValueError):
    """The job cannot run on these nodes as asked (nccl without GPUs); the message says why."""

    exit_code = EXIT_BAD_INPUT


def choose_backend(requested: str, facts: Sequence[Facts]) -> str:
    """nccl when every node has a GPU, else gloo, unless ``requested`` names one."""
    if requested != "auto":
        return requested
    return "nccl" if all(f.gpu_count for f in facts) else "gloo"  # RCCL on ROCm builds


def procs_per_node(facts: Facts) -> int:
    """One process per GPU, one on a CPU node; under MIG, CUDA shows a process one device."""
    if facts.gpu is not None and facts.gpu.mig:
        return 1
    return max(facts.gpu_count, 1)


def endpoint(host: Host, rdzv_port: int) -> str:
    """The c10d rendezvous endpoint on ``host``'s node_subnet address: ``[fd00::1]:29500``."""
    address = host.node_address
    return f"[{address}]:{rdzv_port}" if ":" in address else f"{address}:{rdzv_port}"


@dataclass(frozen=True)
class Rendezvous:
    """Where and how one node's torchrun meets the others: the venv's torchrun, ``nnodes``
    nodes of ``nproc`` processes here, c10d at ``endpoint`` under ``run_id``."""

    venv_path: str
    nnodes: int
    nproc: int
    endpoint: str
    run_id: str

    def argv(self) -> list[str]:
        """torchrun with c10d rendezvous (which ignores --node-rank, so none is given) and no
        restarts: a failure is the job's end."""
        return [f"{self.venv_path}/bin/torchrun", "--nnodes", str(self.nnodes),
                "--nproc-per-node", str(self.nproc), "--rdzv-backend", "c10d",
                "--rdzv-endpoint", self.endpoint, "--rdzv-id", self.run_id, "--max-restarts", "0"]


def torchrun_argv(meet: Rendezvous, *, backend: str, run_dir: str, max_bytes: int,
                  seconds: int) -> list[str]:
    """The job's torchrun command line on one node."""
    # A missing or unreachable peer fails the job by itself well before the deadline kill.
    collective_timeout = max(5, seconds // 4)
    return [*meet.argv(),
            "--rdzv-conf", f"join_timeout={collective_timeout}",
            "--module", PACKAGE, "--backend", backend, "--result", f"{run_dir}/result.json",
            "--min-bytes", str(min(8, max_bytes)), "--max-bytes", str(max_bytes),
            "--timeout", str(collective_timeout)]


@dataclass(frozen=True)
class JobLaunch:
    """What the job is run with (a play's ``job:`` gives it: proof.prove): the backend (auto,
    nccl, gloo), the venv, the rendezvous port, the deadline in seconds, the largest size."""

    backend: str
    venv_path: str
    rdzv_port: int
    timeout: int
    max_bytes: int


def plan_job(hosts: Sequence[Host], facts: Mapping[str, Facts], job: JobLaunch,
             run_id: str) -> JobPlan:
    """Each node's command line; JobPlanError when nccl is asked of a node without GPUs."""
    chosen = choose_backend(job.backend, [facts[host.name] for host in hosts])
    if chosen == "nccl":
        missing = [h.name for h in hosts if not facts[h.name].gpu_count]
        if missing:
            raise JobPlanError(f"backend nccl needs GPUs on every node; {', '.join(missing)} "
                               "has none (set job_backend: gloo or auto)")
    meet = endpoint(hosts[0], job.rdzv_port)
    nproc = {host.name: procs_per_node(facts[host.name]) for host in hosts}
    argv = {
        host.name: tuple(torchrun_argv(
            Rendezvous(job.venv_path, len(hosts), nproc[host.name], meet, run_id),
            backend=chosen, run_dir=run_dir(run_id), max_bytes=job.max_bytes,
            seconds=job.timeout))
        for host in hosts
    }
    return JobPlan(run_id, chosen, nproc, argv)


def job_files() -> tuple[Write, ...]:
    """The job's package, written to JOB_DIR/PACKAGE on a node (a Write makes the folder).

    Read as files of ``nodeprov.proof``: importing the package itself imports torch, which the
    admin machine does not have.
    """
    modules = sorted((each for each in resources.files("nodeprov.proof").joinpath("allreduce")
                      .iterdir()
                      if each.name.endswith(".py")), key=lambda each: each.name)
    return tuple(Write(f"{JOB_DIR}/{PACKAGE}/{each.name}", each.read_text(), 0o644)
                 for each in modules)


def _read_result(found: Mapping[str, Stopped | Exception]) -> tuple[
        JobResult | None, list[str], dict[str, JobResult]]:
    """The job's result (every node wrote the same one, with its own versions), problems
    reading it back, and each node's result."""
    problems = [f"{name}: job: could not stop the job or read its result: {each}"
                for name, each in found.items() if isinstance(each, Exception)]
    parsed = {}
    for name, each in found.items():
        if isinstance(each, Stopped) and each.result and each.result.strip():
            try:
                parsed[name] = parse_result(each.result)
            except ValueError as error:
                problems.append(f"{name}: job: {error}")
    return next(iter(parsed.values()), None), problems, parsed


def run_job(hosts: Sequence[Host], sessions: Mapping[str, Session], facts: Mapping[str, Facts],
            job: JobLaunch) -> JobOutcome:
    """Run the job on ``hosts`` (the first one hosts the rendezvous) and say how it went."""
    started = time.monotonic()
    timeout = job.timeout
    try:
        plan = plan_job(hosts, facts, job, run_id=f"nodeprov-{secrets.token_hex(6)}")
    except JobPlanError as error:
        return JobOutcome(False, None,
                          f"FAIL: the job did not start on {counted(len(hosts), 'node')}",
                          [str(error)], time.monotonic() - started, cause=f"FAIL: {error}")
    copy = job_files()
    launch = launch_all(list(plan.argv), sessions, plan.job(timeout),
                        prepare=lambda name: sessions[name].execute("job", copy))
    failures = [f"{name}: job: cannot copy the job: {error}"
                for name, error in launch.prepare_errors.items()]
    result, unreadable, by_node = _read_result(launch.results)
    if result is not None and not result.ok:  # what failed, once: the verdict counts it
        failures.append(f"{hosts[0].name}: job: {verdict(result).removeprefix('FAIL: ')}")
    failed = failed_nodes(launch.launched, launch.stopped, launch.deadline_passed)
    failures += node_failures(launch.launched, failed, seconds=timeout,
                              deadline_hint=DEADLINE_HINT)
    culprits: list[str] = []
    if result is None and network_may_explain(failed):
        # The job's messages rarely name the blocked peer (the first node to fail may only say
        # that a peer closed the rendezvous); the matrix does.
        culprits = check_connectivity(hosts, sessions, facts, job.rdzv_port).problems()
        failures += culprits
    failures += unreadable
    if result is None and not failures:
        failures.append(f"{hosts[0].name}: job: torchrun finished but wrote no result file")
    tails = {name: tail(out) for name, out in launch.launched.items() if isinstance(out, Result)}
    outputs = {name: f"{out.stdout}\n{out.stderr}" for name, out in launch.launched.items()
               if isinstance(out, Result)}  # as bounded as every round trip's (OUTPUT_LIMIT)
    ok = result is not None and result.ok and not failures
    if result is not None and ok:
        line = verdict(result)
        cause = ""
    else:  # the verdict only counts: the FAILED lines above it say what failed
        line = f"FAIL: the {plan.backend} job failed on {counted(len(hosts), 'node')}"
        cause = verdict(result) if result is not None and not result.ok else (
            f"FAIL: {(culprits or failures)[0]}")
    return JobOutcome(ok, result, line, failures, time.monotonic() - started, tails, plan.backend,
                      {name: versions(each) for name, each in by_node.items()}, outputs, cause)
