"""Launching the job: backend and argv from facts, the stop logic with fake nodes, and the real
job on a 3-node testbed (gloo, CPU). The node-side launcher itself: tests/nodeside/."""

from __future__ import annotations

import io
import json
import os
import shlex
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from nodeprov.gpu import Gpu, GpuInfo, read_gpus
from nodeprov.inventory import Host
from nodeprov.job import nodejob
from nodeprov.job.failures import failed_nodes, node_failures, tail
from nodeprov.job.nodejob import JOB_DIR, Job, launch_all, launcher
from nodeprov.proof import launch
from nodeprov.proof.launch import (
    DEADLINE_HINT,
    JobLaunch,
    JobPlanError,
    choose_backend,
    plan_job,
    procs_per_node,
    run_job,
)
from nodeprov.proof.matrix import Check, Matrix
from nodeprov.proof.prove import Proof
from nodeprov.remote.facts import Facts
from nodeprov.remote.session import Result
from nodeprov.testbed.cluster import Testbed
from nodeprov.testbed.lifecycle import temporary
from nodeprov.util.fanout import on_every_name
from nodeprov.util.units import counted
from tests.ctrl_c import ctrl_c_raises
from tests.gpu.test_gpu import as_sysfs, node_text
from tests.mirrors import LOCAL_MIRRORS
from tests.proof.test_connectivity import PLAYBOOK, facts_for, open_sessions

RESULT_JSON = (Path(__file__).parents[1] / "job" / "data" / "result_gloo_2ranks.json").read_text()
GLOO_TIMEOUT = ("RuntimeError: Gloo connectFullMesh failed with [../third_party/gloo/gloo/"
                "transport/tcp/pair.h:301] Connect timeout [none]")


def gpus(count: int, mig: bool = False) -> GpuInfo:
    return GpuInfo("550.54.15", (12, 4), tuple(
        Gpu(i, "NVIDIA H100 80GB HBM3", f"GPU-{i:08d}", 81559) for i in range(count)), mig)


def stopped_last(calls: list[str]) -> bool:
    """The stop step ran on the node, and nothing came after it but, on a loaded machine, a
    launch thread that reached the node late: the launcher then finds the run's folder gone and
    starts nothing (exit 125)."""
    return "finish" in calls and calls[calls.index("finish") + 1:] in ([], ["launch"])


HOSTS = [Host(f"node{i}", f"10.0.0.1{i}", f"10.0.0.1{i}") for i in (1, 2, 3)]
CPU_FACTS = {host.name: facts_for(host.name) for host in HOSTS}


def plan(facts: dict[str, Facts], backend: str = "auto", hosts: Sequence[Host] = HOSTS,
         timeout: int = 120) -> launch.JobPlan:
    return plan_job(hosts, facts, JobLaunch(backend, "/opt/nodeprov/venv", 29500, timeout,
                                            1 << 20), run_id="nodeprov-abc")


# --- backend, processes and argv from facts ----------------------------------------------------

def test_backend_is_nccl_only_when_every_node_has_gpus() -> None:
    assert choose_backend("auto", [facts_for("a", gpu=gpus(8)), facts_for("b", gpu=gpus(2))]) \
        == "nccl"
    assert choose_backend("auto", [facts_for("a", gpu=gpus(8)), facts_for("b")]) == "gloo"
    assert choose_backend("auto", [facts_for("a")]) == "gloo"
    assert choose_backend("gloo", [facts_for("a", gpu=gpus(8))]) == "gloo"


def test_one_process_per_gpu_one_on_cpu_and_mig_nodes() -> None:
    assert procs_per_node(facts_for("a", gpu=gpus(8))) == 8
    assert procs_per_node(facts_for("a")) == 1
    assert procs_per_node(facts_for("a", gpu=gpus(7, mig=True))) == 1


