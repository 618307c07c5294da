"""One verdict: each command's last line, exit code, JSON ``ok``/``verdict`` and HTML badge agree
with each other and with the FAILED lines above them (issue #32's contradictions, reproduced
through the CLI on recorded results: the nodes' side is faked, the commands are not)."""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from markupsafe import escape
from typer.testing import CliRunner

from nodeprov.checks.verify import CheckResult, Verification
from nodeprov.cli import app
from nodeprov.commands import apply as apply_command
from nodeprov.commands import facts as facts_command
from nodeprov.commands import run as run_command
from nodeprov.commands import verify as verify_command
from nodeprov.engine.outcome import HostResult, PlaybookOutcome
from nodeprov.engine.rolling import Rolled
from nodeprov.errors import EXIT_SLOWER_PATH
from nodeprov.proof.jobfabric import JobFabric
from nodeprov.proof.launch import JobOutcome
from nodeprov.proof.matrix import Check, Matrix
from nodeprov.proof.pairwise import PairResult
from nodeprov.proof.prove import Proof, print_proof
from nodeprov.proof.results import parse_result, verdict
from nodeprov.remote.facts import parse_facts, split_sections
from nodeprov.util.units import counted
from tests.proof.test_launch import CPU_FACTS, RESULT_JSON, FakeNode, run_fake

DATA = Path(__file__).parents[1] / "data"
RESULT = parse_result((DATA.parent / "job" / "data" / "result_gloo_2ranks.json").read_text())
FACTS = parse_facts(split_sections((DATA / "facts" / "debian12-vm.txt").read_text(), "TOKEN123"))
NODES = ("node1", "node2")
MATRIX = Matrix(NODES, tuple(Check(a, b, "eph", "ok", "10.0.0.12:40001")
                             for a in NODES for b in NODES if a != b), duration_s=0.4)
PASSED = JobOutcome(True, RESULT, verdict(RESULT), [], 8.1, {}, "gloo")
DROP = ("busbw at 1 MiB fell to 0.05 GB/s from 0.31 GB/s in the baseline of 2026-11-28 (-85%, "
        "more than the allowed 30%): a slower link")
VENV = ("node2: venv: torch is missing from the node's venv (nodeprov apply --limit node2 "
        "--tags venv); the job said: ModuleNotFoundError: No module named 'torch'")
JOB_FAILED = JobOutcome(False, None, "FAIL: the gloo job failed on 2 nodes", [VENV], 30.0, {},
                        "gloo", cause=f"FAIL: {VENV}")  # as run_job says it (test_launch)
CLEAN = (CheckResult("t::a[node1]", "node1", "hosts", "passed", duration=0.1),)
DRIFT = (*CLEAN, CheckResult("t::b[node2]", "node2", "hosts", "failed",
                             "node2 hosts: x; repair: nodeprov apply i --limit node2",
                             "nodeprov apply i --limit node2"))


@pytest.fixture
def inventory(tmp_path: Path) -> Path:
    path = tmp_path / "inventory.yaml"
    path.write_text("all:\n  vars: {node_subnet: 10.0.0.0/24}\n  hosts:\n"
                    "    node1: {ansible_host: 10.0.0.11}\n    node2: {ansible_host: 10.0.0.12}\n")
    return path


