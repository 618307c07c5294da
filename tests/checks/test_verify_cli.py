"""`nodeprov verify` and the direct pytest run, without a cluster: bad input, unreachable nodes.

The nodes are loopback addresses on a closed port, and the ssh_config and known_hosts are the
test's own: nothing reads ~/.ssh."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from nodeprov.cli import app


def test_help_lists_the_options() -> None:
    result = CliRunner().invoke(app, ["verify", "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0
    for option in ("--playbook", "--limit", "--json", "--accept-new-host-keys"):
        assert option in result.stdout
    assert "Changes nothing" in result.stdout


def test_missing_inventory_is_bad_input(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["verify", str(tmp_path / "nope.yaml")])
    assert result.exit_code == 2
    assert f"{tmp_path}/nope.yaml: file not found" in result.stderr


def test_limit_matching_nothing_is_bad_input(unreachable: tuple[Path, Path]) -> None:
    inventory, playbook = unreachable
    result = CliRunner().invoke(app, ["verify", str(inventory), "-p", str(playbook),
                                      "--limit", "node9"])
    assert result.exit_code == 2
    assert "pattern 'node9' matches no host or group" in result.stderr


def test_unreachable_nodes_are_one_line_each_and_exit_1(unreachable: tuple[Path, Path],
                                                        tmp_path: Path) -> None:
    inventory, playbook = unreachable
    report = tmp_path / "verify.json"
    result = CliRunner().invoke(app, ["verify", str(inventory), "-p", str(playbook),
                                      "--json", str(report)])
    assert result.exit_code == 1, result.output
    header, *lines, summary, verdict = result.stdout.splitlines()
    assert header.startswith(f"nodeprov verify on {inventory} at ")
    assert [line.split(":")[0] for line in lines] == ["node1", "node2"]
    assert "node1: cannot connect to 127.0.0.1:9" in lines[0]
    assert summary.startswith("verify: 2 nodes, ")
    assert "0 passed, 0 drifted" in summary
    data = json.loads(report.read_text())
    assert data["ok"] is False and data["drift"] == lines
    assert verdict == data["verdict"] and verdict.startswith("FAIL: ")
    outcomes = {(check["area"], check["outcome"]) for check in data["checks"]}
    # the plan of an unreachable node: one error; checks of tasks it lacks: skipped
    assert outcomes == {(None, "error"), ("firewall", "error"), ("hosts", "error"),
                        ("memlock", "skipped"), ("nccl_env", "skipped"),
                        ("nccl_fabric", "skipped"), ("torch", "skipped")}


def test_direct_pytest_run_fails_on_unreachable_nodes(unreachable: tuple[Path, Path],
                                                      tmp_path: Path) -> None:
    inventory, playbook = unreachable
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "nodeprov.checks", "--pyargs", "nodeprov.checks",
         "--inventory", str(inventory), "--playbook", str(playbook), "-p", "no:cacheprovider",
         "-q", "-k", "test_nothing_wider_from_outside"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "node1: cannot connect to 127.0.0.1:9" in result.stdout
    assert "2 errors" in result.stdout


def test_direct_pytest_run_without_inventory_says_how(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NODEPROV_INVENTORY", raising=False)
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "nodeprov.checks", "--pyargs", "nodeprov.checks",
         "-p", "no:cacheprovider", "-q"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode != 0
    assert "nodeprov checks need an inventory: pytest -p nodeprov.checks" in result.stdout
