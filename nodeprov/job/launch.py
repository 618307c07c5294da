"""Run the verification job (``allreduce.py``) on a set of nodes with the venv's torchrun.

    outcome = run_job(hosts, sessions, facts, backend="auto", venv_path="/opt/nodeprov/venv",
                      rdzv_port=29500, timeout=120, max_bytes=64 << 20)
    print(outcome.verdict)           # PASS: 3 nodes, 3 ranks (gloo): ... peak busbw ...
    for line in outcome.failures:    # node3: firewall: gloo peers could not connect: ... (fix)
        print(line)

One round trip per node copies the script, then torchrun starts on every node at once, each in
its own session under ``timeout`` (a hung job dies at the deadline even if this side is gone).
The first node that fails, an SSH error or Ctrl-C stops the job everywhere: every process that
carries this run's marker in its environment (torchrun's workers start their own sessions, so
the process group alone would miss them) gets TERM, then KILL. The result is the job's JSON file
read back from the nodes, never scraped from logs.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from importlib import resources
from typing import TYPE_CHECKING, Any

from nodeprov.job.connectivity import check_connectivity, on_every
from nodeprov.job.diagnose import Diagnosis, diagnose_nodes
from nodeprov.job.results import JobResult, parse_result, verdict, versions
from nodeprov.session import STATE_DIR, Result
from nodeprov.tasks.base import Run, Write

if TYPE_CHECKING:
    from nodeprov.facts import Facts
    from nodeprov.inventory import Host
    from nodeprov.session import Session

JOB_DIR = f"{STATE_DIR}/job"
SCRIPT_PATH = f"{JOB_DIR}/allreduce.py"
TAIL_LINES = 40
NETWORK_ITEMS = ("firewall", "hosts")  # diagnosis items the connectivity matrix can pin down
KILL_AFTER = 5  # seconds between timeout's TERM and KILL: LAUNCH's --kill-after
TIMED_OUT = (124, 128 + 9)  # timeout(1): the deadline passed; the command needed a KILL
JOB_LOCK = "/run/lock/nodeprov-job.lock"  # one job per node: a second would share its ports
# argv: lock run_dir seconds run_id torchrun... The run dir is gone when the launcher already
# stopped this run (Ctrl-C right after the start): then nothing starts. The job lock's fd passes
# down to every process of the job, so the lock is free only once the last one is gone. The pid
# file holds the process group (timeout is its leader); the marker finds the workers, which
# torchrun puts in sessions of their own.
LAUNCH = r"""cd -- "$2" || exit 125
exec 8>>"$1"
if ! flock -n 8; then
  echo "another nodeprov job is running on this node ($(cat -- "$1"))" >&2; exit 75
fi
echo "run $4 since $(date -u +%FT%TZ) from ${SSH_CLIENT%% *}" > "$1"
export NODEPROV_JOB_RUN="$4"
seconds=$3; shift 4
exec setsid -w sh -c 'echo $$ > pid; exec timeout --kill-after=5 "$@"' nodeprov-job "$seconds" "$@"
"""
# argv: run_dir run_id. Stops whatever of the run still runs, prints its result, removes it.
FINISH = r"""marked() { grep -lszxF "NODEPROV_JOB_RUN=$2" /proc/[0-9]*/environ | cut -d/ -f3; }
group=$(cat -- "$1/pid" 2>/dev/null)
[ -n "$group" ] && kill -TERM -- "-$group" 2>/dev/null
pids=$(marked "$@"); [ -n "$pids" ] && kill -TERM $pids 2>/dev/null
tries=0
while [ -n "$(marked "$@")" ] && [ "$tries" -lt 50 ]; do sleep 0.1; tries=$((tries + 1)); done
[ -n "$group" ] && kill -KILL -- "-$group" 2>/dev/null
pids=$(marked "$@"); [ -n "$pids" ] && kill -KILL $pids 2>/dev/null
cat -- "$1/result.json" 2>/dev/null
rm -rf -- "$1"
true
"""


@dataclass(frozen=True)
class JobPlan:
    """What runs where: the backend, processes per node and each node's command."""

    run_id: str
    backend: str
    nproc: Mapping[str, int]
    argv: Mapping[str, tuple[str, ...]]


