"""verify --slow-nodes: one option, documented in --help, refused without the job."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from nodeprov.cli import app


def test_slow_nodes_needs_the_job_and_changes_nothing(tmp_path: Path) -> None:
    inventory = tmp_path / "inventory.yaml"
    inventory.write_text("all:\n  hosts:\n    node1:\n")
    result = CliRunner().invoke(app, ["verify", str(inventory), "--slow-nodes", "--no-job"])
    assert result.exit_code == 2
    assert "--pairwise and --slow-nodes run the job on pairs of nodes: drop --no-job" in (
        result.stdout + result.stderr)
    assert [path.name for path in tmp_path.iterdir()] == ["inventory.yaml"]


def test_verify_help_explains_slow_nodes() -> None:
    result = CliRunner().invoke(app, ["verify", "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0
    assert "--slow-nodes" in result.stdout and "Find only the slow nodes" in result.stdout