def invoke(tmp_path: Path, *args: str) -> tuple[int, str, dict[str, Any], str]:
    """The command's exit code, its last line, its JSON report and its HTML page, each held
    to the others: PASS, exit 0, ok and the ok badge go together."""
    json_path, html_path = tmp_path / "report.json", tmp_path / "report.html"
    result = CliRunner().invoke(app, [*args, "--json", str(json_path), "--html", str(html_path)]
                                if args[0] != "facts" else [*args, "--json", str(json_path)])
    last = result.stdout.strip().splitlines()[-1]
    report = json.loads(json_path.read_text())
    assert report["verdict"] == last, result.stdout
    # the first line and the report say what ran, on which inventory, when
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", report["started"])
    assert report["inventory"] == args[1] and result.stdout.startswith(
        f"nodeprov {args[0]} on {args[1]} at {report['started']}\n")
    assert last.startswith("PASS: ") == (result.exit_code == 0) == report["ok"], result.stdout
    assert html_path.exists() == (args[0] != "facts"), result.stdout  # facts draws no page
    page = html_path.read_text() if html_path.exists() else ""
    if page:
        badge = "ok" if report["ok"] else "FAILED"
        assert f'<span class="badge {badge.lower() if report["ok"] else "failed"}">{badge}' in page
        summaries = re.findall(r'<p class="summary">(.*?)</p>', page)
        assert summaries[0] == last.replace("'", "&#39;")
        assert summaries[1] == f"on {args[1]} at {report['started']}"
    return result.exit_code, last, report, page


def fake_verify(monkeypatch: pytest.MonkeyPatch, checks: Sequence[CheckResult],
                proofs: Sequence[Proof]) -> None:
    monkeypatch.setattr(verify_command, "run_checks",
                        lambda *args, **kwargs: Verification(tuple(checks), 1.0))

    def prove_again(console: Any, *args: Any) -> list[Proof]:
        for proof in proofs:
            print_proof(console, proof)
        return list(proofs)

    monkeypatch.setattr(verify_command, "_prove_again", prove_again)


def test_a_bandwidth_drop_makes_the_proof_fail_without_repeating_its_line() -> None:
    proof = Proof(MATRIX, PASSED, DROP)
    assert not proof.ok and proof.failures() == [DROP]
    assert proof.verdict == ("FAIL: the job ran right on 2 nodes, but the bus bandwidth is "
                             "below the baseline (1 FAILED line above)")
    assert proof.to_json()["verdict"] == proof.verdict
    failed = Proof(MATRIX, JOB_FAILED)
    assert failed.verdict == "FAIL: the gloo job failed on 2 nodes (1 FAILED line above)"
    pair = PairResult(NODES, dataclasses.replace(PASSED, ok=False, verdict="FAIL: x"))
    slow_pair = Proof(MATRIX, PASSED, DROP, (pair,))
    assert slow_pair.verdict == (
        "FAIL: the job ran right on 2 nodes, but the bus bandwidth is below the baseline and 1 "
        "pair of nodes failed (2 FAILED lines above)")
    broken = Proof(Matrix(NODES, (), ("node2: listener did not start",)), None)
    assert broken.verdict == ("FAIL: the connectivity matrix is broken (1 FAILED line above); "
                              "the job did not run")


def test_verify_with_a_bandwidth_drop_ends_with_fail(monkeypatch: pytest.MonkeyPatch,
                                                     tmp_path: Path, inventory: Path) -> None:
    # the issue: FAILED busbw ... (-87%), then PASS: 3 nodes ..., exit 1, a red PASS on the page
    fake_verify(monkeypatch, CLEAN, [Proof(MATRIX, PASSED, DROP)])
    code, last, report, page = invoke(tmp_path, "verify", str(inventory))
    assert code == 1 and last == (
        "FAIL: 1 check on 1 node, no drift; the job ran right on 2 nodes, but the bus "
        "bandwidth is below the baseline (1 FAILED line above)")
    assert report["proofs"][0]["verdict"].startswith("FAIL: ") and "PASS" not in page