@dataclass(frozen=True)
class JobOutcome:
    ok: bool
    result: JobResult | None
    verdict: str
    failures: list[str]
    duration_s: float
    tails: Mapping[str, str] = field(default_factory=dict)
    backend: str = ""
    versions: Mapping[str, Mapping[str, str | None]] = field(default_factory=dict)  # by node

    def to_json(self) -> dict[str, Any]:
        return {"ok": self.ok, "verdict": self.verdict, "failures": self.failures,
                "duration_s": round(self.duration_s, 3), "backend": self.backend,
                "tails": dict(self.tails)}


class JobPlanError(ValueError):
    """The job cannot run on these nodes as asked (nccl without GPUs); the message says why."""


def choose_backend(requested: str, facts: Sequence[Facts]) -> str:
    """nccl when every node has a GPU, else gloo, unless ``requested`` names one."""
    if requested != "auto":
        return requested
    return "nccl" if all(_has_gpus(f) for f in facts) else "gloo"


def _has_gpus(facts: Facts) -> bool:
    return facts.gpu is not None and facts.gpu.count > 0


def procs_per_node(facts: Facts) -> int:
    """One process per GPU, one on a CPU node; under MIG, CUDA shows a process one device."""
    if facts.gpu is None or not facts.gpu.count or facts.gpu.mig:
        return 1
    return facts.gpu.count


