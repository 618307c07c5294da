"""Drift lines, and how verify collects them from real pytest reports (no SSH: the checks run on
a tiny generated test module)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from rich.console import Console

from nodeprov.checks import AREA_PROPERTY, NODE_PROPERTY, Drift, failure_message
from nodeprov.checks.verify import CheckResult, Collector, Verification
from nodeprov.commands.verify import print_report, report_json


def test_drift_line_names_node_item_expected_found_and_repair() -> None:
    drift = Drift("node2", "firewall", "inventory.yaml", "firewall")
    assert drift.line("ufw is inactive", "active with 3 nodeprov rules") == (
        "node2 firewall: ufw is inactive (expected active with 3 nodeprov rules); "
        "repair: nodeprov apply inventory.yaml --limit node2 --tags firewall")


def test_repair_names_the_playbook_and_quotes_paths() -> None:
    drift = Drift("node1", "torch", "my inv.yaml", "venv", playbook="/tmp/p b.yaml")
    assert drift.repair == ("nodeprov apply 'my inv.yaml' --playbook '/tmp/p b.yaml' "
                            "--limit node1 --tags venv")


def test_repair_repeats_verifys_extra_vars() -> None:
    # verify -e torch_version=2.12.0: applying without it would install the inventory's torch
    drift = Drift("node1", "torch", "inv.yaml", "venv", extra_vars=("torch_version=2.12.0",
                                                                   "@over rides.yaml"))
    assert drift.repair == ("nodeprov apply inv.yaml -e torch_version=2.12.0 -e "
                            "'@over rides.yaml' --limit node1 --tags venv")


def test_repair_without_tag_applies_the_whole_playbook_to_the_node() -> None:
    assert Drift("node1", "hosts", "inv.yaml", None).repair == (
        "nodeprov apply inv.yaml --limit node1")


def test_a_check_may_name_another_repair() -> None:
    line = Drift("n1", "firewall", "i.yaml", "firewall").line("x", "y", "on n1: ufw delete 3")
    assert line == "n1 firewall: x (expected y); repair: on n1: ufw delete 3"


@pytest.mark.parametrize(("crash", "line"), [
    ("AssertionError: node2 hosts: no block (expected b)\nassert None is not None",
     "node2 hosts: no block (expected b)"),
    ("Failed: node2: cannot connect to 10.0.0.2:22", "node2: cannot connect to 10.0.0.2:22"),
    ("nodeprov.errors.Unreachable: node3: unknown host key", "node3: unknown host key"),
    ("node1 ipv6: live x (expected y)", "node1 ipv6: live x (expected y)"),
    ("", "failed without a message"),
])
def test_failure_message_is_the_first_line_without_the_exception_type(crash: str,
                                                                       line: str) -> None:
    assert failure_message(crash) == line


CHECKS = f'''
import pytest

AREA = "firewall"

@pytest.fixture(params=["node1", "node2"])
def node(request, record_property):
    record_property("{NODE_PROPERTY}", request.param)
    record_property("{AREA_PROPERTY}", AREA)
    return request.param

@pytest.fixture
def broken():
    pytest.fail("node9: cannot connect to 10.0.0.9:22", pytrace=False)

def test_ufw_active(node):
    assert node == "node1", (node + " firewall: ufw is inactive (expected active); "
                             "repair: nodeprov apply i.yaml --limit " + node)

def test_skipped(node):
    pytest.skip("no venv task")

def test_unreachable(broken):
    pass
'''


def run_collector(tmp_path: Path, name: str, source: str) -> Collector:
    """Run a generated check module (its own name: pytest imports each module once)."""
    (tmp_path / f"{name}.py").write_text(source)
    collector = Collector()
    pytest.main([str(tmp_path / f"{name}.py"), "-c", os.devnull, "--rootdir",
                 str(tmp_path), "-p", "no:cacheprovider", "-p", "no:terminal"],
                plugins=[collector])
    return collector


def test_collector_keeps_one_result_per_check_with_its_drift_line(tmp_path: Path) -> None:
    results = {r.check: r for r in run_collector(tmp_path, "test_generated", CHECKS).results}
    drifted = results["test_generated.py::test_ufw_active[node2]"]
    assert drifted.outcome == "failed" and (drifted.node, drifted.area) == ("node2", "firewall")
    assert drifted.message == ("node2 firewall: ufw is inactive (expected active); repair: "
                               "nodeprov apply i.yaml --limit node2")
    assert drifted.repair == "nodeprov apply i.yaml --limit node2"
    assert results["test_generated.py::test_ufw_active[node1]"].outcome == "passed"
    assert results["test_generated.py::test_skipped[node1]"].outcome == "skipped"
    assert results["test_generated.py::test_skipped[node1]"].message == "no venv task"
    unreachable = results["test_generated.py::test_unreachable"]
    assert unreachable.outcome == "error"
    assert unreachable.message == "node9: cannot connect to 10.0.0.9:22"
    assert len(results) == 5


def test_collector_reports_a_check_module_that_cannot_load(tmp_path: Path) -> None:
    [result] = run_collector(tmp_path, "test_unloadable", "import not_a_module_anywhere\n").results
    assert result.outcome == "error"
    assert result.message.startswith("test_unloadable.py: checks could not be loaded: ")
    assert "not_a_module_anywhere" in result.message


def verification() -> Verification:
    unreachable = "node3: cannot connect to 10.0.0.13:22"
    return Verification((
        CheckResult("t::a[node1]", "node1", "hosts", "passed"),
        CheckResult("t::b[node2]", "node2", "hosts", "failed",
                    "node2 hosts: x (expected y); repair: nodeprov apply i --limit node2",
                    "nodeprov apply i --limit node2"),
        CheckResult("t::a[node3]", "node3", "hosts", "error", unreachable),
        CheckResult("t::b[node3]", "node3", "hosts", "error", unreachable),
        CheckResult("t::c[node1]", "node1", "venv", "skipped", "no venv task"),
    ), duration=1.25)


def test_unreachable_node_is_one_line_not_one_per_check() -> None:
    result = verification()
    assert not result.ok
    assert result.drift_lines() == [
        "node2 hosts: x (expected y); repair: nodeprov apply i --limit node2",
        "node3: cannot connect to 10.0.0.13:22"]
    assert [result.count(o) for o in ("passed", "failed", "error", "skipped")] == [1, 1, 2, 1]


def test_report_prints_lines_and_summary(capsys: pytest.CaptureFixture[str]) -> None:
    print_report(Console(highlight=False, soft_wrap=True), verification())
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("node2 hosts: x (expected y); repair: ")
    assert out[-1] == ("verify: 3 nodes, 5 checks: 1 passed, 1 drifted, 2 could not run, "
                       "1 skipped in 1.2s")


def test_json_report_lists_drift_and_checks() -> None:
    data = json.loads(json.dumps(report_json(verification())))
    assert data["ok"] is False and len(data["drift"]) == 2
    assert data["checks"][1] == {"check": "t::b[node2]", "node": "node2", "area": "hosts",
                                 "outcome": "failed", "message": data["drift"][0],
                                 "repair": "nodeprov apply i --limit node2", "duration": 0.0}