def test_amd_gpus_with_rocm_run_nccl_one_process_each() -> None:
    """ROCm builds of torch show AMD GPUs as ``cuda`` devices and RCCL as ``nccl``: a ROCm node
    is a GPU node (recorded: an MI325X's PCI functions and a ROCm 7.14 version file)."""
    pci = as_sysfs("pci-mi325x-cloudstack11701.txt")
    _, rocm = read_gpus({"pci_devices": pci,
                         "rocm_version": node_text("rocm-info-version-7.14.txt")})
    _, no_rocm = read_gpus({"pci_devices": pci})
    amd = replace(facts_for("a"), accelerators=rocm)
    assert procs_per_node(amd) == len(rocm.vendor("amd")) > 1
    assert choose_backend("auto", [amd, replace(facts_for("b"), accelerators=rocm)]) == "nccl"
    assert choose_backend("auto", [amd, replace(facts_for("b"), accelerators=no_rocm)]) == "gloo"


def test_nccl_on_a_node_without_gpus_is_refused_before_any_connection() -> None:
    with pytest.raises(JobPlanError, match="node2, node3 has none"):
        plan({"node1": facts_for("node1", gpu=gpus(2)), **{n: CPU_FACTS[n]
                                                           for n in ("node2", "node3")}}, "nccl")
    outcome = run_job(HOSTS, {}, CPU_FACTS, JobLaunch("nccl", "/v", 1, 10, 8))
    assert not outcome.ok and outcome.verdict == "FAIL: the job did not start on 3 nodes"
    assert outcome.failures == [outcome.cause.removeprefix("FAIL: ")]
    assert outcome.cause.startswith("FAIL: backend nccl needs GPUs")


def test_each_node_runs_the_venvs_torchrun_with_c10d_and_no_node_rank() -> None:
    facts = {"node1": facts_for("node1", gpu=gpus(8)), "node2": facts_for("node2", gpu=gpus(4)),
             "node3": facts_for("node3", gpu=gpus(4, mig=True))}
    job = plan(facts)
    assert job.backend == "nccl" and job.nproc == {"node1": 8, "node2": 4, "node3": 1}
    # as root (become), from the package's folder, the runs in root's state folder; with
    # NCCL's INFO lines (INIT,NET,GRAPH) for the transport it took
    assert job.job(120) == Job("nodeprov-abc", job.argv, 120, workdir=JOB_DIR, state=JOB_DIR,
                               env={"NCCL_DEBUG": "INFO", "NCCL_DEBUG_SUBSYS": "INIT,NET,GRAPH"})
    assert list(job.argv["node2"]) == [
        "/opt/nodeprov/venv/bin/torchrun", "--nnodes", "3", "--nproc-per-node", "4",
        "--rdzv-backend", "c10d", "--rdzv-endpoint", "10.0.0.11:29500", "--rdzv-id",
        "nodeprov-abc", "--max-restarts", "0", "--rdzv-conf", "join_timeout=30",
        "--module", "nodeprov_allreduce", "--backend", "nccl", "--result",
        "/var/lib/nodeprov/job/nodeprov-abc/result.json", "--min-bytes", "8",
        "--max-bytes", "1048576", "--timeout", "30"]
    assert not any("node-rank" in word or "node_rank" in word for word in job.argv["node1"])


def test_values_reach_the_node_as_arguments_never_inside_the_script() -> None:
    hosts = [Host("a", "fd00::1", "fd00::1"), Host("b", "fd00::2", "fd00::2")]
    job = plan_job(hosts, {"a": facts_for("a"), "b": facts_for("b")},
                   JobLaunch("gloo", "/opt/it's a venv", 29500, 8, 4), run_id="r1")
    argv = launcher("start", "", "r1", "token", "60", "8", "", "", "0", "--", *job.argv["a"])
    assert argv[3] == launcher()[3] and "r1" not in argv[3]  # the launcher's text is fixed
    assert "[fd00::1]:29500" in argv and "/opt/it's a venv/bin/torchrun" in argv
    assert shlex.split(shlex.join(argv)) == list(argv)  # how Session.run sends it
    assert argv[argv.index("--min-bytes") + 1] == "4"
    assert argv[argv.index("--timeout") + 1] == "5"  # never below 5 s


# --- which nodes failed, and why --------------------------------------------------------------

