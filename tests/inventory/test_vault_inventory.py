"""Vault in an inventory, against ansible-inventory with the same vault options: whole files
(an inventory file of a folder, group_vars and host_vars files) and inline ``!vault`` values,
both formats, made by ansible-vault in the test. ``--show-vaulted`` lists exactly what
ansible-inventory lists; without it, no decrypted value is shown."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from nodeprov.cli import app
from tests.inventory.oracle import ansible
from tests.inventory.test_vault import made

SECRETS = {"sudo": "Sudo-Canary-81f2", "inline": "Inline-Canary-3c9d", "ops": "Ops-Canary-55e0",
           "ini": "Ini-Canary-0b7a"}
VAULT_ARGS = ["--vault-password-file", "pw-default", "--vault-id", "ops@pw-ops"]


def inline(name: str, value: str, folder: Path) -> str:
    """``name: !vault |`` and the encrypted ``value``, indented for a hosts: entry."""
    text = made(["encrypt_string", "--vault-id", "ops@pw-ops", "--name", name, value], folder)
    return "".join(f"      {line}\n" for line in text.splitlines())


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """An inventory folder as repositories keep one: a YAML file with inline values, a
    vault-encrypted INI file, and group_vars/host_vars files encrypted whole."""
    (tmp_path / "pw-default").write_text("alpha\n")
    (tmp_path / "pw-ops").write_text("bravo\n")
    inventory = tmp_path / "inventory"
    (inventory / "group_vars" / "all").mkdir(parents=True)
    (inventory / "host_vars").mkdir()
    (inventory / "hosts.yml").write_text(
        "all:\n  vars:\n    node_subnet: 10.0.0.0/24\n  hosts:\n    n1:\n"
        "      ansible_host: 10.0.0.11\n" + inline("api_token", SECRETS["inline"], tmp_path)
        + "    n2:\n      ansible_host: 10.0.0.12\n")
    plain = tmp_path / "plain"
    for text, target, vault_id in (
            (f"vault_sudo: {SECRETS['sudo']}\nnested: {{list: [1, two]}}\n",
             inventory / "group_vars" / "all" / "vault.yml", "default@pw-default"),
            (f"ops_secret: {SECRETS['ops']}\n", inventory / "host_vars" / "n2.yml",
             "ops@pw-ops"),
            (f"[gpu]\nn3 ansible_host=10.0.0.13 ini_secret={SECRETS['ini']}\n",
             inventory / "extra.ini", "default@pw-default")):
        plain.write_text(text)
        made(["encrypt", "--vault-id", vault_id, "--output", str(target), str(plain)],
             tmp_path)
    (inventory / "group_vars" / "all" / "plain.yml").write_text(
        "ansible_become_password: '{{ vault_sudo }}'\n")
    plain.unlink()
    return tmp_path


def listed(project: Path, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["inventory", str(project / "inventory"), *args])
    return result.exit_code, result.stdout + result.stderr if result.exit_code else result.stdout


def test_show_vaulted_lists_what_ansible_inventory_lists(project: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(project)
    expected = json.loads(ansible("ansible-inventory", ["-i", "inventory", "--list",
                                                        *VAULT_ARGS], project))
    code, output = listed(project, "--list", "--show-vaulted", *VAULT_ARGS)
    assert code == 0, output
    assert json.loads(output) == expected
    for host in ("n1", "n2", "n3"):
        theirs = ansible("ansible-inventory", ["-i", "inventory", "--host", host, *VAULT_ARGS],
                         project)
        code, output = listed(project, "--host", host, "--show-vaulted", *VAULT_ARGS)
        assert json.loads(output) == json.loads(theirs), host


def test_without_show_vaulted_no_decrypted_value_is_listed(
        project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(project)
    code, output = listed(project, "--list", *VAULT_ARGS)
    assert code == 0, output
    assert not any(secret in output for secret in SECRETS.values())
    hostvars = json.loads(output)["_meta"]["hostvars"]
    vaulted = hostvars["n1"]["api_token"]["__ansible_vault"]
    assert vaulted.startswith("$ANSIBLE_VAULT;1.2;AES256;ops")
    assert hostvars["n2"]["ops_secret"] == hostvars["n1"]["vault_sudo"] == "<vaulted>"


def test_a_wrong_or_missing_password_names_the_file_and_the_id(
        project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(project)
    (project / "pw-wrong").write_text("charlie\n")
    code, output = listed(project, "--list", "--vault-id", "ops@pw-ops",
                          "--vault-password-file", "pw-wrong")
    assert code == 2
    assert "inventory/extra.ini: vault id 'default': wrong password" in output
    assert "'default' from file " in output and "pw-wrong" in output
    code, output = listed(project, "--list")
    assert code == 2 and "no vault password given" in output and "--ask-vault-pass" in output