def test_a_failed_jobs_json_holds_its_verdict_and_lists_its_failures_once(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, inventory: Path) -> None:
    # the issue: proofs[].job.verdict was "FAIL: 2 nodes (gloo): node2: venv: ...", the job's
    # first failure again rather than a verdict
    fake_verify(monkeypatch, CLEAN, [Proof(MATRIX, JOB_FAILED)])
    code, last, report, page = invoke(tmp_path, "verify", str(inventory))
    proof = report["proofs"][0]
    assert code == 1 and last == ("FAIL: 1 check on 1 node, no drift; the gloo job failed on 2 "
                                  "nodes (1 FAILED line above)")
    assert proof["verdict"] == "FAIL: the gloo job failed on 2 nodes (1 FAILED line above)"
    assert proof["job"]["verdict"] == "FAIL: the gloo job failed on 2 nodes"
    assert proof["job"]["verdict"].removeprefix("FAIL: ") in last
    assert proof["job"]["failures"] == proof["failures"] == [VENV]
    assert VENV not in proof["job"]["verdict"] and VENV not in last
    assert f'<p class="failed">{escape(proof["verdict"])}</p>' in page
    assert page.count(escape(VENV)) == 1


def test_a_job_whose_results_are_wrong_says_them_once_above_its_verdict(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, inventory: Path) -> None:
    # the issue: "FAILED node1: job: FAIL: 1 node, ...: 3 wrong ..." then the last line "FAIL: 1
    # node, ...: 3 wrong ... (1 FAILED line above)", the one FAILED line said again
    wrong = json.loads(RESULT_JSON) | {"ok": False, "wrong": 3}
    wrong["sizes"][0]["wrong"] = 3
    outcome = run_fake({name: FakeNode(1, "exit 1", result=json.dumps(wrong))
                        for name in CPU_FACTS})
    fake_verify(monkeypatch, CLEAN, [Proof(MATRIX, outcome)])
    code, last, report, page = invoke(tmp_path, "verify", str(inventory))
    proof = report["proofs"][0]
    said = "3 wrong all-reduce results at 8 B"
    assert [line for line in proof["failures"] if said in line] == [
        f"node1: job: 1 node, 2 ranks (gloo): {said}"]
    assert code == 1 and said not in last and said not in proof["verdict"]
    assert proof["verdict"] == (f"FAIL: the gloo job failed on 3 nodes "
                                f"({counted(len(proof['failures']), 'FAILED line')} above)")
    assert last.endswith(proof["verdict"].removeprefix("FAIL: "))
    assert f'<p class="failed">{escape(proof["verdict"])}</p>' in page


def test_verify_with_drift_ends_with_fail_even_when_the_job_passes(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, inventory: Path) -> None:
    fake_verify(monkeypatch, DRIFT, [Proof(MATRIX, PASSED)])
    code, last, _, _ = invoke(tmp_path, "verify", str(inventory))
    assert code == 1 and last.startswith(
        "FAIL: 2 checks on 2 nodes: 1 drifted; job: 1 node, 2 ranks")


def test_a_clean_verify_ends_with_pass(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                       inventory: Path) -> None:
    fake_verify(monkeypatch, CLEAN, [Proof(MATRIX, PASSED)])
    code, last, _, _ = invoke(tmp_path, "verify", str(inventory))
    assert code == 0 and last == "PASS: 1 check on 1 node, no drift; job: " + verdict(
        RESULT).removeprefix("PASS: ")


def fake_apply(monkeypatch: pytest.MonkeyPatch, statuses: Sequence[str],
               proofs: Sequence[Proof]) -> None:
    results = [HostResult(name, status, error=None if status == "ok" else f"{name}: x")  # type: ignore[arg-type]
               for name, status in zip(NODES, statuses, strict=True)]
    monkeypatch.setattr(apply_command, "run_rolling", lambda *args: Rolled(
        PlaybookOutcome(results, dict.fromkeys(NODES, FACTS)), ()))

    def prove(console: Any, *args: Any, **kwargs: Any) -> list[Proof]:
        for proof in proofs:
            print_proof(console, proof)
        return list(proofs)

    monkeypatch.setattr(apply_command, "_prove", prove)


def test_an_apply_whose_job_failed_says_so_under_its_badge(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, inventory: Path) -> None:
    # the issue: a FAILED apply page said "3 hosts: 3 ok" under its badge, and nothing else
    fake_apply(monkeypatch, ["ok", "ok"], [Proof(MATRIX, PASSED, DROP)])
    code, last, _, page = invoke(tmp_path, "apply", str(inventory))
    assert code == 1 and last.startswith("FAIL: 2 hosts ok, 0 tasks changed; the job ran right")
    assert "tasks on 2 hosts: 2 ok" in page


