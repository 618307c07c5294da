"""Hostile local files (issue #34): one limit on nesting for every inventory format, and no
command's output written over one of its own inputs."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from nodeprov.cli import app


def test_a_toml_inventory_nests_no_deeper_than_a_yaml_one(tmp_path: Path) -> None:
    """TOML took 300 nested arrays where YAML refused the same depth."""
    path = tmp_path / "deep.toml"
    path.write_text("[all.vars]\nx = " + "[" * 300 + "]" * 300 + "\n")
    result = CliRunner().invoke(app, ["inventory", str(path), "--list"])
    assert result.exit_code == 2, result.output
    assert result.stderr == f"nodeprov: {path}: values nested more than 210 deep; flatten them\n"


INVENTORY = ("all:\n  vars: {node_subnet: 10.0.0.0/24}\n"
             "  hosts:\n    node1: {ansible_host: 10.0.0.11}\n")
REPORT = Path(__file__).parents[1] / "htmlreport" / "data" / "facts-3.json"


def refused(args: list[str], *named: Path | str) -> None:
    """Exit 2 in one line naming every path of ``named``."""
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2, result.output
    assert len(result.stderr.splitlines()) == 1, result.stderr
    assert all(str(path) in result.stderr for path in named), result.stderr


@pytest.mark.parametrize("given", ["INVENTORY", "-i"])
def test_facts_json_over_its_inventory_is_refused_and_changes_nothing(tmp_path: Path,
                                                                     given: str) -> None:
    inventory = tmp_path / "hosts.yaml"
    inventory.write_text(INVENTORY)
    named = [str(inventory)] if given == "INVENTORY" else ["-i", str(inventory)]
    refused(["facts", *named, "--json", str(inventory)], inventory, "--json")
    assert inventory.read_text() == INVENTORY


def test_report_html_over_its_own_report_is_refused(tmp_path: Path) -> None:
    report = tmp_path / "r.json"
    report.write_text(REPORT.read_text())
    refused(["report", str(report), "--html", str(report)], report, "--html")
    assert report.read_text() == REPORT.read_text()
    linked = tmp_path / "linked.json"  # another name of the same file
    linked.hardlink_to(report)
    refused(["report", str(report), "--html", str(linked)], linked, report)


def test_outputs_over_the_playbook_a_vault_file_or_into_the_inventory_folder_are_refused(
        tmp_path: Path) -> None:
    folder = tmp_path / "inventory"
    folder.mkdir()
    (folder / "hosts.yaml").write_text(INVENTORY)
    playbook, password = tmp_path / "site.yaml", tmp_path / "vault-pass"
    playbook.write_text("- hosts: all\n  tasks: []\n")
    password.write_text("secret\n")
    # Ansible reads every .json of an inventory folder: the next run would read the report
    refused(["apply", str(folder), "--json", str(folder / "apply.json")], folder)
    refused(["apply", str(folder), "-p", str(playbook), "--html", str(playbook)], playbook)
    refused(["verify", str(folder), "--vault-password-file", str(password), "--json",
             str(password)], password)
    assert password.read_text() == "secret\n"


def test_two_outputs_to_one_file_or_both_to_stdout_are_refused(tmp_path: Path) -> None:
    inventory = tmp_path / "hosts.yaml"
    inventory.write_text(INVENTORY)
    out = tmp_path / "out"
    refused(["apply", str(inventory), "--json", str(out), "--html", str(out)], out, "--json")
    refused(["apply", str(inventory), "--json", "-", "--html", "-"], "--json and --html")


def test_html_dash_is_stdout_as_json_dash_is(tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """It wrote a file named '-'."""
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, ["report", str(REPORT), "--html", "-"])
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("<!DOCTYPE html>") and not (tmp_path / "-").exists()
    assert result.stderr.startswith("-: ") and "kB, from" in result.stderr
