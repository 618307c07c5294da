"""``run_user_job`` with fake nodes that print torchrun's real output (tests/data): which node
and rank failed first, the one line per failing node, the exit code, and each node's command."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from nodeprov.job import nodejob
from nodeprov.proof.matrix import Matrix
from nodeprov.remote.actions import Write
from nodeprov.remote.channel import Terms
from nodeprov.remote.session import Result
from nodeprov.userjob import run
from nodeprov.userjob.ranklog import rank_of
from nodeprov.userjob.run import Output, Site, nprocs, plan_run, run_env, run_user_job
from nodeprov.userjob.runargs import RunRequest
from nodeprov.userjob.runreport import UserJobOutcome
from tests.proof.test_connectivity import facts_for
from tests.proof.test_launch import HOSTS, gpus, mode, stopped_last
from tests.report_schema import assert_valid

DATA = Path(__file__).parents[1] / "job" / "data"
RAISES = (DATA / "local_run_rank_raises.txt").read_text()  # rank 1 raises, rank 0 loses it
RANK0 = "\n".join(line for line in RAISES.splitlines() if rank_of(line) == 0) + "\n"
PEER_FINISHED = (DATA / "local_run_peer_finished.txt").read_text()  # rank 1 after rank 0's exit
# pytorch/examples' DDP tutorial (multinode.py) on a CPU node: torch.cuda.set_device fails
ASKS_CUDA = (DATA / "local_run_gpu_script_on_cpu.log").read_text()  # node2's, rank 1
USAGE = (DATA / "local_run_usage_error.log").read_text()  # the same, its arguments left out
# Swin-Transformer's argument parsing, which requires --local_rank (node2's, rank 1)
LOCAL_RANK = (DATA / "local_run_local_rank_required.log").read_text()
# A script that opens a data file the synced folder lacks (node1's, rank 0)
RELATIVE = (DATA / "local_run_relative_path.log").read_text()
CPU_FACTS = {host.name: facts_for(host.name) for host in HOSTS}


class FakeNode:
    """Prints ``output`` to the launcher's stderr stream, then ends with ``exit_code`` at once,
    or (None) runs until the stop step comes, which reports ``ranks`` (rank: its exit code),
    each ended at ``ended`` on the node's clock."""

    def __init__(self, exit_code: int | None, output: str = "", after: float = 0.0,
                 ranks: dict[int, int] | None = None, ended: float = 3.5) -> None:
        self.exit_code, self.output, self.after, self.ranks = exit_code, output, after, ranks
        self.ended = ended
        self.stopped = threading.Event()
        self.calls: list[str] = []
        self.argvs: list[Sequence[str]] = []
        self.staged, self.stage_path = "", "/tmp/.nodeprov-stage-0f0f"

    def stage(self, task: str, action: Write) -> str:
        self.staged = action.content
        return self.stage_path

    def run(self, argv: Sequence[str], **_: Any) -> Result:
        self.argvs.append(argv)
        if mode(argv) == "prepare":
            return Result('{"run_dir": "/root/.cache/nodeprov/job/r", "note": null}', "", 0)
        self.calls.append("finish")
        self.stopped.set()
        ranks = {str(rank): {"exit_code": code, "started": 1.0, "ended": self.ended}
                 for rank, code in (self.ranks or {}).items()}
        return Result(json.dumps({"result": None, "ranks": ranks}), "", 0)

    def converse(self, argv: Sequence[str], token: str, terms: Terms, **_: Any) -> Result:
        assert mode(argv) == "start"
        self.argvs.append(argv)
        self.calls.append("launch")
        if terms.err:
            terms.err.write(self.output)
        if self.exit_code is None:
            assert self.stopped.wait(10), "the launcher never stopped this node"
            return Result("", self.output, 143)
        time.sleep(self.after)
        return Result("", self.output, self.exit_code)


def run_fake(nodes: dict[str, FakeNode], tmp_path: Path, shown: list[str] | None = None,
             **request: Any) -> UserJobOutcome:
    """The run on fake nodes; its JSON report checked against the one schema."""
    outcome = run_user_job(HOSTS, nodes, CPU_FACTS,  # type: ignore[arg-type]
                           RunRequest(("train.py",), preflight=False, **request),
                           Site("/opt/nodeprov/venv", 29500, dict.fromkeys(nodes, True)),
                           Output(tmp_path, (shown if shown is not None else []).append))
    assert_valid(json.loads(json.dumps(outcome.to_json())))
    return outcome


