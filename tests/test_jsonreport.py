"""One JSON report schema (nodeprov/report.schema.json) for apply, apply --check, verify and
facts, with the job as numbers in base units; every report here is checked against it."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

import nodeprov
from nodeprov.checks.verify import CheckResult, Verification
from nodeprov.commands.apply import apply_report
from nodeprov.commands.facts import facts_report
from nodeprov.commands.verify import report_json
from nodeprov.engine.outcome import HostResult, TaskResult
from nodeprov.jsonreport import write_report
from nodeprov.proof.baseline import load_baseline, record_baseline
from nodeprov.proof.launch import JobOutcome
from nodeprov.proof.matrix import Check, Matrix
from nodeprov.proof.prove import Link, Proof
from nodeprov.proof.results import parse_result, verdict
from nodeprov.remote.facts import parse_facts, split_sections
from tests.report_schema import assert_valid

DATA = Path(__file__).parent / "data"
RESULT = parse_result((DATA.parent / "job" / "data" / "result_gloo_2ranks.json").read_text())
FACTS = parse_facts(split_sections((DATA / "facts" / "debian12-vm.txt").read_text(), "TOKEN123"))
NODES = ("node1", "node2")
MATRIX = Matrix(NODES, tuple(Check(a, b, "eph", "ok", "10.0.0.12:40001")
                             for a in NODES for b in NODES if a != b), duration_s=0.4)
VERSIONS = {name: {"torch": RESULT.torch, "cuda": None, "nccl": None} for name in NODES}


def passing_proof(tmp_path: Path) -> Proof:
    baseline = tmp_path / "inventory.nodeprov-baseline.json"
    record_baseline(baseline, RESULT, nodes=NODES, link_bytes_per_s=1.25e9)
    outcome = JobOutcome(True, RESULT, verdict(RESULT), [], 8.1, {"node1": "ok"}, "gloo",
                         VERSIONS)
    return Proof(MATRIX, outcome, baseline=load_baseline(baseline), baseline_path=baseline,
                 link=Link("node1", "eth0", 1.25e9))


def failures() -> list[HostResult]:
    return [
        HostResult("node1", "failed", [
            TaskResult("Hosts", "hosts", "changed", changes=["update hosts block"],
                       diffs=["--- a\n+++ b\n"], duration=0.5),
            TaskResult("Firewall", "firewall", "failed", error="node1: firewall: exited 1"),
            TaskResult("IPv6", "ipv6", "skipped")], error="node1: firewall: exited 1",
            duration=1.5, connections=1, round_trips=3, facts=FACTS),
        HostResult("node2", "unreachable", error="node2: cannot connect to 10.0.0.12:22"),
    ]


def reports(tmp_path: Path) -> dict[str, dict[str, Any]]:
    proof = passing_proof(tmp_path)
    broken = Matrix(NODES, (Check("node1", "node2", "eph", "timeout", "10.0.0.12:40001"),),
                    ("node2: listener did not start",))
    failed_job = JobOutcome(False, None, "FAIL: the gloo job failed on 2 nodes", ["node2: x"],
                            30.0, {}, "gloo", cause="FAIL: node2: x")
    checks = (CheckResult("t::a[node1]", "node1", "hosts", "passed", duration=0.1),
              CheckResult("t::b[node2]", "node2", "hosts", "failed", "node2 hosts: x; repair: "
                          "nodeprov apply i --limit node2", "nodeprov apply i --limit node2"))
    ok_host = [dataclasses.replace(failures()[0], status="ok", tasks=[], error=None)]
    return {
        "apply": apply_report(ok_host, check=False, proofs=[proof], ok=True,
                              batches=[{"play": "all", "number": 1, "hosts": ["node1"],
                                        "failed": []}], stopped=None),
        "apply --check": apply_report(ok_host, check=True, proofs=[], ok=True, batches=[],
                                      stopped=None),
        "apply failures": apply_report(
            failures(), check=False, ok=False,
            proofs=[Proof(broken, None), Proof(MATRIX, failed_job)],
            batches=[{"play": "all", "number": 1, "hosts": ["node1", "node2"],
                      "failed": ["node1", "node2"]}],
            stopped="play 'all', batch 1: every host of the batch (2) failed or was unreachable"),
        "verify": report_json(Verification(checks, 1.2), [proof]),
        "facts": facts_report(["node1", "node2"], {"node1": FACTS},
                              {"node2": "node2: cannot connect"}),
    }


@pytest.mark.parametrize("kind", ["apply", "apply --check", "apply failures", "verify",
                                  "facts"])
def test_every_kind_of_report_follows_the_schema(kind: str, tmp_path: Path) -> None:
    report = json.loads(json.dumps(reports(tmp_path)[kind]))
    assert_valid(report)
    assert report["schema_version"] == 1 and report["command"] == kind.split()[0]
    assert report["nodeprov_version"] == nodeprov.__version__


def test_a_facts_host_reached_whose_facts_were_refused_failed_and_was_not_unreachable() -> None:
    report = facts_report(["node1", "node2", "node3"], {"node1": FACTS},
                          {"node2": "node2: facts: the node's ephemeral port range ...",
                           "node3": "node3: cannot connect to 10.0.0.3:22: connection refused"},
                          reached={"node1", "node2"})
    assert {name: host["status"] for name, host in report["hosts"].items()} == {
        "node1": "ok", "node2": "failed", "node3": "unreachable"}
    assert_valid(json.loads(json.dumps(report)))


def test_the_job_is_data_in_base_units(tmp_path: Path) -> None:
    job = reports(tmp_path)["apply"]["proofs"][0]["job"]
    assert job["nodes"] == VERSIONS and job["backend"] == "gloo"
    rows = job["result"]["sizes"]
    assert [row["bytes"] for row in rows] == [size.bytes for size in RESULT.sizes]
    last, size = rows[-1], RESULT.sizes[-1]
    assert last["elements"] == size.count and last["iters"] == size.iters
    assert last["time_s"] == pytest.approx(size.time_us / 1e6)
    assert last["busbw_bytes_per_s"] == pytest.approx(size.busbw_gbps * 1e9)
    assert last["algbw_bytes_per_s"] == pytest.approx(size.algbw_gbps * 1e9)
    # the 8-byte row prints "0.000" GB/s; the report keeps its real value
    assert 0 < rows[0]["busbw_bytes_per_s"] < 1e6
    peak = max(RESULT.sizes, key=lambda row: row.busbw_gbps)
    assert job["result"]["peak"] == {"bytes": peak.bytes,
                                     "busbw_bytes_per_s": pytest.approx(peak.busbw_gbps * 1e9)}


def test_the_matrix_and_the_baseline_are_data(tmp_path: Path) -> None:
    proof = reports(tmp_path)["apply"]["proofs"][0]
    assert proof["connectivity"]["cells"] == {"node1": {"node1": "?", "node2": "ok"},
                                              "node2": {"node1": "ok", "node2": "?"}}
    assert proof["connectivity"]["checks"][0] == {
        "source": "node1", "target": "node2", "kind": "eph", "status": "ok",
        "detail": "10.0.0.12:40001", "observed": ""}
    baseline = proof["baseline"]
    assert baseline["world_size"] == 2 and baseline["sizes"][-1] == {
        "bytes": RESULT.sizes[-1].bytes,
        "busbw_bytes_per_s": pytest.approx(RESULT.sizes[-1].busbw_gbps * 1e9)}
    assert proof["verdict"].startswith("PASS: 1 node, 2 ranks (gloo)")


@pytest.mark.parametrize(("path", "value"), [
    (("proofs", 0, "job", "result", "sizes", 0, "busbw_bytes_per_s"), "0.000"),
    (("proofs", 0, "job", "result", "sizes", 0, "bytes"), "8 B"),
    (("hosts", "node1", "status"), "fine"),
    (("schema_version",), 2),
])
def test_the_schema_refuses_display_strings_and_unknown_values(
        path: tuple[Any, ...], value: Any, tmp_path: Path) -> None:
    report = json.loads(json.dumps(reports(tmp_path)["apply"]))
    *parents, last = path
    target = report
    for key in parents:
        target = target[key]
    target[last] = value
    with pytest.raises(AssertionError, match="report breaks report.schema.json"):
        assert_valid(report)


def test_json_dash_writes_the_report_alone_to_stdout(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    report = reports(tmp_path)["facts"]
    write_report(report, "-")
    assert json.loads(capsys.readouterr().out) == report
    write_report(report, str(tmp_path / "facts.json"))
    assert json.loads((tmp_path / "facts.json").read_text()) == report