def torchrun_argv(*, venv_path: str, nnodes: int, nproc: int, endpoint: str, run_id: str,
                  backend: str, run_dir: str, max_bytes: int, seconds: int) -> list[str]:
    """The venv's torchrun with c10d rendezvous (which ignores --node-rank, so none is given)."""
    # A missing or unreachable peer fails the job by itself well before the deadline kill.
    collective_timeout = max(5, seconds // 4)
    return [f"{venv_path}/bin/torchrun", "--nnodes", str(nnodes), "--nproc-per-node", str(nproc),
            "--rdzv-backend", "c10d", "--rdzv-endpoint", endpoint, "--rdzv-id", run_id,
            "--rdzv-conf", f"join_timeout={collective_timeout}", "--max-restarts", "0",
            SCRIPT_PATH, "--backend", backend, "--result", f"{run_dir}/result.json",
            "--min-bytes", str(min(8, max_bytes)), "--max-bytes", str(max_bytes),
            "--timeout", str(collective_timeout)]


def plan_job(hosts: Sequence[Host], facts: Mapping[str, Facts], *, backend: str, venv_path: str,
             rdzv_port: int, timeout: int, max_bytes: int, run_id: str) -> JobPlan:
    """Each node's command line; JobPlanError when nccl is asked of a node without GPUs."""
    chosen = choose_backend(backend, [facts[host.name] for host in hosts])
    if chosen == "nccl":
        missing = [h.name for h in hosts if not _has_gpus(facts[h.name])]
        if missing:
            raise JobPlanError(f"backend nccl needs GPUs on every node; {', '.join(missing)} "
                               "has none (set job_backend: gloo or auto)")
    address = hosts[0].node_address
    endpoint = f"[{address}]:{rdzv_port}" if ":" in address else f"{address}:{rdzv_port}"
    run_dir = f"{JOB_DIR}/{run_id}"
    nproc = {host.name: procs_per_node(facts[host.name]) for host in hosts}
    argv = {
        host.name: ("sh", "-c", LAUNCH, "nodeprov-job", JOB_LOCK, run_dir, str(timeout), run_id,
                    *torchrun_argv(venv_path=venv_path, nnodes=len(hosts),
                                   nproc=nproc[host.name], endpoint=endpoint, run_id=run_id,
                                   backend=chosen, run_dir=run_dir, max_bytes=max_bytes,
                                   seconds=timeout))
        for host in hosts
    }
    return JobPlan(run_id, chosen, nproc, argv)


def tail(result: Result, lines: int = TAIL_LINES) -> str:
    """The last ``lines`` of a command's output, stdout first (torchrun logs to stderr)."""
    text = "\n".join(part.rstrip("\n") for part in (result.stdout, result.stderr) if part.strip())
    return "\n".join(text.splitlines()[-lines:])


def last_words(output: str) -> str:
    """The last line that says something: torchrun's failure summary ends in a rule of ``=``.

    >>> last_words("  traceback : Signal 6 (SIGABRT) received by PID 7\\n=====\\n")
    'traceback : Signal 6 (SIGABRT) received by PID 7'
    """
    said = (line.strip() for line in reversed(output.splitlines()))
    return next((line for line in said if line.strip("=-")), "no output")


@dataclass(frozen=True)
class NodeFailure:
    """A node whose torchrun failed by itself, and what a rule made of its output tail."""

    result: Result
    diagnosis: Diagnosis | None


def failed_nodes(launched: Mapping[str, Result | Exception],
                 stopped: set[str]) -> dict[str, NodeFailure]:
    """The nodes whose torchrun failed by itself (not those the launcher stopped), diagnosed."""
    failed = {name: outcome for name, outcome in launched.items() if isinstance(outcome, Result)
              and outcome.exit_code != 0 and name not in stopped}
    diagnosed = dict(diagnose_nodes({name: tail(result) for name, result in failed.items()}))
    return {name: NodeFailure(result, diagnosed.get(name)) for name, result in failed.items()}


def node_failures(launched: Mapping[str, Result | Exception], failed: Mapping[str, NodeFailure],
                  *, seconds: int) -> list[str]:
    """One line per node that could not be reached or failed by itself: the diagnosis where a
    rule knows the output, else what torchrun last said."""
    lines = [f"{name}: job: {outcome}" for name, outcome in launched.items()
             if isinstance(outcome, Exception)]
    for name, failure in failed.items():
        result, found = failure.result, failure.diagnosis
        if found is not None:
            lines.append(f"{name}: {found.item}: {found.cause} ({found.fix}); the job said: "
                         f"{found.evidence}")
        elif result.exit_code in TIMED_OUT:
            lines.append(f"{name}: job: still running after {seconds} s, killed on every node "
                         f"(a hung collective? raise job_timeout if the sweep is just slow)")
        else:
            lines.append(f"{name}: job: torchrun exited {result.exit_code}: "
                         f"{last_words(tail(result))}")
    return lines


def network_may_explain(failed: Mapping[str, NodeFailure]) -> bool:
    """Whether a node failed in a way the network between nodes may explain: a diagnosed
    firewall or name problem, or a failure no rule knows (a peer that closed the rendezvous, a
    hung collective). A missing torch or a busy node is explained without the matrix."""
    return any(f.diagnosis is None or f.diagnosis.item in NETWORK_ITEMS for f in failed.values())


@dataclass
class _Launch:
    """What happened on each node: why the copy failed, how the launch ended, whether the
    launcher stopped the node while it still ran, what the stop step returned (the result
    file's text, or why it failed)."""

    copy_errors: dict[str, Exception] = field(default_factory=dict)
    launched: dict[str, Result | Exception] = field(default_factory=dict)
    stopped: set[str] = field(default_factory=set)
    results: dict[str, str | Exception] = field(default_factory=dict)


def _launch_all(plan: JobPlan, sessions: Mapping[str, Session], seconds: int) -> _Launch:
    """Copy the job and start it on every node; stop it everywhere at the first failure or
    interruption (Ctrl-C anywhere in here included)."""
    names = list(plan.argv)
    script = resources.files("nodeprov.job").joinpath("allreduce.py").read_text()
    copy = (Write(SCRIPT_PATH, script, 0o644), Run(("mkdir", "-p", f"{JOB_DIR}/{plan.run_id}")))
    pool = ThreadPoolExecutor(len(names), thread_name_prefix="nodeprov-job")
    futures: dict[Future[Result], str] = {}
    launch = _Launch()
    try:
        copied = on_every(names, lambda name: sessions[name].execute("job", copy))
        launch.copy_errors = {n: e for n, e in copied.items() if isinstance(e, Exception)}
        for name in names if not launch.copy_errors else ():
            futures[pool.submit(sessions[name].run, plan.argv[name], task="job",
                                timeout=seconds + KILL_AFTER + 60)] = name
        pending = set(futures)
        while pending:
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            if any(f.exception() is not None or f.result().exit_code != 0 for f in done):
                break
    finally:
        launch.stopped = {futures[f] for f in futures if not f.done()}
        # Always, also after success: it reads the result and removes the run's files.
        launch.results = on_every(names, lambda name: _finish(sessions[name], plan.run_id))
        pool.shutdown(wait=True)  # the launches return once their processes are gone
    for future, name in futures.items():
        error = future.exception()
        launch.launched[name] = error if isinstance(error, Exception) else future.result()
    return launch


def _finish(session: Session, run_id: str) -> str:
    result = session.run(["sh", "-c", FINISH, "nodeprov-job-stop", f"{JOB_DIR}/{run_id}",
                          run_id], task="job", timeout=60)
    return result.stdout


def _read_result(texts: Mapping[str, str | Exception]) -> tuple[
        JobResult | None, list[str], dict[str, JobResult]]:
    """The job's result (every node wrote the same one, with its own versions), problems
    reading it back, and each node's result."""
    problems = [f"{name}: job: could not stop the job or read its result: {text}"
                for name, text in texts.items() if isinstance(text, Exception)]
    parsed = {}
    for name, text in texts.items():
        if isinstance(text, str) and text.strip():
            try:
                parsed[name] = parse_result(text)
            except ValueError as error:
                problems.append(f"{name}: job: {error}")
    return next(iter(parsed.values()), None), problems, parsed


def run_job(hosts: Sequence[Host], sessions: Mapping[str, Session], facts: Mapping[str, Facts],
            *, backend: str, venv_path: str, rdzv_port: int, timeout: int,
            max_bytes: int) -> JobOutcome:
    """Run the job on ``hosts`` (the first one hosts the rendezvous) and say how it went."""
    started = time.monotonic()
    try:
        plan = plan_job(hosts, facts, backend=backend, venv_path=venv_path, rdzv_port=rdzv_port,
                        timeout=timeout, max_bytes=max_bytes,
                        run_id=f"nodeprov-{secrets.token_hex(6)}")
    except JobPlanError as error:
        return JobOutcome(False, None, f"FAIL: {error}", [str(error)],
                          time.monotonic() - started)
    launch = _launch_all(plan, sessions, timeout)
    failures = [f"{name}: job: cannot copy the job: {error}"
                for name, error in launch.copy_errors.items()]
    result, unreadable, by_node = _read_result(launch.results)
    if result is not None and not result.ok:
        failures.append(f"{hosts[0].name}: job: {verdict(result)}")
    failed = failed_nodes(launch.launched, launch.stopped)
    failures += node_failures(launch.launched, failed, seconds=timeout)
    culprits: list[str] = []
    if result is None and network_may_explain(failed):
        # The job's messages rarely name the blocked peer (the first node to fail may only say
        # that a peer closed the rendezvous); the matrix does.
        culprits = check_connectivity(hosts, sessions, facts, rdzv_port).problems()
        failures += culprits
    failures += unreadable
    if result is None and not failures:
        failures.append(f"{hosts[0].name}: job: torchrun finished but wrote no result file")
    tails = {name: tail(out) for name, out in launch.launched.items() if isinstance(out, Result)}
    ok = result is not None and result.ok and not failures
    line = verdict(result) if result is not None and (ok or not result.ok) else (
        f"FAIL: {len(hosts)} nodes ({plan.backend}): {(culprits or failures)[0]}")
    return JobOutcome(ok, result, line, failures, time.monotonic() - started, tails, plan.backend,
                      {name: versions(each) for name, each in by_node.items()})