def test_failures_name_node_item_cause_and_fix_and_skip_stopped_nodes() -> None:
    launched: dict[str, Result | Exception] = {
        "node1": Result("", "noise\n" + GLOO_TIMEOUT + "\n", 1),
        "node2": Result("", "Traceback ...\nSignalException: Process 7 got signal: 15\n", 1),
        "node3": Result("", "something odd\nValueError: boom\n", 1),
        "node4": Result("", "", 124),
        "node5": ConnectionError("node5: connection dropped"),
    }
    lines = node_failures(launched, failed_nodes(launched, {"node2"}), seconds=30,
                          deadline_hint=DEADLINE_HINT)
    assert lines[0] == "node5: job: node5: connection dropped"
    assert lines[1].startswith("node1: firewall: gloo peers could not connect")
    assert "(nodeprov apply --limit node1 --tags firewall,nccl_env)" in lines[1]
    assert lines[2] == "node3: job: torchrun exited 1: ValueError: boom"
    assert lines[3].startswith("node4: job: still running after 30 s, killed on every node")
    assert not any(line.startswith("node2") for line in lines)


def test_after_the_deadline_every_node_that_ended_by_itself_timed_out() -> None:
    # GLOO_TIMEOUT would be a firewall problem before the deadline; after it, it is the echo
    # of a peer's kill.
    launched: dict[str, Result | Exception] = {
        "node1": Result("", GLOO_TIMEOUT, 1), "node2": Result("", "", 124),
        "node3": Result("", "SignalException: Process 1 got signal: 15", -1)}
    failed = failed_nodes(launched, {"node3"}, deadline_passed=True)
    assert all(failure.timed_out and failure.diagnosis is None for failure in failed.values())
    assert node_failures(launched, failed, seconds=30, deadline_hint=DEADLINE_HINT) == [
        f"node1, node2: job: still running after 30 s, killed on every node ({DEADLINE_HINT})"]


def test_nodes_that_failed_alike_share_one_line_and_one_fix() -> None:
    no_torch = "ModuleNotFoundError: No module named 'torch'"
    launched: dict[str, Result | Exception] = {
        "node1": Result("", no_torch, 1), "node2": Result("", "Duplicate GPU detected", 1),
        "node3": Result("", no_torch, 1), "node4": Result("", "", 0)}
    lines = node_failures(launched, failed_nodes(launched, set()), seconds=30,
                          deadline_hint=DEADLINE_HINT)
    assert lines == [
        "node1, node3: venv: torch is missing from the node's venv (nodeprov apply --limit "
        f"node1,node3 --tags venv); the job said on node1: {no_torch}",
        "node2: job: two ranks share one GPU: more processes per node than the node has GPUs "
        "(run one process per GPU of node2 (nvidia-smi -L), and check CUDA_VISIBLE_DEVICES); "
        "the job said: Duplicate GPU detected"]


# What torchrun printed on a testbed node when a rank aborted at exit (trimmed).
CHILD_FAILED = """\
torch.distributed.elastic.multiprocessing.errors.ChildFailedError:
=====================================================
/var/lib/nodeprov/proof/allreduce.py FAILED
-----------------------------------------------------
Root Cause (first observed failure):
[0]:
  host      : node3
  rank      : 2 (local_rank: 0)
  exitcode  : -6 (pid: 2531)  (SIGABRT)
  error_file: <N/A>
  traceback : Signal 6 (SIGABRT) received by PID 2531
=====================================================
"""


def test_a_failure_no_rule_knows_quotes_torchruns_root_cause_not_its_rule_line() -> None:
    def failures(result: Result) -> list[str]:
        launched: dict[str, Result | Exception] = {"node3": result}
        return node_failures(launched, failed_nodes(launched, set()), seconds=30,
                             deadline_hint=DEADLINE_HINT)

    assert failures(Result("", CHILD_FAILED, 1)) == [
        "node3: job: torchrun exited 1: traceback : Signal 6 (SIGABRT) received by PID 2531"]
    assert failures(Result("", "", 1)) == ["node3: job: torchrun exited 1: no output"]


def test_tail_keeps_the_last_lines_stdout_first() -> None:
    result = Result("out\n", "".join(f"line {i}\n" for i in range(100)), 1)
    assert tail(result).splitlines() == [f"line {i}" for i in range(60, 100)]
    assert tail(Result("out\n", "err\n", 1)) == "out\nerr"


