"""``nodeprov run``'s console side: node text shown with its control characters spelled out,
the sync's progress (util.progress.Transfers), SIGTERM and SIGHUP ending the run as Ctrl-C does, the
job's user from the inventory, one line (exit 2) for a log folder it cannot write, before any
connection."""

from __future__ import annotations

import io
import json
import os
import signal
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from typer.testing import CliRunner

from nodeprov.cli import app
from nodeprov.commands import run
from nodeprov.commands.run import SyncBars, job_as_login, lines_to, report, signals_interrupt
from nodeprov.errors import InputError
from nodeprov.inventory import Host
from nodeprov.userjob.runreport import FirstFailure, NodeRun, UserJobOutcome
from tests.report_schema import assert_valid

HOSTILE = "\x1b]0;owned\x07\x1b[2J\x1b]52;c;cm0gLXJmIH4=\x07"  # title, clear, clipboard


def test_rank_lines_and_the_end_of_a_run_spell_out_a_nodes_control_characters() -> None:
    shown = io.StringIO()
    lines_to(shown)(f"node1 [rank0]:{HOSTILE}step 1")
    outcome = UserJobOutcome("r1", {"node1": NodeRun(1, 2.0, False, "/l")},
                             (f"node1: job: rank 0 raised ValueError: {HOSTILE}",), 2.0,
                             first_failure=FirstFailure("node1", 0, f"tail {HOSTILE}"),
                             notes=(f"node1: the run before: {HOSTILE}",))
    said: list[str] = []
    report(outcome, lambda text, **_: said.append(text))
    everything = shown.getvalue() + "\n".join(said)
    assert "\x1b" not in everything and "\x07" not in everything
    assert shown.getvalue() == ("node1 [rank0]:\\x1b]0;owned\\x07\\x1b[2J"
                                "\\x1b]52;c;cm0gLXJmIH4=\\x07step 1\n")
    assert said[-2].startswith("FAILED node1: job: rank 0 raised ValueError: \\x1b]0;")
    # the last line counts the failed nodes; it does not say the line above again
    assert said[-1] == "FAIL: 1 of 1 node failed (node1), as said above (logs: )"
    assert outcome.to_json()["verdict"] == said[-1]  # the JSON says what the terminal said


def test_a_closed_terminal_does_not_stop_the_run() -> None:
    class Gone(io.StringIO):
        def write(self, text: str) -> int:
            raise OSError(5, "Input/output error")  # a tty after SIGHUP

    lines_to(Gone())("node1 [rank0]:step 1")  # no exception: the job must still be stopped
    with SyncBars(Console(file=Gone(), force_terminal=True)) as bars:
        bars.advance("node1", 1, 2)
        bars.end("node1", failed=False)
        bars.close("sync: done")


def test_the_syncs_progress_in_a_log_is_a_line_per_node_at_its_start_and_end() -> None:
    log = io.StringIO()
    with SyncBars(Console(file=log, width=200)) as bars:
        bars.advance("node1", 1 << 20, 4 << 20)
        bars.advance("node2", 4 << 20, 4 << 20)
        bars.advance("node1", 4 << 20, 4 << 20)
        bars.end("node1", failed=False)
        bars.end("node2", failed=True)
        bars.close("sync: 3 files (4.0 MB) to 2 of 2 nodes in 2.7 s")
    lines = log.getvalue().splitlines()
    assert lines[:2] == ["node1 | sync | 4.2 MB to send", "node2 | sync | 4.2 MB to send"]
    assert lines[2].startswith("node1 | sync | sent 4.2 MB in ")
    assert lines[3].startswith("node2 | sync | failed after 4.2 MB in ")
    assert lines[4:] == ["sync: 3 files (4.0 MB) to 2 of 2 nodes in 2.7 s"]


def test_the_syncs_bars_are_drawn_on_a_terminal_and_gone_when_it_ends() -> None:
    screen = io.StringIO()
    with SyncBars(Console(file=screen, force_terminal=True, width=100)) as bars:
        bars.advance("node1", 1 << 20, 4 << 20)
        assert bars.live is not None
        bars.live.refresh()  # as its own thread does 8 times a second
        bars.end("node1", failed=False)
        bars.close("sync: 1 file (4.0 MB) to 1 of 1 nodes in 0.3 s")
        assert bars.live is None
    assert "node1: sync" in screen.getvalue()
    assert screen.getvalue().endswith("sync: 1 file (4.0 MB) to 1 of 1 nodes in 0.3 s\n")


