"""What the ranks said, from torchrun's real output (tests/data: a rank that raises): rank 0
shown live with its node, every line in the node's log, the failing rank and its exception."""

from __future__ import annotations

from pathlib import Path

from nodeprov.job.diagnose import diagnose
from nodeprov.userjob.ranklog import (
    NodeLogs,
    raised,
    rank_lines,
    rank_of,
    rank_tail,
    root_cause_rank,
)

DATA = Path(__file__).parents[1] / "job" / "data"
STDERR = (DATA / "local_run_rank_raises.txt").read_text()
STDOUT = (DATA / "local_run_rank_raises_stdout.log").read_text()


def test_lines_carry_the_global_rank_and_torchruns_own_carry_none() -> None:
    assert rank_of("[rank0]:step 0 loss 0.0653") == 0
    assert rank_of("[rank12]:[rank12]: Traceback (most recent call last):") == 12
    assert rank_of("W1123 20:03:32.106000 22709 torch/distributed/run.py:874] ***") is None
    assert rank_of("  rank      : 1 (local_rank: 1)") is None


def test_torchruns_summary_names_the_rank_that_failed_first() -> None:
    # rank 0 failed too (its peer closed the connection) but after rank 1
    assert root_cause_rank(STDERR) == 1
    assert root_cause_rank("ValueError: no summary\n") is None


def test_the_exception_a_rank_raised_under_both_prefixes() -> None:
    lines = [line for line in STDERR.splitlines() if rank_of(line) == 1]
    assert raised(lines) == "ValueError: rank 1 fails on purpose at step 2"
    zero = [line for line in STDERR.splitlines() if rank_of(line) == 0]
    assert raised(zero) is not None and raised(zero).startswith(  # type: ignore[union-attr]
        "RuntimeError: [/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:553] "
        "Connection closed by peer")
    assert raised(["[rank0]:step 1 loss 0.2"]) is None


def test_the_scripts_prints_inside_its_traceback_are_not_the_exception() -> None:
    # ml-engineering's main_process_first.py printed "*** Demo ..." while its traceback was
    # being written: the two streams share the log, under different prefixes.
    log = DATA / "local_run_print_in_traceback.log"
    assert "[rank0]:*** Demo is_main_process_by_path" in log.read_text()
    assert raised(rank_lines(log, 0)) == "ModuleNotFoundError: No module named 'psutil'"


def test_the_rules_see_no_network_problem_in_a_rank_that_raised_or_its_peer() -> None:
    rank_one = "\n".join(line for line in STDERR.splitlines() if rank_of(line) == 1)
    assert diagnose(rank_one) is None
    # Rank 0 lost its connection to rank 1, which had raised: gloo's pair.cc says so, and
    # that is no firewall.
    rank_zero = "\n".join(line for line in STDERR.splitlines() if rank_of(line) == 0)
    found = diagnose(rank_zero, "node1")
    assert found is not None and found.item == "job" and found.cause.startswith(
        "a peer rank ended first")
    assert "Connection closed by peer [127.0.0.1]:31124" in found.evidence
    # While the ranks still connect to each other, a closed connection is the network's.
    setup = ("[rank2]:RuntimeError: Gloo connectFullMesh failed with [../third_party/gloo/gloo/"
             "transport/tcp/pair.cc:553] Connection closed by peer [10.0.0.13]:40112")
    found = diagnose(setup, "node3")
    assert found is not None and found.item == "firewall"


def test_logs_keep_every_line_and_show_rank_0_with_its_node(tmp_path: Path) -> None:
    shown: list[str] = []
    with NodeLogs(tmp_path / "run-1", ["node1", "node2"], shown.append) as logs:
        stdout, stderr = logs.streams["node1"]
        # as invoke hands them over: chunks that cut lines anywhere, stdout and stderr apart
        for start in range(0, len(STDERR), 37):
            stderr.write(STDERR[start:start + 37])
        stdout.write(STDOUT[:20])
        stdout.write(STDOUT[20:])
        logs.streams["node2"][0].write("[rank2]:other node\nunfinished")
    assert logs.paths["node1"] == tmp_path / "run-1" / "node1.log"
    log = logs.paths["node1"].read_text()
    assert sorted(log.splitlines()) == sorted(STDERR.splitlines() + STDOUT.splitlines())
    assert logs.paths["node2"].read_text() == "[rank2]:other node\nunfinished\n"
    assert shown[-2:] == ["node1 [rank0]:step 0 loss 0.0653", "node1 [rank0]:step 1 loss 0.2593"]
    assert all(line.startswith("node1 [rank0]:") for line in shown)
    assert len(shown) == sum(rank_of(line) == 0 for line in log.splitlines())
    assert rank_lines(logs.paths["node1"], 1)[-1] == (
        "[rank1]:[rank1]: ValueError: rank 1 fails on purpose at step 2")
    assert rank_tail(logs.paths["node1"], 1, lines=2).splitlines() == [
        "[rank1]:[rank1]:     raise ValueError(f\"rank {rank} fails on purpose at step {step}\")",
        "[rank1]:[rank1]: ValueError: rank 1 fails on purpose at step 2"]