# --- the launcher's control flow, with fake nodes ----------------------------------------------

def mode(argv: Sequence[str]) -> str:
    """Which of the node-side launcher's steps ``argv`` runs (prepare, start, stop)."""
    assert tuple(argv[:4]) == launcher()[:4], argv[:3]
    return argv[4]


class FakeNode:
    """Answers the launcher's round trips: the launch returns ``exit_code`` at once, or (None)
    runs until the stop step comes; the stop step prints ``result``."""

    def __init__(self, exit_code: int | None, output: str = "", result: str = "",
                 copy_error: Exception | None = None) -> None:
        self.exit_code, self.output, self.result = exit_code, output, result
        self.copy_error = copy_error
        self.stopped = threading.Event()
        self.calls: list[str] = []

    def execute(self, task: str, actions: Sequence[Any]) -> None:
        self.calls.append(f"execute {task}: " + ", ".join(str(action) for action in actions))
        if self.copy_error:
            raise self.copy_error

    def run(self, argv: Sequence[str], **_: Any) -> Result:
        if mode(argv) == "prepare":
            return Result('{"run_dir": "/var/lib/nodeprov/job/r", "note": null}', "", 0)
        assert mode(argv) == "stop"
        self.calls.append("finish")
        self.stopped.set()
        return Result(json.dumps({"result": self.result or None, "ranks": {}}), "", 0)

    def converse(self, argv: Sequence[str], token: str, *_: Any, **__: Any) -> Result:
        assert mode(argv) == "start"
        self.calls.append("launch")
        if self.exit_code is None:
            assert self.stopped.wait(10), "the launcher never stopped this node"
            return Result("", "SignalException: Process 1 got signal: 15", 143)
        return Result("", self.output, self.exit_code)


def run_fake(nodes: dict[str, FakeNode]) -> launch.JobOutcome:
    return run_job(HOSTS, nodes, CPU_FACTS,  # type: ignore[arg-type]
                   JobLaunch("auto", "/opt/nodeprov/venv", 29500, 60, 1024))


def test_a_passing_job_reads_the_result_and_cleans_up_every_node() -> None:
    nodes = {name: FakeNode(0, result=RESULT_JSON) for name in CPU_FACTS}
    outcome = run_fake(nodes)
    assert outcome.ok and outcome.failures == [] and outcome.backend == "gloo"
    assert outcome.verdict.startswith("PASS: 1 node, 2 ranks (gloo)")
    assert outcome.result is not None and outcome.result.wrong == 0
    for node in nodes.values():
        assert node.calls[0].startswith(
            "execute job: write /var/lib/nodeprov/job/nodeprov_allreduce/__init__.py, write "
            "/var/lib/nodeprov/job/nodeprov_allreduce/__main__.py, ")
        assert node.calls[1:] == ["launch", "finish"]


def test_the_first_failing_node_stops_the_job_everywhere_at_once() -> None:
    nodes = {"node1": FakeNode(None), "node2": FakeNode(1, "ModuleNotFoundError: No module "
                                                          "named 'torch'"),
             "node3": FakeNode(None)}
    started = time.monotonic()
    outcome = run_fake(nodes)
    assert time.monotonic() - started < 5
    assert all(stopped_last(node.calls) for node in nodes.values())
    assert not outcome.ok and outcome.result is None
    assert outcome.failures == [
        "node2: venv: torch is missing from the node's venv (nodeprov apply --limit node2 "
        "--tags venv); the job said: ModuleNotFoundError: No module named 'torch'"]
    # the job's verdict is its own line; its failure is listed once, and a pair's line names it
    assert outcome.verdict == "FAIL: the gloo job failed on 3 nodes"
    assert outcome.cause == "FAIL: " + outcome.failures[0]
    assert set(outcome.tails) == {"node1", "node2", "node3"}