@pytest.mark.parametrize("number", [signal.SIGTERM, signal.SIGHUP])
def test_sigterm_and_sighup_raise_keyboardinterrupt_inside_and_say_which(number: int) -> None:
    before = signal.signal(number, signal.SIG_DFL)  # as from a terminal, also under nohup
    try:
        with pytest.raises(KeyboardInterrupt) as raised, signals_interrupt() as received:
            os.kill(os.getpid(), number)
            signal.sigtimedwait([], 1)  # the handler's turn
        assert received == [signal.Signals(number).name] == list(raised.value.args)
        assert signal.getsignal(number) is signal.SIG_DFL  # as it was before
    finally:
        signal.signal(number, before)


def test_a_signal_ignored_as_under_nohup_stays_ignored() -> None:
    before = signal.signal(signal.SIGHUP, signal.SIG_IGN)
    try:
        with signals_interrupt() as received:
            os.kill(os.getpid(), signal.SIGHUP)
            signal.sigtimedwait([], 0.2)
        assert received == [] and signal.getsignal(signal.SIGHUP) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGHUP, before)


def test_the_job_runs_as_the_login_user_unless_the_inventory_says_root() -> None:
    def host(**fields: Any) -> Host:
        variables = {"run_as_root": fields.pop("run_as_root")} if "run_as_root" in fields else {}
        return Host("node1", "10.0.0.11", "10.0.0.11", vars=variables, **fields)

    assert job_as_login(host(user="alice", become=True))
    assert not job_as_login(host(user="alice", become=True, run_as_root=True))
    assert not job_as_login(host(user="root", run_as_root=True))
    with pytest.raises(InputError, match="node1: run_as_root needs ansible_become: true"):
        job_as_login(host(user="alice", run_as_root=True))


def test_a_log_folder_that_cannot_be_written_is_one_line_before_any_connection(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    inventory = tmp_path / "cluster.yaml"
    inventory.write_text("all:\n  vars: {node_subnet: 10.0.0.0/24}\n"
                         "  hosts: {node1: {ansible_host: 10.0.0.11}}\n")
    (tmp_path / "cluster.nodeprov-runs").write_text("a file where the folder goes\n")

    def no_connection(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("connected")

    monkeypatch.setattr(run, "connect_all", no_connection)
    result = CliRunner().invoke(app, ["run", str(inventory), "--", "train.py"])
    assert result.exit_code == 2
    assert result.output == (
        f"nodeprov: cannot keep the run's logs in {tmp_path}/cluster.nodeprov-runs: File exists "
        "(nodeprov run writes them beside the inventory: make that folder writable, or run "
        "from a copy of the inventory in one)\n")


def test_a_run_no_node_started_still_writes_its_reports_naming_the_unreachable(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    inventory = tmp_path / "cluster.yaml"
    inventory.write_text("all:\n  vars: {node_subnet: 10.0.0.0/24}\n  hosts:\n"
                         "    node1: {ansible_host: 10.0.0.11}\n"
                         "    node2: {ansible_host: 10.0.0.12}\n")
    down = "node2: unreachable: [Errno 111] Connection refused (3 tries in 10 s)"
    monkeypatch.setattr(run, "connect_all", lambda hosts, *args: ({}, {}, {"node2": down}))
    result = CliRunner().invoke(app, ["run", str(inventory), "--json", str(tmp_path / "r.json"),
                                      "--html", str(tmp_path / "r.html"), "--", "train.py"])
    assert result.exit_code == 1, result.output
    assert f"FAILED {down}" in result.output
    assert result.output.rstrip().endswith("FAIL: not started: 1 of 2 nodes unreachable")
    written = json.loads((tmp_path / "r.json").read_text())
    assert_valid(written)
    assert (written["ok"], written["refused"], written["exit_code"]) == (False, True, 1)
    assert written["nodes"]["node2"]["error"] == down and written["diagnosis"] == [down]
    assert written["nodes"]["node1"]["error"] == ""
    assert "node2: unreachable" in (tmp_path / "r.html").read_text()
