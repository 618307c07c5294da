"""Which node ``nodeprov run`` names first when the nodes' clocks disagree, or the cause has no
rank record: a node that failed by itself leads every node that only lost its peer, and the
closing line, the JSON's first_failure and verdict, the diagnosis and the HTML page agree."""

from __future__ import annotations

import html
import json
from collections.abc import Callable
from concurrent import futures
from pathlib import Path
from typing import Any

import pytest
from test_run_flow import (  # noqa: F401 - no_matrix: the fixture
    DATA,
    RAISES,
    RANK0,
    FakeNode,
    as_rank,
    no_matrix,
    run_fake,
)

from nodeprov.errors import HostError
from nodeprov.htmlreport.page import render_html
from nodeprov.job import nodejob
from nodeprov.job.nodejob import Launch, RankEnd, Stopped
from nodeprov.remote.channel import Terms
from nodeprov.remote.session import Result
from nodeprov.userjob.runfailures import run_failures
from nodeprov.userjob.runreport import UserJobOutcome

pytestmark = pytest.mark.usefixtures("no_matrix")
RAISED = "ValueError: rank 1 fails on purpose at step 2"
BEFORE_SUMMARY = RAISES[:RAISES.index("W1123 20:04:14")]  # node2 stopped before torchrun's
NO_TORCHRUN = (DATA / "local_venv_no_torchrun.txt").read_text()  # torchrun never started
LOST = as_rank(RANK0, 0, 1)  # rank 0's words, "Connection closed by peer", as rank 1's


class Dropped(FakeNode):
    """A node whose session fails once the job runs (its connection dropped): as a bare
    transport error, or as Session says it (a HostError naming the node and the task)."""

    def __init__(self, error: Exception) -> None:
        super().__init__(None)
        self.error = error

    def converse(self, argv: Any, token: str, terms: Terms, **_: Any) -> Result:
        raise self.error


DROPPED = {"bare": (OSError("the SSH connection dropped"), "the SSH connection dropped"),
           "session": (HostError("node1", "job", "connection failed during the job: the SSH "
                                 "connection dropped", hint="did the node reboot?"),
                       "node1: job: connection failed during the job: the SSH connection "
                       "dropped (did the node reboot?)")}


@pytest.fixture
def together(monkeypatch: pytest.MonkeyPatch) -> Callable[[int], None]:
    """``together(2)``: the 2 nodes that end by themselves have both ended before nodeprov
    looks (as when they end within a moment of each other), so neither counts as stopped."""
    wait = futures.wait

    def ending(count: int) -> None:
        def all_ended(pending: Any, return_when: str) -> Any:
            while len((found := wait(pending, timeout=0.01))[0]) < count:
                pass
            return found

        monkeypatch.setattr(nodejob, "wait", all_ended)
    return ending


def said_alike(outcome: UserJobOutcome) -> str:
    """The closing line, after checking that the JSON's verdict and the HTML page say it."""
    report = json.loads(json.dumps(outcome.to_json()))
    assert report["verdict"] == outcome.closing_line()
    assert html.escape(outcome.closing_line()) in render_html(report)
    return outcome.closing_line()


@pytest.mark.parametrize("skew", [0.2, 30.0])
def test_a_peer_that_lost_its_connection_on_an_earlier_clock_is_stopped_by_the_raiser(
        tmp_path: Path, skew: float) -> None:
    # The reviewer's case: node2 raised at 100.3 on its clock, node1 lost it at 100.1 on its
    # own (0.2 s behind; 30 s: a node without NTP).
    nodes = {"node1": FakeNode(1, RANK0, ranks={0: 1}, ended=100.3 - skew),
             "node2": FakeNode(None, BEFORE_SUMMARY, ranks={1: 1}, ended=100.3),
             "node3": FakeNode(None)}
    outcome = run_fake(nodes, tmp_path)
    assert said_alike(outcome) == (f"FAIL: node2 failed (rank 1: {RAISED}); node1, node3 were "
                                   f"stopped by it (logs: {outcome.log_dir})")
    assert outcome.first_failure is not None and outcome.first_failure.node == "node2"
    assert [line.split(":")[0] for line in outcome.diagnosis] == ["node2", "node1"]