def test_interrupting_the_launcher_stops_the_job_on_every_node(
        monkeypatch: pytest.MonkeyPatch) -> None:
    def interrupted(*args: Any, **kwargs: Any) -> Any:
        raise KeyboardInterrupt

    monkeypatch.setattr(nodejob, "wait", interrupted)
    nodes = {name: FakeNode(None) for name in CPU_FACTS}
    with pytest.raises(KeyboardInterrupt):
        run_fake(nodes)
    assert all(stopped_last(node.calls[1:]) and "launch" in node.calls for node in nodes.values())


def test_a_node_the_job_cannot_be_copied_to_starts_nothing_anywhere() -> None:
    nodes = {"node1": FakeNode(0), "node2": FakeNode(0, copy_error=OSError("disk full")),
             "node3": FakeNode(0)}
    outcome = run_fake(nodes)
    assert outcome.failures == ["node2: job: cannot copy the job: disk full"]
    assert all("launch" not in node.calls and node.calls[-1] == "finish"
               for node in nodes.values())


def test_wrong_results_fail_with_the_verdict_of_the_result() -> None:
    wrong = json.loads(RESULT_JSON) | {"ok": False, "wrong": 3}
    wrong["sizes"][0]["wrong"] = 3
    nodes = {name: FakeNode(1, "exit 1", result=json.dumps(wrong)) for name in CPU_FACTS}
    outcome = run_fake(nodes)
    assert not outcome.ok and outcome.result is not None
    # what failed is said once, on its FAILED line; the verdict counts, a pair's line names it
    assert outcome.failures[0] == "node1: job: 1 node, 2 ranks (gloo): 3 wrong all-reduce " \
        "results at 8 B"
    assert outcome.verdict == "FAIL: the gloo job failed on 3 nodes"
    assert outcome.cause == "FAIL: 1 node, 2 ranks (gloo): 3 wrong all-reduce results at 8 B"
    assert Proof(Matrix(("node1",), ()), outcome).verdict == (
        f"FAIL: the gloo job failed on 3 nodes ({counted(len(outcome.failures), 'FAILED line')} "
        "above)")


def test_a_network_failure_runs_the_matrix_to_name_the_blocked_node(
        monkeypatch: pytest.MonkeyPatch) -> None:
    blocked = ("node1 -> node3: TCP to 10.0.0.13:40001 (ephemeral range) timed out: firewall "
               "on node3 blocks the node subnet (nodeprov apply --limit node3 --tags firewall)")
    matrix = Matrix(("node1", "node3"), (Check("node1", "node3", "eph", "timeout",
                                               "10.0.0.13:40001"),))
    monkeypatch.setattr(launch, "check_connectivity", lambda *args, **kwargs: matrix)
    nodes = {"node1": FakeNode(1, GLOO_TIMEOUT), "node2": FakeNode(None),
             "node3": FakeNode(None)}
    outcome = run_fake(nodes)
    assert outcome.failures[0].startswith("node1: firewall: gloo peers could not connect")
    assert outcome.failures[1:] == [blocked]
    assert outcome.verdict == "FAIL: the gloo job failed on 3 nodes"
    assert outcome.cause == "FAIL: " + blocked