@pytest.fixture(autouse=True)
def no_matrix(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The matrix a failure may call for finds nothing here; records that it ran."""
    ran: list[int] = []

    def clean(*args: Any, **kwargs: Any) -> Any:
        ran.append(1)
        return Matrix(("node1",), ())

    monkeypatch.setattr(run, "check_connectivity", clean)
    return ran


def test_every_node_exits_0_passes_and_shows_rank_0_with_its_node(tmp_path: Path) -> None:
    nodes = {name: FakeNode(0, f"[rank{i}]:done\n") for i, name in enumerate(CPU_FACTS)}
    shown: list[str] = []
    outcome = run_fake(nodes, tmp_path, shown)
    assert outcome.exit_code == 0 and outcome.diagnosis == ()
    assert outcome.closing_line().startswith("PASS: 3 nodes, 3 ranks: every rank exited 0 in ")
    assert shown == ["node1 [rank0]:done"]
    assert (tmp_path / outcome.run_id / "node2.log").read_text() == "[rank1]:done\n"
    assert all(node.calls == ["launch", "finish"] for node in nodes.values())
    report = outcome.to_json()
    assert report["nodes"]["node3"]["exit_code"] == 0 and not report["nodes"]["node3"]["stopped"]


def test_a_rank_that_raises_is_named_and_the_others_are_stopped(
        tmp_path: Path, no_matrix: list[int]) -> None:
    nodes = {"node1": FakeNode(None), "node2": FakeNode(1, RAISES), "node3": FakeNode(None)}
    outcome = run_fake(nodes, tmp_path)
    log = tmp_path / outcome.run_id / "node2.log"
    assert outcome.exit_code == 1
    assert outcome.diagnosis == (
        f"node2: job: rank 1 raised ValueError: rank 1 fails on purpose at step 2 (an error "
        f"in the script; its traceback is in {log})",)
    assert outcome.closing_line() == ("FAIL: node2 failed (rank 1: ValueError: rank 1 fails on "
                                      "purpose at step 2); node1, node3 were stopped by it "
                                      f"(logs: {outcome.log_dir})")
    failure = outcome.first_failure
    assert failure is not None and (failure.node, failure.rank) == ("node2", 1)
    assert failure.tail.endswith("[rank1]:[rank1]: ValueError: rank 1 fails on purpose at step 2")
    assert {n: (r.exit_code, r.stopped) for n, r in outcome.nodes.items()} == {
        "node1": (143, True), "node2": (1, False), "node3": (143, True)}
    # the last line and the JSON's verdict name the node that failed and those stopped by it
    closing = (f"FAIL: node2 failed (rank 1: ValueError: rank 1 fails on purpose at step 2); "
               f"node1, node3 were stopped by it (logs: {outcome.log_dir})")
    assert outcome.closing_line() == closing and outcome.to_json()["verdict"] == closing
    assert no_matrix == []  # a script's own error is no network question


def test_a_peer_that_lost_its_connection_first_does_not_hide_the_rank_that_raised(
        tmp_path: Path) -> None:
    # node1 (rank 0) ends first with gloo's "Connection closed by peer"; node2, whose rank 1
    # raised, is stopped before its torchrun wrote its summary; the ranks' own records say
    # rank 1 ended first.
    before_summary = RAISES[:RAISES.index("W1123 20:04:14")]
    nodes = {"node1": FakeNode(1, RANK0, ranks={0: 1}, ended=1764000254.6),
             "node2": FakeNode(None, before_summary, ranks={1: 1}, ended=1764000254.0),
             "node3": FakeNode(None)}
    outcome = run_fake(nodes, tmp_path)
    assert outcome.diagnosis[0].startswith(
        "node2: job: rank 1 raised ValueError: rank 1 fails on purpose at step 2")
    assert outcome.diagnosis[1].startswith(
        "node1: job: a peer rank ended first (it failed or was stopped)")
    assert len(outcome.diagnosis) == 2 and outcome.first_failure is not None
    assert outcome.first_failure.node == "node2"
    # the issue: "FAIL: 2 of 3 nodes failed (node1, node2)", where node1 failed because of node2
    assert outcome.closing_line() == (
        "FAIL: node2 failed (rank 1: ValueError: rank 1 fails on purpose at step 2); node1, "
        f"node3 were stopped by it (logs: {outcome.log_dir})")


def test_the_deadline_says_so_once_per_node(tmp_path: Path) -> None:
    nodes = {name: FakeNode(124, "W torchrun: received SIGTERM\n") for name in CPU_FACTS}
    outcome = run_fake(nodes, tmp_path, timeout=30)
    assert outcome.exit_code == 1
    # Each node that ended at its deadline before the stop step reached it says so.
    assert outcome.diagnosis and all(
        line.split(": ", 1)[1] == ("job: still running after 30 s, killed on every node (raise "
                                   "--timeout if the training needs longer)")
        for line in outcome.diagnosis)


# What a rank said in CI when a peer node was killed at its deadline a moment before its own.
RESET = ("[rank1]: RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:534] Read error "
         "[10.1.60.2]:40321: Connection reset by peer. This is typically caused by a remote "
         "worker hanging or bugs in\n")


def test_a_node_that_fails_after_the_deadline_failed_because_of_it(tmp_path: Path) -> None:
    # The peer killed at its deadline is still ending when this node's rank loses its connection
    # and ends first: the cause is the deadline, not the firewall its words would suggest.
    nodes = {"node1": FakeNode(None), "node2": FakeNode(1, RESET, after=1.2),
             "node3": FakeNode(None)}
    outcome = run_fake(nodes, tmp_path, timeout=1)
    assert outcome.diagnosis == ("node2: job: still running after 1 s, killed on every node "
                                 "(raise --timeout if the training needs longer)",)


def test_the_same_words_before_the_deadline_are_the_networks(tmp_path: Path) -> None:
    nodes = {"node1": FakeNode(None), "node2": FakeNode(1, RESET), "node3": FakeNode(None)}
    outcome = run_fake(nodes, tmp_path, timeout=30)
    assert len(outcome.diagnosis) == 1
    assert outcome.diagnosis[0].startswith("node2: firewall: gloo peers could not connect")


def test_ctrl_c_stops_every_node_and_exits_130(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    def interrupted(*args: Any, **kwargs: Any) -> Any:
        raise KeyboardInterrupt

    monkeypatch.setattr(nodejob, "wait", interrupted)
    nodes = {name: FakeNode(None) for name in CPU_FACTS}
    outcome = run_fake(nodes, tmp_path)
    assert outcome.exit_code == 130 and outcome.interrupted
    assert outcome.closing_line().startswith(
        "INTERRUPTED (Ctrl-C): stopped every rank on every node after")
    assert all(stopped_last(node.calls) for node in nodes.values())
    assert all(node.stopped and node.exit_code is None for node in outcome.nodes.values())
    assert set(outcome.nodes) == set(nodes)


def test_each_node_runs_torchrun_in_the_venv_with_the_request_as_argv() -> None:
    request = RunRequest(("train.py", "--lr", "1e-3", "$(reboot)"), chdir="/srv/code",
                         env=(("OMP_NUM_THREADS", "4"), ("PYTHONUNBUFFERED", "0")), timeout=600)
    facts = {**CPU_FACTS, "node2": facts_for("node2", gpu=gpus(4))}
    nproc = nprocs(HOSTS, facts, request)
    assert nproc == {"node1": 1, "node2": 4, "node3": 1}
    assert nprocs(HOSTS, facts, RunRequest(("t.py",), nproc=2)) == dict.fromkeys(facts, 2)
    argv = plan_run(HOSTS, nproc, request, Site("/opt/venv", 29400, {}), "r1")
    assert argv["node2"] == (
        "/opt/venv/bin/torchrun", "--nnodes", "3", "--nproc-per-node", "4",
        "--rdzv-backend", "c10d", "--rdzv-endpoint", "10.0.0.11:29400", "--rdzv-id", "r1",
        "--max-restarts", "0", "--tee", "3", "train.py", "--lr", "1e-3", "$(reboot)")
    # the user's values after nodeprov's: PYTHONUNBUFFERED=0 wins
    assert run_env(request) == {"PYTHONUNBUFFERED": "0", "OMP_NUM_THREADS": "4",
                                "TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE": "[rank${rank}]:"}


def test_env_values_reach_the_nodes_in_a_private_file_never_on_a_command_line(
        tmp_path: Path) -> None:
    nodes = {name: FakeNode(0) for name in CPU_FACTS}
    outcome = run_fake(nodes, tmp_path, env=(("WANDB_API_KEY", "s3cret-7f3a"),))
    assert outcome.exit_code == 0
    for node in nodes.values():
        assert json.loads(node.staged)["WANDB_API_KEY"] == "s3cret-7f3a"
        assert node.argvs and not any("s3cret" in word for argv in node.argvs for word in argv)
        start = next(argv for argv in node.argvs if mode(argv) == "start")
        assert start[start.index("--") - 2] == node.stage_path  # the launcher reads, removes it


def test_a_rank_that_lost_its_peer_after_the_peer_finished_is_said_to_have_waited(
        tmp_path: Path) -> None:
    # Rank 0 (node1) ended well at step 2 and its torchrun waited for the others; rank 1 (node2)
    # then failed on the closed connection, and nodeprov stopped node1 and node3.
    nodes = {"node1": FakeNode(None, ranks={0: 0}), "node2": FakeNode(1, PEER_FINISHED,
                                                                      ranks={1: 1}),
             "node3": FakeNode(None, ranks={2: -15})}
    outcome = run_fake(nodes, tmp_path)
    (line,) = outcome.diagnosis
    assert line.startswith(
        "node2: job: node1's ranks finished (exit 0); rank 1 on node2 was still waiting for "
        "them (no failure there: let every rank run the same collectives to the end, e.g. a "
        "dist.barrier() before the script returns); the job said: ")
    assert "Connection reset by peer" in line
    # exit codes are the ranks' own: node1's rank exited 0, node3's was stopped (SIGTERM)
    assert {n: (r.exit_code, r.stopped) for n, r in outcome.nodes.items()} == {
        "node1": (0, False), "node2": (1, False), "node3": (-15, True)}
    report = outcome.to_json()
    assert report["nodes"]["node1"]["ranks"] == {"0": {"exit_code": 0, "duration_s": 2.5}}


def test_a_gpu_only_script_on_nodes_without_gpus_says_so_once_for_every_node(
        tmp_path: Path) -> None:
    # Every rank failed by itself on torch.cuda.set_device; node2 ended first and nodeprov
    # stopped node1 and node3, whose ranks had already exited 1 on the same line.
    def of_rank(rank: int) -> str:  # the same log, as rank ``rank`` wrote it
        return ASKS_CUDA.replace("[rank1]", f"[rank{rank}]").replace("rank      : 1 (",
                                                                      f"rank      : {rank} (")

    nodes = {"node1": FakeNode(None, of_rank(0), ranks={0: 1}),
             "node2": FakeNode(1, ASKS_CUDA, ranks={1: 1}),
             "node3": FakeNode(None, of_rank(2), ranks={2: 1})}
    outcome = run_fake(nodes, tmp_path)
    assert outcome.exit_code == 1
    assert outcome.diagnosis == (
        "node2, node1, node3: job: the script needs a GPU (it asks CUDA for one) and this node "
        "has none (run it on nodes with GPUs, or let it fall back to the CPU when "
        "torch.cuda.is_available() is false (backend gloo)); the job said on node2: "
        "[rank1]:AttributeError: module 'torch._C' has no attribute '_cuda_setDevice'",)
    assert {n: r.exit_code for n, r in outcome.nodes.items()} == {
        "node1": 1, "node2": 1, "node3": 1}


def test_a_rank_that_exits_with_a_message_and_no_traceback_is_quoted(tmp_path: Path) -> None:
    # argparse's usage error: no traceback, no rule; torchrun's summary only links its docs.
    nodes = {"node1": FakeNode(None), "node2": FakeNode(1, USAGE, ranks={1: 2}),
             "node3": FakeNode(None)}
    outcome = run_fake(nodes, tmp_path)
    log = tmp_path / outcome.run_id / "node2.log"
    assert outcome.diagnosis == (
        "node2: job: rank 1 exited 2; its last line: multinode.py: error: the following "
        f"arguments are required: total_epochs, save_every (its output is in {log})",)


def as_rank(log: str, was: int, rank: int) -> str:
    """The same node log, as rank ``rank`` of another node wrote it."""
    return log.replace(f"[rank{was}]", f"[rank{rank}]").replace(
        f"rank      : {was} (", f"rank      : {rank} (")


def test_nodes_whose_script_raised_the_same_exception_share_one_line(tmp_path: Path) -> None:
    # node1 ended first; nodeprov stopped node2 and node3, whose ranks had raised the same
    nodes = {"node1": FakeNode(1, RELATIVE, ranks={0: 1}),
             "node2": FakeNode(None, as_rank(RELATIVE, 0, 1), ranks={1: 1}),
             "node3": FakeNode(None, as_rank(RELATIVE, 0, 2), ranks={2: 1})}
    outcome = run_fake(nodes, tmp_path)
    (line,) = outcome.diagnosis
    names, _, said = line.partition(": ")
    first = names.split(", ")[0]  # the node that ended first; its rank's log is named
    assert sorted(names.split(", ")) == ["node1", "node2", "node3"]
    assert said == (
        "job: a rank on each raised FileNotFoundError: [Errno 2] No such file or directory: "
        f"'data/input.txt' (an error in the script; rank {int(first[-1]) - 1}'s traceback is in "
        f"{tmp_path / outcome.run_id / first}.log)")
    # a different exception on one node is a line of its own
    nodes["node3"] = FakeNode(None, as_rank(RELATIVE, 0, 2).replace("input.txt", "other.txt"),
                              ranks={2: 1})
    outcome = run_fake(nodes, tmp_path)
    assert [sorted(line.split(": job: ")[0].split(", ")) for line in outcome.diagnosis] == [
        ["node1", "node2"], ["node3"]]
    assert outcome.diagnosis[1].startswith("node3: job: rank 2 raised FileNotFoundError: ")
    # each failed in its own way, none because another did: the last line counts them all;
    # the one whose rank failed first (its record) is the first line and the first failure
    nodes["node3"] = FakeNode(None, as_rank(RELATIVE, 0, 2).replace("input.txt", "other.txt"),
                              ranks={2: 1}, ended=3.0)
    outcome = run_fake(nodes, tmp_path)
    assert outcome.diagnosis[0].startswith("node3: job: rank 2 raised FileNotFoundError: ")
    assert outcome.first_failure is not None and outcome.first_failure.node == "node3"
    assert outcome.closing_line() == ("FAIL: 3 of 3 nodes failed (node1, node2, node3), as "
                                      f"said above (logs: {outcome.log_dir})")


def test_a_script_that_requires_local_rank_is_named_once_for_every_node(tmp_path: Path) -> None:
    nodes = {"node1": FakeNode(None, as_rank(LOCAL_RANK, 1, 0), ranks={0: 2}),
             "node2": FakeNode(1, LOCAL_RANK, ranks={1: 2}),
             "node3": FakeNode(None, as_rank(LOCAL_RANK, 1, 2), ranks={2: 2})}
    outcome = run_fake(nodes, tmp_path)
    (line,) = outcome.diagnosis
    assert line.startswith(
        "node2, node1, node3: job: the script requires --local_rank on its command line, which "
        "torch.distributed.launch gave it and torchrun does not: torchrun sets the LOCAL_RANK "
        "environment variable (let the script read it there, e.g. add_argument('--local_rank', "
        "type=int, default=int(os.environ.get('LOCAL_RANK', 0)))); the job said on node2: ")
    assert line.endswith("error: the following arguments are required: --local_rank")
    assert outcome.exit_code == 1
    assert outcome.closing_line() == (  # the terminal's last line, after that one
        f"FAIL: 3 of 3 nodes failed (node1, node2, node3), as said above (logs: "
        f"{outcome.log_dir})")


def test_at_the_deadline_the_tail_is_where_a_rank_was_not_torchruns_own_trace(
        tmp_path: Path) -> None:
    # A script whose ranks meet at tcp://127.0.0.1 of each node's own waits until the deadline;
    # torchrun's tail then is its own SIGTERM traceback, which says nothing of the script.
    stopped = (DATA / "local_run_deadline_stopped.log").read_text()  # node3's, rank 2
    nodes = {"node1": FakeNode(None), "node2": FakeNode(143, stopped, after=1.2),
             "node3": FakeNode(None)}
    outcome = run_fake(nodes, tmp_path, timeout=1)
    assert outcome.diagnosis == ("node2: job: still running after 1 s, killed on every node "
                                 "(raise --timeout if the training needs longer)",)
    assert outcome.first_failure is not None and outcome.first_failure.rank == 2
    assert outcome.first_failure.tail == (
        "[rank2]:[W1127 12:33:03.680359207 socket.cpp:207] [c10d] The hostname of the client "
        "socket cannot be retrieved. err=-3")
