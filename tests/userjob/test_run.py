"""``nodeprov run`` on a 3-node testbed with a real DDP script on gloo: success, a rank that
raises, a rank that ends early, a firewall that blocks the rendezvous port, Ctrl-C, SIGTERM,
SIGHUP and SIGKILL in the middle, the timeout. Each checks the exit code, the diagnosis line,
and from outside (nsenter, not nodeprov's own SSH) that nothing of the job is left on any node:
no process, no listener on the rendezvous port, no job lock held, no run directory. The sync's
speed and the security of the sync and the job: test_run_sync_bed.py."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest
import yaml
from runbed import NODEPROV, RDZV_PORT, leftovers, nodeprov_run, run_argv
from typer.testing import CliRunner

from nodeprov.htmlreport import render_html
from nodeprov.testbed.cluster import Testbed
from tests.ctrl_c import terminal_signals
from tests.proof.test_connectivity import PLAYBOOK
from tests.report_schema import assert_valid


@pytest.mark.integration
def test_a_ddp_script_runs_on_three_nodes_and_a_second_sync_sends_nothing(
        run_bed: Testbed, code_dir: Path) -> None:
    started = time.monotonic()
    code, report, shown = nodeprov_run(run_bed, code_dir, "--steps", "5")
    print(f"\nnodeprov run, 3 nodes, 5 DDP steps: {time.monotonic() - started:.1f} s")
    assert code == 0, shown
    assert report["ok"] and report["verdict"].startswith("PASS: 3 nodes, 3 ranks")
    assert report["diagnosis"] == []
    assert {name: node["exit_code"] for name, node in report["nodes"].items()} == {
        "node1": 0, "node2": 0, "node3": 0}
    assert all(node["synced"] == 1 for node in report["nodes"].values())
    logs = {name: Path(node["log"]).read_text() for name, node in report["nodes"].items()}
    assert sorted(f"[rank{r}]:rank {r} done, world size 3" in "".join(logs.values())
                  for r in range(3)) == [True] * 3
    # Rank 0, shown live with its node; on stderr here, as --json - takes stdout.
    assert re.search(r"^node\d \[rank0\]:step 4 loss \d", shown, re.M), shown
    assert leftovers(run_bed) == {}
    again, report, shown = nodeprov_run(run_bed, code_dir, "--steps", "1")
    assert again == 0, shown
    assert all(node["synced"] == 0 for node in report["nodes"].values())


@pytest.mark.integration
def test_a_rank_that_raises_stops_every_rank_and_is_named_with_its_exception(
        run_bed: Testbed, code_dir: Path, tmp_path: Path) -> None:
    page = tmp_path / "run.html"
    code, report, shown = nodeprov_run(run_bed, code_dir, "--steps", "200", "--step-seconds",
                                       "0.3", "--raise-rank", "1", options=("--html", str(page)))
    assert page.read_text() == render_html(report)  # --html: the JSON report's page
    print(f"\nrank 1 raised: {report['verdict']}")
    assert code == 1, shown
    first = report["diagnosis"][0]
    assert re.fullmatch(r"node\d: job: rank 1 raised ValueError: rank 1 fails on purpose at "
                        r"step 2 \(an error in the script; its traceback is in .*\.log\)", first)
    assert report["first_failure"]["rank"] == 1
    # torch's own error log adds a second prefix inside torchrun's
    raised_line = "[rank1]:[rank1]: ValueError: rank 1 fails on purpose at step 2"
    assert report["first_failure"]["tail"].endswith(raised_line)
    assert raised_line in shown  # the tail, shown
    # the last line names the raiser, and the others as stopped by it: a peer whose rank said
    # its own last words (gloo's "Connection closed by peer") before the stop too
    raiser = first.split(":", 1)[0]
    others = ", ".join(name for name in ("node1", "node2", "node3") if name != raiser)
    assert report["verdict"] == (
        f"FAIL: {raiser} failed (rank 1: ValueError: rank 1 fails on purpose at step 2); "
        f"{others} were stopped by it (logs: {report['log_dir']})")
    # Every node ended within seconds of the first failure (the script would train for 60 s).
    ended = sorted(node["duration_s"] for node in report["nodes"].values())
    print(f"nodes ended {ended[-1] - ended[0]:.1f} s apart")
    assert ended[-1] - ended[0] < 10
    assert leftovers(run_bed) == {}


@pytest.mark.integration
def test_a_firewall_on_the_rendezvous_port_is_refused_before_anything_starts(
        run_bed: Testbed, code_dir: Path) -> None:
    rule = ["INPUT", "-s", run_bed.subnet, "-p", "tcp", "--dport", str(RDZV_PORT), "-j", "DROP"]
    run_bed.exec("node1", "iptables", "-I", *rule, check=True)
    try:
        code, report, shown = nodeprov_run(run_bed, code_dir)
    finally:
        run_bed.exec("node1", "iptables", "-D", *rule, check=True)
    assert code == 1, shown
    assert report["refused"] and report["nodes"] == {}
    assert "node2 -> node1: TCP to " in shown
    assert (f"node2 -> node1: TCP to {run_bed.address('node1')}:{RDZV_PORT} (rendezvous port) "
            f"timed out: firewall on node1 blocks the node subnet (nodeprov apply --limit "
            f"node1 --tags firewall)") in report["diagnosis"]
    assert report["verdict"].startswith("FAIL: not started: the connectivity matrix found")
    assert leftovers(run_bed) == {}


def training(bed: Testbed, code: Path, out: Path, err: Path) -> subprocess.Popen[bytes]:
    """``nodeprov run`` of a long training, once rank 0 trains."""
    with out.open("w") as stdout, err.open("w") as stderr:
        child = subprocess.Popen(run_argv(bed, code, "--steps", "1000", "--step-seconds", "0.3"),
                                 stdout=stdout, stderr=stderr, preexec_fn=terminal_signals)
    for _ in range(1200):
        if "[rank0]:step 3 loss" in err.read_text() or child.poll() is not None:
            break
        time.sleep(0.1)
    assert child.poll() is None, err.read_text()
    return child


@pytest.mark.integration
@pytest.mark.parametrize(("number", "said"), [(signal.SIGINT, "Ctrl-C"),
                                              (signal.SIGTERM, "SIGTERM"),
                                              (signal.SIGHUP, "SIGHUP")])
def test_ctrl_c_sigterm_and_sighup_stop_every_rank_on_every_node(
        run_bed: Testbed, code_dir: Path, tmp_path: Path, number: int, said: str) -> None:
    out, err = tmp_path / "stdout", tmp_path / "stderr"
    child = training(run_bed, code_dir, out, err)
    try:
        interrupted = time.monotonic()
        child.send_signal(number)  # a terminal's Ctrl-C, a cancelled CI job, a closed terminal
        code = child.wait(timeout=60)
        stopped = time.monotonic() - interrupted
    finally:
        if child.poll() is None:
            child.kill()
    report = json.loads(out.read_text())
    assert_valid(report)
    print(f"\n{said}: every rank stopped and nodeprov exited after {stopped:.1f} s")
    assert code == 128 + number, err.read_text()
    assert report["interrupted"] and report["interrupted_by"] == signal.Signals(number).name
    assert report["verdict"].startswith(
        f"INTERRUPTED ({said}): stopped every rank on every node after")
    assert stopped < 15
    assert leftovers(run_bed) == {}


@pytest.mark.integration
def test_a_killed_nodeprovs_job_stops_on_every_node_and_the_next_run_says_why(
        run_bed: Testbed, code_dir: Path, tmp_path: Path) -> None:
    """SIGKILL leaves nodeprov no last word: each node sees its connection close and stops the
    job itself, freeing the lock; the next run is not refused, and says what happened."""
    child = training(run_bed, code_dir, tmp_path / "stdout", tmp_path / "stderr")
    killed = time.monotonic()
    child.kill()
    child.wait()
    for _ in range(300):
        if leftovers(run_bed) == {}:
            break
        time.sleep(0.1)
    took = time.monotonic() - killed
    print(f"\nSIGKILL: nothing of the job left on any node after {took:.1f} s")
    assert leftovers(run_bed) == {} and took < 15
    code, report, shown = nodeprov_run(run_bed, code_dir, "--steps", "1")
    assert code == 0, shown
    assert len(report["notes"]) == 3 and all(
        re.fullmatch(r"node\d: the run before, nodeprov-run-\w+ \(since \S+\), was stopped by "
                     r"the node at \S+: nodeprov's connection closed \(it was killed, or its "
                     r"machine went away\)", note) for note in report["notes"]), report["notes"]
    assert "note: node1: the run before" in shown


@pytest.mark.integration
def test_a_rank_that_finished_is_no_failure_and_its_waiting_peer_is_said_so(
        run_bed: Testbed, code_dir: Path) -> None:
    code, report, shown = nodeprov_run(run_bed, code_dir, "--steps", "200", "--step-seconds",
                                       "0.3", "--finish-rank", "0")
    assert code == 1, shown
    finished = next(name for name, node in report["nodes"].items() if "0" in node["ranks"])
    assert report["nodes"][finished]["exit_code"] == 0
    assert report["nodes"][finished]["ranks"]["0"]["exit_code"] == 0
    assert not report["nodes"][finished]["stopped"]
    (line,) = report["diagnosis"]
    assert re.match(rf"node\d: job: {finished}'s ranks finished \(exit 0\); rank [12] on node\d "
                    r"was still waiting for them \(no failure there: ", line), line
    assert leftovers(run_bed) == {}


@pytest.mark.integration
def test_the_timeout_stops_every_rank_and_says_so(run_bed: Testbed, code_dir: Path) -> None:
    started = time.monotonic()
    code, report, shown = nodeprov_run(run_bed, code_dir, "--steps", "1000", "--step-seconds",
                                       "0.3", options=("--timeout", "25", "--no-preflight"))
    took = time.monotonic() - started
    print(f"\n--timeout 25: nodeprov run ended after {took:.1f} s")
    assert code == 1, shown
    assert report["diagnosis"], shown
    assert all(re.fullmatch(r"node\d: job: still running after 25 s, killed on every node "
                            r"\(raise --timeout if the training needs longer\)", line)
               for line in report["diagnosis"]), report["diagnosis"]
    assert took < 25 + 60
    assert leftovers(run_bed) == {}


@pytest.mark.integration
def test_an_inventory_of_host_names_reads_each_node_address_from_the_node(
        run_bed: Testbed, code_dir: Path, tmp_path: Path) -> None:
    """No ansible_host and no node_address: SSH goes to the name (the testbed's ssh_config maps
    it), and each node's address in node_subnet comes from its interfaces. The cluster the IP
    inventory set up is what the names give: nothing to change, and the job runs."""
    from nodeprov.cli import app

    named = yaml.safe_load(run_bed.inventory_path.read_text())
    named["all"]["hosts"] = dict.fromkeys(named["all"]["hosts"])
    inventory = tmp_path / "named.yaml"
    inventory.write_text(yaml.safe_dump(named))
    playbook = tmp_path / "playbook.yaml"
    playbook.write_text(PLAYBOOK)
    applied = CliRunner().invoke(app, ["apply", str(inventory), "-p", str(playbook)])
    assert applied.exit_code == 0 and "3 hosts, 0 tasks changed" in applied.output, \
        applied.output
    verified = CliRunner().invoke(app, ["verify", str(inventory), "-p", str(playbook),
                                        "--no-job"])
    assert verified.exit_code == 0, verified.output
    done = subprocess.run([NODEPROV, "run", str(inventory), "--sync", str(code_dir), "--json",
                           "-", "--", "train.py", "--steps", "1"],
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["verdict"].startswith("PASS: 3 nodes, 3 ranks")