def test_an_apply_with_a_failed_host_ends_with_fail_and_names_it(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, inventory: Path) -> None:
    fake_apply(monkeypatch, ["ok", "failed"], [])
    code, last, _, _ = invoke(tmp_path, "apply", str(inventory))
    assert code == 1 and last == "FAIL: 1 of 2 hosts failed: node2"


def test_an_apply_whose_job_took_a_slower_path_warns_and_exits_3(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, inventory: Path) -> None:
    """README's and docs/fabric.md's promise, through the command line: a job that passed on a
    slower path than the nodes have is a WARN, exit 3, and not ok in the report."""
    slower = "slower-path: node2: NCCL used Socket although it has mlx5_0 (IB, 400 Gb/s)"
    fake_apply(monkeypatch, ["ok", "ok"],
               [Proof(MATRIX, PASSED, fabric=JobFabric("NCCL over Socket", None, slower))])
    code, last, report, _ = invoke(tmp_path, "apply", str(inventory))
    assert code == EXIT_SLOWER_PATH == 3 and last.startswith("WARN: 2 hosts ok, 0 tasks changed")
    assert slower in last and report["ok"] is False


def test_a_passing_apply_ends_with_pass(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                        inventory: Path) -> None:
    fake_apply(monkeypatch, ["ok", "ok"], [Proof(MATRIX, PASSED)])
    code, last, _, _ = invoke(tmp_path, "apply", str(inventory))
    assert code == 0 and last.startswith("PASS: 2 hosts ok, 0 tasks changed; job: 1 node, 2 ranks")


@pytest.mark.parametrize("reached", [True, False])
def test_facts_ends_with_its_verdict(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                     inventory: Path, reached: bool) -> None:
    errors = {} if reached else {"node2": "node2: cannot connect to 10.0.0.12:22"}
    facts = dict.fromkeys(NODES if reached else NODES[:1], FACTS)
    monkeypatch.setattr(facts_command, "connect_all", lambda *args: ({}, facts, errors))
    code, last, _, _ = invoke(tmp_path, "facts", str(inventory))
    assert last == ("PASS: facts of 2 hosts read" if reached
                    else "FAIL: 1 of 2 hosts: no facts: node2")


def test_report_says_the_verdict_of_the_report_it_draws(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, inventory: Path) -> None:
    fake_verify(monkeypatch, DRIFT, [])
    invoke(tmp_path, "verify", str(inventory))
    drawn = tmp_path / "drawn.html"
    result = CliRunner().invoke(app, ["report", str(tmp_path / "report.json"), "--html",
                                      str(drawn)])
    report = json.loads((tmp_path / "report.json").read_text())
    assert result.exit_code == 0 and result.stdout.strip().splitlines()[-1].endswith(
        f"the report's verdict: {report['verdict']}")


def test_a_run_report_names_the_script_and_its_arguments(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, inventory: Path) -> None:
    monkeypatch.setattr(run_command, "connect_all", lambda *args: (
        {}, {}, {"node2": "node2: cannot connect to 10.0.0.12:22: connection refused"}))
    json_path = tmp_path / "run.json"
    result = CliRunner().invoke(app, ["run", str(inventory), "--json", str(json_path), "--",
                                      "train.py", "--lr", "3e-4"])
    report = json.loads(json_path.read_text())
    assert result.exit_code == 1 and report["script"] == ["train.py", "--lr", "3e-4"]
    assert result.stderr.splitlines()[0] == (
        f"nodeprov run on {inventory} at {report['started']}: train.py --lr 3e-4")
    assert result.stderr.splitlines()[-1] == report["verdict"]
    assert report["verdict"] == "FAIL: not started: 1 of 2 nodes unreachable"