@pytest.mark.parametrize("how", DROPPED)
def test_a_node_whose_connection_dropped_leads_the_peer_that_lost_it(
        tmp_path: Path, together: Callable[[int], None], how: str) -> None:
    together(2)
    error, said = DROPPED[how]
    nodes = {"node1": Dropped(error), "node2": FakeNode(1, LOST, ranks={1: 1}, ended=100.1),
             "node3": FakeNode(None)}
    outcome = run_fake(nodes, tmp_path)
    assert said_alike(outcome) == ("FAIL: node1 failed; node2, node3 were stopped by it (logs: "
                                   f"{outcome.log_dir})")
    failure = outcome.first_failure
    assert failure is not None and (failure.node, failure.rank) == ("node1", None)
    assert failure.tail == str(error)
    assert outcome.diagnosis[0] == (said if how == "session" else f"node1: job: {said}")
    assert outcome.diagnosis[1].startswith("node2: job: a peer rank ended first")


def test_a_node_that_never_started_a_rank_leads_the_peer_that_lost_it(
        tmp_path: Path, together: Callable[[int], None]) -> None:
    together(2)
    # node1's torchrun is missing: no rank, no record; node2's rank lost its peer, timed.
    nodes = {"node1": FakeNode(127, NO_TORCHRUN), "node2": FakeNode(1, LOST, ranks={1: 1},
                                                                     ended=100.1),
             "node3": FakeNode(None)}
    outcome = run_fake(nodes, tmp_path)
    assert said_alike(outcome) == ("FAIL: node1 failed; node2, node3 were stopped by it (logs: "
                                   f"{outcome.log_dir})")
    assert outcome.first_failure is not None and outcome.first_failure.node == "node1"
    assert outcome.to_json()["first_failure"]["node"] == "node1"
    assert [line.split(":")[0] for line in outcome.diagnosis] == ["node1", "node2"]


def test_nodes_that_all_lost_their_peer_are_counted_the_earliest_clock_first(
        tmp_path: Path, together: Callable[[int], None]) -> None:
    together(3)
    nodes = {"node1": FakeNode(1, RANK0, ranks={0: 1}, ended=100.4),
             "node2": FakeNode(1, LOST, ranks={1: 1}, ended=100.1),
             "node3": FakeNode(1, as_rank(RANK0, 0, 2), ranks={2: 1}, ended=100.2)}
    outcome = run_fake(nodes, tmp_path)
    (line,) = outcome.diagnosis
    assert line.startswith("node2, node3, node1: job: a peer rank ended first")
    assert outcome.first_failure is not None and outcome.first_failure.node == "node2"
    assert said_alike(outcome) == ("FAIL: 3 of 3 nodes failed (node1, node2, node3), as said "
                                   f"above (logs: {outcome.log_dir})")


def test_a_node_whose_rank_raised_is_a_cause_though_a_signal_stopped_another_first(
        tmp_path: Path) -> None:
    # torchrun's agent stopped rank 0 (SIGTERM, record 99.0) as rank 1's exception (100.0)
    # ended the node: the exception is the node's own.
    log = tmp_path / "node2.log"
    log.write_text(RAISES)
    launch = Launch(launched={"node2": Result("", RAISES, 1)}, ended=["node2"],
                    results={"node2": Stopped(None, {0: RankEnd(-15, 1.0, 99.0),
                                                     1: RankEnd(1, 1.0, 100.0)})})
    failed = run_failures(launch, {"node2": log}, {"node2": 2}, {"node2": 0})
    assert failed["node2"].exception == RAISED and not failed["node2"].lost_peer
