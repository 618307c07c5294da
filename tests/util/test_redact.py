"""What util.redact masks wherever a command writes: a package index's credentials too, in an
error that quotes the value (the inventory's pip_index_url), not only where the wheels code
masked them itself."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from nodeprov.cli import app
from nodeprov.util.redact import Redactor


def test_an_error_quoting_an_index_url_masks_its_token(tmp_path: Path) -> None:
    inventory = tmp_path / "inventory.yaml"
    inventory.write_text(
        'all:\n  vars: {node_subnet: 10.0.0.0/24,\n'
        '         pip_index_url: "https://ci:s3cret-tok@mirror.example/simple\\nx"}\n'
        "  hosts: {node1: {ansible_host: 10.0.0.11}}\n")
    result = CliRunner().invoke(app, ["apply", str(inventory), "--check"])
    assert result.exit_code == 2 and "pip_index_url" in result.output
    assert "s3cret-tok" not in result.output and "https://ci:***@mirror.example" in result.output


def test_a_report_masks_url_credentials_but_not_a_jump_hosts_user() -> None:
    report = {"hosts": {"node1": {"error": "pip: https://tok3n-abc@m.example/simple: 401",
                                  "via": "ssh://alice@bastion"}}}
    assert Redactor().walk(report) == {"hosts": {"node1": {
        "error": "pip: https://***@m.example/simple: 401", "via": "ssh://alice@bastion"}}}


def test_a_plan_quoting_an_index_url_of_another_scheme_masks_its_password() -> None:
    """pip_index_url=ftp://user:password@... (http meant) is quoted by the torch task's plan;
    its password reached the terminal: only http(s) URLs were masked."""
    redactor = Redactor()
    for url in ("ftp://ci:pA55-word@m.example/simple", "sftp://ci:pA55-word@m.example/s",
                "HTTPS://ci:pA55-word@m.example/simple"):
        said = redactor.redact(f"install torch with numpy from {url}")
        assert "pA55-word" not in said and "://ci:***@m.example/" in said, said