@pytest.fixture
def matrix_runs(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Records each connectivity matrix the launcher runs; the matrix finds nothing broken."""
    runs: list[str] = []

    def no_problem(hosts: Sequence[Host], *args: Any) -> Matrix:
        runs.append(",".join(host.name for host in hosts))
        return Matrix(tuple(host.name for host in hosts), ())

    monkeypatch.setattr(launch, "check_connectivity", no_problem)
    return runs


CLOSED = "torch.distributed.elastic.rendezvous.api.RendezvousClosedError\n"
BUSY = "another nodeprov job is running on this node (run nodeprov-1 since 2026-11-22T16:13:35Z)"


@pytest.mark.parametrize(("first", "runs_matrix"), [
    (FakeNode(1, CLOSED), True),  # no rule knows it: a peer may be blocked
    (FakeNode(1, GLOO_TIMEOUT), True),
    (FakeNode(1, "ModuleNotFoundError: No module named 'torch'"), False),
    (FakeNode(75, BUSY), False),  # the matrix's listeners would collide with the other job
])
def test_the_matrix_runs_when_the_network_may_explain_a_failure(
        first: FakeNode, runs_matrix: bool, matrix_runs: list[str]) -> None:
    outcome = run_fake({"node1": first, "node2": FakeNode(None), "node3": FakeNode(None)})
    assert not outcome.ok
    assert matrix_runs == (["node1,node2,node3"] if runs_matrix else [])


def test_wrong_results_need_no_matrix(matrix_runs: list[str]) -> None:
    wrong = json.loads(RESULT_JSON) | {"ok": False, "wrong": 3}
    nodes = {name: FakeNode(1, "exit 1", result=json.dumps(wrong)) for name in CPU_FACTS}
    assert not run_fake(nodes).ok and matrix_runs == []


def test_ctrl_c_while_copying_still_cleans_every_node(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []

    def copy_interrupted(names: Any, work: Any) -> Any:
        calls.append(names)
        if len(calls) == 1:
            raise KeyboardInterrupt
        return on_every_name(names, work)

    monkeypatch.setattr(nodejob, "on_every_name", copy_interrupted)
    nodes = {name: FakeNode(0) for name in CPU_FACTS}
    with pytest.raises(KeyboardInterrupt):
        run_fake(nodes)
    assert all(node.calls == ["finish"] for node in nodes.values())


# --- on a testbed: the real job ---------------------------------------------------------------

VENV = "/opt/nodeprov/venv"
WORKER = "^[^ ]*python[0-9.]* -u -m nodeprov_allreduce"  # a rank, from torchrun
INSTALL = ["sh", "-c", 'python3 -m venv "$1" && "$1/bin/pip" install -q --no-index '
           '--find-links /opt/wheels --find-links /opt/pypi/files torch==2.13.0', "install", VENV]


@pytest.fixture(scope="module")
def job_bed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Testbed]:
    """A private 3-node testbed with names, socket env and a torch venv on every node (the
    shared testbed stays unconfigured for the tasks' own tests)."""
    from nodeprov.cli import app

    with temporary(nodes=3, outsider=False, shared=LOCAL_MIRRORS) as bed:
        playbook = tmp_path_factory.mktemp("job") / "playbook.yaml"
        playbook.write_text(PLAYBOOK)
        applied = CliRunner().invoke(app, ["apply", str(bed.inventory_path), "-p", str(playbook)])
        assert applied.exit_code == 0, applied.output
        # The nodes are offline: torch comes from the wheels under /opt, shared by every node.
        installs = {name: threading.Thread(target=lambda n=name: results.update(
            {n: bed.exec(n, *INSTALL, timeout=600)})) for name in bed.nodes}
        results: dict[str, subprocess.CompletedProcess[str]] = {}
        for thread in installs.values():
            thread.start()
        for thread in installs.values():
            thread.join()
        for name, done in results.items():
            assert done.returncode == 0, f"{name}: {done.stderr[-2000:]}"
        yield bed


def leftovers(bed: Testbed) -> dict[str, str]:
    """Any job process (torchrun, its workers) or run directory still on a node."""
    found = {}
    for name in bed.nodes:
        procs = bed.exec(name, "pgrep", "-af", "torchrun|allreduce|NODEPROV").stdout.strip()
        runs = bed.exec(name, "sh", "-c", "ls /var/lib/nodeprov/job | grep -v nodeprov_allreduce",
                        ).stdout.strip()
        if procs or runs:
            found[name] = f"{procs} {runs}".strip()
    return found


def job_on(bed: Testbed, *, timeout: int = 60, max_bytes: int = 1 << 20) -> launch.JobOutcome:
    hosts, sessions, facts = open_sessions(bed)
    try:
        return run_job(hosts, sessions, facts, JobLaunch("auto", VENV, 29500, timeout, max_bytes))
    finally:
        for session in sessions.values():
            session.close()


@pytest.mark.integration
def test_the_job_passes_on_three_cpu_nodes_with_gloo(job_bed: Testbed) -> None:
    outcome = job_on(job_bed)
    print(f"\njob on 3 CPU nodes, launch to verdict: {outcome.duration_s:.1f} s: "
          f"{outcome.verdict}")
    assert outcome.ok, outcome.failures
    assert outcome.result is not None
    assert outcome.result.nnodes == 3 and outcome.result.backend == "gloo"
    assert sorted(outcome.result.hostnames) == ["node1", "node2", "node3"]
    assert outcome.result.wrong == 0 and all(row.busbw_gbps > 0 for row in outcome.result.sizes)
    assert outcome.verdict.startswith("PASS: 3 nodes, 3 ranks (gloo)")
    assert leftovers(job_bed) == {}


@pytest.mark.integration
def test_a_blocked_node_fails_the_job_fast_names_its_firewall_and_leaves_nothing(
        job_bed: Testbed) -> None:
    rule = ["INPUT", "-s", job_bed.subnet, "-p", "tcp", "--dport", "32768:60999", "-j", "DROP"]
    job_bed.exec("node3", "iptables", "-I", *rule, check=True)
    try:
        outcome = job_on(job_bed, timeout=30)
    finally:
        job_bed.exec("node3", "iptables", "-D", *rule, check=True)
    print(f"\nblocked node3: failed after {outcome.duration_s:.1f} s (timeout 30 s): "
          f"{outcome.verdict}", *outcome.failures, sep="\n")
    assert not outcome.ok and outcome.duration_s < 30
    assert not any("still running after" in line for line in outcome.failures)
    # Whichever node ends first (node3 with gloo's connect error, or a peer whose rendezvous
    # closed), the matrix the launcher runs after the failure names the blocked node itself.
    assert "firewall on node3 blocks the node subnet" in outcome.cause
    assert any(line.startswith("node1 -> node3: TCP to ")
               and "firewall on node3 blocks the node subnet" in line
               and "--limit node3 --tags firewall" in line for line in outcome.failures)
    assert leftovers(job_bed) == {}


@pytest.mark.integration
def test_ctrl_c_while_the_job_runs_stops_it_on_every_node(job_bed: Testbed) -> None:
    def interrupt_once_running() -> None:
        for _ in range(600):
            if all(job_bed.exec(n, "pgrep", "-f", WORKER).stdout for n in job_bed.nodes):
                os.kill(os.getpid(), signal.SIGINT)  # what Ctrl-C sends
                return
            time.sleep(0.1)

    watcher = threading.Thread(target=interrupt_once_running)
    watcher.start()
    try:
        with ctrl_c_raises(), pytest.raises(KeyboardInterrupt):
            job_on(job_bed, timeout=120, max_bytes=64 << 20)
    finally:
        watcher.join()
    assert leftovers(job_bed) == {}


@pytest.mark.integration
def test_the_nodes_persisted_socket_env_reaches_the_job(job_bed: Testbed) -> None:
    _hosts, sessions, _facts = open_sessions(job_bed)
    try:
        # `env` in torchrun's place: what the job's processes get through SSH and the launcher
        out = io.StringIO()
        job = Job("env-check", {"node2": ["env"]}, 10, env={"SECRET": "s3cret"})
        launch = launch_all(["node2"], {"node2": sessions["node2"]}, job,
                            streams={"node2": (out, io.StringIO())})
    finally:
        for each in sessions.values():
            each.close()
    assert launch.launched["node2"] == Result(out.getvalue(), "", 0)
    env = dict(line.split("=", 1) for line in out.getvalue().splitlines() if "=" in line)
    assert env["GLOO_SOCKET_IFNAME"] == "eth0" and env["NCCL_SOCKET_IFNAME"] == "=eth0"
    assert env["NODEPROV_JOB_RUN"] == "env-check" and env["SECRET"] == "s3cret"


def test_the_job_files_are_read_without_torch_on_the_admin_machine() -> None:
    """The admin machine has no torch (README: Install): reading the job's files must not import
    the job package, whose __init__ imports torch. A None in sys.modules makes that import fail."""
    code = ("import sys; sys.modules['torch'] = None\n"
            "from nodeprov.proof.launch import job_files\n"
            "print(sorted(write.path.rsplit('/', 1)[1] for write in job_files()))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=False)
    assert done.returncode == 0, done.stderr
    assert "'__main__.py'" in done.stdout and "'sweep.py'" in done.stdout
