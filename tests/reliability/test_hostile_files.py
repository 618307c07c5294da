"""Hostile local files (issue #34): one limit on nesting for every inventory format, and no
command's output written over one of its own inputs."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from nodeprov.cli import app


def test_a_toml_inventory_nests_no_deeper_than_a_yaml_one(tmp_path: Path) -> None:
    """TOML took 300 nested arrays where YAML refused the same depth."""
    path = tmp_path / "deep.toml"
    path.write_text("[all.vars]\nx = " + "[" * 300 + "]" * 300 + "\n")
    result = CliRunner().invoke(app, ["inventory", str(path), "--list"])
    assert result.exit_code == 2, result.output
    assert result.stderr == f"nodeprov: {path}: values nested more than 210 deep; flatten them\n"
