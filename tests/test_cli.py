"""The CLI surface: help on every command, inventory resolution, exit codes."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from nodeprov.cli import app


@pytest.mark.parametrize(("command", "options"), [
    ("apply", ["--check", "--diff", "--limit", "--tags", "--json", "--forks", "--playbook",
               "--accept-new-host-keys"]),
    ("facts", ["--json", "--limit", "--forks", "--accept-new-host-keys"]),
    ("testbed", ["up", "down", "status", "exec"]),
])
def test_help_explains_every_option(command: str, options: list[str]) -> None:
    result = CliRunner().invoke(app, [command, "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0
    for option in options:
        assert option in result.stdout


def test_top_level_help_documents_exit_codes() -> None:
    result = CliRunner().invoke(app, ["--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0
    assert "Exit codes: 0 all good, 1 a host failed or a check failed, 2 invalid input" in (
        " ".join(result.stdout.split()))


def test_inventory_from_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("NODEPROV_INVENTORY", str(tmp_path / "from-env.yaml"))
    result = CliRunner().invoke(app, ["apply", "--check"])
    assert result.exit_code == 2
    assert f"{tmp_path}/from-env.yaml: file not found" in result.stderr


def test_no_inventory_anywhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("NODEPROV_INVENTORY", raising=False)
    result = CliRunner().invoke(app, ["facts"])
    assert result.exit_code == 2
    assert "no inventory: give a path, create ./inventory.yaml, or set NODEPROV_INVENTORY" in (
        result.stderr)


def loaded_after(statement: str, prefixes: tuple[str, ...]) -> list[str]:
    """Modules starting with ``prefixes`` that a fresh interpreter has loaded after running
    ``statement``."""
    code = (f"import sys; {statement}; "
            f"print(sorted(m for m in sys.modules if m.startswith({prefixes!r})))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    return list(ast.literal_eval(out))


def test_help_does_not_import_fabric() -> None:
    assert loaded_after("from nodeprov.cli import app",
                        ("fabric", "paramiko", "invoke", "jinja2")) == []


def test_apply_and_verify_load_the_job_modules_only_for_the_job() -> None:
    assert loaded_after("import nodeprov.commands, nodeprov.verify",
                        ("nodeprov.job", "nodeprov.prove", "rich.live")) == []
